import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { DeliveryStatus } from "../Domain/Delivery.js"
import { ConversationId, EventId, IntegrationId, WorkspaceId } from "../Domain/Ids.js"

export const EventRow = Schema.Struct({
  id: EventId,
  workspaceId: WorkspaceId,
  integrationId: IntegrationId,
  conversationId: Schema.NullOr(ConversationId),
  kind: Schema.String,
  body: Schema.String,
  status: DeliveryStatus,
  attempts: Schema.Number,
  lastStatusCode: Schema.NullOr(Schema.Number),
  lastError: Schema.NullOr(Schema.String),
  nextAttemptAt: Schema.NullOr(Schema.DateTimeUtcFromDate),
  createdAt: Schema.DateTimeUtcFromDate,
  deliveredAt: Schema.NullOr(Schema.DateTimeUtcFromDate),
  deadAt: Schema.NullOr(Schema.DateTimeUtcFromDate),
  replayedAt: Schema.NullOr(Schema.DateTimeUtcFromDate),
  originAt: Schema.NullOr(Schema.DateTimeUtcFromDate),
  generation: Schema.Number
})
export type EventRow = typeof EventRow.Type

export const AttemptRow = Schema.Struct({
  eventId: EventId,
  attempt: Schema.Number,
  startedAt: Schema.DateTimeUtcFromDate,
  latencyMs: Schema.Number,
  statusCode: Schema.NullOr(Schema.Number),
  error: Schema.NullOr(Schema.String),
  responseSnippet: Schema.NullOr(Schema.String),
  nextRetryAt: Schema.NullOr(Schema.DateTimeUtcFromDate)
})
export type AttemptRow = typeof AttemptRow.Type

const ListRequest = Schema.Struct({
  integrationId: IntegrationId,
  statuses: Schema.Array(DeliveryStatus),
  since: Schema.NullOr(Schema.DateTimeUtcFromDate),
  limit: Schema.Number
})

export class DeliveriesRepo extends Effect.Service<DeliveriesRepo>()("Parley/DeliveriesRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const insert = SqlSchema.void({
      Request: Schema.Struct({
        id: EventId,
        workspaceId: WorkspaceId,
        integrationId: IntegrationId,
        conversationId: Schema.NullOr(ConversationId),
        kind: Schema.String,
        body: Schema.String,
        originAt: Schema.NullOr(Schema.DateTimeUtcFromDate)
      }),
      execute: (row) => sql`INSERT INTO events ${sql.insert(row)}`
    })

    const findById = SqlSchema.findOne({
      Request: EventId,
      Result: EventRow,
      execute: (id) => sql`SELECT * FROM events WHERE id = ${id}`
    })

    /** The event, locked for the rest of the transaction. */
    const lock = SqlSchema.findOne({
      Request: EventId,
      Result: EventRow,
      execute: (id) => sql`SELECT * FROM events WHERE id = ${id} FOR UPDATE`
    })

    const findInIntegration = SqlSchema.findOne({
      Request: Schema.Struct({ integrationId: IntegrationId, id: EventId }),
      Result: EventRow,
      execute: ({ id, integrationId }) =>
        sql`SELECT * FROM events WHERE id = ${id} AND integration_id = ${integrationId}`
    })

    const list = SqlSchema.findAll({
      Request: ListRequest,
      Result: EventRow,
      execute: ({ integrationId, limit, since, statuses }) =>
        sql`SELECT * FROM events
            WHERE integration_id = ${integrationId}
              AND ${statuses.length > 0 ? sql.in("status", statuses) : sql`true`}
              AND ${since === null ? sql`true` : sql`created_at >= ${since}`}
            ORDER BY created_at DESC, id LIMIT ${limit}`
    })

    const attempts = SqlSchema.findAll({
      Request: EventId,
      Result: AttemptRow,
      execute: (eventId) => sql`SELECT * FROM delivery_attempts WHERE event_id = ${eventId} ORDER BY id`
    })

    const recordAttempt = SqlSchema.void({
      Request: AttemptRow,
      execute: (row) => sql`INSERT INTO delivery_attempts ${sql.insert(row)}`
    })

    const markDelivered = (id: EventId, attempts: number, statusCode: number) =>
      sql`UPDATE events SET status = 'delivered', attempts = ${attempts}, last_status_code = ${statusCode},
              last_error = NULL, next_attempt_at = NULL, delivered_at = now()
          WHERE id = ${id}`.pipe(Effect.asVoid)

    const markFailed = (
      id: EventId,
      update: {
        readonly attempts: number
        readonly statusCode: number | null
        readonly error: string
        readonly nextAttemptAt: Date
      }
    ) =>
      sql`UPDATE events SET status = 'failed', attempts = ${update.attempts}, last_status_code = ${update.statusCode},
              last_error = ${update.error}, next_attempt_at = ${update.nextAttemptAt}
          WHERE id = ${id}`.pipe(Effect.asVoid)

    const markDead = (
      id: EventId,
      update: { readonly attempts: number; readonly statusCode: number | null; readonly error: string }
    ) =>
      sql`UPDATE events SET status = 'dead', attempts = ${update.attempts}, last_status_code = ${update.statusCode},
              last_error = ${update.error}, next_attempt_at = NULL, dead_at = now()
          WHERE id = ${id}`.pipe(Effect.asVoid)

    /** An attempt that was in flight during a replay: counted and recorded, the status left to the replay. */
    const markOvertaken = (
      id: EventId,
      update: { readonly attempts: number; readonly statusCode: number | null; readonly error: string | null }
    ) =>
      sql`UPDATE events SET attempts = ${update.attempts}, last_status_code = ${update.statusCode},
              last_error = ${update.error}
          WHERE id = ${id}`.pipe(Effect.asVoid)

    /** Queues the event again: pending now, in a new retry window, a new generation. */
    const markReplayed = SqlSchema.single({
      Request: EventId,
      Result: EventRow,
      execute: (id) =>
        sql`UPDATE events SET status = 'pending', next_attempt_at = now(), replayed_at = now(), dead_at = NULL,
                generation = generation + 1
            WHERE id = ${id} RETURNING *`
    })

    /** Events given up and not replayed since (the dead-letter gauge). */
    const countDead = sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM events WHERE status = 'dead'`.pipe(
      Effect.map((rows) => rows[0]?.n ?? 0)
    )

    return {
      countDead,
      insert,
      findById,
      lock,
      findInIntegration,
      list,
      attempts,
      recordAttempt,
      markDelivered,
      markFailed,
      markDead,
      markOvertaken,
      markReplayed
    } as const
  })
}) {}
