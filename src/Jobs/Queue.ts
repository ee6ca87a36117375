/**
 * The durable job queue: jobs are rows in PostgreSQL (kind, payload, run-at, attempts, lease, status,
 * last error, the trace context of the request that created them).
 *
 * - `enqueue` runs on the caller's connection, so inside a transaction the job exists exactly when the
 *   data that caused it does, and NOTIFY wakes listening workers at commit.
 * - `claim` takes one due job with `FOR UPDATE SKIP LOCKED` in a single statement (a short
 *   transaction): instances sharing a database never take the same job. A running job whose lease
 *   expired (its worker died) is due again.
 * - Deliveries of one conversation are claimed in order: a `deliver_event` job waits while an earlier
 *   one of its conversation is pending or running.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { ConversationId, JobId } from "../Domain/Ids.js"
import { jobsClaimed, jobsEnqueued } from "../Observability/Metrics.js"

export const JOBS_CHANNEL = "parley_jobs"
export const DELIVER_EVENT = "deliver_event"

/** How long a claimed job stays a worker's without a heartbeat before others may take it. */
export const JobLease = Config.duration("JOB_LEASE").pipe(Config.withDefault(Duration.seconds(30)))

export const TraceContext = Schema.Struct({ traceparent: Schema.String })
export type TraceContext = typeof TraceContext.Type

export const Job = Schema.Struct({
  id: JobId,
  kind: Schema.String,
  payload: Schema.Unknown,
  status: Schema.Literal("pending", "running", "done", "dead"),
  attempts: Schema.Number,
  runAt: Schema.DateTimeUtcFromDate,
  traceContext: Schema.NullOr(TraceContext),
  conversationId: Schema.NullOr(ConversationId),
  createdAt: Schema.DateTimeUtcFromDate
})
export type Job = typeof Job.Type

export interface NewJob {
  readonly kind: string
  readonly payload: unknown
  readonly conversationId?: ConversationId | null | undefined
  /** Delay before the job may run. */
  readonly delay?: Duration.DurationInput | undefined
}

const columns = "id, kind, payload, status, attempts, run_at, trace_context, conversation_id, created_at"

/** W3C trace context of the current span, so the job's span can continue the request's trace. */
const currentTraceContext = Effect.currentSpan.pipe(
  Effect.map((span): TraceContext | null => ({
    traceparent: `00-${span.traceId}-${span.spanId}-${span.sampled ? "01" : "00"}`
  })),
  Effect.orElseSucceed(() => null)
)

const seconds = (duration: Duration.DurationInput) => Duration.toMillis(duration) / 1000

export class JobQueue extends Effect.Service<JobQueue>()("Parley/JobQueue", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const lease = yield* JobLease
    const cols = sql.literal(columns)

    const enqueue = Effect.fn("JobQueue.enqueue")(function*(job: NewJob) {
      const traceContext = yield* currentTraceContext
      const rows = yield* sql<{ readonly id: JobId }>`
        INSERT INTO jobs (kind, payload, conversation_id, run_at, trace_context)
        VALUES (${job.kind}, ${JSON.stringify(job.payload)}::jsonb, ${job.conversationId ?? null},
                now() + make_interval(secs => ${seconds(job.delay ?? 0)}),
                ${traceContext === null ? null : JSON.stringify(traceContext)}::jsonb)
        RETURNING id`
      // Delivered at commit: listening workers wake at once instead of at their next poll.
      yield* sql`SELECT pg_notify(${JOBS_CHANNEL}, ${job.kind})`
      yield* Effect.annotateCurrentSpan({ "job.kind": job.kind })
      yield* Metric.increment(Metric.tagged(jobsEnqueued, "kind", job.kind))
      return rows[0]!.id
    }, Effect.orDie)

    const claimOne = SqlSchema.findOne({
      Request: Schema.String,
      Result: Job,
      execute: (worker) =>
        sql`UPDATE jobs SET status = 'running', attempts = attempts + 1, locked_by = ${worker},
                locked_until = now() + make_interval(secs => ${seconds(lease)}), updated_at = now()
            WHERE id = (
              SELECT j.id FROM jobs j
              WHERE ((j.status = 'pending' AND j.run_at <= now())
                     OR (j.status = 'running' AND j.locked_until < now()))
                AND (j.kind <> ${DELIVER_EVENT} OR j.conversation_id IS NULL OR NOT EXISTS (
                  SELECT 1 FROM jobs e
                  WHERE e.kind = ${DELIVER_EVENT} AND e.conversation_id = j.conversation_id
                    AND e.seq < j.seq AND e.status IN ('pending', 'running')))
              ORDER BY j.run_at, j.seq
              LIMIT 1
              FOR UPDATE SKIP LOCKED)
            RETURNING ${cols}`
    })

    // The worker's bookkeeping statements are uninterruptible: they take milliseconds, and interrupting
    // one mid-flight makes sql-pg send pg_cancel_backend, which on a one-connection pool (PGlite) waits
    // for the very connection it means to cancel, and leaves a claim's outcome unknown.

    /** One due job for `worker`, leased to it, if any. */
    const claim = (worker: string): Effect.Effect<Option.Option<Job>> =>
      claimOne(worker).pipe(
        Effect.orDie,
        Effect.uninterruptible,
        Effect.tap(Option.match({
          onNone: () => Effect.void,
          onSome: (job) => Metric.increment(Metric.tagged(jobsClaimed, "kind", job.kind))
        })),
        Effect.withSpan("JobQueue.claim")
      )

    /** Keeps the lease while the job runs; false when the job is no longer this worker's. */
    const heartbeat = (job: Job, worker: string) =>
      sql<{ readonly id: JobId }>`
        UPDATE jobs SET locked_until = now() + make_interval(secs => ${seconds(lease)})
        WHERE id = ${job.id} AND locked_by = ${worker} AND status = 'running' RETURNING id`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie,
        Effect.uninterruptible
      )

    const complete = (job: Job, worker: string) =>
      sql`UPDATE jobs SET status = 'done', finished_at = now(), locked_until = NULL, updated_at = now()
          WHERE id = ${job.id} AND locked_by = ${worker} AND status = 'running'`.pipe(Effect.asVoid, Effect.orDie, Effect.uninterruptible)

    const retry = (job: Job, worker: string, delay: Duration.DurationInput, error: string) =>
      sql`UPDATE jobs SET status = 'pending', run_at = now() + make_interval(secs => ${seconds(delay)}),
              last_error = ${error}, locked_until = NULL, locked_by = NULL, updated_at = now()
          WHERE id = ${job.id} AND locked_by = ${worker} AND status = 'running'`.pipe(Effect.asVoid, Effect.orDie, Effect.uninterruptible)

    const bury = (job: Job, worker: string, error: string) =>
      sql`UPDATE jobs SET status = 'dead', last_error = ${error}, finished_at = now(), locked_until = NULL,
              updated_at = now()
          WHERE id = ${job.id} AND locked_by = ${worker} AND status = 'running'`.pipe(Effect.asVoid, Effect.orDie, Effect.uninterruptible)

    /** Gives a job back untouched (shutdown): due again at once, its attempt not counted. */
    const release = (job: Job, worker: string) =>
      sql`UPDATE jobs SET status = 'pending', attempts = greatest(attempts - 1, 0), locked_until = NULL,
              locked_by = NULL, updated_at = now()
          WHERE id = ${job.id} AND locked_by = ${worker} AND status = 'running'`.pipe(Effect.asVoid, Effect.orDie, Effect.uninterruptible)

    /** Pending jobs and the age of the oldest due one, for metrics and health. */
    const depth = sql<{ readonly pending: number; readonly oldestSeconds: number | null }>`
      SELECT count(*)::int AS pending,
             extract(epoch FROM now() - min(run_at) FILTER (WHERE run_at <= now()))::float8 AS oldest_seconds
      FROM jobs WHERE status IN ('pending', 'running')`.pipe(Effect.map((rows) => rows[0]!), Effect.orDie)

    return { enqueue, claim, heartbeat, complete, retry, bury, release, depth } as const
  })
}) {}
