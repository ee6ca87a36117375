/**
 * Time-outs and retries of model calls. Each attempt has `timeout`; transient failures are retried
 * with exponential backoff and jitter, never sooner than the provider's `Retry-After`, at most
 * `maxRetries` times per call, and only while the reply's retry budget lasts: the time it may lose to
 * failed attempts and to waiting between them, summed over all of its model calls. Healthy calls do
 * not spend the budget, so a long tool loop is not cut short; a dead provider costs a reply at most
 * about `retryBudget + timeout`. Every attempt counts in `parley.ai.requests` (`outcome`: `success` or
 * `error`), so the provider error ratio is per model request, retries included.
 */
import type * as AiError from "effect/ai/AiError"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Ref from "effect/Ref"
import * as Schedule from "effect/Schedule"
import * as Backoff from "../../Backoff.js"
import { aiRequestsOf } from "../../Observability/Metrics.js"
import type { ModelSettings, Usage } from "./Contract.js"
import { AiUnavailable, type AttemptFailure, AttemptTimedOut, classify } from "./Errors.js"

export interface RetryPolicy {
  /** One attempt of one model call (`AI_TIMEOUT`). */
  readonly timeout: Duration.Duration
  /** Time a reply may lose to failed attempts and waits before it gives up (`AI_RETRY_BUDGET`). */
  readonly retryBudget: Duration.Duration
  /** Retries of one model call (`AI_MAX_RETRIES`). */
  readonly maxRetries: number
  /** First backoff delay; doubled per retry, ±20 % jitter, capped at `maxDelay`. */
  readonly baseDelay: Duration.Duration
  readonly maxDelay: Duration.Duration
}

export const defaultRetryPolicy: RetryPolicy = {
  timeout: Duration.seconds(20),
  retryBudget: Duration.minutes(2),
  maxRetries: 5,
  baseDelay: Duration.millis(500),
  maxDelay: Duration.seconds(10)
}

/** The policy's backoff: doubling from `baseDelay`, capped at `maxDelay`, then ±20 % jitter (up to 1.2 × it). */
export const backoffOf = (policy: Pick<RetryPolicy, "baseDelay" | "maxDelay">): Backoff.Backoff => ({
  base: policy.baseDelay,
  factor: 2,
  max: policy.maxDelay,
  jitter: 0.2,
  cap: "exponential"
})

/** The budget one reply (or one title / summary) shares across its model calls, in milliseconds. */
export type RetryBudget = Ref.Ref<number>

export const makeBudget = (policy: RetryPolicy): Effect.Effect<RetryBudget> =>
  Ref.make(Duration.toMillis(policy.retryBudget))

/**
 * Decides, per failed attempt, whether and when to try again. Its input is the classified failure; it
 * spends the failed attempt's time and the wait from `budget`. Its output is the retries so far; it
 * stops (`Cause.done`) when the failure is not transient, the retries are spent, or the wait does not
 * fit in what is left of the budget. Each run of the schedule (one model call) counts its own retries.
 */
export const retrySchedule = (policy: RetryPolicy, budget: RetryBudget): Schedule.Schedule<number, AttemptFailure> =>
  Schedule.fromStep(Effect.sync(() => {
    let retries = 0
    return (_now: number, failure: AttemptFailure) =>
      Effect.gen(function*() {
        const remaining = yield* Ref.updateAndGet(budget, (left) => left - failure.elapsedMs)
        if (!failure.transient || retries >= policy.maxRetries) return yield* Cause.done(retries)
        const backoff = Duration.toMillis(yield* Backoff.next(backoffOf(policy), retries + 1))
        const delay = Math.ceil(Math.max(backoff, failure.retryAfterMs ?? 0))
        if (delay > remaining) return yield* Cause.done(retries)
        yield* Ref.set(budget, remaining - delay)
        retries += 1
        return [retries, Duration.millis(delay)] as const
      })
  }))

/** The error with the tokens the whole agent call used before it gave up. */
export const withUsage = (error: AiUnavailable, usage: Usage): AiUnavailable =>
  new AiUnavailable({
    provider: error.provider,
    model: error.model,
    kind: error.kind,
    reason: error.reason,
    ...(error.status === undefined ? {} : { status: error.status }),
    attempts: error.attempts,
    usage
  })

/**
 * Runs one model call with the time-out and the retry schedule; gives up with `AiUnavailable`.
 * `attempt` must be safe to repeat (it is one model request and the tool calls it answered with).
 */
export const withRetries = <A>(
  attempt: Effect.Effect<A, AiError.AiError>,
  options: { readonly settings: ModelSettings; readonly policy: RetryPolicy; readonly budget: RetryBudget }
): Effect.Effect<A, AiUnavailable> =>
  Effect.gen(function*() {
    const attempts = yield* Ref.make(0)
    const countRequest = (outcome: "success" | "error") =>
      Metric.update(aiRequestsOf(options.settings.provider, outcome), 1)
    const timeoutMs = Duration.toMillis(options.policy.timeout)
    const once = Effect.gen(function*() {
      yield* Ref.update(attempts, (n) => n + 1)
      const started = yield* Clock.currentTimeMillis
      return yield* attempt.pipe(
        Effect.timeoutOrElse({
          duration: options.policy.timeout,
          orElse: () => Effect.fail(new AttemptTimedOut({ afterMs: timeoutMs }))
        }),
        Effect.tapError(() => countRequest("error")),
        Effect.tap(() => countRequest("success")),
        Effect.catch((error) =>
          Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.fail(classify(error, now - started, now)))
        )
      )
    })
    return yield* once.pipe(
      Effect.retry(retrySchedule(options.policy, options.budget)),
      Effect.catch((failure) =>
        Effect.flatMap(Ref.get(attempts), (count) =>
          Effect.fail(
            new AiUnavailable({
              provider: options.settings.provider,
              model: options.settings.model,
              kind: failure.transient ? "exhausted" : "rejected",
              reason: failure.reason,
              ...(failure.status === undefined ? {} : { status: failure.status }),
              attempts: count,
              usage: { inputTokens: 0, outputTokens: 0 }
            })
          ))
      )
    )
  })
