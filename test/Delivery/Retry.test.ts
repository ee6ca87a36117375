import { describe, expect, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import { DeliveryConfig } from "../../src/Config.js"
import { type NextAttempt, nextAttempt, parseRetryAfter, scheduledDelay } from "../../src/Delivery/Retry.js"

const SECOND = 1_000
const HOUR = 3_600 * SECOND

/** The defaults, read through the real config with nothing set. */
const defaults = DeliveryConfig.pipe(Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord({})))

const config: DeliveryConfig = {
  retryBase: Duration.seconds(5),
  retryMaxDelay: Duration.hours(1),
  maxAge: Duration.hours(28),
  timeout: Duration.seconds(10)
}

const createdAt = DateTime.makeUnsafe("2026-11-22T10:00:00Z")
const deadline = DateTime.addDuration(createdAt, Duration.hours(28))
const at = (offset: Duration.Input) => DateTime.addDuration(createdAt, offset)

/** Un-jittered delay after the `n`-th failure: base × 2^(n-1). */
const exponential = (n: number) => 5 * SECOND * 2 ** (n - 1)

/** Schedule.jittered is `jitteredWith({ min: 0.8, max: 1.2 })` (effect/src/internal/schedule.ts). */
const JITTER_MIN = 0.8
const JITTER_MAX = 1.2
/** Float slack: the schedule turns the delay into an instant and back. */
const EPSILON = 1e-3

/**
 * `Random` drawing `values` in turn, cycling (what v3's `Effect.withRandomFixed` did): the schedule's
 * jitter reads `Random.nextDoubleUnsafe`, so 0.5 is no jitter, 0 and 1 its extremes.
 */
const withRandomFixed = (values: ReadonlyArray<number>) => {
  let index = 0
  const draw = () => values[index++ % values.length] ?? 0.5
  return Effect.provideService(Random.Random, {
    nextDoubleUnsafe: draw,
    nextIntUnsafe: () => Math.round(draw() * Number.MAX_SAFE_INTEGER)
  })
}

const millis = (effect: Effect.Effect<Duration.Duration>) => Effect.map(effect, Duration.toMillis)

const retryDelay = (next: NextAttempt): number => {
  if (next._tag !== "RetryAt") throw new Error(`expected RetryAt, got ${next._tag}`)
  return Duration.toMillis(next.delay)
}

describe("DeliveryConfig", () => {
  it.effect("defaults to a 5 s base, 1 h cap and 28 h maximum age", () =>
    Effect.gen(function*() {
      const loaded = yield* defaults
      expect(Duration.toMillis(loaded.retryBase)).toBe(5 * SECOND)
      expect(Duration.toMillis(loaded.retryMaxDelay)).toBe(HOUR)
      expect(Duration.toMillis(loaded.maxAge)).toBe(28 * HOUR)
      expect(Duration.toMillis(loaded.timeout)).toBe(10 * SECOND)
    }))
})

describe("scheduledDelay", () => {
  it.effect("without jitter (random 0.5) doubles from retryBase, then stays at retryMaxDelay", () =>
    Effect.gen(function*() {
      const delays: Array<number> = []
      for (let n = 1; n <= 14; n++) delays.push(yield* millis(scheduledDelay(config, n)))
      expect(delays.map((d) => Math.round(d))).toEqual([
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
        HOUR, // 5 120 000 capped
        HOUR,
        HOUR,
        HOUR
      ])
      delays.forEach((d, i) => expect(Math.abs(d - Math.min(exponential(i + 1), HOUR))).toBeLessThan(EPSILON))
    }).pipe(withRandomFixed([0.5])))

  it.effect("the jitter's extremes are exactly 0.8× and 1.2× of base × 2^(n-1)", () =>
    Effect.gen(function*() {
      for (let n = 1; n <= 9; n++) {
        const low = yield* millis(scheduledDelay(config, n).pipe(withRandomFixed([0])))
        const high = yield* millis(scheduledDelay(config, n).pipe(withRandomFixed([1])))
        expect(Math.abs(low - JITTER_MIN * exponential(n)), `n=${n}`).toBeLessThan(EPSILON)
        expect(Math.abs(high - JITTER_MAX * exponential(n)), `n=${n}`).toBeLessThan(EPSILON)
      }
      // The cap applies after the jitter: 0.8 × 5 120 000 > 1 h, so from the 11th failure on it is exactly 1 h.
      expect(yield* millis(scheduledDelay(config, 10).pipe(withRandomFixed([1])))).toBeCloseTo(3_072_000, 3)
      expect(yield* millis(scheduledDelay(config, 10).pipe(withRandomFixed([0])))).toBeCloseTo(2_048_000, 3)
      expect(yield* millis(scheduledDelay(config, 11).pipe(withRandomFixed([0])))).toBe(HOUR)
      expect(yield* millis(scheduledDelay(config, 11).pipe(withRandomFixed([1])))).toBe(HOUR)
    }))

  it.effect("with real randomness every delay lies within [0.8, 1.2] × base × 2^(n-1) and never above the cap", () =>
    Effect.gen(function*() {
      for (let n = 1; n <= 40; n++) {
        const samples: Array<number> = []
        for (let i = 0; i < 25; i++) samples.push(yield* millis(scheduledDelay(config, n)))
        for (const delay of samples) {
          expect(delay, `n=${n}`).toBeGreaterThanOrEqual(Math.min(JITTER_MIN * exponential(n), HOUR) - EPSILON)
          expect(delay, `n=${n}`).toBeLessThanOrEqual(Math.min(JITTER_MAX * exponential(n), HOUR) + EPSILON)
          expect(delay, `n=${n}`).toBeLessThanOrEqual(HOUR)
        }
        // Jittered: 25 draws of a continuous uniform are not all equal (unless capped).
        if (JITTER_MAX * exponential(n) < HOUR) {
          expect(new Set(samples).size, `n=${n}: 25 delays should not all be equal (jitter)`).toBeGreaterThan(1)
        }
        if (JITTER_MIN * exponential(n) >= HOUR) expect(new Set(samples), `n=${n}`).toEqual(new Set([HOUR]))
      }
    }))

  it.effect("follows a configured base and cap", () =>
    Effect.gen(function*() {
      const fast = { retryBase: Duration.millis(50), retryMaxDelay: Duration.millis(200) }
      const delays: Array<number> = []
      for (let n = 1; n <= 5; n++) delays.push(Math.round(yield* millis(scheduledDelay(fast, n))))
      expect(delays).toEqual([50, 100, 200, 200, 200])
    }).pipe(withRandomFixed([0.5])))
})

describe("parseRetryAfter", () => {
  const now = DateTime.makeUnsafe("2026-11-22T10:00:00Z")
  const seconds = (value: string | undefined) =>
    Option.map(parseRetryAfter(value, now), (d) => Duration.toMillis(d) / SECOND)

  it("reads delay-seconds", () => {
    expect(seconds("120")).toEqual(Option.some(120))
    expect(seconds("0")).toEqual(Option.some(0))
    expect(seconds(" 7 ")).toEqual(Option.some(7))
    expect(seconds("86400")).toEqual(Option.some(86_400))
  })

  it("reads an HTTP date relative to now (IMF-fixdate and RFC 850)", () => {
    expect(seconds("Sun, 22 Nov 2026 10:02:30 GMT")).toEqual(Option.some(150))
    expect(seconds("Sunday, 22-Nov-26 10:02:30 GMT")).toEqual(Option.some(150))
    expect(seconds("Mon, 23 Nov 2026 10:00:00 GMT")).toEqual(Option.some(86_400))
  })

  it("a date in the past means no wait", () => {
    expect(seconds("Sat, 21 Nov 2026 10:00:00 GMT")).toEqual(Option.some(0))
    expect(seconds("Wed, 21 Oct 2015 07:28:00 GMT")).toEqual(Option.some(0))
  })

  it("ignores a missing header and words", () => {
    for (const value of [undefined, "", "   ", "soon", "12abc", "in 5 minutes", "1e3", "0x10", "NaN"]) {
      expect(parseRetryAfter(value, now), JSON.stringify(value)).toEqual(Option.none())
    }
  })

  it("ignores numbers that are neither delay-seconds nor an HTTP date (negative, fractional, bare words + digits)", () => {
    // V8's lenient Date.parse reads these as dates ("1.5" → 2001-01-05, "-5" → 2001-05-01).
    for (const value of ["-5", "1.5", "retry 12"]) {
      expect(parseRetryAfter(value, now), JSON.stringify(value)).toEqual(Option.none())
    }
  })
})

describe("nextAttempt", () => {
  it.effect("without Retry-After waits the scheduled delay", () =>
    Effect.gen(function*() {
      const next = yield* nextAttempt(config, { attempt: 3, createdAt, now: at("1 minute"), retryAfter: Option.none() })
      expect(retryDelay(next)).toBeCloseTo(20_000, 3)
    }).pipe(withRandomFixed([0.5])))

  it.effect("honours a Retry-After longer than the scheduled delay, even beyond retryMaxDelay", () =>
    Effect.gen(function*() {
      const tenMinutes = yield* nextAttempt(config, {
        attempt: 1,
        createdAt,
        now: at("5 seconds"),
        retryAfter: Option.some(Duration.minutes(10))
      })
      expect(tenMinutes).toEqual({ _tag: "RetryAt", delay: Duration.minutes(10) })
      const twoHours = yield* nextAttempt(config, {
        attempt: 2,
        createdAt,
        now: at("1 minute"),
        retryAfter: Option.some(Duration.hours(2))
      })
      expect(retryDelay(twoHours)).toBe(2 * HOUR)
    }))

  it.effect("keeps the scheduled delay when Retry-After is shorter", () =>
    Effect.gen(function*() {
      const next = yield* nextAttempt(config, {
        attempt: 4,
        createdAt,
        now: at("2 minutes"),
        retryAfter: Option.some(Duration.seconds(1))
      })
      expect(retryDelay(next)).toBeCloseTo(40_000, 3)
    }).pipe(withRandomFixed([0.5])))

  it.effect("reads Retry-After end to end from a header value", () =>
    Effect.gen(function*() {
      const now = at("1 minute")
      const next = yield* nextAttempt(config, {
        attempt: 1,
        createdAt,
        now,
        retryAfter: parseRetryAfter("Sun, 22 Nov 2026 10:31:00 GMT", now)
      })
      expect(retryDelay(next)).toBe(30 * 60 * SECOND)
    }))

  it.effect("caps the last delay so that the last attempt lands on the deadline", () =>
    Effect.gen(function*() {
      const now = DateTime.subtract(deadline, { minutes: 10 })
      const scheduled = yield* nextAttempt(config, { attempt: 30, createdAt, now, retryAfter: Option.none() })
      expect(scheduled).toEqual({ _tag: "RetryAt", delay: Duration.minutes(10) })
      const retryAfter = yield* nextAttempt(config, {
        attempt: 2,
        createdAt,
        now,
        retryAfter: Option.some(Duration.hours(5))
      })
      expect(retryAfter).toEqual({ _tag: "RetryAt", delay: Duration.minutes(10) })
      const lastMillisecond = yield* nextAttempt(config, {
        attempt: 40,
        createdAt,
        now: DateTime.subtract(deadline, { milliseconds: 1 }),
        retryAfter: Option.none()
      })
      expect(retryDelay(lastMillisecond)).toBe(1)
    }))

  it.effect("gives up once createdAt + maxAge is reached or passed", () =>
    Effect.gen(function*() {
      for (const now of [deadline, DateTime.add(deadline, { milliseconds: 1 }), DateTime.add(deadline, { days: 3 })]) {
        const next = yield* nextAttempt(config, { attempt: 38, createdAt, now, retryAfter: Option.none() })
        expect(next, DateTime.formatIso(now)).toEqual({ _tag: "GiveUp" })
        const early = yield* nextAttempt(config, { attempt: 1, createdAt, now, retryAfter: Option.some(Duration.seconds(1)) })
        expect(early).toEqual({ _tag: "GiveUp" })
      }
    }))

  it.effect("follows a configured maxAge", () =>
    Effect.gen(function*() {
      const short = { ...config, maxAge: Duration.seconds(30) }
      const late = yield* nextAttempt(short, { attempt: 3, createdAt, now: at("25 seconds"), retryAfter: Option.none() })
      expect(late).toEqual({ _tag: "RetryAt", delay: Duration.seconds(5) })
      const over = yield* nextAttempt(short, { attempt: 3, createdAt, now: at("30 seconds"), retryAfter: Option.none() })
      expect(over).toEqual({ _tag: "GiveUp" })
    }))

  /** Fails every attempt, advancing `now` by each returned delay, until GiveUp. */
  const simulate = (cfg: DeliveryConfig) =>
    Effect.gen(function*() {
      const delays: Array<number> = []
      let now = createdAt
      for (let attempt = 1; attempt <= 1_000; attempt++) {
        const next = yield* nextAttempt(cfg, { attempt, createdAt, now, retryAfter: Option.none() })
        if (next._tag === "GiveUp") return { delays, attempts: attempt, end: now }
        delays.push(Duration.toMillis(next.delay))
        now = DateTime.addDuration(now, next.delay)
      }
      throw new Error("never gave up")
    })

  it.effect("with the defaults and no jitter: 38 attempts over exactly 28 hours, the last on the deadline", () =>
    Effect.gen(function*() {
      const { attempts, delays, end } = yield* simulate(yield* defaults)
      // 10 doubling delays (5 s … 2 560 s = 5 115 s), 26 hours, then the remainder to the deadline.
      expect(attempts).toBe(38)
      expect(delays.slice(0, 10).map(Math.round)).toEqual([
        5_000,
        10_000,
        20_000,
        40_000,
        80_000,
        160_000,
        320_000,
        640_000,
        1_280_000,
        2_560_000
      ])
      expect(delays.slice(10, 36)).toEqual(Array.from({ length: 26 }, () => HOUR))
      expect(Math.round(delays[36]!)).toBe(28 * HOUR - 5_115 * SECOND - 26 * HOUR)
      expect(end.epochMilliseconds).toBe(deadline.epochMilliseconds)
    }).pipe(withRandomFixed([0.5])))

  it.effect("with the defaults and jitter: retries for the whole 28 hours in a reasonable number of attempts", () =>
    Effect.gen(function*() {
      for (let run = 0; run < 5; run++) {
        const { attempts, delays, end } = yield* simulate(yield* defaults)
        const total = delays.reduce((sum, d) => sum + d, 0)
        expect(total).toBeGreaterThanOrEqual(28 * HOUR - Math.max(...delays))
        expect(Math.abs(total - 28 * HOUR)).toBeLessThan(1)
        expect(end.epochMilliseconds).toBe(deadline.epochMilliseconds)
        expect(attempts).toBeGreaterThanOrEqual(20)
        expect(attempts).toBeLessThanOrEqual(60)
        for (const delay of delays) expect(delay).toBeLessThanOrEqual(HOUR)
        // Each delay but the capped last one is within the jitter bounds of its attempt.
        delays.slice(0, -1).forEach((delay, i) => {
          expect(delay).toBeGreaterThanOrEqual(Math.min(JITTER_MIN * exponential(i + 1), HOUR) - EPSILON)
          expect(delay).toBeLessThanOrEqual(Math.min(JITTER_MAX * exponential(i + 1), HOUR) + EPSILON)
        })
      }
    }))
})
