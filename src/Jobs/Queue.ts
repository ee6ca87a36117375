/**
 * The durable job queue: jobs are rows in PostgreSQL (kind, payload, run-at, attempts, lease, status,
 * last error, the trace context of the request that created them).
 *
 * - `enqueue` runs on the caller's connection: inside a transaction the job exists exactly when the
 *   data that caused it does, and NOTIFY wakes listening workers at commit.
 * - Ordering: jobs of an ordered kind (`ordered: true`) queued with an order key (`orderKey`: the
 *   features give their conversation's id) are claimed in `seq` order per key, one at a time. `seq` is
 *   taken at INSERT but becomes visible at COMMIT, so order holds only if no later job of the key can
 *   commit before an earlier one: `enqueue` makes that structural by taking a per-key transaction lock
 *   (an advisory lock) before the INSERT and holding it to the end of the caller's transaction.
 *   Enqueuers of one key thus commit in `seq` order, whoever they are (message ingest, reply
 *   generation, replay, any future event).
 * - A job queued behind a live job of its key is `blocked` (decided under that lock) and left out of
 *   the claim's index; when the live one ends (done or dead, not a retry), `parley_unblock_next`
 *   (migration 0007) takes the same lock and lets the next one run. So a claim never reads the jobs that
 *   wait, however many queue behind a receiver that is down.
 * - A kind with a `key` has at most one live (pending or running) job per key: a unique index refuses
 *   a second. `runNow` brings the live job forward instead: a pending one becomes due now (keeping its
 *   place among its order key's jobs); a running one runs again right after its current run.
 *   `reschedule` moves it to a given time, earlier or later (a debounce: each new message pushes the
 *   timer back); `cancel` removes it. Both run on the caller's connection, so inside a transaction they
 *   happen exactly when the data that caused them is stored, and not at all if it rolls back; the
 *   database is all the instances share, so every instance's workers see the new time (see `reschedule`).
 * - `claim` takes up to n due jobs of a lane with `FOR UPDATE SKIP LOCKED` in one statement: instances
 *   sharing a database never take the same job. Oldest first, except that a group (a workspace, an
 *   integration) never has more than the lane's `perGroup` jobs running, so a big backlog or a slow
 *   receiver of one group does not hold back the others. It visits the groups that have ready jobs (an
 *   index probe or two each), skips those at their share without reading them, and reads up to a share
 *   of only the groups whose oldest due job is among the oldest. `reap` makes jobs whose lease expired
 *   (their instance died) pending again, which keeps the claim to an index range of due pending jobs.
 *   The statement is the function `parley_claim` (migration 0008; change it with a new migration), so
 *   that each connection plans it once: planning was most of a claim's time on an idle queue.
 * - Listening workers are told when a job becomes due (`Notification.ts`: the payload's one format).
 *
 * The statements themselves are `QueueRepo`'s (`QueueRepo.ts`, which says where the order key is kept).
 */
import * as Context from "effect/Context"
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as HttpTraceContext from "effect/http/HttpTraceContext"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as PubSub from "effect/PubSub"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import * as Stream from "effect/Stream"
import * as AppConfig from "../Config.js"
import { jobsClaimedOf, jobsEnqueuedOf } from "../Observability/Metrics.js"
import { DatabaseKind } from "../Sql.js"
import type { Claimed, Definition, OrderKey, PoolLane, TraceContext } from "./Job.js"
import { Outcome } from "./Job.js"
import * as Notification from "./Notification.js"
import { QueueRepo } from "./QueueRepo.js"

/** W3C trace context of the current span, so the job's span can continue the request's trace. */
const currentTraceContext: Effect.Effect<TraceContext | null> = Effect.currentSpan.pipe(
  Effect.map((span) => {
    const traceparent = HttpTraceContext.toHeaders(span)["traceparent"]
    return traceparent === undefined ? null : { traceparent }
  }),
  Effect.orElseSucceed(() => null)
)

const seconds = (duration: Duration.Input) => Duration.toMillis(duration) / 1000

/** What one claim took, and what its dispatcher should wait for next. */
export interface Round {
  readonly jobs: ReadonlyArray<Claimed>
  /** Milliseconds until the next pending job of the lane falls due (none: no job waits for a time). */
  readonly wait: Option.Option<number>
  /**
   * Whether due jobs were left for a group at its share: then a job of the lane ending may let them
   * run, and the dispatcher claims again. Without them, a job ending frees nothing to claim.
   */
  readonly leftBehind: boolean
}

/** How one run of a job ended, as the instance that ran it reports it. */
interface Settlement {
  readonly instance: string
  readonly job: Claimed
  readonly outcome: Outcome
}

/**
 * When `reschedule` moves a job to: `delay` from now on the database's clock (as `enqueue`'s delay), or
 * the instant `at`.
 */
export type RunAt = { readonly delay: Duration.Input } | { readonly at: DateTime.DateTime }

export interface EnqueueOptions {
  /**
   * What the job is ordered by, when its kind is `ordered` (see the module comment): the features give
   * their conversation's id. A UUID (`Job.OrderKey`); kept with the job whatever its kind.
   */
  readonly orderKey?: OrderKey | null | undefined
  /** Whose work it is (a workspace, an integration): the lanes share out their capacity by group. */
  readonly group?: string | undefined
  /** Delay before the job may run. */
  readonly delay?: Duration.Input | undefined
}

/** Whether settling runs made a job claimable: one let run after them, or one due again (a rerun). */
const madeClaimable = (ending: { readonly unblocked: boolean | null; readonly reruns: number }) =>
  (ending.unblocked ?? false) || ending.reruns > 0

export class JobQueue extends Context.Service<JobQueue>()("Parley/JobQueue", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const repo = yield* QueueRepo
    const lease = yield* AppConfig.JobLease
    const leaseSeconds = seconds(lease)
    const { embedded } = yield* DatabaseKind
    // The embedded database has no LISTEN: its notifications are published here, to this process's pool.
    // Its single connection makes that safe before commit: a claim waits for the enqueuing transaction.
    const local = yield* PubSub.sliding<string>(64)

    /** Runs `effect` in the caller's transaction, or in one of its own when there is none. */
    const inTransaction = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      Effect.flatMap(
        Effect.serviceOption(sql.transactionService),
        Option.match({ onNone: () => sql.withTransaction(effect), onSome: () => effect })
      )

    /** Wakes listening workers at commit: a job of `kind` is due at `dueMillis` (Unix ms; 0 = now). */
    const notify = (kind: string, dueMillis: number) => {
      const payload = Notification.encode(kind, dueMillis)
      return embedded ? PubSub.publish(local, payload) : repo.notify(payload)
    }

    const enqueue = Effect.fn("JobQueue.enqueue")(function*<A, I>(
      definition: Definition<A, I>,
      payload: A,
      options: EnqueueOptions = {}
    ) {
      const encoded = yield* Schema.encodeEffect(definition.payload)(payload)
      const traceContext = yield* currentTraceContext
      const orderKey = options.orderKey ?? null
      const key = definition.key?.(payload) ?? null
      const job = {
        kind: definition.name,
        payload: encoded,
        orderKey,
        ordered: definition.ordered && orderKey !== null,
        key,
        group: options.group ?? null,
        delaySeconds: seconds(options.delay ?? 0),
        traceContext
      }
      yield* Effect.annotateCurrentSpan({ "job.kind": definition.name })
      return yield* Effect.gen(function*() {
        // Held to the end of the caller's transaction: see the module comment.
        if (job.ordered && orderKey !== null) yield* repo.lockOrder(orderKey)
        // On PostgreSQL the notification goes in the same statement (one round trip less on every
        // message's path), its payload made by the database.
        const inserted = yield* (embedded ? repo.insert(job) : repo.insertNotifying(job))
        if (Option.isNone(inserted)) {
          // The key's live job stands.
          const live = key === null ? Option.none() : yield* repo.liveJob({ kind: definition.name, key })
          if (Option.isNone(live)) return yield* Effect.die(new Error(`No live ${definition.name} job for key ${key}`))
          return live.value.id
        }
        // Delivered at commit, with the due time: listening workers wake when it is due, not at their next poll.
        if (embedded) yield* notify(definition.name, inserted.value.due)
        yield* Metric.update(jobsEnqueuedOf(definition.name), 1)
        return inserted.value.id
      }).pipe(inTransaction)
    }, Effect.orDie)

    /**
     * Brings the live job of `key` forward: pending → due now; running → runs again right after its
     * current run. False when there is no live job.
     */
    const runNow = Effect.fn("JobQueue.runNow")(function*<A, I>(definition: Definition<A, I>, key: string) {
      const rows = yield* repo.runNow({ kind: definition.name, key })
      if (rows.length > 0) yield* notify(definition.name, 0)
      return rows.length > 0
    }, Effect.orDie)

    /**
     * Moves the live job of `key` to `runAt`, earlier or later: a pending one is due then (keeping its
     * place among its order key's jobs: the jobs behind it wait for it); a running one is left to
     * finish and runs again then (at once if that time has passed by the end of its run), so that
     * whatever its run may not have seen is covered. False, and nothing queued, when the key has no
     * live job: the caller enqueues one if it wants one (a debounce: `reschedule`, else `enqueue` with
     * the delay). On the caller's connection: in its transaction when there is one, and undone with it.
     * Listening workers are told the new due time at commit, on every instance: a job moved earlier runs
     * then, not at the next poll. One moved later needs no word: a worker that waited for its old time
     * claims nothing then, and the claim tells it the new time.
     */
    const reschedule = Effect.fn("JobQueue.reschedule")(function*<A, I>(
      definition: Definition<A, I>,
      key: string,
      runAt: RunAt
    ) {
      yield* Effect.annotateCurrentSpan({ "job.kind": definition.name })
      const move = "at" in runAt
        ? { kind: definition.name, key, at: DateTime.formatIso(runAt.at), delaySeconds: 0 }
        : { kind: definition.name, key, at: null, delaySeconds: seconds(runAt.delay) }
      // As `enqueue`'s: on PostgreSQL the notification goes in the same statement.
      const moved = yield* (embedded ? repo.reschedule(move) : repo.rescheduleNotifying(move))
      if (Option.isNone(moved)) return false
      if (embedded) yield* notify(definition.name, moved.value.due)
      return true
    }, Effect.orDie)

    /**
     * Removes the pending job of `key`, so that it never runs; an ordered kind's next job of its order
     * key, if it waited for this one, may then run. A running job is not stopped: its run finishes and
     * is recorded as every run is (a retry makes it pending again, to be cancelled again); only the run
     * again asked for meanwhile (`runNow`, `reschedule`) is dropped. True when a run was removed (the
     * pending job, or the running one's next run). In the caller's transaction when there is one.
     */
    const cancel = Effect.fn("JobQueue.cancel")(function*<A, I>(definition: Definition<A, I>, key: string) {
      yield* Effect.annotateCurrentSpan({ "job.kind": definition.name })
      const job = { kind: definition.name, key }
      return yield* Effect.gen(function*() {
        // The order key's lock before the job's row, as `enqueue` and `replaceMany` take them (a job's
        // row first, then the lock in `parley_unblock_next`, could wait for them in a cycle).
        if (definition.ordered) yield* repo.lockOrderOfPending(job)
        const removed = yield* repo.deletePending(job)
        const rerunDropped = yield* repo.dropRerun(job)
        // The job let run behind the removed one is due now.
        if (removed.unblocked === true) yield* notify(definition.name, 0)
        return removed.removed > 0 || rerunDropped.length > 0
      }).pipe(inTransaction)
    }, Effect.orDie)

    /**
     * Queues a fresh job for each of `items` (a keyed kind), in their order and after their order keys'
     * others, replacing their live jobs: a pending one is retired; a running one runs again right
     * after its current run, and no job is added for it. A fixed number of statements whatever the
     * count (replay-all queues thousands at once); in the caller's transaction, with the order keys'
     * locks taken in one order. Returns how many jobs were queued.
     */
    const replaceMany = Effect.fn("JobQueue.replaceMany")(function*<A, I>(
      definition: Definition<A, I>,
      items: ReadonlyArray<{ readonly payload: A } & Omit<EnqueueOptions, "delay">>
    ) {
      const keyOf = definition.key
      if (keyOf === undefined) return yield* Effect.die(new Error(`${definition.name} has no key: replaceMany needs one`))
      if (items.length === 0) return 0
      const kind = definition.name
      const rows = yield* Effect.forEach(items, (item) =>
        Effect.map(Schema.encodeEffect(definition.payload)(item.payload), (payload) => ({
          payload,
          key: keyOf(item.payload),
          orderKey: item.orderKey ?? null,
          group: item.group ?? null
        })))
      const keys = rows.map((row) => row.key)
      const traceContext = yield* currentTraceContext
      yield* Effect.annotateCurrentSpan({ "job.kind": kind, "job.count": rows.length })
      return yield* Effect.gen(function*() {
        const running = yield* repo.rerunRunning({ kind, keys })
        const rerun = new Set(running.map((row) => row.key))
        const fresh = rows.filter((row) => !rerun.has(row.key))
        // Every order key touched: a superseded job may have been the one the others waited for.
        const orderKeys = definition.ordered
          ? [...new Set(rows.flatMap((row) => row.orderKey === null ? [] : [row.orderKey]))]
          : []
        // The same lock as `enqueue`'s, for every order key, in a fixed order.
        if (orderKeys.length > 0) yield* repo.lockOrders(orderKeys)
        // After the order keys' locks: a job ending takes its running row, then its order key's lock,
        // then the pending row it releases (`parley_unblock_next`); taking them in that order too, a
        // replay never waits for it in a cycle.
        yield* repo.supersedePending({ kind, keys })
        const inserted = fresh.length === 0
          ? []
          : yield* repo.insertMany({ kind, ordered: definition.ordered, traceContext, items: fresh })
        // Of each order key's live jobs, only the first may run; the others wait (`blocked`).
        if (orderKeys.length > 0) yield* repo.reblock({ kind, orderKeys })
        if (inserted.length > 0 || running.length > 0) yield* notify(kind, 0)
        yield* Metric.update(jobsEnqueuedOf(kind), inserted.length)
        return inserted.length
      }).pipe(inTransaction)
    }, Effect.orDie)

    // The pool's bookkeeping statements are uninterruptible: they take milliseconds, and interrupting
    // one mid-flight makes sql-pg cancel it (a CancelRequest on a side connection, which the embedded
    // database's one-connection server cannot take) and leaves a claim's outcome unknown.

    /**
     * Up to `limit` due jobs of `lane`, leased to `instance`, oldest first, each group within its share;
     * with what the dispatcher needs to wait well when it took fewer than it asked for (see `Round`).
     */
    const claimRound = (instance: string, lane: PoolLane, limit: number): Effect.Effect<Round> =>
      repo.claim({ instance, kinds: lane.kinds, limit, perGroup: lane.perGroup, leaseSeconds }).pipe(
        Effect.map((rows): Round => ({
          jobs: rows.flatMap((row) => row.job === null ? [] : [row.job]),
          wait: Option.fromNullishOr(rows[0]?.wait ?? null),
          leftBehind: rows[0]?.leftBehind ?? true
        })),
        Effect.orDie,
        Effect.uninterruptible,
        Effect.tap(({ jobs }) =>
          Effect.forEach(jobs, (job) => Metric.update(jobsClaimedOf(job.kind), 1), {
            discard: true
          })
        ),
        Effect.withSpan("JobQueue.claim", { attributes: { "job.lane": lane.name } })
      )

    /** The jobs of a `claimRound`. */
    const claim = (instance: string, lane: PoolLane, limit: number): Effect.Effect<ReadonlyArray<Claimed>> =>
      Effect.map(claimRound(instance, lane, limit), (round) => round.jobs)

    /**
     * Jobs whose lease expired (their instance died or stalled) become pending again, due when they were
     * (or when their next run was asked for): that run covers a run again asked for meanwhile.
     */
    const reap = repo.reap.pipe(Effect.map((rows) => rows.length), Effect.orDie, Effect.uninterruptible)

    /** Renews the leases of every job `instance` runs; returns the ids it still holds. */
    const heartbeat = (instance: string) =>
      repo.heartbeat({ instance, leaseSeconds }).pipe(
        Effect.map((rows) => new Set(rows.map((row) => row.id))),
        Effect.orDie,
        Effect.uninterruptible
      )

    /** When a retried run is next due (the instant its handler decided, else its delay from now), and why. */
    const retryOf = (retry: Extract<Outcome, { readonly _tag: "Retry" }>) => ({
      delay: seconds(retry.delay),
      at: retry.at === undefined ? null : DateTime.formatIso(retry.at),
      error: retry.error
    })

    /** The run a settlement is about, as its claim knows it. */
    const runOf = ({ instance, job }: Settlement) => ({ id: job.id, instance, attempts: job.attempts })

    /**
     * Records how a run ended. A job that ends (done or dead) lets the next one of its order key run, if
     * it waits for it; a rerun asked for meanwhile (`runNow`) makes the job due again at once, whatever
     * the outcome. A finished job keeps `locked_by`: which instance ran it. True when that made a job
     * claimable (one let run after it, a rerun, a retry).
     */
    const settleOne = (settlement: Settlement): Effect.Effect<boolean> =>
      Outcome.$match(settlement.outcome, {
        Done: () => Effect.map(repo.settleDone(runOf(settlement)), madeClaimable),
        // Pending again, after its delay or at once: the dispatcher looks again either way.
        Retry: (retry) => Effect.as(repo.settleRetry({ ...runOf(settlement), ...retryOf(retry) }), true),
        Dead: ({ error }) => Effect.map(repo.settleDead({ ...runOf(settlement), error }), madeClaimable)
      }).pipe(Effect.orDie)

    /** Done jobs in one statement. */
    const settleDone = (settlements: ReadonlyArray<Settlement>) =>
      repo.settleDoneMany(settlements.map(runOf)).pipe(Effect.map(madeClaimable), Effect.orDie)

    /** Jobs to be retried, each after its own delay, in one statement. */
    const settleRetries = (settlements: ReadonlyArray<Settlement>) =>
      repo.settleRetryMany(settlements.flatMap((settlement) =>
        settlement.outcome._tag === "Retry"
          ? [{ ...runOf(settlement), ...retryOf(settlement.outcome) }]
          : []
      )).pipe(Effect.as(true), Effect.orDie)

    /**
     * Records how one run ended (see `settleOne`). True when that may have made a job claimable (one
     * let run after it, a rerun, a retry): the dispatcher should look again.
     */
    const settle = (job: Claimed, instance: string, outcome: Outcome): Effect.Effect<boolean> =>
      settleOne({ instance, job, outcome }).pipe(Effect.uninterruptible)

    /**
     * Records how the runs of a batch ended: the done ones in one statement, the retried ones in another,
     * the dead ones (few) one by one. True as for `settle`.
     */
    const settleMany = (instance: string, ended: ReadonlyArray<{ readonly job: Claimed; readonly outcome: Outcome }>) => {
      const settlements = ended.map(({ job, outcome }) => ({ instance, job, outcome }))
      const byOutcome = (tag: Outcome["_tag"]) => settlements.filter(({ outcome }) => outcome._tag === tag)
      const one = (group: ReadonlyArray<Settlement>) =>
        Effect.map(Effect.forEach(group, settleOne), (freed) => freed.some((f) => f))
      const together = (group: ReadonlyArray<Settlement>, many: (group: ReadonlyArray<Settlement>) => Effect.Effect<boolean>) =>
        group.length > 1 ? many(group) : one(group)
      return Effect.all([
        together(byOutcome("Done"), settleDone),
        together(byOutcome("Retry"), settleRetries),
        one(byOutcome("Dead"))
      ]).pipe(
        Effect.map((freed) => freed.some((f) => f)),
        Effect.uninterruptible
      )
    }

    /**
     * Gives a job back untouched (shutdown): due again when it was (or when its next run was asked for,
     * which covers this one), its attempt not counted.
     */
    const release = (job: Claimed, instance: string) =>
      repo.release({ id: job.id, instance, attempts: job.attempts }).pipe(Effect.orDie, Effect.uninterruptible)

    /** Removes the pending jobs of `groups` (a deleted workspace's, its integrations'): none of them may run. */
    const cancelGroups = Effect.fn("JobQueue.cancelGroups")(function*(groups: ReadonlyArray<string>) {
      if (groups.length === 0) return 0
      return (yield* repo.deleteGroups(groups)).length
    }, Effect.orDie)

    /** Deletes done and dead jobs finished longer than `retention` ago, a batch at a time. */
    const purge = (retention: Duration.Input, batch = 5_000) =>
      repo.purge({ retentionSeconds: seconds(retention), batch }).pipe(Effect.map((row) => row.n), Effect.orDie)

    /** Pending and running jobs and the age of the oldest due one, for metrics and health. */
    const depth = Effect.orDie(repo.depth)

    /** This process's notifications on the embedded database (`LISTEN` serves PostgreSQL). */
    const signals: Stream.Stream<string> = Stream.fromPubSub(local)

    return {
      signals,
      enqueue,
      runNow,
      reschedule,
      cancel,
      replaceMany,
      cancelGroups,
      claimRound,
      claim,
      reap,
      heartbeat,
      settle,
      settleMany,
      release,
      purge,
      depth
    } as const
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
  static readonly layer = this.layerWithoutDependencies.pipe(Layer.provide(QueueRepo.layer))
}
