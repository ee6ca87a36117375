/**
 * When to try a failed delivery again: an Effect `Schedule`, exponential from `DELIVERY_RETRY_BASE`
 * with jitter, each delay capped at `DELIVERY_RETRY_MAX_DELAY`; a receiver's `Retry-After` is honoured
 * when longer. Attempts go on until `DELIVERY_MAX_AGE` after the event was created (the last attempt
 * lands on that deadline), then the event is dead.
 */
import * as Clock from "effect/Clock"
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import type { DeliveryConfig } from "../Config.js"

export const retrySchedule = (config: Pick<DeliveryConfig, "retryBase" | "retryMaxDelay">) =>
  Schedule.exponential(config.retryBase).pipe(
    Schedule.jittered,
    // modifyDelay is given the step's metadata: `duration` is the (jittered) delay.
    Schedule.modifyDelay(({ duration }) => Effect.succeed(Duration.min(duration, config.retryMaxDelay)))
  )

/** The schedule's delay after the `attempt`-th failure (1-based): its `attempt`-th step's. */
export const scheduledDelay = (
  config: Pick<DeliveryConfig, "retryBase" | "retryMaxDelay">,
  attempt: number
): Effect.Effect<Duration.Duration> =>
  Effect.gen(function*() {
    const step = yield* Schedule.toStep(retrySchedule(config))
    const now = yield* Clock.currentTimeMillis
    let delay = config.retryBase
    for (let n = 0; n < Math.max(1, attempt); n++) {
      // A step fails only when the schedule is done, which an exponential one never is.
      const next = yield* Effect.option(step(now, undefined))
      if (Option.isNone(next)) break
      delay = next.value[1]
    }
    return delay
  })

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

/** After the `attempt`-th failure of an event created at `createdAt`: when to try again, if ever. */
export const nextAttempt = (
  config: DeliveryConfig,
  input: {
    readonly attempt: number
    readonly createdAt: DateTime.Utc
    readonly now: DateTime.Utc
    readonly retryAfter: Option.Option<Duration.Duration>
  }
) =>
  Effect.map(scheduledDelay(config, input.attempt), (scheduled): NextAttempt => {
    const delay = Option.match(input.retryAfter, {
      onNone: () => scheduled,
      onSome: (retryAfter) => Duration.max(scheduled, retryAfter)
    })
    const deadline = DateTime.addDuration(input.createdAt, config.maxAge)
    const remaining = Duration.millis(Math.max(0, deadline.epochMilliseconds - input.now.epochMilliseconds))
    if (Duration.toMillis(remaining) === 0) return { _tag: "GiveUp" }
    return { _tag: "RetryAt", delay: Duration.min(delay, remaining) }
  })
