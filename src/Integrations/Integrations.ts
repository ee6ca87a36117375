/** Integrations of a workspace and their settings (docs/api.md). */
import * as SqlClient from "effect/sql/SqlClient"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { isSealed, SEALED_PREFIX } from "../Auth/Crypto.js"
import * as AppConfig from "../Config.js"
import { webhookUrlProblem } from "../Delivery/Ssrf.js"
import { InvalidInput, NotFound } from "../Domain/Errors.js"
import type { IntegrationId, WorkspaceId } from "../Domain/Ids.js"
import {
  applyPatch,
  defaultFeatures,
  helpdeskSecrets,
  type IntegrationSettings,
  type IntegrationSettingsPatch,
  mapHelpdeskSecrets,
  masked,
  type NewIntegration,
  SECRET_MASK
} from "../Domain/Integration.js"
import type { JsonObject } from "../Domain/Primitives.js"
import { checkCustomerDataSetting } from "../Domain/CustomerData.js"
import { checkLanguageSetting } from "../Domain/Language.js"
import { checkTimers } from "../Domain/Timers.js"
import { orDieSql } from "../Sql.js"
import { Workspaces } from "../Workspaces/Workspaces.js"
import { IntegrationsRepo } from "./Repo.js"

const integrationNotFound = new NotFound({ detail: "Integration not found" })

const found = Option.match({
  onNone: () => Effect.fail(integrationNotFound),
  onSome: <A>(integration: A) => Effect.succeed(integration)
})

export class Integrations extends Context.Service<Integrations>()("Parley/Integrations", {
  make: Effect.gen(function*() {
    const repo = yield* IntegrationsRepo
    const workspaces = yield* Workspaces
    const sql = yield* SqlClient.SqlClient
    const mode = yield* AppConfig.Mode

    /** In production, a webhook URL whose host is an internal address is refused (SSRF, docs/webhooks.md). */
    const checkUrl = (url: string) => {
      const problem = webhookUrlProblem(url, mode)
      return problem === undefined ? Effect.void : InvalidInput.one(["webhook", "url"], problem.msg, problem.type)
    }

    /**
     * Secrets as a client sends them: the mask stands for the stored helpdesk secret (a settings object
     * read, changed and sent back keeps it), and no secret may look sealed (it could not be read back).
     */
    const unmask = (channelsSettings: JsonObject, stored: JsonObject) =>
      Effect.gen(function*() {
        const storedSecrets = new Map(helpdeskSecrets(stored))
        for (const [name, secret] of helpdeskSecrets(channelsSettings)) {
          const at = ["channelsSettings", name, "webhookSecret"]
          if (secret === SECRET_MASK && !storedSecrets.has(name)) {
            return yield* InvalidInput.one(at, `${SECRET_MASK} stands for the stored secret, and none is stored`, "secret_masked")
          }
          if (isSealed(secret)) yield* InvalidInput.one(at, `A secret must not start with ${SEALED_PREFIX}`, "secret_reserved")
        }
        return mapHelpdeskSecrets(channelsSettings, (name, secret) =>
          secret === SECRET_MASK ? storedSecrets.get(name) ?? secret : secret)
      })

    const checkHeaders = (headers: Readonly<Record<string, string>> | undefined) =>
      Effect.forEach(Object.entries(headers ?? {}), ([name, value]) =>
        isSealed(value)
          ? InvalidInput.one(["webhook", "headers", name], `A header value must not start with ${SEALED_PREFIX}`, "secret_reserved")
          : Effect.void, { discard: true })

    /** The workspace's integrations as its clients see them (helpdesk secrets masked). */
    const list = Effect.fn("Integrations.list")(function*(workspaceId: WorkspaceId) {
      return (yield* repo.listByWorkspace(workspaceId)).map(masked)
    }, orDieSql)

    /**
     * The integration, if it belongs to the workspace; another workspace's answers 404 (docs/api.md).
     * With its secrets, for Parley's own use: answer clients with `masked`.
     */
    const find = Effect.fn("Integrations.find")(function*(workspaceId: WorkspaceId, id: IntegrationId) {
      return yield* repo.findInWorkspace({ workspaceId, id }).pipe(Effect.flatMap(found))
    }, orDieSql)

    const checkTones = (workspaceId: WorkspaceId, settings: IntegrationSettings) =>
      Effect.forEach(["toneId", "firstResponseToneId"] as const, (field) => {
        const toneId = settings[field]
        return toneId === null ? Effect.void : workspaces.findTone(workspaceId, toneId).pipe(
          Effect.flatMap(Option.match({
            onNone: () =>
              InvalidInput.one([field], "Tone not found in this workspace", "tone_not_found"),
            onSome: () => Effect.void
          }))
        )
      }, { discard: true })

    const create = Effect.fn("Integrations.create")(function*(workspaceId: WorkspaceId, input: NewIntegration) {
      yield* workspaces.get(workspaceId)
      yield* checkUrl(input.webhook.url)
      yield* checkHeaders(input.webhook.headers)
      const channelsSettings = yield* unmask(input.channelsSettings, {})
      yield* checkTimers(channelsSettings)
      yield* checkLanguageSetting(channelsSettings)
      yield* checkCustomerDataSetting(channelsSettings)
      const settings: IntegrationSettings = {
        name: input.name,
        supportedFeatures: { ...defaultFeatures, ...input.supportedFeatures },
        toneId: null,
        firstResponseToneId: null,
        channelsSettings,
        webhook: input.webhook,
        webhookEnabled: true
      }
      return masked(yield* repo.insert({ workspaceId, integration: input.integration, settings }))
    }, orDieSql)

    /** A partial update (docs/api.md), read-modify-write under the integration's row lock. */
    const updateSettings = Effect.fn("Integrations.updateSettings")(
      function*(workspaceId: WorkspaceId, id: IntegrationId, patch: IntegrationSettingsPatch) {
        return yield* Effect.gen(function*() {
          const current = yield* repo.lock({ workspaceId, id }).pipe(Effect.flatMap(found))
          if (patch.webhook?.url !== undefined) yield* checkUrl(patch.webhook.url)
          yield* checkHeaders(patch.webhook?.headers)
          const channelsSettings = patch.channelsSettings === undefined
            ? undefined
            : yield* unmask(patch.channelsSettings, current.settings.channelsSettings)
          if (channelsSettings !== undefined) {
            yield* checkTimers(channelsSettings)
            yield* checkLanguageSetting(channelsSettings)
            yield* checkCustomerDataSetting(channelsSettings)
          }
          const patched = applyPatch(current.settings, channelsSettings === undefined ? patch : { ...patch, channelsSettings })
          // A new receiver URL is a new chance: deliveries disabled by a 410 resume.
          const settings = patch.webhook?.url !== undefined && patch.webhook.url !== current.settings.webhook.url
            ? { ...patched, webhookEnabled: true }
            : patched
          yield* checkTones(workspaceId, settings)
          return masked(yield* repo.updateSettings({ id, settings }))
        }).pipe(sql.withTransaction)
      },
      orDieSql
    )

    return { list, find, create, updateSettings } as const
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
  static readonly layer = this.layerWithoutDependencies.pipe(Layer.provide([IntegrationsRepo.layer, Workspaces.layer]))
}
