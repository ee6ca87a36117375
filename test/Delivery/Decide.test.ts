/**
 * `decide` on its own: what follows each way an attempt can end, in and out of its retry window; and
 * the columns an ending is stored, logged and counted as.
 */
import { describe, expect, it } from "@effect/vitest"
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import {
  decide,
  Decision,
  Ending,
  errorOf,
  outcomeOf,
  snippetOf,
  statusCodeOf,
  type Window
} from "../../src/Delivery/Decide.js"
import type { RetryPolicy } from "../../src/Delivery/Retry.js"

const SECOND = 1_000

const policy: RetryPolicy = {
  retryBase: Duration.seconds(5),
  retryMaxDelay: Duration.hours(1),
  maxAge: Duration.hours(28)
}

const opened = DateTime.makeUnsafe("2026-11-22T10:00:00Z")
const deadline = DateTime.addDuration(opened, policy.maxAge)

/** `offset` into the window, no jitter. */
const at = (offset: Duration.Input, random = 0.5): Window => ({
  opened,
  now: DateTime.addDuration(opened, offset),
  random
})

/** A retry `delay` after `window.now`, failed with `error`. */
const retry = (window: Window, delay: number, error: string) =>
  Decision.Retry({ delay: Duration.millis(delay), at: DateTime.add(window.now, { milliseconds: delay }), error })

/** Every ending that is retried, with its stored error. */
const retried: ReadonlyArray<readonly [Ending, string]> = [
  [Ending.Rejected({ status: 503, body: "busy", retryAfter: undefined }), "HTTP 503"],
  [Ending.Rejected({ status: 404, body: "", retryAfter: undefined }), "HTTP 404"],
  [Ending.TimedOut(), "Timed out"],
  [Ending.TransportFailed({ message: "Transport error (POST https://x/): ECONNRESET" }), "Transport error (POST https://x/): ECONNRESET"],
  [Ending.NotSent({ reason: "Not sent: no key" }), "Not sent: no key"]
]

describe("decide", () => {
  it("a 2xx is delivered, whatever the window", () => {
    const delivered = Ending.Delivered({ status: 204, body: "" })
    expect(decide(delivered, 1, policy, at("1 second"))).toEqual(Decision.Delivered())
    expect(decide(delivered, 40, policy, at("30 hours"))).toEqual(Decision.Delivered())
  })

  it("410 Gone disables the webhook at once, on the first attempt and after the window alike", () => {
    const gone = Ending.Gone({ body: "bye" })
    expect(decide(gone, 1, policy, at("1 second"))).toEqual(Decision.Disabled())
    expect(decide(gone, 40, policy, at("30 hours"))).toEqual(Decision.Disabled())
  })

  it("a refusal (nothing retrying can cure) gives up at once, with its reason", () => {
    const refused = Ending.Refused({ reason: "Integration deleted" })
    expect(decide(refused, 1, policy, at("1 second"))).toEqual(Decision.GiveUp({ error: "Integration deleted" }))
  })

  it("every other ending is retried after the scheduled delay, with its error", () => {
    const window = at("1 minute")
    for (const [ending, error] of retried) {
      expect(decide(ending, 1, policy, window), ending._tag).toEqual(retry(window, 5 * SECOND, error))
    }
  })

  it("the delay doubles with the attempt's number, up to the cap", () => {
    const window = at("1 minute")
    const delays = [1, 2, 3, 4, 10, 11, 30].map((attempt) => {
      const decision = decide(Ending.TimedOut(), attempt, policy, window)
      return decision._tag === "Retry" ? Duration.toMillis(decision.delay) : decision._tag
    })
    expect(delays).toEqual([5_000, 10_000, 20_000, 40_000, 2_560_000, 3_600_000, 3_600_000])
  })

  it("the jitter's draw spreads the delay over [0.8, 1.2] of the scheduled one", () => {
    const low = at("1 minute", 0)
    const high = at("1 minute", 1)
    expect(decide(Ending.TimedOut(), 3, policy, low)).toEqual(retry(low, 16 * SECOND, "Timed out"))
    expect(decide(Ending.TimedOut(), 3, policy, high)).toEqual(retry(high, 24 * SECOND, "Timed out"))
  })

  it("a Retry-After longer than the scheduled delay is honoured, as seconds or an HTTP date; a shorter one is not", () => {
    const window = at("1 minute")
    const answer = (retryAfter: string) => Ending.Rejected({ status: 429, body: "", retryAfter })
    expect(decide(answer("120"), 1, policy, window)).toEqual(retry(window, 120 * SECOND, "HTTP 429"))
    expect(decide(answer("Sun, 22 Nov 2026 10:31:00 GMT"), 1, policy, window))
      .toEqual(retry(window, 30 * 60 * SECOND, "HTTP 429"))
    expect(decide(answer("1"), 2, policy, window)).toEqual(retry(window, 10 * SECOND, "HTTP 429"))
    expect(decide(answer("soon"), 2, policy, window)).toEqual(retry(window, 10 * SECOND, "HTTP 429"))
  })

  it("the last retry lands on the window's end", () => {
    const window = { opened, now: DateTime.subtract(deadline, { minutes: 10 }), random: 0.5 }
    expect(decide(Ending.TimedOut(), 30, policy, window)).toEqual(retry(window, 10 * 60 * SECOND, "Timed out"))
    const retryAfter = Ending.Rejected({ status: 503, body: "", retryAfter: "86400" })
    expect(decide(retryAfter, 2, policy, window)).toEqual(retry(window, 10 * 60 * SECOND, "HTTP 503"))
  })

  it("once the window closed, every retried ending gives up with its error", () => {
    for (const now of [deadline, DateTime.add(deadline, { days: 2 })]) {
      for (const [ending, error] of retried) {
        expect(decide(ending, 2, policy, { opened, now, random: 0.5 }), ending._tag).toEqual(Decision.GiveUp({ error }))
      }
    }
  })

  it("the window is the one given: a replay's opens a new one", () => {
    const replayed = DateTime.add(opened, { hours: 30 })
    const window = { opened: replayed, now: DateTime.add(replayed, { seconds: 1 }), random: 0.5 }
    expect(decide(Ending.TimedOut(), 1, policy, window)).toEqual(retry(window, 5 * SECOND, "Timed out"))
  })
})

describe("an ending's columns", () => {
  it("status code, error, snippet and metric outcome of each ending", () => {
    const rows = [
      Ending.Delivered({ status: 202, body: "ok" }),
      Ending.Gone({ body: "gone" }),
      Ending.Rejected({ status: 503, body: "busy", retryAfter: "5" }),
      Ending.TimedOut(),
      Ending.TransportFailed({ message: "Transport error" }),
      Ending.NotSent({ reason: "Not sent: why" }),
      Ending.Refused({ reason: "SSRF guard: …" })
    ].map((ending) => [ending._tag, statusCodeOf(ending), errorOf(ending), snippetOf(ending), outcomeOf(ending)])
    expect(rows).toEqual([
      ["Delivered", 202, null, "ok", "delivered"],
      ["Gone", 410, "HTTP 410", "gone", "gone"],
      ["Rejected", 503, "HTTP 503", "busy", "failed"],
      ["TimedOut", null, "Timed out", null, "failed"],
      ["TransportFailed", null, "Transport error", null, "failed"],
      ["NotSent", null, "Not sent: why", null, "failed"],
      ["Refused", null, "SSRF guard: …", null, "failed"]
    ])
  })
})
