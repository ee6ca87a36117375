/**
 * When to try a failed delivery again: exponential backoff (`Backoff.ts`) from `DELIVERY_RETRY_BASE`,
 * doubling, ±20 % jitter, each delay capped at `DELIVERY_RETRY_MAX_DELAY`; a receiver's `Retry-After`
 * is honoured when longer. Attempts go on until `DELIVERY_MAX_AGE` after the event was created (the
 * last attempt lands on that deadline), then the event is dead. Nothing here reads the clock: `now`
 * is the caller's.
 */
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import * as Backoff from "../Backoff.js"
import type { DeliveryConfig } from "../Config.js"

/** The delivery policy: doubling from `retryBase`, ±20 % jitter, the jittered delay capped at `retryMaxDelay`. */
export const backoffOf = (config: Pick<DeliveryConfig, "retryBase" | "retryMaxDelay">): Backoff.Backoff => ({
  base: config.retryBase,
  factor: 2,
  max: config.retryMaxDelay,
  jitter: 0.2,
  cap: "jittered"
})

/** The scheduled delay after the `attempt`-th failure (1-based), with a draw from `Random`. */
export const scheduledDelay = (
  config: Pick<DeliveryConfig, "retryBase" | "retryMaxDelay">,
  attempt: number
): Effect.Effect<Duration.Duration> => Backoff.next(backoffOf(config), attempt)

/** `Retry-After` as seconds or an HTTP date, relative to `now`. */
export const parseRetryAfter = (value: string | undefined, now: DateTime.Utc): Option.Option<Duration.Duration> => {
  if (value === undefined) return Option.none()
  const trimmed = value.trim()
  if (/^\d+$/.test(trimmed)) return Option.some(Duration.seconds(Number(trimmed)))
  // HTTP dates (all three formats) start with the day's name; Date.parse alone takes "-5" for a date.
  if (!/^(Mon|Tue|Wed|Thu|Fri|Sat|Sun)/.test(trimmed)) return Option.none()
  const date = Date.parse(trimmed)
  if (Number.isNaN(date)) return Option.none()
  return Option.some(Duration.millis(Math.max(0, date - now.epochMilliseconds)))
}

export type NextAttempt =
  | { readonly _tag: "RetryAt"; readonly delay: Duration.Duration }
  | { readonly _tag: "GiveUp" }

/** What retrying an event needs of the delivery settings. */
export type RetryPolicy = Pick<DeliveryConfig, "retryBase" | "retryMaxDelay" | "maxAge">

/**
 * After the `attempt`-th failure of an event whose retry window opened at `createdAt`: when to try
 * again, if ever. `random` is the jitter's draw (in [0, 1]).
 */
export const retryAt = (
  config: RetryPolicy,
  input: {
    readonly attempt: number
    readonly createdAt: DateTime.Utc
    readonly now: DateTime.Utc
    readonly retryAfter: Option.Option<Duration.Duration>
    readonly random: number
  }
): NextAttempt => {
  const scheduled = Backoff.delay(backoffOf(config), input.attempt, input.random)
  const delay = Option.match(input.retryAfter, {
    onNone: () => scheduled,
    onSome: (retryAfter) => Duration.max(scheduled, retryAfter)
  })
  const deadline = DateTime.addDuration(input.createdAt, config.maxAge)
  const remaining = Duration.millis(Math.max(0, deadline.epochMilliseconds - input.now.epochMilliseconds))
  if (Duration.toMillis(remaining) === 0) return { _tag: "GiveUp" }
  return { _tag: "RetryAt", delay: Duration.min(delay, remaining) }
}

/** `retryAt` with a draw from `Random`. */
export const nextAttempt = (
  config: RetryPolicy,
  input: {
    readonly attempt: number
    readonly createdAt: DateTime.Utc
    readonly now: DateTime.Utc
    readonly retryAfter: Option.Option<Duration.Duration>
  }
): Effect.Effect<NextAttempt> => Effect.map(Random.next, (random) => retryAt(config, { ...input, random }))
