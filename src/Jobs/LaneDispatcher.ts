/**
 * When one lane of one instance claims, and how much: the lane's dispatcher, apart from what a claim
 * is (`JobQueue.claimRound`) and how its jobs run (`Worker.ts`). `step` is one turn of its loop:
 *
 * - capacity: it claims only while fewer than the lane's `concurrency` of its jobs run here (`started`
 *   and `ended` count them), at most `claimBatch` at once; at capacity it waits for a job to end;
 * - when a claim took fewer than it asked for, that claim took every job claimable at that moment, so
 *   claiming again at once would come back empty: it waits until something may have changed that —
 *   a wake (`notified` with a due time already reached, `wake`, or a job ending whose settlement made a
 *   job claimable), the lane's next due time (the claim's `wait`, or an announced one), or the poll;
 * - per-group share: a job ending frees a place for its group; that is worth a claim only when the
 *   last claim left due jobs behind for a group at its share (`leftBehind`), or when the ending itself
 *   made a job claimable (the next of its order key, a rerun, a retry). Otherwise it would come back
 *   empty;
 * - the idle wait keeps deadlines, not durations: a notification of a job due later recomputes the
 *   wait against the same deadlines, and never restarts it.
 *
 * Its correctness rests on orderings, each named where it is kept: a latch is closed *before* what it
 * guards is read, so that what opens it in between is not lost (a notification during a claim, a job
 * ending while the count is read, a due time announced while the wait is computed).
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Latch from "effect/Latch"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"

/** What a lane's dispatcher needs of its lane and the settings. */
export interface Settings {
  /** Most of the lane's jobs running at once in this instance. */
  readonly concurrency: number
  /** Most jobs one claim takes (more free slots: claimed in several rounds). */
  readonly claimBatch: number
  /** How long an idle dispatcher waits, at most, before it claims again. */
  readonly pollInterval: Duration.Input
}

/** What one claim did (`JobQueue.Round`, counted). */
export interface ClaimResult {
  /** How many jobs it took; they are `started` by the claim itself, before it returns. */
  readonly taken: number
  /** Milliseconds until the lane's next pending job falls due (none: no job waits for a time). */
  readonly wait: Option.Option<number>
  /** Whether it left due jobs for a group at its share (see the module comment). */
  readonly leftBehind: boolean
}

/**
 * A notification this close to its due time (ms) wakes the dispatcher at once: a claim made now finds
 * the job (the payload's due time is rounded up to the millisecond).
 */
const DUE_NOW_MS = 5

export interface LaneDispatcher {
  /**
   * One turn: at capacity, wait for a job to end; otherwise claim (`claim(asked)`, run
   * uninterruptibly: it must count the jobs it starts with `started` before it returns) and, when it
   * took fewer than `asked`, wait for what may make another job claimable.
   */
  readonly step: <E, R>(claim: (asked: number) => Effect.Effect<ClaimResult, E, R>) => Effect.Effect<void, E, R>
  /** `jobs` of the lane started running here. */
  readonly started: (jobs: number) => Effect.Effect<void>
  /**
   * `jobs` of the lane ended here (together: a batch); `madeClaimable`: their settlement may have made
   * a job claimable (one let run after them, a rerun, a retry), or they did not end normally.
   */
  readonly ended: (jobs: number, madeClaimable: boolean) => Effect.Effect<void>
  /** A job of the lane is due at `due` (Unix ms, the clock's; 0: now). */
  readonly notified: (due: number) => Effect.Effect<void>
  /** Claim again now (a reconnection, jobs reaped). */
  readonly wake: Effect.Effect<void>
}

export const make = (settings: Settings): Effect.Effect<LaneDispatcher> =>
  Effect.gen(function*() {
    const pollMillis = Duration.toMillis(Duration.fromInputUnsafe(settings.pollInterval))
    /** Jobs of this lane running in this instance. */
    const inFlight = yield* Ref.make(0)
    /** Opened when one of the lane's jobs ends: a slot is free. */
    const slotFreed = yield* Latch.make(false)
    /** Opened when a job may be claimable: a notification, a finished job, a wake. */
    const wakeup = yield* Latch.make(false)
    /** Opened when a notification names a future due time, so the idle wait is recomputed. */
    const rescheduled = yield* Latch.make(false)
    /** The earliest due time (Unix ms) announced by a notification and not reached yet. */
    const announced = yield* Ref.make(Number.POSITIVE_INFINITY)
    /**
     * Whether the last claim left due jobs for a group at its share (`ClaimResult.leftBehind`): then a job
     * ending may let them run. True while a claim runs, whose answer is not known yet.
     */
    const leftBehind = yield* Ref.make(true)

    const started = (jobs: number) => Ref.update(inFlight, (n) => n + jobs)

    const ended = (jobs: number, madeClaimable: boolean) =>
      Effect.gen(function*() {
        yield* Ref.update(inFlight, (n) => n - jobs)
        yield* slotFreed.open
        if (madeClaimable || (yield* Ref.get(leftBehind))) yield* wakeup.open
      })

    /** Waits for a wake, or for the next job's due time (`due`: ms from now, from the claim), or the poll. */
    const idle = (due: Option.Option<number>) =>
      Effect.gen(function*() {
        // Deadlines, not durations: a notification that arrives meanwhile recomputes the wait, and must
        // not restart it (with notifications arriving more often than the wait, the next job's wait would
        // begin again at each one and never end).
        const started = yield* Clock.currentTimeMillis
        const pollAt = started + pollMillis
        const dueAt = Option.match(due, { onNone: () => Number.POSITIVE_INFINITY, onSome: (wait) => started + wait })
        while (true) {
          // Closed before `announced` is read: a notification in between opens it again, so its due
          // time is never read too late and then slept past (to the next wake, a message later).
          yield* rescheduled.close
          const now = yield* Clock.currentTimeMillis
          const wait = Math.max(0, Math.min(pollAt, dueAt, yield* Ref.get(announced)) - now)
          const woke = yield* Effect.raceFirst(
            Effect.as(wakeup.await, "wake" as const),
            Effect.raceFirst(
              Effect.as(rescheduled.await, "rescheduled" as const),
              Effect.as(Effect.sleep(Duration.millis(wait)), "timeout" as const)
            )
          )
          if (woke !== "rescheduled") return
        }
      })

    const step = <E, R>(claim: (asked: number) => Effect.Effect<ClaimResult, E, R>) =>
      Effect.gen(function*() {
        // Closed before the count is read: a job ending in between opens it again.
        yield* slotFreed.close
        const free = settings.concurrency - (yield* Ref.get(inFlight))
        if (free <= 0) return yield* slotFreed.await
        const now = yield* Clock.currentTimeMillis
        // An announced time reached is this claim's to serve.
        yield* Ref.update(announced, (due) => (due <= now ? Number.POSITIVE_INFINITY : due))
        // Closed before the claim: a notification or a job ending while it runs opens it again, and
        // the idle wait below then ends at once instead of missing it.
        yield* wakeup.close
        yield* Ref.set(leftBehind, true)
        const asked = Math.min(free, settings.claimBatch)
        const round = yield* Effect.uninterruptible(claim(asked))
        yield* Ref.set(leftBehind, round.leftBehind)
        // Fewer than asked: the claim took every job claimable at that moment. What makes another one
        // claimable opens `wakeup` or is due by the idle wait's deadline.
        if (round.taken < asked) yield* idle(round.wait)
      })

    const notified = (due: number) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        if (due <= now + DUE_NOW_MS) {
          yield* wakeup.open
        } else {
          yield* Ref.update(announced, (current) => Math.min(current, due))
          yield* rescheduled.open
        }
      })

    return { step, started, ended, notified, wake: Effect.asVoid(wakeup.open) }
  })
