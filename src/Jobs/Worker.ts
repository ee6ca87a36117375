/**
 * The worker pool: for each lane (`Job.Lane`: replies, deliveries…) one dispatcher fiber claims due jobs
 * of the lane's kinds, in batches, while fewer than the lane's concurrency run, and forks each into a
 * `FiberMap` keyed by job id. The lanes are those of the kinds registered with the pool (`Job.handlers`
 * layers, given to `WorkersLive`), each claiming only its registered kinds; the pool refuses to start
 * when they do not add up (`Job.lanesOf`). Lanes never wait for each other, and within a lane no group
 * (a workspace, an integration) runs more than its share (see `JobQueue.claim`). A kind with a batch
 * handler (`Job.handleBatch`: deliveries) runs a claim's jobs of one group in one fiber, a statement per
 * step for all of them, and settles the done ones in one statement: its jobs then end, and are claimed,
 * together (a delivery went from 4.5 statements to about one, docs/performance.md). Built from Effect
 * primitives:
 * - per lane, a dispatcher (`LaneDispatcher.ts`: when to claim and how much, the idle wait until the
 *   next due time, and the orderings that keep a wake from being lost);
 * - notifications (`Notification.ts`) carry the job's due time: a debounced job wakes the dispatcher
 *   when it is due, not at the next poll; so does a job moved earlier (`JobQueue.reschedule`), on every
 *   instance. A job moved later needs none: a dispatcher that waited for its old time claims nothing
 *   then, and learns the new one from that claim (`Round.wait`). They come from `LISTEN` on PostgreSQL
 *   (a connection of the pool held for it, probed, re-established when it drops: `Listener.ts`) and from
 *   the queue itself on the embedded database (one connection: a claim waits for the enqueuing
 *   transaction to commit);
 * - one heartbeat renews the leases of every running job; a job whose lease was lost (another instance
 *   took it after this one stalled) is interrupted;
 * - a job is claimed and forked uninterruptibly, with its release registered before it can be
 *   interrupted: a job is never left leased by an interruption;
 * - supervision: a dispatcher failure is logged and the dispatcher started again;
 * - shutdown: stop claiming, wait up to `WORKER_SHUTDOWN_GRACE` for running jobs, give the rest back.
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberMap from "effect/FiberMap"
import * as Headers from "effect/http/Headers"
import * as HttpTraceContext from "effect/http/HttpTraceContext"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Result from "effect/Result"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import type * as Tracer from "effect/Tracer"
import * as crypto from "node:crypto"
import * as os from "node:os"
import * as Backoff from "../Backoff.js"
import * as AppConfig from "../Config.js"
import type { JobId } from "../Domain/Ids.js"
import {
  jobDurationOf,
  jobsDeadOf,
  jobsFailedOf,
  jobsSucceededOf,
  oldestPendingAge,
  queueDepth
} from "../Observability/Metrics.js"
import { DatabaseKind } from "../Sql.js"
import { type Claimed, type Handler, lanesOf, Outcome, type PoolLane, Registry } from "./Job.js"
import * as LaneDispatcher from "./LaneDispatcher.js"
import { CONNECTED, listen } from "./Listener.js"
import * as Notification from "./Notification.js"
import { JobQueue } from "./Queue.js"

/** A batch kind's handler. */
type BatchRun = Extract<Handler["run"], { readonly _tag: "batch" }>["run"]

/** Most jobs one claim takes (more free slots: claimed in several rounds). */
const CLAIM_BATCH = 64

/** Default backoff for failed jobs: 1 s, 2 s, 4 s… capped at 5 minutes, without jitter. */
const jobBackoff: Backoff.Backoff = {
  base: Duration.seconds(1),
  factor: 2,
  max: Duration.minutes(5),
  jitter: 0,
  cap: "jittered"
}
const backoff = (attempts: number) => Backoff.delay(jobBackoff, attempts, 0.5)

/** The request's span, from the W3C `traceparent` stored with the job. */
const parentSpan = (job: Claimed): Option.Option<Tracer.ExternalSpan> =>
  job.traceContext === null
    ? Option.none()
    : HttpTraceContext.w3c(Headers.fromInput({ traceparent: job.traceContext.traceparent }))

/** A stack trace here would point into the pool, not at the job's code; capturing one per job costs. */
const noStackTrace = { captureStackTrace: false } as const

const describe = (cause: Cause.Cause<unknown>) => Cause.pretty(cause).split("\n")[0]?.slice(0, 1000) ?? "failed"

/**
 * The pool, running the handlers `jobs` registers (the features' `Job.handlers` layers, merged). Each
 * call makes a pool with a registry of its own, built before the pool reads it. (Within one build a
 * layer is built once: a second pool of the same `jobs` in one build needs `Layer.fresh`.)
 */
export const WorkersLive = <E, R>(
  jobs: Layer.Layer<never, E, R>,
  options: {
    /** Kinds the pool must run, each with a handler, or it refuses to start (`App.ts`: every defined kind). */
    readonly expected?: () => ReadonlyArray<string>
  } = {}
) => Layer.effectDiscard(
  Effect.gen(function*() {
    const config = yield* AppConfig.WorkerConfig
    const lease = yield* AppConfig.JobLease
    const queue = yield* JobQueue
    const registered = yield* Effect.flatMap(Effect.service(Registry), (registry) => registry.registered)
    const lanes = yield* Effect.fromResult(lanesOf(registered, config, options.expected?.() ?? []))
    const handlers = new Map(registered.map((handler) => [handler.name, handler]))
    const database = yield* DatabaseKind
    const instance = `${os.hostname()}:${process.pid}:${crypto.randomBytes(3).toString("hex")}`

    const running = yield* FiberMap.make<JobId>()

    const count = (metricOf: typeof jobsSucceededOf, job: Claimed) => Metric.update(metricOf(job.kind), 1)

    const jobAnnotations = (job: Claimed) => ({ "job.id": job.id, "job.kind": job.kind, "job.attempt": job.attempts })

    /** A handler's failure or defect: a `warn` record with the cause, and a retry unless attempts are spent. */
    const failed = (job: Claimed, retries: "bounded" | "handler") => (cause: Cause.Cause<unknown>) => {
      const outcome = retries === "bounded" && job.attempts >= config.maxAttempts
        ? Outcome.Dead({ error: describe(cause) })
        : Outcome.Retry({ delay: backoff(job.attempts), error: describe(cause) })
      return Effect.as(
        Effect.logWarning("Job failed", cause).pipe(
          Effect.annotateLogs({
            ...jobAnnotations(job),
            "job.outcome": outcome._tag,
            ...(outcome._tag === "Retry" ? { "job.retry_in_ms": Duration.toMillis(outcome.delay) } : {})
          })
        ),
        outcome
      )
    }

    /** The job's span: a consumer span continuing the trace of the request that queued it (no stack trace). */
    const spanOptions = (job: Claimed): Tracer.SpanOptionsNoTrace => {
      const parent = parentSpan(job)
      return {
        kind: "consumer",
        attributes: jobAnnotations(job),
        ...(Option.isSome(parent) ? { parent: parent.value, links: [{ span: parent.value, attributes: {} }] } : {})
      }
    }

    /** A handler's failures and defects become outcomes; an interruption stays one. */
    const guarded = (job: Claimed, retries: Handler["retries"], run: Effect.Effect<Outcome, unknown>) =>
      run.pipe(
        Effect.catchCause((cause) =>
          Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause) : failed(job, retries)(cause)
        )
      )

    /** The run's duration in the metrics; a dead job's log record. */
    const report = (job: Claimed, started: number, outcome: Outcome) =>
      Effect.gen(function*() {
        yield* Metric.update(jobDurationOf(job.kind), ((yield* Clock.currentTimeMillis) - started) / 1000)
        if (outcome._tag === "Dead") {
          yield* Effect.logError("Job dead").pipe(Effect.annotateLogs({ ...jobAnnotations(job), "job.error": outcome.error }))
        }
      })

    const counted = (job: Claimed, outcome: Outcome) =>
      Outcome.$match(outcome, {
        Done: () => count(jobsSucceededOf, job),
        Retry: () => count(jobsFailedOf, job),
        Dead: () => count(jobsDeadOf, job)
      })

    /** A batch kind's job run alone (the only one of its group in its claim), under the job's span. */
    const alone = (job: Claimed, run: BatchRun) =>
      Effect.flatMap(Effect.currentSpan, (span) => run([{ job, span }])).pipe(
        Effect.map((outcomes) => outcomes[0] ?? Outcome.Retry({ delay: backoff(job.attempts), error: "No outcome" }))
      )

    const execute = (job: Claimed) => {
      const handler = handlers.get(job.kind)
      const run = handler === undefined
        ? Effect.succeed(Outcome.Dead({ error: `No handler for job kind ${job.kind}` }))
        : handler.run._tag === "single"
        ? guarded(job, handler.retries, handler.run.run(job))
        : guarded(job, handler.retries, alone(job, handler.run.run))
      return Effect.gen(function*() {
        const started = yield* Clock.currentTimeMillis
        const outcome = yield* run
        yield* report(job, started, outcome)
        yield* Effect.annotateCurrentSpan({ "job.outcome": outcome._tag })
        const freed = yield* queue.settle(job, instance, outcome)
        yield* counted(job, outcome)
        return freed
      }).pipe(Effect.withSpan(`Job.${job.kind}`, spanOptions(job), noStackTrace))
    }

    /**
     * The jobs of one claim and one group, run together by their kind's batch handler: each job keeps
     * its own span (its part of the work runs under it), outcome, metrics and log records; the done
     * ones are settled in one statement. A failure of the whole batch is each job's failure.
     */
    const executeBatch = (handler: Handler, run: BatchRun, jobs: ReadonlyArray<Claimed>) =>
      Effect.gen(function*() {
        const started = yield* Clock.currentTimeMillis
        const items = yield* Effect.forEach(jobs, (job) =>
          Effect.map(Effect.makeSpanScoped(`Job.${job.kind}`, spanOptions(job)), (span) => ({ job, span })))
        const outcomes = yield* run(items).pipe(
          Effect.catchCause((cause) =>
            Cause.hasInterruptsOnly(cause)
              ? Effect.failCause(cause)
              : Effect.forEach(items, ({ job, span }) =>
                failed(job, handler.retries)(cause).pipe(Effect.withParentSpan(span, noStackTrace)))
          )
        )
        const ended = items.map(({ job, span }, i) => ({
          job,
          span,
          outcome: outcomes[i] ?? Outcome.Retry({ delay: backoff(job.attempts), error: "No outcome" })
        }))
        // Each job's records carry its own trace.
        yield* Effect.forEach(ended, ({ job, outcome, span }) => {
          span.attribute("job.outcome", outcome._tag)
          return report(job, started, outcome).pipe(Effect.withParentSpan(span, noStackTrace))
        }, { discard: true })
        const freed = yield* queue.settleMany(instance, ended)
        yield* Effect.forEach(ended, ({ job, outcome }) => counted(job, outcome), { discard: true })
        return freed
      }).pipe(
        Effect.withSpan(`JobBatch.${handler.name}`, { attributes: { "job.kind": handler.name, "job.count": jobs.length } }),
        Effect.scoped
      )

    /** One lane's dispatcher (`LaneDispatcher`: when it claims, and how much) and how its jobs run. */
    const makeLane = (lane: PoolLane) =>
      Effect.gen(function*() {
        const dispatcher = yield* LaneDispatcher.make({
          concurrency: lane.concurrency,
          claimBatch: CLAIM_BATCH,
          pollInterval: config.pollInterval
        })

        /**
         * Forks just-claimed jobs (one, or a batch run together). Called uninterruptibly; the fork starts
         * uninterruptible too (a fork does not inherit that by itself), registers the release and the
         * slots' return, and only then lets the jobs themselves be interrupted. After them, the
         * dispatcher looks again only if their settlement made a job claimable (`freed`), or the run
         * did not end normally (see `LaneDispatcher`).
         */
        const start = (jobs: ReadonlyArray<Claimed>, run: Effect.Effect<boolean, unknown>) =>
          dispatcher.started(jobs.length).pipe(
            Effect.andThen(
              Effect.interruptible(run).pipe(
                Effect.onInterrupt(() => Effect.forEach(jobs, (job) => queue.release(job, instance), { discard: true })),
                Effect.onExit((exit) => dispatcher.ended(jobs.length, Exit.isFailure(exit) || exit.value)),
                Effect.forkDetach({ uninterruptible: true })
              )
            ),
            // A batch's fiber is every one of its jobs': a lease lost interrupts (and gives back) the batch.
            Effect.flatMap((fiber) => Effect.forEach(jobs, (job) => FiberMap.set(running, job.id, fiber), { discard: true }))
          )

        /** A claim's jobs: a batch per kind and group for batch kinds, one fiber each for the others. */
        const launch = (jobs: ReadonlyArray<Claimed>) => {
          const batches = new Map<string, { handler: Handler; run: BatchRun; jobs: Array<Claimed> }>()
          const singles: Array<Claimed> = []
          for (const job of jobs) {
            const handler = handlers.get(job.kind)
            if (handler?.run._tag !== "batch") {
              singles.push(job)
              continue
            }
            const key = `${job.kind} ${job.groupKey ?? ""}`
            const batch = batches.get(key) ?? { handler, run: handler.run.run, jobs: [] }
            batch.jobs.push(job)
            batches.set(key, batch)
          }
          return Effect.andThen(
            Effect.forEach(singles, (job) => start([job], execute(job)), { discard: true }),
            Effect.forEach(batches.values(), ({ handler, jobs, run }) =>
              start(jobs, jobs.length === 1 && jobs[0] !== undefined ? execute(jobs[0]) : executeBatch(handler, run, jobs)), {
              discard: true
            })
          )
        }

        /** A claim of the lane, its jobs started before it returns. */
        const claim = (asked: number) =>
          queue.claimRound(instance, lane, asked).pipe(
            Effect.tap(({ jobs }) => launch(jobs)),
            Effect.map((round) => ({ taken: round.jobs.length, wait: round.wait, leftBehind: round.leftBehind }))
          )

        // Supervision: a dispatcher failure is logged and it starts again after a pause.
        const fiber = yield* dispatcher.step(claim).pipe(
          Effect.forever,
          Effect.catchCause((cause) =>
            Effect.logError("Job dispatcher failed; restarting", cause).pipe(Effect.annotateLogs("job.lane", lane.name))
          ),
          Effect.andThen(Effect.sleep("1 second")),
          Effect.forever,
          Effect.forkScoped
        )
        return { lane, fiber, notified: dispatcher.notified, wake: dispatcher.wake } as const
      })

    const dispatchers = yield* Effect.forEach(lanes, makeLane)
    const laneOf = new Map(dispatchers.flatMap((d) => d.lane.kinds.map((kind) => [kind, d] as const)))
    const wakeAll = Effect.forEach(dispatchers, (d) => d.wake, { discard: true })

    /** A job's kind and due time from the queue (`Notification`); `CONNECTED` after a (re)connection: look now. */
    const onNotification = (payload: string) => {
      if (payload === CONNECTED) return wakeAll
      return Option.match(Notification.decode(payload), {
        onNone: () => Effect.void,
        onSome: ({ due, kind }) => laneOf.get(kind)?.notified(due) ?? Effect.void
      })
    }

    const notifications = database.embedded ? queue.signals : listen(Notification.JOBS_CHANNEL)
    yield* notifications.pipe(Stream.runForEach(onNotification), Effect.forkScoped)

    // One heartbeat for every running job; those this instance no longer holds are interrupted. The
    // same beat makes jobs of dead instances (lease expired) pending again.
    const third = Duration.millis(Duration.toMillis(lease) / 3)
    const lastRenewal = yield* Ref.make(yield* Clock.currentTimeMillis)
    yield* Effect.gen(function*() {
      const reaped = yield* Effect.result(queue.reap.pipe(Effect.sandbox))
      if (Result.isSuccess(reaped) && reaped.success > 0) yield* wakeAll
      const mine = yield* Effect.sync(() => Array.from(running, ([id]) => id))
      if (mine.length === 0) return yield* Ref.set(lastRenewal, yield* Clock.currentTimeMillis)
      const held = yield* Effect.result(queue.heartbeat(instance).pipe(Effect.sandbox))
      const now = yield* Clock.currentTimeMillis
      if (Result.isSuccess(held)) {
        yield* Ref.set(lastRenewal, now)
        for (const id of mine) {
          if (!held.success.has(id)) {
            yield* Effect.logWarning("Job lease lost; abandoned to whoever holds it now").pipe(
              Effect.annotateLogs({ "job.id": id })
            )
            yield* FiberMap.remove(running, id)
          }
        }
      } else if (now - (yield* Ref.get(lastRenewal)) >= Duration.toMillis(lease)) {
        // Past the lease, other instances may take these jobs: stop them here.
        yield* Effect.logWarning("Job leases could not be renewed; abandoning running jobs", held.failure)
        yield* Effect.forEach(mine, (id) => FiberMap.remove(running, id), { discard: true })
      }
    }).pipe(Effect.repeat(Schedule.spaced(third)), Effect.forkScoped)

    // Queue depth and the age of the oldest due job, for dashboards and alerts.
    yield* queue.depth.pipe(
      Effect.tap(({ oldestSeconds, pending }) =>
        Effect.andThen(Metric.update(queueDepth, pending), Metric.update(oldestPendingAge, oldestSeconds ?? 0))
      ),
      Effect.catchCause((cause) => Effect.logDebug("Queue depth unavailable", cause)),
      Effect.repeat(Schedule.spaced(config.depthInterval)),
      Effect.forkScoped
    )

    // Finished jobs are kept for `JOB_RETENTION`, then deleted in batches.
    yield* queue.purge(config.retention).pipe(
      Effect.repeat({ schedule: Schedule.spaced("1 second"), while: (deleted) => deleted > 0 }),
      Effect.catchCause((cause) => Effect.logWarning("Purging finished jobs failed", cause)),
      Effect.delay("1 minute"),
      Effect.repeat(Schedule.spaced("1 hour")),
      Effect.forkScoped
    )

    yield* Effect.logDebug(
      `Started job lanes ${lanes.map((l) => `${l.name} (${l.concurrency}, ${l.perGroup} per group)`).join(", ")} as ${instance}`
    )

    // Registered last, so it runs first: stop claiming, then let running jobs finish within the grace
    // period; the FiberMap's own finalizer then interrupts the rest, which gives them back.
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        yield* Effect.forEach(dispatchers, (d) => Fiber.interrupt(d.fiber), { discard: true })
        yield* FiberMap.awaitEmpty(running).pipe(
          Effect.interruptible,
          Effect.timeout(config.shutdownGrace),
          Effect.ignore
        )
      })
    )
  })
).pipe(Layer.provide(jobs), Layer.provide(Layer.effect(Registry, Registry.make)))
