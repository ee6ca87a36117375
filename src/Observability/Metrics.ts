/**
 * Parley's metrics, as Effect `Metric`s. They are exported over OTLP and served to Prometheus at
 * `METRICS_PORT` (see `Telemetry.ts`, `Prometheus.ts`); names follow OpenTelemetry's conventions where
 * one exists. Prometheus sees `.` as `_` and a `_total` suffix on counters (docs/observability.md).
 * Counters are `incremental`: only those are monotonic counters to OpenTelemetry and Prometheus.
 */
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as MetricBoundaries from "effect/MetricBoundaries"
import * as MetricKey from "effect/MetricKey"
import * as MetricLabel from "effect/MetricLabel"
import { EventKind } from "../Domain/Delivery.js"

const seconds = MetricBoundaries.exponential({ start: 0.005, factor: 2, count: 14 })
const longSeconds = MetricBoundaries.exponential({ start: 0.05, factor: 2, count: 16 })

/**
 * A metric per set of label values, made once. `Metric.tagged` makes a new metric and key at every
 * call, which the registry then hashes and compares at every update, per HTTP request and per job.
 * The label sets here are few (routes × methods × statuses; job kinds), so the caches stay small.
 */
const labelled = <const Names extends ReadonlyArray<string>, M>(
  names: Names,
  make: (labels: ReadonlyArray<MetricLabel.MetricLabel>) => M
) => {
  const made = new Map<string, M>()
  return (...values: { readonly [K in keyof Names]: string }): M => {
    const id = values.join("\u0000")
    const found = made.get(id)
    if (found !== undefined) return found
    const metric = make(names.map((name, i) => MetricLabel.make(name, values[i] ?? "")))
    made.set(id, metric)
    return metric
  }
}

const countersBy = <const Names extends ReadonlyArray<string>>(key: MetricKey.MetricKey.Counter<number>, names: Names) =>
  labelled(names, (labels) => Metric.fromMetricKey(MetricKey.taggedWithLabels(key, labels)))

const histogramsBy = <const Names extends ReadonlyArray<string>>(key: MetricKey.MetricKey.Histogram, names: Names) =>
  labelled(names, (labels) => Metric.fromMetricKey(MetricKey.taggedWithLabels(key, labels)))

const counterKey = (name: string, description: string) => MetricKey.counter(name, { description, incremental: true })

const httpRequestsKey = counterKey("http.server.requests", "HTTP requests, by route, method and status")
const httpDurationKey = MetricKey.histogram("http.server.request.duration", seconds, "HTTP request duration (s)")
export const httpRequests = Metric.fromMetricKey(httpRequestsKey)
export const httpDuration = Metric.fromMetricKey(httpDurationKey)
const httpLabels = ["http.route", "http.request.method", "http.response.status_code"] as const
/** `httpRequests` for one route, method and status. */
export const httpRequestsOf = countersBy(httpRequestsKey, httpLabels)
/** `httpDuration` for one route, method and status. */
export const httpDurationOf = histogramsBy(httpDurationKey, httpLabels)

const jobsEnqueuedKey = counterKey("parley.jobs.enqueued", "Jobs enqueued, by kind")
const jobsClaimedKey = counterKey("parley.jobs.claimed", "Jobs claimed, by kind")
const jobsSucceededKey = counterKey("parley.jobs.succeeded", "Jobs done, by kind")
const jobsFailedKey = counterKey("parley.jobs.failed", "Job runs to retry, by kind")
const jobsDeadKey = counterKey("parley.jobs.dead", "Jobs given up, by kind")
const jobDurationKey = MetricKey.histogram("parley.jobs.duration", seconds, "Job run duration (s), by kind")
export const jobsEnqueued = Metric.fromMetricKey(jobsEnqueuedKey)
export const jobsClaimed = Metric.fromMetricKey(jobsClaimedKey)
export const jobsSucceeded = Metric.fromMetricKey(jobsSucceededKey)
export const jobsFailed = Metric.fromMetricKey(jobsFailedKey)
export const jobsDead = Metric.fromMetricKey(jobsDeadKey)
export const jobDuration = Metric.fromMetricKey(jobDurationKey)
/** The job metrics for one job kind (label `kind`). */
export const jobsEnqueuedOf = countersBy(jobsEnqueuedKey, ["kind"])
export const jobsClaimedOf = countersBy(jobsClaimedKey, ["kind"])
export const jobsSucceededOf = countersBy(jobsSucceededKey, ["kind"])
export const jobsFailedOf = countersBy(jobsFailedKey, ["kind"])
export const jobsDeadOf = countersBy(jobsDeadKey, ["kind"])
export const jobDurationOf = histogramsBy(jobDurationKey, ["kind"])

export const queueDepth = Metric.gauge("parley.jobs.queue_depth", { description: "Pending and running jobs" })
export const oldestPendingAge = Metric.gauge("parley.jobs.oldest_pending_age", {
  description: "Age (s) of the oldest due job not yet done"
})

const eventsEmittedKey = counterKey("parley.events.emitted", "Outbound events created, by event kind")
export const eventsEmitted = Metric.fromMetricKey(eventsEmittedKey)
export const eventsEmittedOf = countersBy(eventsEmittedKey, ["event"])

const deliveryAttemptsKey = counterKey("parley.delivery.attempts", "Webhook delivery attempts, by event kind and outcome")
export const deliveryAttempts = Metric.fromMetricKey(deliveryAttemptsKey)
/** `deliveryAttempts` for one event kind and outcome. */
export const deliveryAttemptsOf = countersBy(deliveryAttemptsKey, ["event", "outcome"])
export const deliveryAttemptDuration = Metric.histogram(
  "parley.delivery.attempt.duration",
  seconds,
  "One webhook POST (s)"
)
/** Incremented with the `event` tag (the event kind) each time an event is dead-lettered. */
const deliveryDeadKey = counterKey("parley.delivery.dead", "Events dead-lettered, by event kind")
export const deliveryDead = Metric.fromMetricKey(deliveryDeadKey)
/** `deliveryDead` for one event kind. */
export const deliveryDeadOf = countersBy(deliveryDeadKey, ["event"])
/** Set, like the queue gauges, from a periodic count of events in status `dead` (all workspaces). */
export const deadLetters = Metric.gauge("parley.delivery.dead_letters", {
  description: "Events in status dead, not replayed"
})
export const deliveryLatency = Metric.histogram(
  "parley.delivery.end_to_end",
  longSeconds,
  "From the customer's message received to its reply delivered (s)"
)

const aiLatencyKey = MetricKey.histogram("parley.ai.duration", seconds, "AI reply generation (s), by provider")
export const aiLatency = Metric.fromMetricKey(aiLatencyKey)
export const aiLatencyOf = histogramsBy(aiLatencyKey, ["provider"])
const aiTokensKey = counterKey("parley.ai.tokens", "Tokens used by AI providers, by provider and direction")
export const aiTokens = Metric.fromMetricKey(aiTokensKey)
export const aiTokensOf = countersBy(aiTokensKey, ["provider", "direction"])
/** Incremented once per provider call with the labels `provider` and `outcome` (`success`, `error`). */
const aiRequestsKey = counterKey("parley.ai.requests", "AI provider calls, by provider and outcome")
export const aiRequests = Metric.fromMetricKey(aiRequestsKey)
export const aiRequestsOf = countersBy(aiRequestsKey, ["provider", "outcome"])

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
  for (const kind of EventKind.literals) deliveryDeadOf(kind).register()
})
