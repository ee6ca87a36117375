/**
 * Exponential backoff, once for Parley: the delay before the `retry`-th retry (1-based) is
 * `base × factor^(retry − 1)`, multiplied by a random factor in `[1 − jitter, 1 + jitter]` and capped
 * at `max`. Where the cap applies is part of a policy: on the jittered delay (`cap: "jittered"`, never
 * longer than `max`: webhook deliveries) or on the exponential part before the jitter
 * (`cap: "exponential"`, up to `max × (1 + jitter)`: model calls).
 *
 * `delay` is a pure function of the retry's number and a random draw, so that a caller deciding
 * without effects (the delivery's `decide`) can take the draw as an input; `next` draws it from
 * `Random`; `schedule` is the same policy as an Effect `Schedule` (with `cap: "jittered"` it is
 * `Schedule.exponential(base, factor).pipe(Schedule.jittered)` with its delay capped, to the bit).
 * Nothing here reads the time.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Random from "effect/Random"
import * as Schedule from "effect/Schedule"

export interface Backoff {
  /** The first retry's delay (before jitter). */
  readonly base: Duration.Duration
  /** Each delay is the previous one times this: 2 doubles. */
  readonly factor: number
  /** The longest delay: of the jittered delay, or of the part before jitter (`cap`). */
  readonly max: Duration.Duration
  /** The random factor's spread: 0.2 multiplies each delay by [0.8, 1.2]; 0 is no jitter. */
  readonly jitter: number
  readonly cap: "jittered" | "exponential"
}

/**
 * The delay before the `retry`-th retry (1-based; anything below 1 is the first), for a draw
 * `random` in [0, 1] (0.5 is no jitter, 0 and 1 its extremes).
 */
export const delay = (backoff: Backoff, retry: number, random: number): Duration.Duration => {
  const maxMillis = Duration.toMillis(backoff.max)
  const exponential = Math.min(
    Duration.toMillis(backoff.base) * backoff.factor ** (Math.max(1, retry) - 1),
    // Bounded either way: a jitter of an infinite delay would be NaN (∞ × 0).
    backoff.cap === "exponential" ? maxMillis : Number.MAX_SAFE_INTEGER
  )
  // Schedule.jittered's arithmetic, so that a jittered Schedule and this agree exactly.
  const jittered = backoff.jitter === 0
    ? exponential
    : exponential * (1 - backoff.jitter) * (1 - random) + exponential * (1 + backoff.jitter) * random
  return Duration.millis(backoff.cap === "jittered" ? Math.min(jittered, maxMillis) : jittered)
}

/** The delay before the `retry`-th retry, with a draw from `Random`. */
export const next = (backoff: Backoff, retry: number): Effect.Effect<Duration.Duration> =>
  Effect.map(Random.next, (random) => delay(backoff, retry, random))

/** The policy as a `Schedule` that never ends: its n-th step waits `delay(backoff, n, …)` and outputs it. */
export const schedule = (backoff: Backoff): Schedule.Schedule<Duration.Duration> =>
  Schedule.fromStepWithMetadata(Effect.succeed((meta: Schedule.InputMetadata<unknown>) =>
    Effect.map(next(backoff, meta.attempt), (wait): [Duration.Duration, Duration.Duration] => [wait, wait])
  ))
