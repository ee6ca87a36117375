/**
 * How one delivery attempt ended (`Ending`) and what follows from it (`decide`), decided in one place
 * for both of the sender's paths: its batch, and the settlement of one event under its lock. A 2xx is
 * delivered; 410 Gone turns the webhook off (the event dead); a failure retrying cannot help is given
 * up at once; any other failure is retried per `Retry.ts` until its retry window closes. Pure: the
 * time and the jitter's random draw are inputs.
 */
import * as Data from "effect/Data"
import * as DateTime from "effect/DateTime"
import type * as Duration from "effect/Duration"
import * as Option from "effect/Option"
import { parseRetryAfter, retryAt, type RetryPolicy } from "./Retry.js"

/** How an attempt ended. `body` is the first characters of the answer's body (what is stored of it). */
export type Ending = Data.TaggedEnum<{
  /** A 2xx. */
  Delivered: { readonly status: number; readonly body: string }
  /** 410 Gone: the receiver wants no more events. */
  Gone: { readonly body: string }
  /** Any other status; `retryAfter` is the answer's `Retry-After` header. */
  Rejected: { readonly status: number; readonly body: string; readonly retryAfter: string | undefined }
  /** No answer within `DELIVERY_TIMEOUT`. */
  TimedOut: {}
  /** No answer: the connection failed, or the receiver closed it. */
  TransportFailed: { readonly message: string }
  /** Not sent, for a reason that may pass (a secret that cannot be read). */
  NotSent: { readonly reason: string }
  /** Not sent, and retrying cannot help: the integration deleted, its webhook disabled, the SSRF guard. */
  Refused: { readonly reason: string }
}>
export const Ending = Data.taggedEnum<Ending>()

/** An ending that is not a delivery. */
export type Failure = Exclude<Ending, { readonly _tag: "Delivered" }>

/** A failed attempt's `error` (stored, logged, and the event's `last_error`). */
export const failureText = (ending: Failure): string => {
  switch (ending._tag) {
    case "Gone":
      return "HTTP 410"
    case "Rejected":
      return `HTTP ${ending.status}`
    case "TimedOut":
      return "Timed out"
    case "TransportFailed":
      return ending.message
    case "NotSent":
    case "Refused":
      return ending.reason
  }
}

/** The attempt's `error`: none when delivered. */
export const errorOf = (ending: Ending): string | null => ending._tag === "Delivered" ? null : failureText(ending)

/** The answer's status code; none when there was no answer. */
export const statusCodeOf = (ending: Ending): number | null =>
  ending._tag === "Delivered" || ending._tag === "Rejected" ? ending.status : ending._tag === "Gone" ? 410 : null

/** The first characters of the answer's body; none when there was no answer. */
export const snippetOf = (ending: Ending): string | null =>
  ending._tag === "Delivered" || ending._tag === "Rejected" || ending._tag === "Gone" ? ending.body : null

/** The `outcome` label of `parley.delivery.attempts`. */
export const outcomeOf = (ending: Ending): "delivered" | "gone" | "failed" =>
  ending._tag === "Delivered" ? "delivered" : ending._tag === "Gone" ? "gone" : "failed"

/** What follows an attempt. */
export type Decision = Data.TaggedEnum<{
  Delivered: {}
  /** 410 Gone: the integration's webhook is turned off and the event is dead. */
  Disabled: {}
  /** The event is dead with `error`: retrying cannot help, or its retry window closed. */
  GiveUp: { readonly error: string }
  /** Failed with `error`; the next attempt after `delay`, at `at`. */
  Retry: { readonly delay: Duration.Duration; readonly at: DateTime.Utc; readonly error: string }
}>
export const Decision = Data.taggedEnum<Decision>()

/** Where an event's retry window stands when its attempt ended. */
export interface Window {
  /** When the window opened: the event's creation, or its last replay. */
  readonly opened: DateTime.Utc
  readonly now: DateTime.Utc
  /** The backoff jitter's draw, in [0, 1]. */
  readonly random: number
}

/**
 * What follows the `attempt`-th attempt (1-based) of an event, which ended with `ending`. A best-effort
 * event (`bestEffort`: a `message_delta`) is never retried: a failure gives it up at once.
 */
export const decide = (
  ending: Ending,
  attempt: number,
  policy: RetryPolicy,
  window: Window,
  bestEffort = false
): Decision => {
  switch (ending._tag) {
    case "Delivered":
      return Decision.Delivered()
    case "Gone":
      return Decision.Disabled()
    case "Refused":
      return Decision.GiveUp({ error: ending.reason })
    default: {
      const error = failureText(ending)
      if (bestEffort) return Decision.GiveUp({ error: `${error} (not retried: delivered at most once)` })
      const next = retryAt(policy, {
        attempt,
        createdAt: window.opened,
        now: window.now,
        retryAfter: ending._tag === "Rejected" ? parseRetryAfter(ending.retryAfter, window.now) : Option.none(),
        random: window.random
      })
      return next._tag === "GiveUp"
        ? Decision.GiveUp({ error })
        : Decision.Retry({ delay: next.delay, at: DateTime.addDuration(window.now, next.delay), error })
    }
  }
}
