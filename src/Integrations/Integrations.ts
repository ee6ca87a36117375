/** Integrations of a workspace and their settings (spec 2.3–2.5, PRODUCT.md §4). */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as AppConfig from "../Config.js"
import { webhookUrlProblem } from "../Delivery/Ssrf.js"
import { InvalidInput, NotFound } from "../Domain/Errors.js"
import type { IntegrationId, WorkspaceId } from "../Domain/Ids.js"
import {
  applyPatch,
  defaultFeatures,
  type IntegrationSettings,
  type IntegrationSettingsPatch,
  type NewIntegration
} from "../Domain/Integration.js"
import { orDieSql } from "../Sql.js"
import { Workspaces } from "../Workspaces/Workspaces.js"
import { IntegrationsRepo } from "./Repo.js"

const integrationNotFound = new NotFound({ detail: "Integration not found" })

const found = Option.match({
  onNone: () => Effect.fail(integrationNotFound),
  onSome: <A>(integration: A) => Effect.succeed(integration)
})

export class Integrations extends Effect.Service<Integrations>()("Parley/Integrations", {
  dependencies: [IntegrationsRepo.Default, Workspaces.Default],
  effect: Effect.gen(function*() {
    const repo = yield* IntegrationsRepo
    const workspaces = yield* Workspaces
    const sql = yield* SqlClient.SqlClient
    const mode = yield* AppConfig.Mode

    /** In production, a webhook URL whose host is an internal address is refused (SSRF, PRODUCT.md §5). */
    const checkUrl = (url: string) => {
      const problem = webhookUrlProblem(url, mode)
      return problem === undefined ? Effect.void : InvalidInput.one(["webhook", "url"], problem.msg, problem.type)
    }

    const list = Effect.fn("Integrations.list")(function*(workspaceId: WorkspaceId) {
      return yield* repo.listByWorkspace(workspaceId)
    }, orDieSql)

    /** The integration, if it belongs to the workspace; another workspace's answers 404 (PRODUCT.md §2). */
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
      const settings: IntegrationSettings = {
        name: input.name,
        supportedFeatures: { ...defaultFeatures, ...input.supportedFeatures },
        toneId: null,
        firstResponseToneId: null,
        channelsSettings: input.channelsSettings,
        webhook: input.webhook,
        webhookEnabled: true
      }
      return yield* repo.insert({ workspaceId, integration: input.integration, settings })
    }, orDieSql)

    /** A partial update (PRODUCT.md §4), read-modify-write under the integration's row lock. */
    const updateSettings = Effect.fn("Integrations.updateSettings")(
      function*(workspaceId: WorkspaceId, id: IntegrationId, patch: IntegrationSettingsPatch) {
        return yield* Effect.gen(function*() {
          const current = yield* repo.lock({ workspaceId, id }).pipe(Effect.flatMap(found))
          if (patch.webhook?.url !== undefined) yield* checkUrl(patch.webhook.url)
          const patched = applyPatch(current.settings, patch)
          // A new receiver URL is a new chance: deliveries disabled by a 410 resume.
          const settings = patch.webhook?.url !== undefined && patch.webhook.url !== current.settings.webhook.url
            ? { ...patched, webhookEnabled: true }
            : patched
          yield* checkTones(workspaceId, settings)
          return yield* repo.updateSettings({ id, settings })
        }).pipe(sql.withTransaction)
      },
      orDieSql
    )

    return { list, find, create, updateSettings } as const
  })
}) {}
