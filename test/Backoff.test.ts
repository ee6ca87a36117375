/**
 * The backoff policy: its delays, its jitter, where its cap applies; that its `Schedule` is Effect's
 * exponential, jittered, capped schedule to the bit; and the three policies Parley runs on it
 * (deliveries, model calls, and the job worker's default).
 */
import { describe, expect, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Random from "effect/Random"
import * as Schedule from "effect/Schedule"
import { type Backoff, delay, next, schedule } from "../src/Backoff.js"
import { backoffOf as modelBackoff, defaultRetryPolicy } from "../src/Ai/Llm/Retry.js"
import { backoffOf as deliveryBackoff } from "../src/Delivery/Retry.js"

const SECOND = 1_000

const capped: Backoff = { base: Duration.seconds(5), factor: 2, max: Duration.hours(1), jitter: 0.2, cap: "jittered" }

const millis = (backoff: Backoff, retry: number, random = 0.5) => Duration.toMillis(delay(backoff, retry, random))

/** `Random` drawing `values` in turn, cycling. */
const withRandom = (values: ReadonlyArray<number>) => {
  let index = 0
  const draw = () => values[index++ % values.length] ?? 0.5
  return Effect.provideService(Random.Random, { nextDoubleUnsafe: draw, nextIntUnsafe: () => 0 })
}

/** The first `n` delays of a schedule. */
const delaysOf = <Input>(self: Schedule.Schedule<unknown, Input>, n: number, input: Input) =>
  Effect.gen(function*() {
    const step = yield* Schedule.toStep(self)
    const delays: Array<number> = []
    for (let i = 0; i < n; i++) delays.push(Duration.toMillis((yield* step(0, input))[1]))
    return delays
  })

describe("delay", () => {
  it("multiplies by the factor per retry from the base, up to the cap", () => {
    expect(Array.from({ length: 13 }, (_, i) => millis(capped, i + 1))).toEqual([
      5_000,
      10_000,
      20_000,
      40_000,
      80_000,
      160_000,
      320_000,
      640_000,
      1_280_000,
      2_560_000,
      3_600_000,
      3_600_000,
      3_600_000
    ])
    expect(millis({ ...capped, factor: 3 }, 3)).toBe(45_000)
  })

  it("reads a retry number below 1 as the first", () => {
    expect(millis(capped, 0)).toBe(5_000)
    expect(millis(capped, -3)).toBe(5_000)
  })

  it("jitter: the draw 0 is (1 − jitter)×, 1 is (1 + jitter)×, 0.5 none", () => {
    expect(millis(capped, 3, 0)).toBeCloseTo(16_000, 6)
    expect(millis(capped, 3, 1)).toBeCloseTo(24_000, 6)
    expect(millis(capped, 3, 0.25)).toBeCloseTo(18_000, 6)
    expect(millis({ ...capped, jitter: 0.5 }, 3, 0)).toBeCloseTo(10_000, 6)
  })

  it("without jitter the draw does not matter", () => {
    const plain = { ...capped, jitter: 0 }
    for (const random of [0, 0.123, 0.5, 0.999, 1]) expect(millis(plain, 4, random)).toBe(40_000)
  })

  it("cap \"jittered\" bounds the jittered delay; cap \"exponential\" the delay before jitter", () => {
    // 0.8 × 5 120 s > 1 h: from the 11th retry on, exactly the cap.
    expect(millis(capped, 11, 0)).toBe(3_600_000)
    expect(millis(capped, 11, 1)).toBe(3_600_000)
    expect(millis(capped, 10, 1)).toBeCloseTo(3_072_000, 6)
    const before = { ...capped, cap: "exponential" as const }
    expect(millis(before, 11, 0)).toBeCloseTo(2_880_000, 6)
    expect(millis(before, 11, 1)).toBeCloseTo(4_320_000, 6)
    expect(millis(before, 11)).toBe(3_600_000)
  })

  it("stays finite however many retries", () => {
    for (const random of [0, 0.5, 1]) {
      expect(millis(capped, 5_000, random)).toBe(3_600_000)
      expect(millis({ ...capped, cap: "exponential" }, 5_000, random)).toBeCloseTo(3_600_000 * (0.8 + 0.4 * random), 3)
    }
  })
})

describe("next and schedule", () => {
  it.effect("next draws the jitter from Random", () =>
    Effect.gen(function*() {
      expect(Duration.toMillis(yield* next(capped, 2).pipe(withRandom([0])))).toBeCloseTo(8_000, 6)
      expect(Duration.toMillis(yield* next(capped, 2).pipe(withRandom([1])))).toBeCloseTo(12_000, 6)
    }))

  it.effect("the schedule's n-th delay is delay(n), with a draw per step", () =>
    Effect.gen(function*() {
      const draws = [0.5, 0, 1, 0.25, 0.75, 0.5, 0.1, 0.9, 0.5, 0.5, 0, 1]
      const delays = yield* delaysOf(schedule(capped), draws.length, undefined).pipe(withRandom(draws))
      expect(delays).toEqual(draws.map((random, i) => millis(capped, i + 1, random)))
    }))

  it.effect("with cap \"jittered\" it is Effect's exponential, jittered schedule with its delay capped, to the bit", () =>
    Effect.gen(function*() {
      const draws = [0.5, 0, 1, 0.3, 0.7, 0.05, 0.95, 0.5, 0.61, 0.2, 0.8, 0, 1, 0.5]
      const effects = Schedule.exponential(capped.base).pipe(
        Schedule.jittered,
        Schedule.modifyDelay(({ duration }) => Effect.succeed(Duration.min(duration, capped.max)))
      )
      const ours = yield* delaysOf(schedule(capped), draws.length, undefined).pipe(withRandom(draws))
      const theirs = yield* delaysOf(effects, draws.length, undefined).pipe(withRandom(draws))
      expect(ours).toEqual(theirs)
    }))
})

describe("Parley's policies", () => {
  it("deliveries (docs/webhooks.md): 5 s doubling, ±20 %, each delay capped at 1 h", () => {
    const backoff = deliveryBackoff({ retryBase: Duration.seconds(5), retryMaxDelay: Duration.hours(1) })
    expect([1, 2, 10, 11].map((n) => millis(backoff, n))).toEqual([5_000, 10_000, 2_560_000, 3_600_000])
    expect(millis(backoff, 2, 0)).toBeCloseTo(8_000, 6)
    expect(millis(backoff, 2, 1)).toBeCloseTo(12_000, 6)
    expect(millis(backoff, 11, 1)).toBe(3_600_000)
  })

  it("model calls: 500 ms doubling up to 10 s, then ±20 % (so at most 12 s), as before", () => {
    const backoff = modelBackoff(defaultRetryPolicy)
    /** The formula the model calls' retries had: the capped exponential times nextBetween(0.8, 1.2). */
    const before = (retries: number, random: number) =>
      Math.min(500 * 2 ** retries, 10_000) * (random * (1.2 - 0.8) + 0.8)
    for (let retries = 0; retries < 8; retries++) {
      for (const random of [0, 0.2, 0.5, 0.9, 0.999]) {
        expect(millis(backoff, retries + 1, random)).toBeCloseTo(before(retries, random), 6)
      }
    }
    expect(millis(backoff, 6, 1)).toBeCloseTo(12_000, 6)
  })

  it("the job worker's default (1 s, 2 s, 4 s… capped at 5 minutes) is base 1 s, factor 2, max 5 min, no jitter", () => {
    const worker: Backoff = { base: Duration.seconds(1), factor: 2, max: Duration.minutes(5), jitter: 0, cap: "jittered" }
    /** Worker.ts's `backoff(attempts)`. */
    const workerBackoff = (attempts: number) => Math.min(300_000, 1000 * 2 ** Math.max(0, attempts - 1))
    for (let attempts = 0; attempts <= 40; attempts++) {
      expect(millis(worker, attempts), `attempts=${attempts}`).toBe(workerBackoff(attempts))
    }
    expect(millis(worker, 9)).toBe(256 * SECOND)
    expect(millis(worker, 10)).toBe(300 * SECOND)
  })
})
