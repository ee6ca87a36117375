import * as SqlClient from "effect/sql/SqlClient"
import * as SqlSchema from "effect/sql/SqlSchema"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Struct from "effect/Struct"
import { Delivery, DeliveryAttempt, DeliveryStatus } from "../Domain/Delivery.js"
import { ConversationId, EventId, IntegrationId } from "../Domain/Ids.js"

const ListRequest = Schema.Struct({
  integrationId: IntegrationId,
  statuses: Schema.Array(DeliveryStatus),
  since: Schema.NullOr(Schema.DateTimeUtcFromDate),
  limit: Schema.Number
})

/** The delivery job kind (`Jobs.ts` defines it with this name): its live job holds the event's schedule. */
export const DELIVER_EVENT = "deliver_event"

export class DeliveriesRepo extends Context.Service<DeliveriesRepo>()("Parley/DeliveriesRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /**
     * Events as `Delivery` rows: the columns, the kind as `event`, and the next attempt read from the
     * event's live job (a probe of the jobs' live-key index). Shown, as the wire always showed it, while
     * the event is pending or failed after an attempt or a replay: a new event's first attempt is not a
     * next one (null, as once delivered or dead).
     */
    const deliveries = sql`
      SELECT e.*, e.kind AS event,
             CASE WHEN e.status IN ('pending', 'failed') AND (e.attempts > 0 OR e.replayed_at IS NOT NULL)
             THEN (
               SELECT j.run_at FROM jobs j
               WHERE j.kind = ${DELIVER_EVENT} AND j.key = e.id::text AND j.status IN ('pending', 'running'))
             END AS next_attempt_at
      FROM events e`

    const insert = SqlSchema.void({
      Request: Delivery.insert,
      // The column is `kind`; the model (and the wire) call it `event`.
      execute: ({ event, ...row }) => sql`INSERT INTO events ${sql.insert({ ...row, kind: event })}`
    })

    const findByIds = SqlSchema.findAll({
      Request: Schema.Array(EventId),
      Result: Delivery,
      execute: (ids) => sql`${deliveries} WHERE e.id IN ${sql.in(ids)}`
    })

    /** The event, locked for the rest of the transaction (the sender and replays take this lock). */
    const lock = SqlSchema.findOneOption({
      Request: EventId,
      Result: Delivery,
      execute: (id) => sql`${deliveries} WHERE e.id = ${id} FOR UPDATE OF e`
    })

    const findInIntegration = SqlSchema.findOneOption({
      Request: Schema.Struct({ integrationId: IntegrationId, id: EventId }),
      Result: Delivery,
      execute: ({ id, integrationId }) => sql`${deliveries} WHERE e.id = ${id} AND e.integration_id = ${integrationId}`
    })

    const list = SqlSchema.findAll({
      Request: ListRequest,
      Result: Delivery,
      execute: ({ integrationId, limit, since, statuses }) =>
        sql`${deliveries}
            WHERE e.integration_id = ${integrationId}
              AND ${statuses.length > 0 ? sql.in("e.status", statuses) : sql`true`}
              AND ${since === null ? sql`true` : sql`e.created_at >= ${since}`}
            ORDER BY e.created_at DESC, e.seq DESC, e.id LIMIT ${limit}`
    })

    const attempts = SqlSchema.findAll({
      Request: EventId,
      Result: DeliveryAttempt,
      execute: (eventId) => sql`SELECT * FROM delivery_attempts WHERE event_id = ${eventId} ORDER BY id`
    })

    const recordAttempt = SqlSchema.void({
      Request: DeliveryAttempt.insert,
      execute: (row) => sql`INSERT INTO delivery_attempts ${sql.insert(row)}`
    })

    /** Writes an attempt's outcome onto the event. */
    const update = SqlSchema.void({
      Request: Schema.Struct(Delivery.update.fields).mapFields(
        Struct.pick(["id", "status", "attempts", "lastStatusCode", "lastError", "deliveredAt", "deadAt"])
      ),
      execute: (row) => sql`UPDATE events SET ${sql.update(row, ["id"])} WHERE id = ${row.id}`
    })

    /**
     * Attempts in one statement, without a transaction: each event becomes delivered (no `error`) or
     * failed, and its attempt (with `nextRetryAt`: when its job will be due) is recorded under the
     * event's next attempt number, if the event is still of `generation` and not settled (the row locks
     * order this with replays, which take them and bump the generation; they are taken in replay-all's
     * order, so the two never wait for each other in a cycle). The events a replay moved on are missing from the answer: the caller then
     * settles them under the lock.
     */
    const recordAttempts = SqlSchema.findAll({
      Request: Schema.Array(Schema.Struct({
        id: EventId,
        generation: Schema.Number,
        startedAt: Schema.DateTimeUtc,
        latencyMs: Schema.Number,
        statusCode: Schema.NullOr(Schema.Number),
        /** Null: delivered. */
        error: Schema.NullOr(Schema.String),
        responseSnippet: Schema.NullOr(Schema.String),
        /** A failed attempt's next one. */
        nextRetryAt: Schema.NullOr(Schema.DateTimeUtc),
        at: Schema.DateTimeUtc
      })),
      Result: Schema.Struct({ eventId: EventId, attempt: Schema.Number }),
      execute: (rows) =>
        sql`WITH attempt AS (
              SELECT * FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS a(
                id uuid, generation integer, "startedAt" timestamptz, "latencyMs" integer, "statusCode" integer,
                error text, "responseSnippet" text, "nextRetryAt" timestamptz, at timestamptz)),
            locked AS (
              SELECT e.id FROM events e JOIN attempt a ON a.id = e.id AND a.generation = e.generation
              WHERE e.status NOT IN ('delivered', 'dead')
              ORDER BY e.created_at DESC, e.seq DESC, e.id
              FOR UPDATE OF e),
            recorded AS (
              UPDATE events e SET status = CASE WHEN a.error IS NULL THEN 'delivered' ELSE 'failed' END,
                  attempts = e.attempts + 1, last_status_code = a."statusCode", last_error = a.error,
                  delivered_at = CASE WHEN a.error IS NULL THEN a.at ELSE e.delivered_at END
              FROM attempt a
              WHERE e.id = a.id AND e.generation = a.generation AND e.id IN (SELECT id FROM locked)
                AND e.status NOT IN ('delivered', 'dead')
              RETURNING e.id, e.attempts)
            INSERT INTO delivery_attempts (event_id, attempt, started_at, latency_ms, status_code, error,
                                           response_snippet, next_retry_at)
            SELECT r.id, r.attempts, a."startedAt", a."latencyMs", a."statusCode", a.error, a."responseSnippet",
                   a."nextRetryAt"
            FROM recorded r JOIN attempt a ON a.id = r.id
            RETURNING event_id, attempt`
    })

    /**
     * The event pending again, in a new retry window, a new generation; when it runs is its job's
     * (`Deliveries.replay` brings the job forward or queues one).
     */
    const markReplayed = SqlSchema.findOneOption({
      Request: Schema.Struct({ integrationId: IntegrationId, id: EventId }),
      // What queueing its job needs.
      Result: Schema.Struct({ conversationId: Schema.NullOr(ConversationId) }),
      execute: ({ id, integrationId }) =>
        sql`UPDATE events SET status = 'pending', replayed_at = now(), dead_at = NULL, generation = generation + 1
            WHERE id = ${id} AND integration_id = ${integrationId}
            RETURNING conversation_id`
    })

    /**
     * Every dead or failed event of the integration since `since` (the newest `limit`), set pending in
     * a new retry window, in one statement holding their row locks to the end of the transaction;
     * oldest first (in the order they were created: `seq` among those of one millisecond).
     */
    const markAllReplayed = SqlSchema.findAll({
      Request: Schema.Struct({ integrationId: IntegrationId, since: Schema.DateTimeUtcFromDate, limit: Schema.Number }),
      // Only what queueing their jobs needs: thousands of bodies read back and decoded took longer than the update.
      Result: Schema.Struct({ id: EventId, integrationId: IntegrationId, conversationId: Schema.NullOr(ConversationId) }),
      execute: ({ integrationId, limit, since }) =>
        sql`WITH chosen AS (
              SELECT id FROM events
              WHERE integration_id = ${integrationId} AND status IN ('dead', 'failed') AND created_at >= ${since}
                -- A message's deltas are stale once its final message is out: replayed one by one only.
                AND kind <> 'message_delta'
              ORDER BY created_at DESC, seq DESC, id LIMIT ${limit}
              FOR UPDATE),
            replayed AS (
              UPDATE events SET status = 'pending', replayed_at = now(), dead_at = NULL, generation = generation + 1
              WHERE id IN (SELECT id FROM chosen) RETURNING id, integration_id, conversation_id, created_at, seq)
            SELECT id, integration_id, conversation_id FROM replayed ORDER BY created_at, seq, id`
    })

    /** The conversation's `message_delta` events not yet attempted: what the final message supersedes. */
    const pendingDeltas = SqlSchema.findAll({
      Request: ConversationId,
      Result: Schema.Struct({ id: EventId }),
      execute: (conversationId) =>
        sql`SELECT id FROM events
            WHERE conversation_id = ${conversationId} AND kind = 'message_delta' AND status = 'pending' AND attempts = 0`
    })

    /**
     * Gives up the deltas among `ids` whose job is gone (cancelled): a delta whose attempt is under way
     * keeps its job, and its attempt is recorded as any other.
     */
    const supersedeDeltas = SqlSchema.findAll({
      Request: Schema.Array(EventId),
      Result: Schema.Struct({ id: EventId }),
      execute: (ids) =>
        sql`UPDATE events e SET status = 'dead', dead_at = now(), last_error = 'Superseded by the final message'
            WHERE e.id IN ${sql.in(ids)} AND e.status = 'pending' AND e.attempts = 0
              AND NOT EXISTS (
                SELECT 1 FROM jobs j
                WHERE j.kind = ${DELIVER_EVENT} AND j.key = e.id::text AND j.status IN ('pending', 'running'))
            RETURNING e.id`
    })

    /** Events given up and not replayed since (the dead-letter gauge). */
    const countDead = sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM events WHERE status = 'dead'`.pipe(
      Effect.map((rows) => rows[0]?.n ?? 0)
    )

    return {
      insert,
      findByIds,
      lock,
      findInIntegration,
      list,
      attempts,
      recordAttempt,
      recordAttempts,
      update,
      markReplayed,
      markAllReplayed,
      pendingDeltas,
      supersedeDeltas,
      countDead
    } as const
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
  static readonly layer = this.layerWithoutDependencies
}
