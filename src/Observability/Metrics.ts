/**
 * Parley's metrics, as Effect `Metric`s. They are exported over OTLP and served to Prometheus at
 * `METRICS_PORT` (see `Telemetry.ts`, `Prometheus.ts`); names follow OpenTelemetry's conventions where
 * one exists. Prometheus sees `.` as `_` and a `_total` suffix on counters (docs/observability.md).
 * Counters are `incremental`: only those are monotonic counters to OpenTelemetry and Prometheus.
 */
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as MetricBoundaries from "effect/MetricBoundaries"
import { EventKind } from "../Domain/Delivery.js"

const seconds = MetricBoundaries.exponential({ start: 0.005, factor: 2, count: 14 })
const longSeconds = MetricBoundaries.exponential({ start: 0.05, factor: 2, count: 16 })

export const httpRequests = Metric.counter("http.server.requests", {
  description: "HTTP requests, by route, method and status",
  incremental: true
})
export const httpDuration = Metric.histogram("http.server.request.duration", seconds, "HTTP request duration (s)")

export const jobsEnqueued = Metric.counter("parley.jobs.enqueued", { description: "Jobs enqueued, by kind", incremental: true })
export const jobsClaimed = Metric.counter("parley.jobs.claimed", { description: "Jobs claimed, by kind", incremental: true })
export const jobsSucceeded = Metric.counter("parley.jobs.succeeded", { description: "Jobs done, by kind", incremental: true })
export const jobsFailed = Metric.counter("parley.jobs.failed", { description: "Job runs to retry, by kind", incremental: true })
export const jobsDead = Metric.counter("parley.jobs.dead", { description: "Jobs given up, by kind", incremental: true })
export const jobDuration = Metric.histogram("parley.jobs.duration", seconds, "Job run duration (s), by kind")

export const queueDepth = Metric.gauge("parley.jobs.queue_depth", { description: "Pending and running jobs" })
export const oldestPendingAge = Metric.gauge("parley.jobs.oldest_pending_age", {
  description: "Age (s) of the oldest due job not yet done"
})

export const eventsEmitted = Metric.counter("parley.events.emitted", {
  description: "Outbound events created, by event kind",
  incremental: true
})

export const deliveryAttempts = Metric.counter("parley.delivery.attempts", {
  description: "Webhook delivery attempts, by event kind and outcome",
  incremental: true
})
export const deliveryAttemptDuration = Metric.histogram(
  "parley.delivery.attempt.duration",
  seconds,
  "One webhook POST (s)"
)
/** Incremented with the `event` tag (the event kind) each time an event is dead-lettered. */
export const deliveryDead = Metric.counter("parley.delivery.dead", {
  description: "Events dead-lettered, by event kind",
  incremental: true
})
/** Set, like the queue gauges, from a periodic count of events in status `dead` (all workspaces). */
export const deadLetters = Metric.gauge("parley.delivery.dead_letters", {
  description: "Events in status dead, not replayed"
})
export const deliveryLatency = Metric.histogram(
  "parley.delivery.end_to_end",
  longSeconds,
  "From the customer's message received to its reply delivered (s)"
)

export const aiLatency = Metric.histogram("parley.ai.duration", seconds, "AI reply generation (s), by provider")
export const aiTokens = Metric.counter("parley.ai.tokens", {
  description: "Tokens used by AI providers, by provider and direction",
  incremental: true
})
/** Incremented once per provider call with the tags `provider` and `outcome` (`success`, `error`). */
export const aiRequests = Metric.counter("parley.ai.requests", {
  description: "AI provider calls, by provider and outcome",
  incremental: true
})

/** Every metric above. */
export const all = [
  httpRequests,
  httpDuration,
  jobsEnqueued,
  jobsClaimed,
  jobsSucceeded,
  jobsFailed,
  jobsDead,
  jobDuration,
  queueDepth,
  oldestPendingAge,
  eventsEmitted,
  deliveryAttempts,
  deliveryAttemptDuration,
  deliveryDead,
  deadLetters,
  deliveryLatency,
  aiLatency,
  aiTokens,
  aiRequests
] as const

/**
 * Makes every metric's series exist from the start, at 0, and the dead-letter counter's for each
 * event kind: Prometheus' `increase()` cannot see the first event of a series that appears at 1, and
 * the dead-letter alert must fire on the first dead letter.
 */
export const registerAll = Effect.sync(() => {
  for (const metric of all) metric.register()
  for (const kind of EventKind.literals) Metric.tagged(deliveryDead, "event", kind).register()
})
