/**
 * The durable job queue: jobs are rows in PostgreSQL. `enqueue` runs on the caller's connection, so
 * inside a transaction the job exists exactly when the data that caused it does.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { ConversationId, JobId } from "../Domain/Ids.js"

export const JOBS_CHANNEL = "parley_jobs"

export interface NewJob {
  readonly kind: string
  readonly payload: unknown
  readonly conversationId?: ConversationId | undefined
  /** Delay before the job may run, in milliseconds. */
  readonly delayMillis?: number | undefined
}

/** W3C trace context of the current span, so the job's span can continue the request's trace. */
const currentTraceContext = Effect.map(Effect.currentSpan, (span) => ({
  traceparent: `00-${span.traceId}-${span.spanId}-${span.sampled ? "01" : "00"}`
})).pipe(Effect.option, Effect.map(Option.getOrNull))

export class JobQueue extends Effect.Service<JobQueue>()("Parley/JobQueue", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const enqueue = Effect.fn("JobQueue.enqueue")(function*(job: NewJob) {
      const traceContext = yield* currentTraceContext
      const delaySeconds = (job.delayMillis ?? 0) / 1000
      const rows = yield* sql<{ readonly id: JobId }>`
        INSERT INTO jobs (kind, payload, conversation_id, run_at, trace_context)
        VALUES (${job.kind}, ${JSON.stringify(job.payload)}::jsonb, ${job.conversationId ?? null},
                now() + make_interval(secs => ${delaySeconds}), ${traceContext === null ? null : JSON.stringify(traceContext)}::jsonb)
        RETURNING id`
      // Delivered at commit; workers listening wake up at once instead of at their next poll.
      yield* sql`SELECT pg_notify(${JOBS_CHANNEL}, ${job.kind})`
      yield* Effect.annotateCurrentSpan({ "job.kind": job.kind })
      return rows[0]!.id
    }, Effect.orDie)

    return { enqueue } as const
  })
}) {}
