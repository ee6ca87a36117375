/**
 * The Prometheus endpoint through the real telemetry layer: with METRICS_PORT set (and no OTLP
 * endpoint) Effect metrics are scraped over HTTP in the text format, under the names Prometheus
 * gives them; with it unset nothing listens; a port in use fails the start; the server closes with
 * the layer.
 */
import { describe, expect, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as net from "node:net"
import * as Metrics from "../../src/Observability/Metrics.js"
import { TelemetryLive } from "../../src/Observability/Telemetry.js"
import { answers, find, freePort, parseExposition, scrape } from "./Exposition.js"

const telemetry = (env: Record<string, string>) =>
  TelemetryLive.pipe(Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord(env))))

const started = (env: Record<string, string>) => Layer.build(telemetry(env))

describe("Prometheus endpoint", () => {
  it.live("serves Effect metrics at /metrics on METRICS_PORT, without any OTLP endpoint", () =>
    Effect.gen(function*() {
      const port = yield* freePort
      yield* started({ METRICS_PORT: String(port), HOST: "127.0.0.1", OTEL_SERVICE_NAME: "parley-prom-test" })

      const attempts = (outcome: string) =>
        Metric.withAttributes(Metric.withAttributes(Metrics.deliveryAttempts, { event: "send_messages" }), { outcome })
      yield* Metric.update(attempts("failed"), 1).pipe(Effect.repeat({ times: 2 }))
      yield* Metric.update(attempts("delivered"), 1)
      yield* Metric.update(Metrics.oldestPendingAge, 42.5)
      yield* Metric.update(Metrics.deadLetters, 7)
      yield* Metric.update(Metric.withAttributes(Metrics.deliveryDead, { event: "escalate" }), 1)
      yield* Metric.update(Metrics.deliveryAttemptDuration, 0.2)
      yield* Metric.update(Metrics.deliveryAttemptDuration, 3)
      yield* Metric.update(
        Metric.withAttributes(Metrics.httpRequests, {
          "http.route": "/v1/integration/list",
          "http.request.method": "GET",
          "http.response.status_code": "503"
        }),
        1
      )

      const response = yield* scrape(port)
      expect(response.status).toBe(200)
      expect(response.contentType).toContain("text/plain")
      const metrics = parseExposition(response.body)

      // Counters: dots become underscores, `_total` is appended, tags become labels.
      expect(metrics.types.get("parley_delivery_attempts_total")).toBe("counter")
      expect(find(metrics, "parley_delivery_attempts_total", { event: "send_messages", outcome: "failed" })
        .map((s) => s.value)).toEqual([3])
      expect(find(metrics, "parley_delivery_attempts_total", { event: "send_messages", outcome: "delivered" })
        .map((s) => s.value)).toEqual([1])
      expect(find(metrics, "http_server_requests_total", {
        http_route: "/v1/integration/list",
        http_request_method: "GET",
        http_response_status_code: "503"
      }).map((s) => s.value)).toEqual([1])
      expect(find(metrics, "parley_delivery_dead_total", { event: "escalate" }).map((s) => s.value)).toEqual([1])
      // Pre-registered at 0 for every other event kind, so `increase()` sees the first dead letter.
      expect(find(metrics, "parley_delivery_dead_total", { event: "send_messages" }).map((s) => s.value)).toEqual([0])

      // Gauges keep their name.
      expect(metrics.types.get("parley_jobs_oldest_pending_age")).toBe("gauge")
      expect(find(metrics, "parley_jobs_oldest_pending_age").map((s) => s.value)).toEqual([42.5])
      expect(find(metrics, "parley_delivery_dead_letters").map((s) => s.value)).toEqual([7])

      // Histograms: `_count`, `_sum` and cumulative `_bucket{le}` up to +Inf.
      expect(metrics.types.get("parley_delivery_attempt_duration")).toBe("histogram")
      expect(find(metrics, "parley_delivery_attempt_duration_count").map((s) => s.value)).toEqual([2])
      expect(find(metrics, "parley_delivery_attempt_duration_sum").map((s) => s.value)).toEqual([3.2])
      const buckets = find(metrics, "parley_delivery_attempt_duration_bucket")
        .map((s) => ({ le: s.labels["le"] === "+Inf" ? Infinity : Number(s.labels["le"]), count: s.value }))
      expect(buckets.at(-1)).toEqual({ le: Infinity, count: 2 })
      for (const { count, le } of buckets) expect(count).toBe(le < 0.2 ? 0 : le < 3 ? 1 : 2)

      // Every metric of Metrics.ts is listed from the start, and the resource names the service.
      for (const name of ["parley_jobs_enqueued_total", "parley_ai_requests_total", "parley_delivery_end_to_end_count"]) {
        expect(find(metrics, name).length, name).toBeGreaterThan(0)
      }
      expect(find(metrics, "target_info", { service_name: "parley-prom-test" })).toHaveLength(1)
      // One scope for all: no `otel_scope_name` label on each series.
      expect(metrics.samples.filter((s) => "otel_scope_name" in s.labels)).toEqual([])

      expect((yield* scrape(port, "/other")).status).toBe(404)
    }).pipe(Effect.scoped))

  it.live("the endpoint closes with the layer", () =>
    Effect.gen(function*() {
      const port = yield* freePort
      yield* Effect.scoped(Effect.gen(function*() {
        yield* started({ METRICS_PORT: String(port), HOST: "127.0.0.1" })
        expect(yield* answers(port)).toBe(true)
      }))
      expect(yield* answers(port)).toBe(false)
    }))

  it.live("no exporter is made when METRICS_PORT is unset", () =>
    Effect.gen(function*() {
      // An exporter made without a port would listen on this one (the exporter's own variable).
      const port = yield* freePort
      yield* Effect.acquireRelease(
        Effect.sync(() => (process.env["OTEL_EXPORTER_PROMETHEUS_PORT"] = String(port))),
        () => Effect.sync(() => delete process.env["OTEL_EXPORTER_PROMETHEUS_PORT"])
      )
      yield* started({ HOST: "127.0.0.1" })
      expect(yield* answers(port)).toBe(false)
    }).pipe(Effect.scoped))

  it.live("a METRICS_PORT in use fails the start with a clear error", () =>
    Effect.gen(function*() {
      const port = yield* freePort
      const occupier = net.createServer()
      yield* Effect.acquireRelease(
        Effect.callback<void>((resume) => {
          occupier.listen(port, "127.0.0.1", () => resume(Effect.void))
        }),
        () =>
          Effect.callback<void>((resume) => {
            occupier.close(() => resume(Effect.void))
          })
      )
      const exit = yield* Effect.exit(started({ METRICS_PORT: String(port), HOST: "127.0.0.1" }))
      expect(Exit.isFailure(exit)).toBe(true)
      expect(String(Exit.isFailure(exit) ? exit.cause : "")).toContain(`METRICS_PORT ${port}`)
    }).pipe(Effect.scoped))

  it("the metrics list names every metric Metrics.ts exports", () => {
    const exported = Object.values(Metrics).filter(Metric.isMetric)
    expect(exported.length).toBeGreaterThan(10)
    for (const metric of exported) expect(Metrics.all).toContain(metric)
  })
})
