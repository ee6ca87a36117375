import * as Model from "@effect/sql/Model"
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { TokenId, ToneId, WorkspaceId } from "../Domain/Ids.js"
import { ApiToken, Tone, Workspace } from "../Domain/Workspace.js"

export class WorkspacesRepo extends Effect.Service<WorkspacesRepo>()("Parley/WorkspacesRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const insert = SqlSchema.single({
      Request: Workspace.insert,
      Result: Workspace,
      execute: (row) => sql`INSERT INTO workspaces ${sql.insert(row)} RETURNING *`
    })

    const findById = SqlSchema.findOne({
      Request: WorkspaceId,
      Result: Workspace,
      execute: (id) => sql`SELECT * FROM workspaces WHERE id = ${id}`
    })

    const list = SqlSchema.findAll({
      Request: Schema.Void,
      Result: Workspace,
      execute: () => sql`SELECT * FROM workspaces ORDER BY created_at, id`
    })

    const count = Effect.map(
      sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM workspaces`,
      (rows) => rows[0]?.n ?? 0
    )

    const rotateSecret = SqlSchema.findOne({
      Request: Schema.Struct({
        id: WorkspaceId,
        webhookSecret: Schema.String,
        previousExpiresAt: Schema.DateTimeUtcFromDate
      }),
      Result: Workspace,
      execute: ({ id, previousExpiresAt, webhookSecret }) =>
        sql`UPDATE workspaces
            SET previous_webhook_secret = webhook_secret,
                previous_secret_expires_at = ${previousExpiresAt},
                webhook_secret = ${webhookSecret}
            WHERE id = ${id}
            RETURNING *`
    })

    /** Every workspace's id, for a pass over all of them. */
    const allIds = SqlSchema.findAll({
      Request: Schema.Void,
      Result: Schema.Struct({ id: WorkspaceId }),
      execute: () => sql`SELECT id FROM workspaces ORDER BY id`
    })

    /** The workspace's webhook secrets as stored, locked for the rest of the transaction. */
    const lockSecrets = SqlSchema.findOne({
      Request: WorkspaceId,
      Result: Schema.Struct({ webhookSecret: Schema.String, previousWebhookSecret: Schema.NullOr(Schema.String) }),
      execute: (id) =>
        sql`SELECT webhook_secret, previous_webhook_secret FROM workspaces WHERE id = ${id} FOR UPDATE`
    })

    /** Writes the webhook secrets exactly as given (sealed already). */
    const writeSecrets = (row: {
      readonly id: WorkspaceId
      readonly webhookSecret: string
      readonly previousWebhookSecret: string | null
    }) =>
      sql`UPDATE workspaces
          SET webhook_secret = ${row.webhookSecret}, previous_webhook_secret = ${row.previousWebhookSecret}
          WHERE id = ${row.id}`.pipe(Effect.asVoid)

    const insertToken = SqlSchema.single({
      Request: ApiToken.insert,
      Result: ApiToken,
      execute: (row) => sql`INSERT INTO api_tokens ${sql.insert(row)} RETURNING *`
    })

    const findActiveToken = SqlSchema.findOne({
      Request: Schema.String,
      Result: ApiToken,
      execute: (hash) => sql`SELECT * FROM api_tokens WHERE token_hash = ${hash} AND revoked_at IS NULL`
    })

    const listTokens = SqlSchema.findAll({
      Request: WorkspaceId,
      Result: ApiToken,
      execute: (workspaceId) => sql`SELECT * FROM api_tokens WHERE workspace_id = ${workspaceId} ORDER BY created_at, id`
    })

    const revokeToken = SqlSchema.findOne({
      Request: TokenId,
      Result: ApiToken,
      execute: (id) => sql`UPDATE api_tokens SET revoked_at = coalesce(revoked_at, now()) WHERE id = ${id} RETURNING *`
    })

    // Tones are plain CRUD.
    const tones = yield* Model.makeRepository(Tone, { tableName: "tones", spanPrefix: "TonesRepo", idColumn: "id" })

    const listTones = SqlSchema.findAll({
      Request: WorkspaceId,
      Result: Tone,
      execute: (workspaceId) => sql`SELECT * FROM tones WHERE workspace_id = ${workspaceId} ORDER BY created_at, id`
    })

    const findTone = SqlSchema.findOne({
      Request: Schema.Struct({ workspaceId: WorkspaceId, id: ToneId }),
      Result: Tone,
      execute: ({ id, workspaceId }) => sql`SELECT * FROM tones WHERE id = ${id} AND workspace_id = ${workspaceId}`
    })

    return {
      insert,
      findById,
      list,
      count,
      rotateSecret,
      allIds,
      lockSecrets,
      writeSecrets,
      insertToken,
      findActiveToken,
      listTokens,
      revokeToken,
      insertTone: tones.insert,
      listTones,
      findTone
    } as const
  })
}) {}
