import * as SqlClient from "effect/sql/SqlClient"
import * as SqlSchema from "effect/sql/SqlSchema"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { AiProviderName, AiSettings } from "../Domain/AiSettings.js"
import { WorkspaceId } from "../Domain/Ids.js"
import { DbNumber } from "../Domain/Primitives.js"

/** A row of `ai_usage` (its counts are bigint columns: a JS `bigint` from the driver, see `DbNumber`). */
const UsageRow = Schema.Struct({
  day: Schema.String,
  provider: AiProviderName,
  model: Schema.String,
  inputTokens: DbNumber,
  outputTokens: DbNumber,
  requests: DbNumber
})

export class AiSettingsRepo extends Context.Service<AiSettingsRepo>()("Parley/AiSettingsRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const find = SqlSchema.findOneOption({
      Request: WorkspaceId,
      Result: AiSettings,
      execute: (workspaceId) => sql`SELECT * FROM workspace_ai_settings WHERE workspace_id = ${workspaceId}`
    })

    /** The row under lock, for a read-modify-write (run it in a transaction). */
    const lock = SqlSchema.findOneOption({
      Request: WorkspaceId,
      Result: AiSettings,
      execute: (workspaceId) => sql`SELECT * FROM workspace_ai_settings WHERE workspace_id = ${workspaceId} FOR UPDATE`
    })

    const upsert = SqlSchema.findOne({
      Request: AiSettings.insert,
      Result: AiSettings,
      execute: (row) =>
        sql`INSERT INTO workspace_ai_settings ${sql.insert(row)}
            ON CONFLICT (workspace_id) DO UPDATE SET
              provider = EXCLUDED.provider,
              model = EXCLUDED.model,
              base_url = EXCLUDED.base_url,
              open_ai_api = EXCLUDED.open_ai_api,
              api_key = EXCLUDED.api_key,
              updated_at = EXCLUDED.updated_at
            RETURNING *`
    })

    const remove = SqlSchema.findOneOption({
      Request: WorkspaceId,
      Result: Schema.Struct({ workspaceId: WorkspaceId }),
      execute: (workspaceId) =>
        sql`DELETE FROM workspace_ai_settings WHERE workspace_id = ${workspaceId} RETURNING workspace_id`
    })

    /** Adds to the day's row of this workspace, provider and model (created at zero when missing). */
    const addUsage = SqlSchema.void({
      Request: Schema.Struct({
        workspaceId: WorkspaceId,
        day: Schema.String,
        provider: AiProviderName,
        model: Schema.String,
        inputTokens: Schema.Int,
        outputTokens: Schema.Int,
        requests: Schema.Int
      }),
      execute: (row) =>
        sql`INSERT INTO ai_usage ${sql.insert(row)}
            ON CONFLICT (workspace_id, day, provider, model) DO UPDATE SET
              input_tokens = ai_usage.input_tokens + EXCLUDED.input_tokens,
              output_tokens = ai_usage.output_tokens + EXCLUDED.output_tokens,
              requests = ai_usage.requests + EXCLUDED.requests`
    })

    const usage = SqlSchema.findAll({
      Request: Schema.Struct({ workspaceId: WorkspaceId, from: Schema.String, to: Schema.String }),
      Result: UsageRow,
      execute: ({ from, to, workspaceId }) =>
        sql`SELECT day::text AS day, provider, model, input_tokens, output_tokens, requests
            FROM ai_usage
            WHERE workspace_id = ${workspaceId} AND day BETWEEN ${from}::date AND ${to}::date
            ORDER BY day DESC, provider, model`
    })

    return { find, lock, upsert, remove, addUsage, usage } as const
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
  static readonly layer = this.layerWithoutDependencies
}
