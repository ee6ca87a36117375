import * as SqlClient from "effect/sql/SqlClient"
import * as SqlSchema from "effect/sql/SqlSchema"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { TokenId, ToneId, WorkspaceId } from "../Domain/Ids.js"
import { ApiToken, Tone, Workspace } from "../Domain/Workspace.js"

export class WorkspacesRepo extends Context.Service<WorkspacesRepo>()("Parley/WorkspacesRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const insert = SqlSchema.findOne({
      Request: Workspace.insert,
      Result: Workspace,
      execute: (row) => sql`INSERT INTO workspaces ${sql.insert(row)} RETURNING *`
    })

    const findById = SqlSchema.findOneOption({
      Request: WorkspaceId,
      Result: Workspace,
      execute: (id) => sql`SELECT * FROM workspaces WHERE id = ${id} AND deleted_at IS NULL`
    })

    const list = SqlSchema.findAll({
      Request: Schema.Void,
      Result: Workspace,
      execute: () => sql`SELECT * FROM workspaces WHERE deleted_at IS NULL ORDER BY created_at, id`
    })

    const count = Effect.map(
      sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM workspaces WHERE deleted_at IS NULL`,
      (rows) => rows[0]?.n ?? 0
    )

    const rotateSecret = SqlSchema.findOneOption({
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
            WHERE id = ${id} AND deleted_at IS NULL
            RETURNING *`
    })

    /** Every workspace's id, for a pass over all of them. */
    const allIds = SqlSchema.findAll({
      Request: Schema.Void,
      Result: Schema.Struct({ id: WorkspaceId }),
      execute: () => sql`SELECT id FROM workspaces ORDER BY id`
    })

    /** The workspace's webhook secrets as stored, locked for the rest of the transaction. */
    const lockSecrets = SqlSchema.findOneOption({
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

    /**
     * Marks the workspace deleted and revokes its tokens; the ids of its integrations (whose jobs must
     * go too). None when there is no such workspace; a workspace already marked is marked again (its
     * purge is queued again: a delete repeated after a crash finishes the work).
     */
    const markDeleted = (id: WorkspaceId) =>
      Effect.gen(function*() {
        const marked = yield* sql<{ readonly id: WorkspaceId }>`
          UPDATE workspaces SET deleted_at = coalesce(deleted_at, now()) WHERE id = ${id} RETURNING id`
        if (marked.length === 0) return Option.none()
        yield* sql`UPDATE api_tokens SET revoked_at = coalesce(revoked_at, now()) WHERE workspace_id = ${id}`
        const integrations = yield* sql<{ readonly id: string }>`SELECT id FROM integrations WHERE workspace_id = ${id}`
        return Option.some(integrations.map((row) => row.id))
      })

    /**
     * Removes up to `batch` rows of a deleted workspace's data, largest tables first (conversations
     * take their messages, events, deliveries and replies with them); the workspace row goes last, with
     * what remains (tokens, tones, integrations, settings). How many rows went; 0 when all is gone.
     */
    const purgeBatch = (id: WorkspaceId, batch: number) =>
      Effect.gen(function*() {
        const steps = [
          sql<{ readonly n: number }>`WITH gone AS (DELETE FROM conversations WHERE workspace_id = ${id} AND id IN (
            SELECT id FROM conversations WHERE workspace_id = ${id} LIMIT ${batch}) RETURNING 1)
            SELECT count(*)::int AS n FROM gone`,
          sql<{ readonly n: number }>`WITH gone AS (DELETE FROM events WHERE workspace_id = ${id} AND id IN (
            SELECT id FROM events WHERE workspace_id = ${id} LIMIT ${batch}) RETURNING 1)
            SELECT count(*)::int AS n FROM gone`,
          sql<{ readonly n: number }>`WITH gone AS (DELETE FROM customers WHERE workspace_id = ${id} AND id IN (
            SELECT id FROM customers WHERE workspace_id = ${id} LIMIT ${batch}) RETURNING 1)
            SELECT count(*)::int AS n FROM gone`,
          sql<{ readonly n: number }>`WITH gone AS (DELETE FROM kb_articles WHERE workspace_id = ${id} AND id IN (
            SELECT id FROM kb_articles WHERE workspace_id = ${id} LIMIT ${batch}) RETURNING 1)
            SELECT count(*)::int AS n FROM gone`,
          sql<{ readonly n: number }>`WITH gone AS (DELETE FROM workspaces WHERE id = ${id} AND deleted_at IS NOT NULL
            RETURNING 1) SELECT count(*)::int AS n FROM gone`
        ]
        for (const step of steps) {
          const n = (yield* step)[0]?.n ?? 0
          if (n > 0) return n
        }
        return 0
      })

    const insertToken = SqlSchema.findOne({
      Request: ApiToken.insert,
      Result: ApiToken,
      execute: (row) => sql`INSERT INTO api_tokens ${sql.insert(row)} RETURNING *`
    })

    const findActiveToken = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: ApiToken,
      execute: (hash) =>
        sql`SELECT t.* FROM api_tokens t JOIN workspaces w ON w.id = t.workspace_id
            WHERE t.token_hash = ${hash} AND t.revoked_at IS NULL AND w.deleted_at IS NULL`
    })

    /** The token, if it is the workspace's, not revoked, and the workspace not deleted. */
    const findActiveTokenById = SqlSchema.findOneOption({
      Request: Schema.Struct({ workspaceId: WorkspaceId, id: TokenId }),
      Result: ApiToken,
      execute: ({ id, workspaceId }) =>
        sql`SELECT t.* FROM api_tokens t JOIN workspaces w ON w.id = t.workspace_id
            WHERE t.id = ${id} AND t.workspace_id = ${workspaceId} AND t.revoked_at IS NULL AND w.deleted_at IS NULL`
    })

    const listTokens = SqlSchema.findAll({
      Request: WorkspaceId,
      Result: ApiToken,
      execute: (workspaceId) => sql`SELECT * FROM api_tokens WHERE workspace_id = ${workspaceId} ORDER BY created_at, id`
    })

    const revokeToken = SqlSchema.findOneOption({
      Request: TokenId,
      Result: ApiToken,
      execute: (id) => sql`UPDATE api_tokens SET revoked_at = coalesce(revoked_at, now()) WHERE id = ${id} RETURNING *`
    })

    const insertTone = SqlSchema.findOne({
      Request: Tone.insert,
      Result: Tone,
      execute: (row) => sql`INSERT INTO tones ${sql.insert(row)} RETURNING *`
    })

    const listTones = SqlSchema.findAll({
      Request: WorkspaceId,
      Result: Tone,
      execute: (workspaceId) => sql`SELECT * FROM tones WHERE workspace_id = ${workspaceId} ORDER BY created_at, id`
    })

    const findTone = SqlSchema.findOneOption({
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
      findActiveTokenById,
      revokeToken,
      markDeleted,
      purgeBatch,
      insertTone,
      listTones,
      findTone
    } as const
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
  static readonly layer = this.layerWithoutDependencies
}
