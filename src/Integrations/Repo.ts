import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { IntegrationId, WorkspaceId } from "../Domain/Ids.js"
import { IntegrationSettings } from "../Domain/Integration.js"

export const IntegrationRow = Schema.Struct({
  id: IntegrationId,
  workspaceId: WorkspaceId,
  kind: Schema.String,
  settings: IntegrationSettings,
  createdAt: Schema.DateTimeUtcFromDate
})
export type IntegrationRow = typeof IntegrationRow.Type

const Settings = Schema.parseJson(IntegrationSettings)

export class IntegrationsRepo extends Effect.Service<IntegrationsRepo>()("Parley/IntegrationsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const insert = SqlSchema.single({
      Request: Schema.Struct({ workspaceId: WorkspaceId, kind: Schema.String, settings: Settings }),
      Result: IntegrationRow,
      execute: ({ kind, settings, workspaceId }) =>
        sql`INSERT INTO integrations (workspace_id, kind, settings)
            VALUES (${workspaceId}, ${kind}, ${settings}::jsonb)
            RETURNING id, workspace_id, kind, settings, created_at`
    })

    const listByWorkspace = SqlSchema.findAll({
      Request: WorkspaceId,
      Result: IntegrationRow,
      execute: (workspaceId) =>
        sql`SELECT id, workspace_id, kind, settings, created_at FROM integrations
            WHERE workspace_id = ${workspaceId} ORDER BY created_at, id`
    })

    const findInWorkspace = SqlSchema.findOne({
      Request: Schema.Struct({ workspaceId: WorkspaceId, id: IntegrationId }),
      Result: IntegrationRow,
      execute: ({ id, workspaceId }) =>
        sql`SELECT id, workspace_id, kind, settings, created_at FROM integrations
            WHERE id = ${id} AND workspace_id = ${workspaceId}`
    })

    const findById = SqlSchema.findOne({
      Request: IntegrationId,
      Result: IntegrationRow,
      execute: (id) => sql`SELECT id, workspace_id, kind, settings, created_at FROM integrations WHERE id = ${id}`
    })

    const updateSettings = SqlSchema.single({
      Request: Schema.Struct({ id: IntegrationId, settings: Settings }),
      Result: IntegrationRow,
      execute: ({ id, settings }) =>
        sql`UPDATE integrations SET settings = ${settings}::jsonb, updated_at = now() WHERE id = ${id}
            RETURNING id, workspace_id, kind, settings, created_at`
    })

    /** Locks the integration's row for the rest of the transaction: settings updates are read-modify-write. */
    const lock = (id: IntegrationId) => sql`SELECT id FROM integrations WHERE id = ${id} FOR UPDATE`.pipe(Effect.asVoid)

    /** Turns deliveries to the integration's webhook off (a 410 Gone) or back on. */
    const setWebhookEnabled = (id: IntegrationId, enabled: boolean) =>
      sql`UPDATE integrations
          SET settings = jsonb_set(settings, '{webhookEnabled}', ${JSON.stringify(enabled)}::jsonb), updated_at = now()
          WHERE id = ${id}`.pipe(Effect.asVoid)

    return { insert, listByWorkspace, findInWorkspace, findById, updateSettings, lock, setWebhookEnabled } as const
  })
}) {}
