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
  originAt: Schema.NullOr(Schema.DateTimeUtcFromDate)
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

    /** Queues the event again; its retry window restarts now. */
    const markReplayed = (id: EventId) =>
      sql`UPDATE events SET status = 'pending', next_attempt_at = now(), replayed_at = now(), dead_at = NULL
          WHERE id = ${id}`.pipe(Effect.asVoid)

    /** Brings a waiting retry forward to now. */
    const hurryPendingJob = (id: EventId) =>
      sql<{ readonly id: string }>`
        UPDATE jobs SET run_at = now()
        WHERE kind = 'deliver_event' AND status = 'pending' AND payload->>'eventId' = ${id}
        RETURNING id`.pipe(Effect.map((rows) => rows.length > 0))

    /** Retires the event's waiting job, so that a fresh one (queued after it) replaces it. */
    const supersedePendingJob = (id: EventId) =>
      sql`UPDATE jobs SET status = 'done', last_error = 'superseded by a replay', finished_at = now()
          WHERE kind = 'deliver_event' AND status = 'pending' AND payload->>'eventId' = ${id}`.pipe(Effect.asVoid)

    return {
      supersedePendingJob,
      insert,
      findById,
      findInIntegration,
      list,
      attempts,
      recordAttempt,
      markDelivered,
      markFailed,
      markDead,
      markReplayed,
      hurryPendingJob
    } as const
  })
}) {}
