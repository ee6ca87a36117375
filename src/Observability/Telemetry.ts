/**
 * OpenTelemetry from the standard variables. With `OTEL_EXPORTER_OTLP_ENDPOINT` (or the per-signal
 * `OTEL_EXPORTER_OTLP_{TRACES,METRICS,LOGS}_ENDPOINT`) set, traces, metrics and logs are exported over
 * OTLP/HTTP; with `METRICS_PORT` set, metrics are also served to Prometheus (`Prometheus.ts`), with or
 * without OTLP. With none set, nothing is exported and nothing is installed (Effect's own tracer only
 * makes the trace ids that logs and 500 bodies carry).
 *
 * The SDK and each exporter are loaded (`import()`) only when configured: imported statically, their
 * modules alone held memory in every process, exporting or not.
 *
 * Sampling is the SDK's, by `OTEL_TRACES_SAMPLER` (`parentbased_always_on` by default). An incoming
 * `traceparent` (or `b3`) becomes the request span's parent with its sampled flag (Effect's
 * `HttpTraceContext`), and @effect/opentelemetry gives the sampler that flag as the remote parent's
 * trace flags: with `00`, the request and everything under it (its SQL, the jobs it enqueues, which
 * store its `traceparent`, their deliveries) are not recorded, and the webhooks they send carry `-00`.
 * Log records are exported all the same, with the trace id and `flags` 0.
 */
import type { Sampler } from "@opentelemetry/sdk-trace-base"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as AppConfig from "../Config.js"
import { packageVersion } from "./Lifecycle.js"
import { OtlpLogRecordProcessor } from "./Logging.js"
import { registerAll } from "./Metrics.js"
import { makePrometheusReader } from "./Prometheus.js"
import { RedactingSpanExporter } from "./Redaction.js"

/** An endpoint URL, or none when unset or empty. */
const endpoint = (name: string): Config.Config<Option.Option<string>> =>
  Config.option(Config.String(name)).pipe(
    Config.mapEffect((value) => {
      const url = Option.filter(Option.map(value, (v) => v.trim()), (v) => v !== "")
      return Option.isNone(url) || URL.canParse(url.value)
        ? Effect.succeed(url)
        : Effect.fail(AppConfig.settingError(name, `${name}=${url.value} is not a URL`))
    })
  )

export const TelemetryConfig = Config.all({
  endpoint: endpoint("OTEL_EXPORTER_OTLP_ENDPOINT"),
  tracesEndpoint: endpoint("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
  metricsEndpoint: endpoint("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"),
  logsEndpoint: endpoint("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT"),
  serviceName: Config.String("OTEL_SERVICE_NAME").pipe(Config.withDefault("parley")),
  sampler: Config.Literals([
    "always_on",
    "always_off",
    "traceidratio",
    "parentbased_always_on",
    "parentbased_always_off",
    "parentbased_traceidratio"
  ], "OTEL_TRACES_SAMPLER").pipe(Config.withDefault("parentbased_always_on" as const)),
  samplerArg: AppConfig.numberIn("OTEL_TRACES_SAMPLER_ARG", 0, 1, 1),
  metricIntervalMillis: AppConfig.integerIn("OTEL_METRIC_EXPORT_INTERVAL", 100, 24 * 3_600_000, 60_000)
})

/** The sampler named by `OTEL_TRACES_SAMPLER` (the specification's names). */
const samplerFromEnv = (
  sdk: typeof import("@opentelemetry/sdk-trace-base"),
  name: string,
  ratio: number
): Sampler => {
  switch (name) {
    case "always_on":
      return new sdk.AlwaysOnSampler()
    case "always_off":
      return new sdk.AlwaysOffSampler()
    case "traceidratio":
      return new sdk.TraceIdRatioBasedSampler(ratio)
    case "parentbased_always_off":
      return new sdk.ParentBasedSampler({ root: new sdk.AlwaysOffSampler() })
    case "parentbased_traceidratio":
      return new sdk.ParentBasedSampler({ root: new sdk.TraceIdRatioBasedSampler(ratio) })
    default:
      return new sdk.ParentBasedSampler({ root: new sdk.AlwaysOnSampler() })
  }
}

/** `<base>/v1/<signal>` unless the signal has its own endpoint (used as is, per the specification). */
const signalUrl = (base: Option.Option<string>, own: Option.Option<string>, signal: string) =>
  Option.orElse(own, () => Option.map(base, (url) => `${url.replace(/\/+$/, "")}/v1/${signal}`))

/** A signal's SDK parts for its endpoint, their modules loaded only when the endpoint is set; none otherwise. */
const loadWhenSet = <A>(url: Option.Option<string>, load: (url: string) => Promise<Array<A>>) =>
  Option.match(url, { onNone: () => Effect.succeed<Array<A>>([]), onSome: (url) => Effect.promise(() => load(url)) })

export const TelemetryLive = Layer.unwrap(
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
    // The SDK (which loads the trace, metrics and logs SDKs in any case), then each configured
    // signal's exporter and nothing else: a Prometheus-only process loads no OTLP exporter.
    const [{ layer: sdkLayer }, traceSdk] = yield* Effect.promise(() =>
      Promise.all([import("@effect/opentelemetry/NodeSdk"), import("@opentelemetry/sdk-trace-base")])
    )
    const spanProcessor = yield* loadWhenSet(traces, async (url) => {
      const { OTLPTraceExporter } = await import("@opentelemetry/exporter-trace-otlp-http")
      return [new traceSdk.BatchSpanProcessor(new RedactingSpanExporter(new OTLPTraceExporter({ url })))]
    })
    const otlpMetricReader = yield* loadWhenSet(metrics, async (url) => {
      const [{ PeriodicExportingMetricReader }, { OTLPMetricExporter }] = await Promise.all([
        import("@opentelemetry/sdk-metrics"),
        import("@opentelemetry/exporter-metrics-otlp-http")
      ])
      return [
        new PeriodicExportingMetricReader({
          exporter: new OTLPMetricExporter({ url }),
          exportIntervalMillis: config.metricIntervalMillis
        })
      ]
    })
    const logRecordProcessor = yield* loadWhenSet(logs, async (url) => {
      const [{ BatchLogRecordProcessor }, { OTLPLogExporter }] = await Promise.all([
        import("@opentelemetry/sdk-logs"),
        import("@opentelemetry/exporter-logs-otlp-http")
      ])
      return [new OtlpLogRecordProcessor(new BatchLogRecordProcessor({ exporter: new OTLPLogExporter({ url }) }))]
    })
    return sdkLayer(() => ({
      resource: { serviceName: config.serviceName, serviceVersion: version },
      tracerConfig: { sampler: samplerFromEnv(traceSdk, config.sampler, config.samplerArg) },
      spanProcessor,
      metricReader: [...otlpMetricReader, ...Option.toArray(prometheus)],
      logRecordProcessor,
      shutdownTimeout: "5 seconds"
    }))
  })
)
