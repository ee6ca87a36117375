/**
 * One story per message: the inbound request, the reply job and every delivery attempt share one
 * trace id (jobs link to the request that enqueued them); metrics count what happened; no secret or
 * message text reaches a span. Spans and metrics are captured in memory through the real SDK.
 */
import { NodeSdk } from "@effect/opentelemetry"
import { describe, expect, layer } from "@effect/vitest"
import { AggregationTemporality, InMemoryMetricExporter, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics"
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import * as Effect from "effect/Effect"
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

const ask = (tenant: Tenant, id: string, conversationId: string, text = "Hello, anyone there?") =>
  call("POST", `/v1/webhooks/${tenant.integrationId}/message-received`, {
    token: tenant.token,
    body: { id, role: "human", customerId: "6f1c1f8e-1d7e-4c8e-9a0a-1b2c3d4e5f60", conversationId, text }
  }).pipe(Effect.tap((reply) => expect(reply.status).toBe(200)))

const finished = () => spans.getFinishedSpans()
const traceOf = (span: ReadableSpan) => span.spanContext().traceId
const named = (name: string, traceId: string) => finished().filter((s) => s.name === name && traceOf(s) === traceId)

/** Waits until the finished spans satisfy `predicate` (their names are in the failure). */
const waitForSpans = (predicate: () => boolean, timeoutMs = 15_000) =>
  eventually(Effect.sync(() => predicate() || finished().map((s) => s.name)), (seen) => seen === true, timeoutMs)

const requestSpan = (pathPart: string) =>
  finished().find((s) => s.name.startsWith("http.server") && String(s.attributes["url.path"] ?? "").includes(pathPart))!

describe("telemetry", () => {
  layer(TestAppWithWorkers({ PARLEY_RATE_LIMIT: "0" }).pipe(Layer.provide(Telemetry)), {
    excludeTestServices: true,
    timeout: 120_000
  })((it) => {
    it.scoped("a message, its reply and its delivery are one trace; jobs link to the request", () =>
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

    it.scoped("each retry is its own span with its attempt number and next retry", () =>
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

    it.scoped("metrics count requests, jobs, deliveries and the end-to-end latency", () =>
      Effect.gen(function*() {
        const receiver = yield* makeReceiver()
        const tenant = yield* makeTenant({ webhookUrl: receiver.url, supportedFeatures: { escalation: false } })
        yield* ask(tenant, "t-3", "counted")
        yield* receiver.waitFor(1)
        yield* Effect.sleep("300 millis")
        const { resourceMetrics } = yield* Effect.promise(() => reader.collect())
        const all = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics)
        const total = (name: string, attributes: Record<string, string> = {}) =>
          all.filter((m) => m.descriptor.name === name).flatMap((m) => m.dataPoints as Array<any>)
            .filter((p) => Object.entries(attributes).every(([k, v]) => p.attributes[k] === v))
            .reduce((sum, p) => sum + (typeof p.value === "number" ? p.value : p.value.count), 0)
        expect(total("parley.jobs.enqueued", { kind: "generate_reply" })).toBeGreaterThanOrEqual(1)
        expect(total("parley.jobs.succeeded", { kind: "deliver_event" })).toBeGreaterThanOrEqual(1)
        expect(total("parley.delivery.attempts", { outcome: "delivered" })).toBeGreaterThanOrEqual(1)
        expect(total("parley.delivery.end_to_end")).toBeGreaterThanOrEqual(1)
        expect(total("http.server.requests", { "http.route": "/v1/webhooks/{integration_id}/message-received" }))
          .toBeGreaterThanOrEqual(1)
        expect(total("parley.ai.duration", { provider: "embedded" })).toBeGreaterThanOrEqual(1)
      }))

    it.scoped("no token, secret or message text in any span attribute; access_token is redacted", () =>
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
        yield* Effect.sleep("300 millis")
        const texts = finished().flatMap((s) => Object.values(s.attributes).map(String))
        for (const secret of [tenant.token, tenant.webhookSecret, ADMIN_TOKEN, SECRET_TEXT, "4111 1111"]) {
          expect(texts.filter((t) => t.includes(secret))).toEqual([])
        }
        const helpdeskSpan = requestSpan("/helpdesk-event-received")
        expect(String(helpdeskSpan.attributes["url.query"])).toBe("access_token=REDACTED")
      }))
  })
})
