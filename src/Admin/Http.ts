import { HttpApiBuilder } from "@effect/platform"
import * as Effect from "effect/Effect"
import { Api } from "../Api.js"
import { Knowledge } from "../Ai/Knowledge.js"
import { Crypto } from "../Auth/Crypto.js"
import { NewIntegration } from "../Domain/Integration.js"
import { decodeBody } from "../Http/Request.js"
import { Integrations } from "../Integrations/Integrations.js"
import { Workspaces } from "../Workspaces/Workspaces.js"
import { NewArticle, NewToken, NewTone, NewWorkspace } from "./Api.js"

export const AdminHttpLive = HttpApiBuilder.group(Api, "admin", (handlers) =>
  Effect.gen(function*() {
    const workspaces = yield* Workspaces
    const integrations = yield* Integrations
    const crypto = yield* Crypto
    const knowledge = yield* Knowledge
    return handlers
      .handleRaw("createWorkspace", () =>
        Effect.flatMap(decodeBody(NewWorkspace), ({ name }) => workspaces.create(name)))
      .handle("listWorkspaces", () => workspaces.list())
      .handle("getWorkspace", ({ path }) =>
        Effect.gen(function*() {
          const workspace = yield* workspaces.get(path.workspaceId)
          const secrets = yield* workspaces.webhookSecrets(path.workspaceId)
          return {
            id: workspace.id,
            name: workspace.name,
            createdAt: workspace.createdAt,
            webhookSecret: secrets.current,
            webhookSecretEncryptedAtRest: crypto.encrypting
          }
        }))
      .handleRaw("createToken", ({ path }) =>
        Effect.gen(function*() {
          yield* workspaces.get(path.workspaceId)
          const { name } = yield* decodeBody(NewToken)
          return yield* workspaces.createToken(path.workspaceId, name)
        }))
      .handle("listTokens", ({ path }) => workspaces.listTokens(path.workspaceId))
      .handle("revokeToken", ({ path }) => workspaces.revokeToken(path.tokenId))
      .handle("rotateWebhookSecret", ({ path }) => workspaces.rotateSecret(path.workspaceId))
      .handleRaw("createIntegration", ({ path }) =>
        Effect.gen(function*() {
          yield* workspaces.get(path.workspaceId)
          const input = yield* decodeBody(NewIntegration)
          return yield* integrations.create(path.workspaceId, input)
        }))
      .handle("listIntegrations", ({ path }) =>
        Effect.zipRight(workspaces.get(path.workspaceId), integrations.list(path.workspaceId)))
      .handleRaw("createTone", ({ path }) =>
        Effect.gen(function*() {
          yield* workspaces.get(path.workspaceId)
          const tone = yield* decodeBody(NewTone)
          return yield* workspaces.createTone(path.workspaceId, tone)
        }))
      .handle("listTones", ({ path }) => workspaces.listTones(path.workspaceId))
      .handleRaw("createArticle", ({ path }) =>
        Effect.gen(function*() {
          yield* workspaces.get(path.workspaceId)
          const article = yield* decodeBody(NewArticle)
          return yield* knowledge.addArticle(path.workspaceId, article)
        }))
      .handle("listArticles", ({ path }) =>
        Effect.zipRight(workspaces.get(path.workspaceId), knowledge.listArticles(path.workspaceId)))
  }))
