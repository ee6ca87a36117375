/**
 * Parley's metrics, as Effect `Metric`s. They are exported over OTLP and served to Prometheus at
 * `METRICS_PORT` (see `Telemetry.ts`, `Prometheus.ts`); names follow OpenTelemetry's conventions where
 * one exists. Prometheus sees `.` as `_` and a `_total` suffix on counters (docs/observability.md).
 * Counters are `incremental`: only those are monotonic counters to OpenTelemetry and Prometheus.
 */
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import { EventKind } from "../Domain/Delivery.js"

const seconds = Metric.exponentialBoundaries({ start: 0.005, factor: 2, count: 14 })
const longSeconds = Metric.exponentialBoundaries({ start: 0.05, factor: 2, count: 16 })

/**
 * A metric per set of label values, made once. A metric's series is its name, description and
 * attributes: `Metric.withAttributes` wraps the metric and merges the attributes into the context at
 * every update, per HTTP request and per job; a metric made with its attributes computes its series'
 * key once. The label sets here are few (routes × methods × statuses; job kinds), so the caches stay
 * small.
 */
const labelled = <const Names extends ReadonlyArray<string>, M>(
  names: Names,
  make: (attributes: Metric.Metric.AttributeSet) => M
) => {
  const made = new Map<string, M>()
  return (...values: { readonly [K in keyof Names]: string }): M => {
    const id = values.join("\u0000")
    const found = made.get(id)
    if (found !== undefined) return found
    const metric = make(Object.fromEntries(names.map((name, i) => [name, values[i] ?? ""])))
    made.set(id, metric)
    return metric
  }
}

/** A counter's definition: the same name and description make the same series, labelled or not. */
interface Definition {
  readonly name: string
  readonly description: string
}

/** Counters are `incremental`: only those are monotonic counters to OpenTelemetry and Prometheus. */
const counterOf = ({ description, name }: Definition, attributes?: Metric.Metric.AttributeSet) =>
  Metric.counter(name, { description, incremental: true, attributes })

const histogramOf = (
  { description, name }: Definition,
  boundaries: ReadonlyArray<number>,
  attributes?: Metric.Metric.AttributeSet
) => Metric.histogram(name, { description, boundaries, attributes })

const countersBy = <const Names extends ReadonlyArray<string>>(definition: Definition, names: Names) =>
  labelled(names, (attributes) => counterOf(definition, attributes))

const histogramsBy = <const Names extends ReadonlyArray<string>>(
  definition: Definition,
  boundaries: ReadonlyArray<number>,
  names: Names
) => labelled(names, (attributes) => histogramOf(definition, boundaries, attributes))

const httpRequestsKey = { name: "http.server.requests", description: "HTTP requests, by route, method and status" }
const httpDurationKey = { name: "http.server.request.duration", description: "HTTP request duration (s)" }
export const httpRequests = counterOf(httpRequestsKey)
export const httpDuration = histogramOf(httpDurationKey, seconds)
/**
 * `http.route` is the route's template as the OpenAPI document writes it (`/v1/customer/{id}`), or
 * `unmatched` (a 404, a request Node's parser refused); the method is `_OTHER` when a refused request
 * named none; the status is what was answered, or 499 for a client that left before it sent its whole
 * request (`Http.ts`). Every value comes from a short list: the series stay few.
 */
const httpLabels = ["http.route", "http.request.method", "http.response.status_code"] as const
/** `httpRequests` for one route, method and status. */
export const httpRequestsOf = countersBy(httpRequestsKey, httpLabels)
/** `httpDuration` for one route, method and status. */
export const httpDurationOf = histogramsBy(httpDurationKey, seconds, httpLabels)

const jobsEnqueuedKey = { name: "parley.jobs.enqueued", description: "Jobs enqueued, by kind" }
const jobsClaimedKey = { name: "parley.jobs.claimed", description: "Jobs claimed, by kind" }
const jobsSucceededKey = { name: "parley.jobs.succeeded", description: "Jobs done, by kind" }
const jobsFailedKey = { name: "parley.jobs.failed", description: "Job runs to retry, by kind" }
const jobsDeadKey = { name: "parley.jobs.dead", description: "Jobs given up, by kind" }
const jobDurationKey = { name: "parley.jobs.duration", description: "Job run duration (s), by kind" }
export const jobsEnqueued = counterOf(jobsEnqueuedKey)
export const jobsClaimed = counterOf(jobsClaimedKey)
export const jobsSucceeded = counterOf(jobsSucceededKey)
export const jobsFailed = counterOf(jobsFailedKey)
export const jobsDead = counterOf(jobsDeadKey)
export const jobDuration = histogramOf(jobDurationKey, seconds)
/** The job metrics for one job kind (label `kind`). */
export const jobsEnqueuedOf = countersBy(jobsEnqueuedKey, ["kind"])
export const jobsClaimedOf = countersBy(jobsClaimedKey, ["kind"])
export const jobsSucceededOf = countersBy(jobsSucceededKey, ["kind"])
export const jobsFailedOf = countersBy(jobsFailedKey, ["kind"])
export const jobsDeadOf = countersBy(jobsDeadKey, ["kind"])
export const jobDurationOf = histogramsBy(jobDurationKey, seconds, ["kind"])

export const queueDepth = Metric.gauge("parley.jobs.queue_depth", { description: "Pending and running jobs" })
export const oldestPendingAge = Metric.gauge("parley.jobs.oldest_pending_age", {
  description: "Age (s) of the oldest due job not yet done"
})

const eventsEmittedKey = { name: "parley.events.emitted", description: "Outbound events created, by event kind" }
export const eventsEmitted = counterOf(eventsEmittedKey)
export const eventsEmittedOf = countersBy(eventsEmittedKey, ["event"])

const deliveryAttemptsKey = {
  name: "parley.delivery.attempts",
  description: "Webhook delivery attempts, by event kind and outcome"
}
export const deliveryAttempts = counterOf(deliveryAttemptsKey)
/** `deliveryAttempts` for one event kind and outcome. */
export const deliveryAttemptsOf = countersBy(deliveryAttemptsKey, ["event", "outcome"])
export const deliveryAttemptDuration = Metric.histogram("parley.delivery.attempt.duration", {
  description: "One webhook POST (s)",
  boundaries: seconds
})
/** Incremented with the `event` attribute (the event kind) each time an event is dead-lettered. */
const deliveryDeadKey = { name: "parley.delivery.dead", description: "Events dead-lettered, by event kind" }
export const deliveryDead = counterOf(deliveryDeadKey)
/** `deliveryDead` for one event kind. */
export const deliveryDeadOf = countersBy(deliveryDeadKey, ["event"])
/** Set, like the queue gauges, from a periodic count of events in status `dead` (all workspaces). */
export const deadLetters = Metric.gauge("parley.delivery.dead_letters", {
  description: "Events in status dead, not replayed"
})
export const deliveryLatency = Metric.histogram("parley.delivery.end_to_end", {
  description: "From the customer's message received to its reply delivered (s)",
  boundaries: longSeconds
})

const aiLatencyKey = { name: "parley.ai.duration", description: "AI reply generation (s), by provider" }
export const aiLatency = histogramOf(aiLatencyKey, seconds)
export const aiLatencyOf = histogramsBy(aiLatencyKey, seconds, ["provider"])
const aiTokensKey = { name: "parley.ai.tokens", description: "Tokens used by AI providers, by provider and direction" }
export const aiTokens = counterOf(aiTokensKey)
export const aiTokensOf = countersBy(aiTokensKey, ["provider", "direction"])
/** Incremented once per provider call with the labels `provider` and `outcome` (`success`, `error`). */
const aiRequestsKey = { name: "parley.ai.requests", description: "AI provider calls, by provider and outcome" }
export const aiRequests = counterOf(aiRequestsKey)
export const aiRequestsOf = countersBy(aiRequestsKey, ["provider", "outcome"])
/**
 * Incremented once per tool call whose arguments did not match the tool's parameters (the model was told,
 * and may correct itself), with the labels `provider` and `tool`.
 */
const aiToolCallErrorsKey = {
  name: "parley.ai.tool_call_errors",
  description: "Model tool calls whose arguments did not match the tool's parameters, by provider and tool"
}
export const aiToolCallErrors = counterOf(aiToolCallErrorsKey)
export const aiToolCallErrorsOf = countersBy(aiToolCallErrorsKey, ["provider", "tool"])

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
  aiRequests,
  aiToolCallErrors
] as const

/**
 * Makes every metric's series exist from the start, at 0, and the dead-letter counter's for each
 * event kind: Prometheus' `increase()` cannot see the first event of a series that appears at 1, and
 * the dead-letter alert must fire on the first dead letter.
 */
export const registerAll: Effect.Effect<void> = Effect.forEach(
  [...all, ...EventKind.literals.map((kind) => deliveryDeadOf(kind))],
  // Reading a series registers it (in the registry the exporters read), at its initial value.
  (metric: Metric.Metric<never, unknown>) => Metric.value(metric),
  { discard: true }
)
