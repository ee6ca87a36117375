/**
 * One story per message: the inbound request, the reply job and every delivery attempt share one
 * trace id (jobs link to the request that enqueued them); an incoming `traceparent` decides whether that
 * story is recorded; metrics count what happened; no secret or message text reaches a span. Spans and
 * metrics are captured in memory through the real SDK.
 */
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { describe, expect, layer } from "@effect/vitest"
import { AggregationTemporality, InMemoryMetricExporter, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics"
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import type { Attributes } from "@opentelemetry/api"
import * as Effect from "effect/Effect"
import * as SqlClient from "effect/sql/SqlClient"
import * as HttpClient from "effect/http/HttpClient"
import * as Layer from "effect/Layer"
import { RedactingSpanExporter } from "../../src/Observability/Redaction.js"
import { ADMIN_TOKEN, call, makeTenant, type Tenant, TestAppWithWorkers } from "../support/App.js"
import { eventually } from "../support/Eventually.js"
import { makeReceiver } from "../support/Receiver.js"

const spans = new InMemorySpanExporter()
const metrics = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
const reader = new PeriodicExportingMetricReader({ exporter: metrics, exportIntervalMillis: 3_600_000 })

const Telemetry = NodeSdk.layer(() => ({
  resource: { serviceName: "parley-test" },
  spanProcessor: new SimpleSpanProcessor(new RedactingSpanExporter(spans)),
  metricReader: reader
}))

const SECRET_TEXT = "my card number is 4111 1111 1111 1111"

const ask = (
  tenant: Tenant,
  id: string,
  conversationId: string,
  text = "Hello, anyone there?",
  headers: Record<string, string> = {}
) =>
  call("POST", `/v1/webhooks/${tenant.integrationId}/message-received`, {
    token: tenant.token,
    headers,
    body: { id, role: "human", customerId: "6f1c1f8e-1d7e-4c8e-9a0a-1b2c3d4e5f60", conversationId, text }
  }).pipe(
    Effect.tap((reply) => Effect.sync(() => expect(reply.status).toBe(200))),
    // A caller's own `traceparent` goes as it is: the test's client neither traces nor propagates then.
    Effect.provideService(HttpClient.TracerDisabledWhen, () => "traceparent" in headers)
  )

const finished = () => spans.getFinishedSpans()
const traceOf = (span: ReadableSpan) => span.spanContext().traceId
const named = (name: string, traceId: string) => finished().filter((s) => s.name === name && traceOf(s) === traceId)

/** Waits until the finished spans satisfy `predicate` (their names are in the failure). */
const waitForSpans = (predicate: () => boolean, timeoutMs = 15_000) =>
  eventually(Effect.sync(() => predicate() || finished().map((s) => s.name)), (seen) => seen === true, timeoutMs)

/** A metric's total over its data points with `attributes` (a sum, or a histogram's count). */
const totalOf = (
  metrics: ReadonlyArray<{
    readonly descriptor: { readonly name: string }
    readonly dataPoints: ReadonlyArray<{ readonly attributes: Attributes; readonly value: number | { readonly count: number } }>
  }>,
  name: string,
  attributes: Record<string, string> = {}
) =>
  metrics.filter((m) => m.descriptor.name === name).flatMap((m) => m.dataPoints)
    .filter((p) => Object.entries(attributes).every(([k, v]) => p.attributes[k] === v))
    .reduce((sum, p) => sum + (typeof p.value === "number" ? p.value : p.value.count), 0)

/** The counts the metrics test reads, as they stand. */
const counts = Effect.promise(() => reader.collect()).pipe(Effect.map(({ resourceMetrics }) => {
  const all = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics)
  return {
    enqueuedReplies: totalOf(all, "parley.jobs.enqueued", { kind: "generate_reply" }),
    succeededDeliveries: totalOf(all, "parley.jobs.succeeded", { kind: "deliver_event" }),
    deliveredAttempts: totalOf(all, "parley.delivery.attempts", { outcome: "delivered" }),
    endToEnd: totalOf(all, "parley.delivery.end_to_end"),
    messageRequests: totalOf(all, "http.server.requests", { "http.route": "/v1/webhooks/{integration_id}/message-received" }),
    embeddedReplies: totalOf(all, "parley.ai.duration", { provider: "embedded" })
  }
}))
const countedNames = ["enqueuedReplies", "succeededDeliveries", "deliveredAttempts", "endToEnd", "messageRequests", "embeddedReplies"] as const

const liveJobs = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql<{ readonly n: number }>`
    SELECT count(*)::int AS n FROM jobs WHERE status = 'running' OR (status = 'pending' AND run_at <= now())`).pipe(
    Effect.map((rows) => rows[0]?.n ?? 0)
  )

const requestSpan = (pathPart: string) =>
  finished().find((s) => s.name.startsWith("http.server") && String(s.attributes["url.path"] ?? "").includes(pathPart))!

describe("telemetry", () => {
  layer(TestAppWithWorkers({ PARLEY_RATE_LIMIT: "0" }).pipe(Layer.provide(Telemetry)), {
    excludeTestServices: true,
    timeout: 120_000
  })((it) => {
    it.effect("a message, its reply and its delivery are one trace; jobs link to the request", () =>
      Effect.gen(function*() {
        const receiver = yield* makeReceiver()
        const tenant = yield* makeTenant({ webhookUrl: receiver.url, supportedFeatures: { escalation: false } })
        spans.reset()
        yield* ask(tenant, "t-1", "traced")
        yield* receiver.waitFor(1)
        const request = requestSpan("/message-received")
        expect(request).toBeDefined()
        const traceId = traceOf(request)
        yield* waitForSpans(() => named("Delivery.attempt", traceId).length === 1 && named("Job.deliver_event", traceId).length === 1)

        expect(request.attributes).toMatchObject({
          "http.request.method": "POST",
          "workspace.id": tenant.workspaceId,
          "integration.id": tenant.integrationId
        })
        // The request id the answer carries (X-Request-Id) is on the span too.
        expect(request.attributes["request.id"]).toMatch(/^[0-9a-f-]{36}$/)
        const [reply] = named("Job.generate_reply", traceId)
        expect(reply).toBeDefined()
        expect(reply!.links.map((l) => l.context.traceId)).toEqual([traceId])
        expect(reply!.attributes).toMatchObject({ "job.kind": "generate_reply", "job.outcome": "Done" })
        expect(named("AiReplies.reply", traceId)).toHaveLength(1)
        const [deliver] = named("Job.deliver_event", traceId)
        expect(deliver!.links.map((l) => l.context.traceId)).toEqual([traceId])
        const [attempt] = named("Delivery.attempt", traceId)
        expect(attempt!.attributes).toMatchObject({
          "delivery.attempt": 1,
          "http.response.status_code": 200,
          "server.address": new URL(receiver.url).host,
          "event.kind": "send_messages"
        })
        // SQL statements are spans of the same trace too.
        expect(finished().some((s) => s.name === "sql.execute" && traceOf(s) === traceId)).toBe(true)
      }))

    it.effect("a traceparent that says not sampled records nothing of the message; sampled, its trace goes on", () =>
      Effect.gen(function*() {
        const receiver = yield* makeReceiver()
        const tenant = yield* makeTenant({ webhookUrl: receiver.url, supportedFeatures: { escalation: false } })
        const unsampled = "4bf92f3577b34da6a3ce929d0e0e4736"
        const sampled = "6bf92f3577b34da6a3ce929d0e0e4736"
        spans.reset()
        yield* ask(tenant, "t-5", "not-sampled", undefined, { traceparent: `00-${unsampled}-00f067aa0ba902b7-00` })
        const [unsampledHook] = yield* receiver.waitFor(1)
        // The webhook continues the caller's trace and says it is not sampled, as the job carried it.
        expect(unsampledHook?.headers["traceparent"]).toMatch(new RegExp(`^00-${unsampled}-[0-9a-f]{16}-00$`))
        yield* ask(tenant, "t-6", "sampled", undefined, { traceparent: `00-${sampled}-00f067aa0ba902b7-01` })
        const hooks = yield* receiver.waitFor(2)
        expect(hooks[1]?.headers["traceparent"]).toMatch(new RegExp(`^00-${sampled}-[0-9a-f]{16}-01$`))
        yield* waitForSpans(() => named("Delivery.attempt", sampled).length === 1 && named("Job.deliver_event", sampled).length === 1)

        // Spans end as they are recorded (SimpleSpanProcessor): the unsampled message's would be here by
        // now, its delivery having ended before the sampled message was sent.
        expect(finished().filter((s) => traceOf(s) === unsampled).map((s) => s.name)).toEqual([])
        const request = requestSpan("/message-received")
        expect(traceOf(request)).toBe(sampled)
        expect(request.parentSpanContext?.spanId).toBe("00f067aa0ba902b7")
        for (const name of ["Conversations.ingest", "Job.generate_reply", "AiReplies.reply", "Job.deliver_event", "sql.execute"]) {
          expect(named(name, sampled).length).toBeGreaterThanOrEqual(1)
        }
      }))

    it.effect("each retry is its own span with its attempt number and next retry", () =>
      Effect.gen(function*() {
        const receiver = yield* makeReceiver((_, index) => ({ status: index === 0 ? 503 : 200 }))
        const tenant = yield* makeTenant({ webhookUrl: receiver.url, supportedFeatures: { escalation: false } })
        spans.reset()
        yield* ask(tenant, "t-2", "retried")
        yield* receiver.waitFor(2)
        const traceId = traceOf(requestSpan("/message-received"))
        yield* waitForSpans(() => named("Delivery.attempt", traceId).length === 2)
        const attempts = named("Delivery.attempt", traceId).sort((a, b) =>
          Number(a.attributes["delivery.attempt"]) - Number(b.attributes["delivery.attempt"])
        )
        expect(attempts.map((s) => [s.attributes["delivery.attempt"], s.attributes["http.response.status_code"]]))
          .toEqual([[1, 503], [2, 200]])
        expect(attempts[0]!.attributes["delivery.next_retry_at"]).toMatch(/Z$/)
        expect(attempts[1]!.attributes["delivery.next_retry_at"]).toBeUndefined()
      }))

    // The earlier tests of this block raised the same (cumulative) metrics: this one counts what its own
    // message adds to them.
    it.effect("metrics count requests, jobs, deliveries and the end-to-end latency", () =>
      Effect.gen(function*() {
        // The earlier tests' jobs have all ended (and were counted just after): none due or running.
        yield* eventually(liveJobs, (n) => n === 0)
        const receiver = yield* makeReceiver()
        const tenant = yield* makeTenant({ webhookUrl: receiver.url, supportedFeatures: { escalation: false } })
        const before = yield* counts
        yield* ask(tenant, "t-3", "counted")
        yield* receiver.waitFor(1)
        // The delivery job is counted after its attempt: wait for every count to have moved.
        const after = yield* eventually(counts, (now) => countedNames.every((name) => now[name] > before[name]))
        const added = Object.fromEntries(countedNames.map((name) => [name, after[name] - before[name]]))
        expect(added).toEqual({
          enqueuedReplies: 1,
          succeededDeliveries: 1,
          deliveredAttempts: 1,
          endToEnd: 1,
          messageRequests: 1,
          embeddedReplies: 1
        })
      }))

    it.effect("no token, secret or message text in any span attribute; access_token is redacted", () =>
      Effect.gen(function*() {
        const receiver = yield* makeReceiver()
        const tenant = yield* makeTenant({ webhookUrl: receiver.url, supportedFeatures: { escalation: false } })
        spans.reset()
        yield* ask(tenant, "t-4", "secret", SECRET_TEXT)
        const helpdesk = yield* call(
          "POST",
          `/v1/webhooks/${tenant.integrationId}/helpdesk-event-received?access_token=${tenant.token}`,
          { body: { event: "contact_created" } }
        )
        expect(helpdesk.status).toBe(422)
        yield* call("GET", "/admin/v1/workspaces", { token: ADMIN_TOKEN })
        yield* receiver.waitFor(1)
        // The delivery's job span is the message's trace's last to end.
        const traceId = traceOf(requestSpan("/message-received"))
        yield* waitForSpans(() => named("Job.deliver_event", traceId).length === 1)
        const texts = finished().flatMap((s) => Object.values(s.attributes).map(String))
        for (const secret of [tenant.token, tenant.webhookSecret, ADMIN_TOKEN, SECRET_TEXT, "4111 1111"]) {
          expect(texts.filter((t) => t.includes(secret))).toEqual([])
        }
        const helpdeskSpan = requestSpan("/helpdesk-event-received")
        expect(String(helpdeskSpan.attributes["url.query"])).toBe("access_token=REDACTED")
      }))
  })
})
