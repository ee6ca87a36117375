/**
 * The real configuration path: with OTEL_EXPORTER_OTLP_ENDPOINT pointing at a local OTLP/HTTP
 * receiver, traces, metrics and logs arrive there, with the service name and the pipeline's spans;
 * log records link to their spans by their own `traceId`/`spanId`/`flags`, with OpenTelemetry's
 * severity; a request whose `traceparent` says not sampled exports no span.
 */
import { afterAll, describe, expect, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as HttpClient from "effect/http/HttpClient"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as http from "node:http"
import { TelemetryLive } from "../../src/Observability/Telemetry.js"
import { ADMIN_TOKEN, call, makeTenant, type Tenant, TestAppWithWorkers, TestConfig } from "../support/App.js"
import { eventually } from "../support/Eventually.js"
import { makeReceiver } from "../support/Receiver.js"

const exports: Array<{ readonly path: string; readonly body: string }> = []
const collector = http.createServer((req, res) => {
  let body = ""
  req.on("data", (chunk) => (body += chunk))
  req.on("end", () => {
    exports.push({ path: req.url ?? "", body })
    res.writeHead(200, { "content-type": "application/json" }).end("{}")
  })
})
await new Promise<void>((resolve) => collector.listen(0, "127.0.0.1", resolve))
afterAll(() => {
  collector.close()
})
const address = collector.address()
const endpoint = `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`

const Exporting = TestAppWithWorkers().pipe(
  Layer.provide(TelemetryLive),
  Layer.provide(TestConfig({
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_SERVICE_NAME: "parley-export-test",
    OTEL_METRIC_EXPORT_INTERVAL: "500"
  }))
)

/** What the tests read of OTLP/HTTP's JSON: spans and log records, with their trace context. */
const OtlpSpan = Schema.Struct({
  traceId: Schema.String,
  spanId: Schema.String,
  parentSpanId: Schema.optional(Schema.String),
  name: Schema.String
})
const OtlpTraces = Schema.Struct({
  resourceSpans: Schema.optional(Schema.Array(Schema.Struct({ scopeSpans: Schema.Array(Schema.Struct({ spans: Schema.Array(OtlpSpan) })) })))
})
const OtlpLogRecord = Schema.Struct({
  traceId: Schema.optional(Schema.String),
  spanId: Schema.optional(Schema.String),
  flags: Schema.optional(Schema.Number),
  severityNumber: Schema.optional(Schema.Number),
  severityText: Schema.optional(Schema.String),
  body: Schema.optional(Schema.Struct({ stringValue: Schema.optional(Schema.String) }))
})
const OtlpLogs = Schema.Struct({
  resourceLogs: Schema.optional(Schema.Array(Schema.Struct({ scopeLogs: Schema.Array(Schema.Struct({ logRecords: Schema.Array(OtlpLogRecord) })) })))
})
const decodeTraces = Schema.decodeUnknownSync(Schema.fromJsonString(OtlpTraces))
const decodeLogs = Schema.decodeUnknownSync(Schema.fromJsonString(OtlpLogs))

const exportedSpans = () =>
  exports.filter((e) => e.path === "/v1/traces").flatMap((e) =>
    (decodeTraces(e.body).resourceSpans ?? []).flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans))
  )
const spanNames = () => exportedSpans().map((s) => s.name)
const exportedLogs = () =>
  exports.filter((e) => e.path === "/v1/logs").flatMap((e) =>
    (decodeLogs(e.body).resourceLogs ?? []).flatMap((rl) => rl.scopeLogs.flatMap((sl) => sl.logRecords))
  )
const logsOf = (traceId: string, message: string) =>
  exportedLogs().filter((r) => r.traceId === traceId && r.body?.stringValue === message)

/** A customer message sent with the caller's `traceparent` (the test's client neither traces nor propagates). */
const askWith = (tenant: Tenant, conversationId: string, traceparent: string) =>
  call("POST", `/v1/webhooks/${tenant.integrationId}/message-received`, {
    token: tenant.token,
    headers: { traceparent },
    body: { id: conversationId, role: "human", customerId: tenant.workspaceId, conversationId, text: "Hi" }
  }).pipe(
    Effect.tap((reply) => Effect.sync(() => expect(reply.status).toBe(200))),
    Effect.provideService(HttpClient.TracerDisabledWhen, () => true)
  )

/** The first attempt fails (a `WARN` record), the second is delivered (an `INFO` record). */
const failOnce = () => makeReceiver((_, index) => ({ status: index === 0 ? 503 : 200 }))

describe("OTLP export", () => {
  layer(Exporting, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("traces and metrics are exported over OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT", () =>
      Effect.gen(function*() {
        const receiver = yield* makeReceiver()
        const tenant = yield* makeTenant({ webhookUrl: receiver.url, supportedFeatures: { escalation: false } })
        yield* call("POST", `/v1/webhooks/${tenant.integrationId}/message-received`, {
          token: tenant.token,
          body: { id: "x-1", role: "human", customerId: tenant.workspaceId, conversationId: "exported", text: "Hi" }
        })
        yield* receiver.waitFor(1)
        yield* eventually(
          Effect.sync(() => spanNames().includes("Delivery.attempt") && exports.some((e) => e.path === "/v1/metrics")),
          (exported) => exported,
          20_000
        )
        expect(spanNames()).toEqual(expect.arrayContaining([
          "Conversations.ingest",
          "Job.generate_reply",
          "AiReplies.reply",
          "Job.deliver_event",
          "Delivery.attempt",
          "sql.execute"
        ]))
        const traces = exports.find((e) => e.path === "/v1/traces")
        expect(traces?.body).toContain("parley-export-test")
        expect(exports.some((e) => e.path === "/v1/metrics" && e.body.includes("parley.jobs.enqueued"))).toBe(true)
      }))

    it.effect("log records carry their span's traceId, spanId and flags, and OpenTelemetry's severity", () =>
      Effect.gen(function*() {
        const receiver = yield* failOnce()
        const tenant = yield* makeTenant({ webhookUrl: receiver.url, supportedFeatures: { escalation: false } })
        const traceId = "7bf92f3577b34da6a3ce929d0e0e4736"
        yield* askWith(tenant, "logged", `00-${traceId}-00f067aa0ba902b7-01`)
        const hooks = yield* receiver.waitFor(2)
        expect(hooks.map((hook) => hook.headers["traceparent"]?.replace(/-[0-9a-f]{16}-/, "-…-")))
          .toEqual([`00-${traceId}-…-01`, `00-${traceId}-…-01`])
        yield* eventually(
          Effect.sync(() => [logsOf(traceId, "Delivered").length, exportedSpans().filter((s) => s.traceId === traceId && s.name === "Delivery.attempt").length]),
          ([records, attempts]) => records === 1 && attempts === 2,
          20_000
        )
        const attempts = exportedSpans().filter((s) => s.traceId === traceId && s.name === "Delivery.attempt").map((s) => s.spanId)
        const [failed] = logsOf(traceId, "Delivery attempt failed")
        const [delivered] = logsOf(traceId, "Delivered")
        expect(failed).toMatchObject({ traceId, flags: 1, severityNumber: 13, severityText: "WARN" })
        expect(delivered).toMatchObject({ traceId, flags: 1, severityNumber: 9, severityText: "INFO" })
        // Each under its own attempt's span, which was exported in the same trace.
        expect(new Set([failed?.spanId, delivered?.spanId])).toEqual(new Set(attempts))
        // The request's span continues the caller's.
        const request = exportedSpans().find((s) => s.traceId === traceId && s.name.startsWith("http.server"))
        expect(request?.parentSpanId).toBe("00f067aa0ba902b7")
      }))

    it.effect("a request whose traceparent says not sampled exports no span; its records and webhooks say 00", () =>
      Effect.gen(function*() {
        const receiver = yield* failOnce()
        const tenant = yield* makeTenant({ webhookUrl: receiver.url, supportedFeatures: { escalation: false } })
        const traceId = "8bf92f3577b34da6a3ce929d0e0e4736"
        yield* askWith(tenant, "unsampled", `00-${traceId}-00f067aa0ba902b7-00`)
        const hooks = yield* receiver.waitFor(2)
        expect(hooks.map((hook) => hook.headers["traceparent"]?.replace(/-[0-9a-f]{16}-/, "-…-")))
          .toEqual([`00-${traceId}-…-00`, `00-${traceId}-…-00`])
        // Its records are exported all the same, in its trace, not sampled.
        yield* eventually(Effect.sync(() => logsOf(traceId, "Delivered").length), (n) => n === 1, 20_000)
        expect(logsOf(traceId, "Delivery attempt failed")).toMatchObject([{ traceId, flags: 0, severityNumber: 13 }])
        // A sampled request after it: once its span is exported, any span of the first, ended before, would be.
        const sentinel = "9bf92f3577b34da6a3ce929d0e0e4736"
        yield* call("GET", "/admin/v1/workspaces", { token: ADMIN_TOKEN, headers: { traceparent: `00-${sentinel}-00f067aa0ba902b7-01` } })
          .pipe(Effect.provideService(HttpClient.TracerDisabledWhen, () => true))
        yield* eventually(Effect.sync(() => exportedSpans().some((s) => s.traceId === sentinel)), (seen) => seen, 20_000)
        expect(exportedSpans().filter((s) => s.traceId === traceId).map((s) => s.name)).toEqual([])
      }))
  })
})
