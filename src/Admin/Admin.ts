/** What operators do through the admin API and the CLI, each one step against the services. */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { InstructionsService } from "../Ai/Instructions.js"
import { type ArticleInput, Knowledge } from "../Ai/Knowledge.js"
import { globalView, WorkspaceAiSettings } from "../Ai/Settings.js"
import { Crypto } from "../Auth/Crypto.js"
import * as AppConfig from "../Config.js"
import type { AiSettingsUpdate } from "../Domain/AiSettings.js"
import type { ArticleId, TokenId, WorkspaceId } from "../Domain/Ids.js"
import type { NewInstructions } from "../Domain/Instructions.js"
import type { NewIntegration } from "../Domain/Integration.js"
import type { Tone } from "../Domain/Workspace.js"
import { Integrations } from "../Integrations/Integrations.js"
import { Workspaces } from "../Workspaces/Workspaces.js"

export class Admin extends Context.Service<Admin>()("Parley/Admin", {
  make: Effect.gen(function*() {
    const workspaces = yield* Workspaces
    const integrations = yield* Integrations
    const knowledge = yield* Knowledge
    const crypto = yield* Crypto
    const aiSettings = yield* WorkspaceAiSettings
    const instructions = yield* InstructionsService
    const globalModel = yield* AppConfig.globalModelSettings

    const createWorkspace = Effect.fn("Admin.createWorkspace")(function*(name: string) {
      const created = yield* workspaces.create(name)
      return {
        id: created.workspace.id,
        name: created.workspace.name,
        apiToken: created.apiToken,
        webhookSecret: created.webhookSecret
      }
    })

    /** The workspace with its webhook secret in clear (the dashboard's API section shows it). */
    const getWorkspace = Effect.fn("Admin.getWorkspace")(function*(id: WorkspaceId) {
      const workspace = yield* workspaces.get(id)
      const secrets = yield* workspaces.webhookSecrets(id)
      return { ...workspace, webhookSecret: secrets.current, webhookSecretEncryptedAtRest: crypto.encrypting }
    })

    const createIntegration = Effect.fn("Admin.createIntegration")(
      function*(workspaceId: WorkspaceId, input: NewIntegration) {
        return yield* integrations.create(workspaceId, input)
      }
    )

    const listIntegrations = Effect.fn("Admin.listIntegrations")(function*(workspaceId: WorkspaceId) {
      yield* workspaces.get(workspaceId)
      return yield* integrations.list(workspaceId)
    })

    const createArticle = Effect.fn("Admin.createArticle")(
      function*(workspaceId: WorkspaceId, article: ArticleInput) {
        yield* workspaces.get(workspaceId)
        return yield* knowledge.addArticle(workspaceId, article)
      }
    )

    const listArticles = Effect.fn("Admin.listArticles")(function*(workspaceId: WorkspaceId) {
      yield* workspaces.get(workspaceId)
      return yield* knowledge.listArticles(workspaceId)
    })

    const updateArticle = Effect.fn("Admin.updateArticle")(
      function*(workspaceId: WorkspaceId, articleId: ArticleId, article: ArticleInput) {
        yield* workspaces.get(workspaceId)
        return yield* knowledge.updateArticle(workspaceId, articleId, article)
      }
    )

    const deleteArticle = Effect.fn("Admin.deleteArticle")(function*(workspaceId: WorkspaceId, articleId: ArticleId) {
      yield* workspaces.get(workspaceId)
      yield* knowledge.removeArticle(workspaceId, articleId)
    })

    /** The workspace's own AI settings, else the global default's (the key shown as set or not). */
    const getAiSettings = Effect.fn("Admin.getAiSettings")(function*(workspaceId: WorkspaceId) {
      return Option.getOrElse(yield* aiSettings.get(workspaceId), () => globalView(workspaceId, globalModel))
    })

    const setAiSettings = Effect.fn("Admin.setAiSettings")(function*(workspaceId: WorkspaceId, input: AiSettingsUpdate) {
      return yield* aiSettings.set(workspaceId, input)
    })

    return {
      createWorkspace,
      listWorkspaces: workspaces.list,
      getWorkspace,
      deleteWorkspace: (id: WorkspaceId) => workspaces.delete(id),
      createToken: (id: WorkspaceId, name: string | null) => workspaces.createToken(id, name),
      listTokens: (id: WorkspaceId) => workspaces.listTokens(id),
      revokeToken: (id: TokenId) => workspaces.revokeToken(id),
      rotateWebhookSecret: (id: WorkspaceId) => workspaces.rotateSecret(id),
      createIntegration,
      listIntegrations,
      createTone: (id: WorkspaceId, tone: Pick<Tone, "name" | "instructions">) => workspaces.createTone(id, tone),
      listTones: (id: WorkspaceId) => workspaces.listTones(id),
      createArticle,
      listArticles,
      updateArticle,
      deleteArticle,
      getAiSettings,
      setAiSettings,
      clearAiSettings: (id: WorkspaceId) => Effect.asVoid(aiSettings.clear(id)),
      getAiUsage: (id: WorkspaceId, days: number) => aiSettings.usage(id, days),
      setInstructions: (id: WorkspaceId, input: NewInstructions) => instructions.set(id, input),
      listInstructions: (id: WorkspaceId) => instructions.list(id)
    } as const
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
  static readonly layer = this.layerWithoutDependencies.pipe(Layer.provide([
    Workspaces.layer,
    Integrations.layer,
    Knowledge.layer,
    Crypto.layer,
    WorkspaceAiSettings.layer,
    InstructionsService.layer
  ]))
}
