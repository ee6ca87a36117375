/**
 * The log records Parley exports over OTLP, through the real SDK with an in-memory exporter behind
 * Parley's own processor (`OtlpLogRecordProcessor`, as `Telemetry.ts` installs it): each record links
 * to its trace by the record's own fields (trace id, span id, flags: what backends join a trace's logs
 * on), has OpenTelemetry's severity (1–24 and its short name), and carries no credential.
 * `Export.test.ts` checks the same over OTLP/HTTP from the whole app.
 */
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { describe, expect, it } from "@effect/vitest"
import { InMemoryLogRecordExporter, type ReadableLogRecord, SimpleLogRecordProcessor } from "@opentelemetry/sdk-logs"
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Headers from "effect/http/Headers"
import * as HttpTraceContext from "effect/http/HttpTraceContext"
import * as Option from "effect/Option"
import * as References from "effect/References"
import { OtlpLogRecordProcessor } from "../../src/Observability/Logging.js"

/** A fresh SDK per test (an in-memory exporter forgets its records when the SDK shuts down). */
const capture = () => {
  const logs = new InMemoryLogRecordExporter()
  const spans = new InMemorySpanExporter()
  const layer = NodeSdk.layer(() => ({
    resource: { serviceName: "parley-otlp-logs-test" },
    spanProcessor: new SimpleSpanProcessor(spans),
    logRecordProcessor: new OtlpLogRecordProcessor(new SimpleLogRecordProcessor({ exporter: logs }))
  }))
  return { layer, records: () => logs.getFinishedLogRecords(), spans: () => spans.getFinishedSpans() }
}

const bodyOf = (record: ReadableLogRecord) => record.body
const traceContextOf = (record: ReadableLogRecord) =>
  record.spanContext === undefined
    ? undefined
    : { traceId: record.spanContext.traceId, spanId: record.spanContext.spanId, traceFlags: record.spanContext.traceFlags }

/** An incoming request's span, as Effect's HTTP server reads it from `traceparent`. */
const incoming = (traceparent: string) =>
  Option.getOrThrow(HttpTraceContext.w3c(Headers.fromInput({ traceparent })))

describe("OTLP log records", () => {
  it.live("carry their span's trace id, span id and flags, and OpenTelemetry's severity", () => {
    const { layer, records } = capture()
    return Effect.gen(function*() {
      const span = yield* Effect.gen(function*() {
        yield* Effect.logTrace("at trace")
        yield* Effect.logDebug("at debug")
        yield* Effect.logInfo("at info")
        yield* Effect.logWarning("at warn")
        yield* Effect.logError("at error")
        yield* Effect.logFatal("at fatal")
        return yield* Effect.currentSpan
      }).pipe(Effect.withSpan("work"))
      yield* Effect.logInfo("outside any span")

      expect(records().map((r) => [bodyOf(r), r.severityNumber, r.severityText])).toEqual([
        ["at trace", 1, "TRACE"],
        ["at debug", 5, "DEBUG"],
        ["at info", 9, "INFO"],
        ["at warn", 13, "WARN"],
        ["at error", 17, "ERROR"],
        ["at fatal", 21, "FATAL"],
        ["outside any span", 9, "INFO"]
      ])
      const inSpan = { traceId: span.traceId, spanId: span.spanId, traceFlags: 1 }
      expect(records().map(traceContextOf)).toEqual([inSpan, inSpan, inSpan, inSpan, inSpan, inSpan, undefined])
    }).pipe(Effect.provide(layer), Effect.provideService(References.MinimumLogLevel, "Trace"))
  })

  it.live("a record under a request whose traceparent says not sampled keeps its trace id, with flags 0", () => {
    const { layer, records, spans } = capture()
    const traceId = "5bf92f3577b34da6a3ce929d0e0e4736"
    return Effect.gen(function*() {
      const parent = incoming(`00-${traceId}-00f067aa0ba902b7-00`)
      const span = yield* Effect.logWarning("unsampled").pipe(
        Effect.andThen(Effect.currentSpan),
        Effect.withSpan("http.server POST", { parent, kind: "server" })
      )
      expect(span.sampled).toBe(false)
      expect(records().map(traceContextOf)).toEqual([{ traceId, spanId: span.spanId, traceFlags: 0 }])
      // The span itself is not recorded (parentbased_always_on honours the flag).
      expect(spans()).toEqual([])
    }).pipe(Effect.provide(layer))
  })

  it.live("no credential in a record's body or attributes, a cause's message and stack included", () => {
    const { layer, records } = capture()
    const token = "prl_abcdefghijklmnopqrstuvwx"
    return Effect.gen(function*() {
      yield* Effect.logError(`Rejected Bearer ${token}`, Cause.fail(new Error(`POST https://hooks.test/in?access_token=${token}`))).pipe(
        Effect.annotateLogs({ "url.full": `https://hooks.test/in?token=${token}`, tokens: [token, "plain"] }),
        Effect.withSpan("work")
      )
      const [record] = records()
      expect(record).toBeDefined()
      const texts = JSON.stringify({ body: record?.body, attributes: record?.attributes })
      expect(texts).not.toContain(token)
      expect(record?.body).toBe("Rejected Bearer REDACTED")
      expect(record?.attributes["url.full"]).toBe("https://hooks.test/in?token=REDACTED")
      expect(record?.attributes["tokens"]).toEqual(["prl_REDACTED", "plain"])
      expect(record?.attributes["exception.message"]).toBe("POST https://hooks.test/in?access_token=REDACTED")
      expect(String(record?.attributes["exception.stacktrace"])).toContain("access_token=REDACTED")
    }).pipe(Effect.provide(layer))
  })
})
