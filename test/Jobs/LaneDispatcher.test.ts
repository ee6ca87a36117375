/**
 * A lane's dispatcher on the test clock, its claims scripted: when it claims and how much (capacity,
 * a job ending, the share left behind), how long it waits (the claim's next due time, an announced
 * one, the poll), and the orderings that keep a wake from being lost or a deadline from moving.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as TestClock from "effect/testing/TestClock"
import * as LaneDispatcher from "../../src/Jobs/LaneDispatcher.js"

/** Lets the dispatcher's fiber run until it waits again (nothing here sleeps on the real clock). */
const settle = Effect.forEach(Array.from({ length: 25 }), () => Effect.yieldNow, { discard: true })

/** A claim that took nothing and knows of no job due later. */
const empty: LaneDispatcher.ClaimResult = { taken: 0, wait: Option.none(), leftBehind: false }

/** What a scripted claim does: given what it was asked for and the dispatcher (to start jobs, or notify). */
type Answer = (asked: number, dispatcher: LaneDispatcher.LaneDispatcher) => Effect.Effect<LaneDispatcher.ClaimResult>

/** Takes `taken` jobs (started, as the pool's claim starts them) and answers with `rest`. */
const taking = (taken: number, rest: Partial<LaneDispatcher.ClaimResult> = {}): Answer => (_, dispatcher) =>
  Effect.as(dispatcher.started(taken), { ...empty, ...rest, taken })

/**
 * A dispatcher running on its own fiber, whose claims answer `script` in turn (then `empty`); each
 * claim is recorded with what it asked for and when (test clock, ms).
 */
const running = (settings: Partial<LaneDispatcher.Settings>, script: ReadonlyArray<Answer> = []) =>
  Effect.gen(function*() {
    const dispatcher = yield* LaneDispatcher.make({ concurrency: 4, claimBatch: 64, pollInterval: "1 minute", ...settings })
    const claims: Array<{ readonly asked: number; readonly at: number }> = []
    const claim = (asked: number) =>
      Effect.gen(function*() {
        const answer = script[claims.length] ?? (() => Effect.succeed(empty))
        claims.push({ asked, at: yield* Clock.currentTimeMillis })
        return yield* answer(asked, dispatcher)
      })
    yield* Effect.forkScoped(Effect.forever(dispatcher.step(claim)))
    yield* settle
    return { dispatcher, claims }
  })

const times = (claims: ReadonlyArray<{ readonly at: number }>) => claims.map((claim) => claim.at)

describe("LaneDispatcher", () => {
  it.effect("an idle lane claims at start, then at each poll, and not in between", () =>
    Effect.gen(function*() {
      const { claims } = yield* running({ pollInterval: "10 seconds" })
      expect(times(claims)).toEqual([0])
      yield* TestClock.adjust("9999 millis")
      expect(times(claims)).toEqual([0])
      yield* TestClock.adjust("1 milli")
      expect(times(claims)).toEqual([0, 10_000])
    }))

  it.effect("a claim that took fewer than asked waits for the lane's next due time, which it names", () =>
    Effect.gen(function*() {
      const { claims } = yield* running({}, [() => Effect.succeed({ ...empty, wait: Option.some(3_000) })])
      yield* TestClock.adjust("2999 millis")
      expect(times(claims)).toEqual([0])
      yield* TestClock.adjust("1 milli")
      expect(times(claims)).toEqual([0, 3_000])
    }))

  it.effect("a claim that took all it asked for claims again at once", () =>
    Effect.gen(function*() {
      // Free slots beyond a claim's batch: claimed in several rounds, without waiting.
      const { claims } = yield* running({ concurrency: 10, claimBatch: 4 }, [taking(4), taking(4)])
      expect(claims.map((claim) => [claim.asked, claim.at])).toEqual([[4, 0], [4, 0], [2, 0]])
    }))

  it.effect("at capacity it claims nothing, woken or not, until a job ends; then it asks for the free slots", () =>
    Effect.gen(function*() {
      const { claims, dispatcher } = yield* running({ concurrency: 2, pollInterval: "10 seconds" }, [taking(2)])
      expect(claims.map((claim) => claim.asked)).toEqual([2])
      yield* dispatcher.notified(0)
      yield* dispatcher.wake
      yield* settle
      yield* TestClock.adjust("1 minute")
      expect(claims).toHaveLength(1)
      yield* dispatcher.ended(1, false)
      yield* settle
      expect(claims.map((claim) => claim.asked)).toEqual([2, 1])
    }))

  it.effect("a job ending wakes the idle lane only when that may let a job run", () =>
    Effect.gen(function*() {
      const { claims, dispatcher } = yield* running({}, [taking(1), taking(1, { leftBehind: true })])
      expect(claims).toHaveLength(1)
      // Its settlement made nothing claimable and no group's jobs were left at its share: no claim.
      yield* dispatcher.ended(1, false)
      yield* settle
      expect(claims).toHaveLength(1)
      // Its settlement made one claimable (the next of its order key, a rerun, a retry): a claim.
      yield* dispatcher.started(1)
      yield* dispatcher.ended(1, true)
      yield* settle
      expect(claims).toHaveLength(2)
      // That claim left due jobs for a group at its share: a job of the lane ending may free a place.
      yield* dispatcher.ended(1, false)
      yield* settle
      expect(claims).toHaveLength(3)
      expect(times(claims)).toEqual([0, 0, 0])
    }))

  it.effect("a notification that arrives while a claim is in flight is not lost", () =>
    Effect.gen(function*() {
      // The job was queued after the claim's snapshot: the claim missed it, and the notification came
      // before the claim returned. The lane claims again at once, not at the next poll.
      const { claims } = yield* running({}, [(_, dispatcher) => Effect.as(dispatcher.notified(0), empty)])
      expect(times(claims)).toEqual([0, 0])
    }))

  it.effect("a job ending while a claim is in flight is not lost either", () =>
    Effect.gen(function*() {
      const { claims, dispatcher } = yield* running({}, [taking(1), (_, d) => Effect.as(d.ended(1, true), empty)])
      expect(claims).toHaveLength(1)
      yield* dispatcher.wake
      yield* settle
      expect(times(claims)).toEqual([0, 0, 0])
    }))

  it.effect("a notification of a job due later wakes the lane then, not at the poll; an earlier one moves it earlier", () =>
    Effect.gen(function*() {
      // The claim at 2 s names the next due time itself (the one announced for 5 s is the database's to tell).
      const { claims, dispatcher } = yield* running({}, [
        () => Effect.succeed(empty),
        () => Effect.succeed({ ...empty, wait: Option.some(3_000) })
      ])
      yield* dispatcher.notified(5_000)
      yield* settle
      yield* TestClock.adjust("1 second")
      yield* dispatcher.notified(2_000)
      yield* settle
      yield* TestClock.adjust("999 millis")
      expect(times(claims)).toEqual([0])
      yield* TestClock.adjust("1 milli")
      expect(times(claims)).toEqual([0, 2_000])
      yield* TestClock.adjust("3 seconds")
      expect(times(claims)).toEqual([0, 2_000, 5_000])
    }))

  it.effect("a deadline is not restarted by each notification of a job due later", () =>
    Effect.gen(function*() {
      const { claims, dispatcher } = yield* running({}, [() => Effect.succeed({ ...empty, wait: Option.some(1_000) })])
      // A notification every 100 ms of a job due in an hour, for as long as the next job waits.
      for (let i = 0; i < 9; i++) {
        yield* TestClock.adjust("100 millis")
        yield* dispatcher.notified((yield* Clock.currentTimeMillis) + 3_600_000)
        yield* settle
      }
      expect(times(claims)).toEqual([0])
      yield* TestClock.adjust("100 millis")
      expect(times(claims)).toEqual([0, 1_000])
    }))

  it.effect("an announced due time, once claimed at, is not waited for again", () =>
    Effect.gen(function*() {
      const { claims, dispatcher } = yield* running({ pollInterval: "10 seconds" })
      yield* dispatcher.notified(500)
      yield* settle
      yield* TestClock.adjust("500 millis")
      expect(times(claims)).toEqual([0, 500])
      // Idle again: next the poll, not the time already served (a wait of 0, claiming in a loop).
      yield* TestClock.adjust("9 seconds")
      expect(times(claims)).toEqual([0, 500])
      yield* TestClock.adjust("1 second")
      expect(times(claims)).toEqual([0, 500, 10_500])
    }))
})
