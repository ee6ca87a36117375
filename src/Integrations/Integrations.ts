/** Integrations of a workspace and their settings (spec 2.3–2.5, PRODUCT.md §4). */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { invalid, NotFound } from "../Domain/Errors.js"
import type { IntegrationId, WorkspaceId } from "../Domain/Ids.js"
import {
  applyPatch,
  defaultFeatures,
  type Integration,
  type IntegrationSettings,
  type IntegrationSettingsPatch,
  type NewIntegration
} from "../Domain/Integration.js"
import { Workspaces } from "../Workspaces/Workspaces.js"
import { type IntegrationRow, IntegrationsRepo } from "./Repo.js"

export const toIntegration = (row: IntegrationRow): Integration => ({
  integrationId: row.id,
  integration: row.kind,
  settings: row.settings
})

const integrationNotFound = new NotFound({ detail: "Integration not found" })

export class Integrations extends Effect.Service<Integrations>()("Parley/Integrations", {
  dependencies: [IntegrationsRepo.Default, Workspaces.Default],
  effect: Effect.gen(function*() {
    const repo = yield* IntegrationsRepo
    const workspaces = yield* Workspaces
    const sql = yield* SqlClient.SqlClient

    const list = Effect.fn("Integrations.list")(function*(workspaceId: WorkspaceId) {
      const rows = yield* repo.listByWorkspace(workspaceId).pipe(Effect.orDie)
      return rows.map(toIntegration)
    })

    /** The integration, if it belongs to the workspace; another workspace's answers 404 (PRODUCT.md §2). */
    const find = Effect.fn("Integrations.find")(function*(workspaceId: WorkspaceId, id: IntegrationId) {
      return yield* repo.findInWorkspace({ workspaceId, id }).pipe(
        Effect.orDie,
        Effect.flatMap(Option.match({ onNone: () => Effect.fail(integrationNotFound), onSome: Effect.succeed }))
      )
    })

    const checkTones = Effect.fnUntraced(function*(workspaceId: WorkspaceId, settings: IntegrationSettings) {
      for (const field of ["toneId", "firstResponseToneId"] as const) {
        const toneId = settings[field]
        if (toneId === null) continue
        const tone = yield* workspaces.findTone(workspaceId, toneId)
        if (Option.isNone(tone)) {
          return yield* invalid(["body", field], "Tone not found in this workspace", "tone_not_found")
        }
      }
    })

    const create = Effect.fn("Integrations.create")(function*(workspaceId: WorkspaceId, input: NewIntegration) {
      yield* workspaces.get(workspaceId)
      const settings: IntegrationSettings = {
        name: input.name,
        supportedFeatures: { ...defaultFeatures, ...input.supportedFeatures },
        toneId: null,
        firstResponseToneId: null,
        channelsSettings: input.channelsSettings,
        webhook: input.webhook,
        webhookEnabled: true
      }
      const row = yield* repo.insert({ workspaceId, kind: input.integration, settings }).pipe(Effect.orDie)
      return toIntegration(row)
    })

    const updateSettings = Effect.fn("Integrations.updateSettings")(
      function*(workspaceId: WorkspaceId, id: IntegrationId, patch: IntegrationSettingsPatch) {
        return yield* Effect.gen(function*() {
          yield* repo.lock(id).pipe(Effect.orDie)
          const current = yield* find(workspaceId, id)
          const patched = applyPatch(current.settings, patch)
          // A new receiver URL is a new chance: deliveries disabled by a 410 resume.
          const settings = patch.webhook?.url !== undefined && patch.webhook.url !== current.settings.webhook.url
            ? { ...patched, webhookEnabled: true }
            : patched
          yield* checkTones(workspaceId, settings)
          const row = yield* repo.updateSettings({ id, settings }).pipe(Effect.orDie)
          return toIntegration(row)
        }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die))
      }
    )

    return { list, find, create, updateSettings } as const
  })
}) {}
