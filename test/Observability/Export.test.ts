/**
 * The real configuration path: with OTEL_EXPORTER_OTLP_ENDPOINT pointing at a local OTLP/HTTP
 * receiver, traces and metrics arrive there, with the service name and the pipeline's spans.
 */
import { afterAll, describe, expect, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as http from "node:http"
import { TelemetryLive } from "../../src/Observability/Telemetry.js"
import { call, makeTenant, TestAppWithWorkers, TestConfig } from "../support/App.js"
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

const spanNames = () =>
  exports.filter((e) => e.path === "/v1/traces").flatMap((e) =>
    (JSON.parse(e.body).resourceSpans ?? []).flatMap((rs: any) =>
      rs.scopeSpans.flatMap((ss: any) => ss.spans.map((s: any) => s.name as string))
    )
  )

describe("OTLP export", () => {
  layer(Exporting, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.scoped("traces and metrics are exported over OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT", () =>
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
        const traces = exports.find((e) => e.path === "/v1/traces")!
        expect(traces.body).toContain("parley-export-test")
        expect(exports.some((e) => e.path === "/v1/metrics" && e.body.includes("parley.jobs.enqueued"))).toBe(true)
      }))
  })
})
