import * as Effect from "effect/Effect"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import { Api } from "../Api.js"
import { inputFromBody } from "../Handlers.js"
import { Admin } from "./Admin.js"

export const AdminHttpLive = HttpApiBuilder.group(Api, "admin", (handlers) =>
  Effect.gen(function*() {
    const admin = yield* Admin
    return handlers
      .handle("createWorkspace", ({ payload }) => admin.createWorkspace(payload.name))
      .handle("listWorkspaces", () => admin.listWorkspaces())
      .handle("getWorkspace", ({ params }) => admin.getWorkspace(params.workspaceId))
      .handle("deleteWorkspace", ({ params }) => admin.deleteWorkspace(params.workspaceId))
      .handle("createToken", ({ params, payload }) => admin.createToken(params.workspaceId, payload.name))
      .handle("listTokens", ({ params }) => admin.listTokens(params.workspaceId))
      .handle("revokeToken", ({ params }) => admin.revokeToken(params.tokenId))
      .handle("rotateWebhookSecret", ({ params }) => admin.rotateWebhookSecret(params.workspaceId))
      .handle("createIntegration", ({ params, payload }) =>
        admin.createIntegration(params.workspaceId, payload).pipe(inputFromBody))
      .handle("listIntegrations", ({ params }) => admin.listIntegrations(params.workspaceId))
      .handle("createTone", ({ params, payload }) => admin.createTone(params.workspaceId, payload))
      .handle("listTones", ({ params }) => admin.listTones(params.workspaceId))
      .handle("setInstructions", ({ params, payload }) => admin.setInstructions(params.workspaceId, payload))
      .handle("listInstructions", ({ params }) => admin.listInstructions(params.workspaceId))
      .handle("createArticle", ({ params, payload }) => admin.createArticle(params.workspaceId, payload))
      .handle("listArticles", ({ params }) => admin.listArticles(params.workspaceId))
      .handle("updateArticle", ({ params, payload }) => admin.updateArticle(params.workspaceId, params.articleId, payload))
      .handle("deleteArticle", ({ params }) => admin.deleteArticle(params.workspaceId, params.articleId))
      .handle("getAiSettings", ({ params }) => admin.getAiSettings(params.workspaceId))
      .handle("setAiSettings", ({ params, payload }) =>
        admin.setAiSettings(params.workspaceId, payload).pipe(inputFromBody))
      .handle("clearAiSettings", ({ params }) => admin.clearAiSettings(params.workspaceId))
      .handle("getAiUsage", ({ params, query }) => admin.getAiUsage(params.workspaceId, query.days))
  }))
