/**
 * OpenTelemetry from the standard variables. With `OTEL_EXPORTER_OTLP_ENDPOINT` (or the per-signal
 * `OTEL_EXPORTER_OTLP_{TRACES,METRICS,LOGS}_ENDPOINT`) set, traces, metrics and logs are exported over
 * OTLP/HTTP; with `METRICS_PORT` set, metrics are also served to Prometheus (`Prometheus.ts`), with or
 * without OTLP. With none set, nothing is exported and nothing is installed (Effect's own tracer only
 * makes the trace ids that logs and 500 bodies carry).
 */
import { NodeSdk } from "@effect/opentelemetry"
import { OTLPLogExporter } from "@opentelemetry/exporter-logs-otlp-http"
import { OTLPMetricExporter } from "@opentelemetry/exporter-metrics-otlp-http"
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http"
import { BatchLogRecordProcessor } from "@opentelemetry/sdk-logs"
import { PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics"
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  type Sampler,
  TraceIdRatioBasedSampler
} from "@opentelemetry/sdk-trace-base"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as AppConfig from "../Config.js"
import { packageVersion } from "./Lifecycle.js"
import { registerAll } from "./Metrics.js"
import { makePrometheusReader } from "./Prometheus.js"
import { RedactingSpanExporter } from "./Redaction.js"

const TelemetryConfig = Config.all({
  endpoint: Config.option(Config.string("OTEL_EXPORTER_OTLP_ENDPOINT")),
  tracesEndpoint: Config.option(Config.string("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")),
  metricsEndpoint: Config.option(Config.string("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")),
  logsEndpoint: Config.option(Config.string("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT")),
  serviceName: Config.string("OTEL_SERVICE_NAME").pipe(Config.withDefault("parley")),
  sampler: Config.string("OTEL_TRACES_SAMPLER").pipe(Config.withDefault("parentbased_always_on")),
  samplerArg: Config.number("OTEL_TRACES_SAMPLER_ARG").pipe(Config.withDefault(1)),
  metricIntervalMillis: Config.integer("OTEL_METRIC_EXPORT_INTERVAL").pipe(Config.withDefault(60_000))
})

/** The sampler named by `OTEL_TRACES_SAMPLER` (the specification's names). */
const samplerFromEnv = (name: string, ratio: number): Sampler => {
  switch (name) {
    case "always_on":
      return new AlwaysOnSampler()
    case "always_off":
      return new AlwaysOffSampler()
    case "traceidratio":
      return new TraceIdRatioBasedSampler(ratio)
    case "parentbased_always_off":
      return new ParentBasedSampler({ root: new AlwaysOffSampler() })
    case "parentbased_traceidratio":
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) })
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() })
  }
}

/** `<base>/v1/<signal>` unless the signal has its own endpoint (used as is, per the specification). */
const signalUrl = (base: Option.Option<string>, own: Option.Option<string>, signal: string) =>
  Option.orElse(own, () => Option.map(base, (url) => `${url.replace(/\/+$/, "")}/v1/${signal}`))

export const TelemetryLive = Layer.unwrapScoped(
  Effect.gen(function*() {
    const config = yield* TelemetryConfig
    const traces = signalUrl(config.endpoint, config.tracesEndpoint, "traces")
    const metrics = signalUrl(config.endpoint, config.metricsEndpoint, "metrics")
    const logs = signalUrl(config.endpoint, config.logsEndpoint, "logs")
    const metricsPort = yield* AppConfig.MetricsPort
    const prometheus = Option.isSome(metricsPort)
      ? Option.some(yield* makePrometheusReader({ port: metricsPort.value, host: yield* AppConfig.Host }))
      : Option.none()
    if (Option.isNone(traces) && Option.isNone(metrics) && Option.isNone(logs) && Option.isNone(prometheus)) {
      return Layer.empty
    }
    if (Option.isSome(metrics) || Option.isSome(prometheus)) yield* registerAll
    const version = yield* packageVersion
    return NodeSdk.layer(() => ({
      resource: { serviceName: config.serviceName, serviceVersion: version },
      tracerConfig: { sampler: samplerFromEnv(config.sampler, config.samplerArg) },
      spanProcessor: Option.match(traces, {
        onNone: () => [],
        onSome: (url) => [new BatchSpanProcessor(new RedactingSpanExporter(new OTLPTraceExporter({ url })))]
      }),
      metricReader: [
        ...Option.match(metrics, {
          onNone: () => [],
          onSome: (url) => [
            new PeriodicExportingMetricReader({
              exporter: new OTLPMetricExporter({ url }),
              exportIntervalMillis: config.metricIntervalMillis
            })
          ]
        }),
        ...Option.toArray(prometheus)
      ],
      logRecordProcessor: Option.match(logs, {
        onNone: () => [],
        onSome: (url) => [new BatchLogRecordProcessor({ exporter: new OTLPLogExporter({ url }) })]
      }),
      shutdownTimeout: "5 seconds"
    }))
  })
)
