import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { IntegrationId, WorkspaceId } from "../Domain/Ids.js"
import { Integration, IntegrationSettings } from "../Domain/Integration.js"

export class IntegrationsRepo extends Effect.Service<IntegrationsRepo>()("Parley/IntegrationsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const insert = SqlSchema.single({
      Request: Integration.insert,
      Result: Integration,
      execute: (row) => sql`INSERT INTO integrations ${sql.insert(row)} RETURNING *`
    })

    const listByWorkspace = SqlSchema.findAll({
      Request: WorkspaceId,
      Result: Integration,
      execute: (workspaceId) => sql`SELECT * FROM integrations WHERE workspace_id = ${workspaceId} ORDER BY created_at, id`
    })

    const findInWorkspace = SqlSchema.findOne({
      Request: Schema.Struct({ workspaceId: WorkspaceId, id: IntegrationId }),
      Result: Integration,
      execute: ({ id, workspaceId }) => sql`SELECT * FROM integrations WHERE id = ${id} AND workspace_id = ${workspaceId}`
    })

    const findById = SqlSchema.findOne({
      Request: IntegrationId,
      Result: Integration,
      execute: (id) => sql`SELECT * FROM integrations WHERE id = ${id}`
    })

    /** The integration, locked for the rest of the transaction: settings updates are read-modify-write. */
    const lock = SqlSchema.findOne({
      Request: Schema.Struct({ workspaceId: WorkspaceId, id: IntegrationId }),
      Result: Integration,
      execute: ({ id, workspaceId }) =>
        sql`SELECT * FROM integrations WHERE id = ${id} AND workspace_id = ${workspaceId} FOR UPDATE`
    })

    const updateSettings = SqlSchema.single({
      Request: Schema.Struct({ id: IntegrationId, settings: Schema.parseJson(IntegrationSettings) }),
      Result: Integration,
      execute: ({ id, settings }) =>
        sql`UPDATE integrations SET settings = ${settings}::jsonb, updated_at = now() WHERE id = ${id} RETURNING *`
    })

    /** Turns deliveries to the integration's webhook off (a 410 Gone) or back on. */
    const setWebhookEnabled = (id: IntegrationId, enabled: boolean) =>
      sql`UPDATE integrations
          SET settings = jsonb_set(settings, '{webhookEnabled}', ${JSON.stringify(enabled)}::jsonb), updated_at = now()
          WHERE id = ${id}`.pipe(Effect.asVoid)

    return { insert, listByWorkspace, findInWorkspace, findById, lock, updateSettings, setWebhookEnabled } as const
  })
}) {}
