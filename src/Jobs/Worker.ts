/**
 * The supervised worker pool: `WORKER_CONCURRENCY` fibers under the layer's scope, each claiming and
 * running jobs. A fiber that fails is logged and restarted. Workers wake on `LISTEN parley_jobs` and
 * poll as a fallback (and only poll on the embedded database, whose single connection LISTEN would hold).
 * Shutdown stops claiming, lets in-flight jobs finish within a grace period, and gives the rest back.
 */
import { PgClient } from "@effect/sql-pg"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Config from "effect/Config"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import * as Tracer from "effect/Tracer"
import * as crypto from "node:crypto"
import * as os from "node:os"
import { JobHandlers, Outcome } from "./Handler.js"
import {
  jobDuration,
  jobsDead,
  jobsFailed,
  jobsSucceeded,
  oldestPendingAge,
  queueDepth
} from "../Observability/Metrics.js"
import { DatabaseKind } from "../Sql.js"
import { DELIVER_EVENT, type Job, JobLease, JobQueue, JOBS_CHANNEL } from "./Queue.js"

export const WorkerConfig = Config.all({
  concurrency: Config.integer("WORKER_CONCURRENCY").pipe(Config.withDefault(4)),
  pollInterval: Config.duration("JOB_POLL_INTERVAL").pipe(Config.withDefault(Duration.seconds(1))),
  shutdownGrace: Config.duration("WORKER_SHUTDOWN_GRACE").pipe(Config.withDefault(Duration.seconds(10))),
  maxAttempts: Config.integer("JOB_MAX_ATTEMPTS").pipe(Config.withDefault(10)),
  depthInterval: Config.duration("JOB_METRICS_INTERVAL").pipe(Config.withDefault(Duration.seconds(15)))
})

/** Default backoff for failed jobs: 1 s, 2 s, 4 s… capped at 5 minutes. */
const backoff = (attempts: number) => Duration.millis(Math.min(300_000, 1000 * 2 ** Math.max(0, attempts - 1)))

/** The request's span, from the W3C `traceparent` stored with the job. */
const parentSpan = (job: Job): Option.Option<Tracer.ExternalSpan> => {
  const match = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(job.traceContext?.traceparent ?? "")
  if (match === null) return Option.none()
  return Option.some(Tracer.externalSpan({ traceId: match[1]!, spanId: match[2]!, sampled: match[3] === "01" }))
}

const describe = (cause: Cause.Cause<unknown>) => Cause.pretty(cause).split("\n")[0]?.slice(0, 1000) ?? "failed"

export const WorkersLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const config = yield* WorkerConfig
    const lease = yield* JobLease
    const queue = yield* JobQueue
    const handlers = yield* JobHandlers
    const pg = yield* PgClient.PgClient
    const database = yield* DatabaseKind
    const instance = `${os.hostname()}:${process.pid}:${crypto.randomBytes(3).toString("hex")}`

    const stopping = yield* Ref.make(false)
    const inFlight = yield* Ref.make(0)
    // Idle workers wait on the current deferred; a notification completes it and installs a new one.
    const wakeup = yield* Ref.make(yield* Deferred.make<void>())
    const wake = Effect.flatMap(Deferred.make<void>(), (next) =>
      Effect.flatMap(Ref.getAndSet(wakeup, next), (current) => Deferred.succeed(current, undefined)))
    const idle = Effect.flatMap(Ref.get(wakeup), (signal) =>
      Effect.raceFirst(Deferred.await(signal), Effect.sleep(config.pollInterval)))

    const count = (metric: typeof jobsSucceeded, job: Job) => Metric.increment(Metric.tagged(metric, "kind", job.kind))
    const settle = (job: Job, worker: string) => (outcome: Outcome) =>
      Outcome.$match(outcome, {
        Done: () => Effect.zipRight(queue.complete(job, worker), count(jobsSucceeded, job)),
        Retry: ({ delay, error }) => Effect.zipRight(queue.retry(job, worker, delay, error), count(jobsFailed, job)),
        Dead: ({ error }) => Effect.zipRight(queue.bury(job, worker, error), count(jobsDead, job))
      })

    const execute = (job: Job, worker: string) => {
      const handler = handlers.get(job.kind)
      const run = handler === undefined
        ? Effect.succeed(Outcome.Dead({ error: `No handler for job kind ${job.kind}` }))
        : handler.run(job).pipe(
          Effect.catchAllCause((cause) =>
            Cause.isInterruptedOnly(cause) ? Effect.failCause(cause) : Effect.gen(function*() {
              yield* Effect.logWarning(`Job ${job.kind} failed`, cause)
              // A delivery's retry window is the sender's to judge: an infrastructure failure retries it.
              return job.attempts >= config.maxAttempts && job.kind !== DELIVER_EVENT
                ? Outcome.Dead({ error: describe(cause) })
                : Outcome.Retry({ delay: backoff(job.attempts), error: describe(cause) })
            })
          )
        )
      // Renews the lease while the job runs; ends ("lost") when the job is no longer this worker's, or
      // when two renewals in a row fail: past its lease another worker may take it, so this one stops.
      const third = Duration.millis(Duration.toMillis(lease) / 3)
      const keepLease = Effect.gen(function*() {
        let failures = 0
        while (true) {
          yield* Effect.sleep(third)
          const held = yield* Effect.exit(queue.heartbeat(job, worker))
          if (held._tag === "Success" && !held.value) return "lost" as const
          failures = held._tag === "Failure" ? failures + 1 : 0
          if (failures >= 2) return "lost" as const
        }
      })
      const parent = parentSpan(job)
      return Effect.gen(function*() {
        const started = yield* Clock.currentTimeMillis
        const result = yield* Effect.raceFirst(
          Effect.map(run, (outcome) => ({ _tag: "Ran", outcome }) as const),
          Effect.map(keepLease, () => ({ _tag: "LeaseLost" }) as const)
        )
        if (result._tag === "LeaseLost") {
          yield* Effect.logWarning(`Job ${job.kind} ${job.id}: lease lost; abandoned to whoever holds it now`)
          yield* Effect.annotateCurrentSpan({ "job.outcome": "LeaseLost" })
          return
        }
        const outcome = result.outcome
        yield* Metric.update(
          Metric.tagged(jobDuration, "kind", job.kind),
          ((yield* Clock.currentTimeMillis) - started) / 1000
        )
        yield* Effect.annotateCurrentSpan({ "job.outcome": outcome._tag })
        yield* settle(job, worker)(outcome)
      }).pipe(
        Effect.onInterrupt(() => queue.release(job, worker)),
        Effect.withSpan(`Job.${job.kind}`, {
          kind: "consumer",
          attributes: { "job.id": job.id, "job.kind": job.kind, "job.attempt": job.attempts },
          ...(Option.isSome(parent)
            ? { parent: parent.value, links: [{ _tag: "SpanLink", span: parent.value, attributes: {} }] }
            : {})
        })
      )
    }

    const loop = (worker: string) =>
      Effect.gen(function*() {
        while (!(yield* Ref.get(stopping))) {
          const claimed = yield* queue.claim(worker)
          if (Option.isNone(claimed)) {
            yield* idle
            continue
          }
          yield* Ref.update(inFlight, (n) => n + 1)
          yield* execute(claimed.value, worker).pipe(Effect.ensuring(Ref.update(inFlight, (n) => n - 1)))
        }
      })

    // Supervision: a worker that dies is logged and started again after a pause, until shutdown.
    const supervised = (worker: string) =>
      Effect.gen(function*() {
        while (!(yield* Ref.get(stopping))) {
          yield* loop(worker).pipe(
            Effect.catchAllCause((cause) =>
              Cause.isInterruptedOnly(cause) ? Effect.failCause(cause) : Effect.zipRight(
                Effect.logError(`Worker ${worker} crashed; restarting`, cause),
                Effect.sleep("1 second")
              )
            )
          )
        }
      })

    // LISTEN holds a connection of its own: on the embedded database's single connection, poll only.
    if (!database.embedded) {
      yield* pg.listen(JOBS_CHANNEL).pipe(
        Stream.runForEach(() => wake),
        Effect.catchAllCause((cause) => Effect.logWarning("LISTEN failed; polling only", cause)),
        Effect.forkScoped
      )
    }
    // Queue depth and the age of the oldest due job, for dashboards and alerts.
    yield* queue.depth.pipe(
      Effect.tap(({ oldestSeconds, pending }) =>
        Effect.zipRight(Metric.set(queueDepth, pending), Metric.set(oldestPendingAge, oldestSeconds ?? 0))
      ),
      Effect.catchAllCause((cause) => Effect.logDebug("Queue depth unavailable", cause)),
      Effect.repeat(Schedule.spaced(config.depthInterval)),
      Effect.forkScoped
    )
    for (let i = 0; i < config.concurrency; i++) {
      yield* Effect.forkScoped(supervised(`${instance}#${i}`))
    }
    yield* Effect.logDebug(`Started ${config.concurrency} workers as ${instance}`)

    // Registered after the forks, so it runs before they are interrupted.
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        yield* Ref.set(stopping, true)
        yield* wake
        // Finalizers run uninterruptibly: the wait must be made interruptible for the timeout to end it.
        yield* Ref.get(inFlight).pipe(
          Effect.repeat({ schedule: Schedule.spaced("50 millis"), until: (n) => n === 0 }),
          Effect.interruptible,
          Effect.timeout(config.shutdownGrace),
          Effect.ignore
        )
      })
    )
  })
)
