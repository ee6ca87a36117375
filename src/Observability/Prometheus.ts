/**
 * Prometheus: the metrics that go over OTLP are also served in the Prometheus text format at
 * `http://<HOST>:<METRICS_PORT>/metrics`, by OpenTelemetry's Prometheus exporter: a `MetricReader`
 * that collects on every scrape, on an HTTP server of its own (apart from the API's port, so it can
 * stay off the public network). `Telemetry.ts` installs it as one of the SDK's metric readers.
 *
 * Names as Prometheus sees them: `.` becomes `_`; counters get `_total`; histograms are
 * `_bucket{le}`, `_sum` and `_count`; attribute keys become labels the same way
 * (`http.response.status_code` → `http_response_status_code`). No unit suffix is added.
 */
import type { PrometheusExporter } from "@opentelemetry/exporter-prometheus"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"

export class MetricsServerError extends Data.TaggedError("MetricsServerError")<{
  readonly port: number
  readonly cause: unknown
}> {
  override get message() {
    const reason = this.cause instanceof Error ? this.cause.message : String(this.cause)
    return `The Prometheus endpoint could not listen on METRICS_PORT ${this.port}: ${reason}`
  }
}

/**
 * The exporter, listening on `host:port` once this succeeds (a port in use fails here, at start, not
 * silently later). Its server closes with the scope. The exporter's module is loaded here, only when
 * `METRICS_PORT` is set (see `Telemetry.ts`).
 */
export const makePrometheusReader = (options: { readonly port: number; readonly host: string }) =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: async (): Promise<PrometheusExporter> => {
        const { PrometheusExporter } = await import("@opentelemetry/exporter-prometheus")
        const exporter = new PrometheusExporter({
          port: options.port,
          host: options.host,
          preventServerStart: true,
          // One scope (Effect's metric producer) for all of Parley's metrics: a label on every series
          // would say nothing. OTLP carries the scope beside the series, not on them.
          withoutScopeInfo: true
        })
        await exporter.startServer()
        return exporter
      },
      catch: (cause) => new MetricsServerError({ port: options.port, cause })
    }),
    // The SDK shuts the reader down too; closing a closed server is harmless.
    (exporter) => Effect.promise(() => exporter.stopServer())
  )
