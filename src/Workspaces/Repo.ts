import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { TokenId, ToneId, WorkspaceId } from "../Domain/Ids.js"

export const WorkspaceRow = Schema.Struct({
  id: WorkspaceId,
  name: Schema.String,
  webhookSecret: Schema.String,
  previousWebhookSecret: Schema.NullOr(Schema.String),
  previousSecretExpiresAt: Schema.NullOr(Schema.DateTimeUtcFromDate),
  createdAt: Schema.DateTimeUtcFromDate
})
export type WorkspaceRow = typeof WorkspaceRow.Type

export const TokenRow = Schema.Struct({
  id: TokenId,
  workspaceId: WorkspaceId,
  name: Schema.NullOr(Schema.String),
  createdAt: Schema.DateTimeUtcFromDate,
  revokedAt: Schema.NullOr(Schema.DateTimeUtcFromDate)
})
export type TokenRow = typeof TokenRow.Type

export const ToneRow = Schema.Struct({
  id: ToneId,
  workspaceId: WorkspaceId,
  name: Schema.String,
  instructions: Schema.String
})
export type ToneRow = typeof ToneRow.Type

export class WorkspacesRepo extends Effect.Service<WorkspacesRepo>()("Parley/WorkspacesRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const insert = SqlSchema.single({
      Request: Schema.Struct({ name: Schema.String, webhookSecret: Schema.String }),
      Result: WorkspaceRow,
      execute: (row) => sql`INSERT INTO workspaces ${sql.insert(row)} RETURNING *`
    })

    const findById = SqlSchema.findOne({
      Request: WorkspaceId,
      Result: WorkspaceRow,
      execute: (id) => sql`SELECT * FROM workspaces WHERE id = ${id}`
    })

    const list = SqlSchema.findAll({
      Request: Schema.Void,
      Result: WorkspaceRow,
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
      Result: WorkspaceRow,
      execute: ({ id, previousExpiresAt, webhookSecret }) =>
        sql`UPDATE workspaces
            SET previous_webhook_secret = webhook_secret,
                previous_secret_expires_at = ${previousExpiresAt},
                webhook_secret = ${webhookSecret}
            WHERE id = ${id}
            RETURNING *`
    })

    const insertToken = SqlSchema.single({
      Request: Schema.Struct({ workspaceId: WorkspaceId, tokenHash: Schema.String, name: Schema.NullOr(Schema.String) }),
      Result: TokenRow,
      execute: (row) =>
        sql`INSERT INTO api_tokens ${sql.insert(row)}
            RETURNING id, workspace_id, name, created_at, revoked_at`
    })

    const findActiveToken = SqlSchema.findOne({
      Request: Schema.String,
      Result: TokenRow,
      execute: (hash) =>
        sql`SELECT id, workspace_id, name, created_at, revoked_at FROM api_tokens
            WHERE token_hash = ${hash} AND revoked_at IS NULL`
    })

    const listTokens = SqlSchema.findAll({
      Request: WorkspaceId,
      Result: TokenRow,
      execute: (workspaceId) =>
        sql`SELECT id, workspace_id, name, created_at, revoked_at FROM api_tokens
            WHERE workspace_id = ${workspaceId} ORDER BY created_at, id`
    })

    const revokeToken = SqlSchema.findOne({
      Request: TokenId,
      Result: TokenRow,
      execute: (id) =>
        sql`UPDATE api_tokens SET revoked_at = coalesce(revoked_at, now()) WHERE id = ${id}
            RETURNING id, workspace_id, name, created_at, revoked_at`
    })

    const insertTone = SqlSchema.single({
      Request: Schema.Struct({ workspaceId: WorkspaceId, name: Schema.String, instructions: Schema.String }),
      Result: ToneRow,
      execute: (row) => sql`INSERT INTO tones ${sql.insert(row)} RETURNING id, workspace_id, name, instructions`
    })

    const listTones = SqlSchema.findAll({
      Request: WorkspaceId,
      Result: ToneRow,
      execute: (workspaceId) =>
        sql`SELECT id, workspace_id, name, instructions FROM tones WHERE workspace_id = ${workspaceId}
            ORDER BY created_at, id`
    })

    const findTone = SqlSchema.findOne({
      Request: Schema.Struct({ workspaceId: WorkspaceId, id: ToneId }),
      Result: ToneRow,
      execute: ({ id, workspaceId }) =>
        sql`SELECT id, workspace_id, name, instructions FROM tones WHERE id = ${id} AND workspace_id = ${workspaceId}`
    })

    return {
      insert,
      findById,
      list,
      count,
      rotateSecret,
      insertToken,
      findActiveToken,
      listTokens,
      revokeToken,
      insertTone,
      listTones,
      findTone
    } as const
  })
}) {}
