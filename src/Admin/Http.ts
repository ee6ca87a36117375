import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Effect from "effect/Effect"
import { Api } from "../Api.js"
import { Admin } from "./Admin.js"

export const AdminHttpLive = HttpApiBuilder.group(Api, "admin", (handlers) =>
  Effect.gen(function*() {
    const admin = yield* Admin
    return handlers
      .handle("createWorkspace", ({ payload }) => admin.createWorkspace(payload.name))
      .handle("listWorkspaces", () => admin.listWorkspaces())
      .handle("getWorkspace", ({ path }) => admin.getWorkspace(path.workspaceId))
      .handle("deleteWorkspace", ({ path }) => admin.deleteWorkspace(path.workspaceId))
      .handle("createToken", ({ path, payload }) => admin.createToken(path.workspaceId, payload.name))
      .handle("listTokens", ({ path }) => admin.listTokens(path.workspaceId))
      .handle("revokeToken", ({ path }) => admin.revokeToken(path.tokenId))
      .handle("rotateWebhookSecret", ({ path }) => admin.rotateWebhookSecret(path.workspaceId))
      .handle("createIntegration", ({ path, payload }) =>
        admin.createIntegration(path.workspaceId, payload).pipe(
          Effect.catchTag("InvalidInput", (error) => Effect.fail(error.at("body")))
        ))
      .handle("listIntegrations", ({ path }) => admin.listIntegrations(path.workspaceId))
      .handle("createTone", ({ path, payload }) => admin.createTone(path.workspaceId, payload))
      .handle("listTones", ({ path }) => admin.listTones(path.workspaceId))
      .handle("createArticle", ({ path, payload }) => admin.createArticle(path.workspaceId, payload))
      .handle("listArticles", ({ path }) => admin.listArticles(path.workspaceId))
      .handle("getAiSettings", ({ path }) => admin.getAiSettings(path.workspaceId))
      .handle("setAiSettings", ({ path, payload }) =>
        admin.setAiSettings(path.workspaceId, payload).pipe(
          Effect.catchTag("InvalidInput", (error) => Effect.fail(error.at("body")))
        ))
      .handle("clearAiSettings", ({ path }) => admin.clearAiSettings(path.workspaceId))
      .handle("getAiUsage", ({ path, urlParams }) => admin.getAiUsage(path.workspaceId, urlParams.days))
  }))
