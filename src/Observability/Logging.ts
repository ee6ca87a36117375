/**
 * Logs: one structured line per event, JSON by default (`LOG_FORMAT=logfmt` or `pretty` otherwise),
 * each with the trace and span ids of the span it was written in, at `LOG_LEVEL` and above, with
 * anything that looks like a credential masked (`Redaction.ts`). Logs go to stdout and nothing else
 * does: human banners (the development admin token, the demo credentials) are written to stderr.
 * The records and their fields are listed in docs/observability.md ("Logs").
 *
 * With an OTLP endpoint for logs, @effect/opentelemetry's logger also emits every record to the SDK
 * (`Telemetry.ts`), with its span as the record's context; `OtlpLogRecordProcessor` below gives each
 * OTLP record the severity and the masking the stdout record has.
 */
import type { Context as OtelContext } from "@opentelemetry/api"
import type { LogRecordProcessor, ReadWriteLogRecord } from "@opentelemetry/sdk-logs"
import * as Arr from "effect/Array"
import * as Cause from "effect/Cause"
import * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as Formatter from "effect/Formatter"
import * as Inspectable from "effect/Inspectable"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import type * as LogLevel from "effect/LogLevel"
import * as References from "effect/References"
import * as Tracer from "effect/Tracer"
import { describeConfigError, settingError } from "../Config.js"
import { redactSecrets } from "./Redaction.js"

/** `LOG_LEVEL`'s names, in any case: Effect's (`Debug`, `Warn`, `None`) and the labels of its logs (`DEBUG`, `OFF`). */
const logLevels: ReadonlyArray<readonly [string, LogLevel.LogLevel]> = [
  ["all", "All"],
  ["fatal", "Fatal"],
  ["error", "Error"],
  ["warn", "Warn"],
  // Effect 3's name for the level, which earlier configurations use.
  ["warning", "Warn"],
  ["info", "Info"],
  ["debug", "Debug"],
  ["trace", "Trace"],
  ["none", "None"],
  ["off", "None"]
]

const LogLevelSetting: Config.Config<LogLevel.LogLevel> = Config.String("LOG_LEVEL").pipe(
  Config.mapEffect((value) => {
    const level = logLevels.find(([name]) => name === value.trim().toLowerCase())
    return level !== undefined
      ? Effect.succeed(level[1])
      : Effect.fail(settingError(
        "LOG_LEVEL",
        `LOG_LEVEL=${value} is not a log level: All, Trace, Debug, Info, Warn, Error, Fatal or None`
      ))
  })
)

export const LoggingConfig = Config.all({
  format: Config.Literals(["json", "logfmt", "pretty"], "LOG_FORMAT").pipe(Config.withDefault("json" as const)),
  level: LogLevelSetting.pipe(Config.withDefault<LogLevel.LogLevel>("Info"))
})

/** The record's annotations: the fiber's, then `trace_id` and `span_id` of the current span. */
const annotationsOf = (fiber: Fiber.Fiber<unknown, unknown>): Readonly<Record<string, unknown>> => {
  const annotations = fiber.getRef(References.CurrentLogAnnotations)
  const span = Context.getOrUndefined(fiber.context, Tracer.ParentSpan)
  return span === undefined ? annotations : { ...annotations, trace_id: span.traceId, span_id: span.spanId }
}

/** A value as it is written in a record (Effect's own conversion: `toJSON`, redactables, symbols). */
const structured = (value: unknown): unknown =>
  typeof value === "bigint" || typeof value === "function" || typeof value === "symbol"
    ? String(value)
    : Inspectable.toJson(value)

/**
 * One JSON record, in the shape Parley has always written (and the tests and docs/observability.md
 * assert): `message`, `logLevel`, `timestamp`, `cause` (when there is one), `annotations`, `spans`
 * (milliseconds since each log span began) and `fiberId`. Effect 4's own JSON logger names the level
 * `level`; this one keeps `logLevel`.
 */
const jsonRecord = Logger.make<unknown, string>(({ cause, date, fiber, logLevel, message }) => {
  const annotations: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(annotationsOf(fiber))) annotations[key] = structured(value)
  const now = date.getTime()
  const spans: Record<string, number> = {}
  for (const [label, start] of fiber.getRef(References.CurrentLogSpans)) spans[label] = now - start
  const messages = Arr.ensure(message)
  return Formatter.formatJson({
    message: messages.length === 1 ? structured(messages[0]) : messages.map(structured),
    logLevel: logLevel.toUpperCase(),
    timestamp: date.toISOString(),
    cause: cause.reasons.length > 0 ? Cause.pretty(cause) : undefined,
    annotations,
    spans,
    fiberId: `#${fiber.id}`
  })
})

/** A value as logfmt writes it: strings as they are, objects as JSON. */
const logfmtText = (value: unknown): string => {
  if (typeof value === "string") return value
  try {
    return typeof value === "object" && value !== null ? Formatter.formatJson(value) : String(value)
  } catch {
    return String(value)
  }
}

const logfmtLabel = (label: string) => label.replace(/[\s="]/g, "_")
const logfmtValue = (value: string) => /^[^\s"=]*$/.test(value) ? value : JSON.stringify(value)
const logfmtPair = (label: string, value: string) => `${logfmtLabel(label)}=${logfmtValue(value)}`

/** One logfmt line: `timestamp`, `level`, `fiber`, `message`, `cause`, the log spans, then the annotations. */
const logfmtRecord = Logger.make<unknown, string>(({ cause, date, fiber, logLevel, message }) => {
  const pairs = [
    logfmtPair("timestamp", date.toISOString()),
    logfmtPair("level", logLevel.toUpperCase()),
    logfmtPair("fiber", `#${fiber.id}`),
    ...Arr.ensure(message).map((part) => logfmtPair("message", logfmtText(part))),
    ...(cause.reasons.length > 0 ? [logfmtPair("cause", Cause.pretty(cause))] : [])
  ]
  const now = date.getTime()
  for (const [label, start] of fiber.getRef(References.CurrentLogSpans)) {
    pairs.push(`${logfmtLabel(label)}=${now - start}ms`)
  }
  for (const [label, value] of Object.entries(annotationsOf(fiber))) pairs.push(logfmtPair(label, logfmtText(value)))
  return pairs.join(" ")
})

/**
 * Effect's pretty logger, with the trace ids among the annotations it prints: it reads them from the
 * fiber, so the fiber's log annotations include them while it writes (loggers run synchronously).
 */
const prettyWithTraceIds = (pretty: Logger.Logger<unknown, void>) =>
  Logger.make<unknown, void>((options) => {
    const context = options.fiber.context
    options.fiber.setContext(Context.add(context, References.CurrentLogAnnotations, annotationsOf(options.fiber)))
    try {
      pretty.log(options)
    } finally {
      options.fiber.setContext(context)
    }
  })

/**
 * Exactly this logger, whatever was installed before (`Logger.layer` replaces the set: Effect's default
 * logger, which would print every record a second time in another format on stdout, and its tracer
 * logger, which copied every record into the span as an event, are not kept), at `LOG_LEVEL`.
 */
export const LoggingLive = Layer.unwrap(
  Effect.gen(function*() {
    // Without a logger, the only place left to say so.
    const config = yield* Effect.tapError(LoggingConfig, (error) => {
      const { reason, setting } = describeConfigError(error)
      return Console.error(`Parley failed to start${setting === undefined ? "" : ` (${setting})`}: ${reason}`)
    })
    const logger = config.format === "pretty"
      ? prettyWithTraceIds(Logger.consolePretty())
      : Logger.withConsoleLog(Logger.map(config.format === "json" ? jsonRecord : logfmtRecord, redactSecrets))
    return Layer.merge(Logger.layer([logger]), Layer.succeed(References.MinimumLogLevel, config.level))
  })
)

/**
 * OpenTelemetry's severity for each of Effect's levels (the logs data model's ranges: TRACE 1, DEBUG 5,
 * INFO 9, WARN 13, ERROR 17, FATAL 21), with the data model's short name as the text, which is also how
 * the stdout records write the level (`logLevel`). Read from the Effect level that
 * @effect/opentelemetry's logger writes as the record's `severityText`, not from its `severityNumber`:
 * the severity does not depend on which numbering the bridge used (earlier ones wrote Effect's internal
 * ordinals, 20000 for Info, which backends read as no severity).
 */
const otlpSeverities = new Map<string, readonly [NonNullable<ReadWriteLogRecord["severityNumber"]>, string]>([
  ["Trace", [1, "TRACE"]],
  ["Debug", [5, "DEBUG"]],
  ["Info", [9, "INFO"]],
  ["Warn", [13, "WARN"]],
  ["Error", [17, "ERROR"]],
  ["Fatal", [21, "FATAL"]]
])

type LogValue = ReadWriteLogRecord["body"]

/** `value` with every credential-looking text in it masked; `value` itself when there was none. */
const maskedValue = (value: LogValue): LogValue => {
  if (typeof value === "string") return redactSecrets(value)
  if (Array.isArray(value)) {
    const items = value.map(maskedValue)
    return items.every((item, index) => item === value[index]) ? value : items
  }
  if (value === null || value === undefined || typeof value !== "object" || value instanceof Uint8Array) return value
  const entries = Object.entries(value).map(([key, item]) => [key, maskedValue(item)] as const)
  return entries.every(([key, item]) => item === value[key]) ? value : Object.fromEntries(entries)
}

/**
 * The OTLP side of the logs: before `inner` (the batch processor and its OTLP exporter) takes a record,
 * its severity becomes OpenTelemetry's (`otlpSeverities`) and anything in its body or attributes that
 * looks like a credential is masked, as `redactSecrets` masks the stdout lines (a cause's message and
 * stack are attributes here). The record's trace context (`traceId`, `spanId`, `flags`) is the SDK's,
 * from the span @effect/opentelemetry's logger gives as the record's context. The SDK lets a processor
 * change the record while `onEmit` runs.
 */
export class OtlpLogRecordProcessor implements LogRecordProcessor {
  constructor(private readonly inner: LogRecordProcessor) {}
  onEmit(record: ReadWriteLogRecord, context?: OtelContext): void {
    const severity = record.severityText === undefined ? undefined : otlpSeverities.get(record.severityText)
    if (severity !== undefined) {
      record.setSeverityNumber(severity[0])
      record.setSeverityText(severity[1])
    }
    const body = maskedValue(record.body)
    if (body !== record.body && body !== undefined) record.setBody(body)
    for (const [key, value] of Object.entries(record.attributes)) {
      const masked = maskedValue(value)
      if (masked !== value) record.setAttribute(key, masked)
    }
    this.inner.onEmit(record, context)
  }
  enabled(options: Parameters<NonNullable<LogRecordProcessor["enabled"]>>[0]): boolean {
    return this.inner.enabled?.(options) ?? true
  }
  forceFlush(): Promise<void> {
    return this.inner.forceFlush()
  }
  shutdown(): Promise<void> {
    return this.inner.shutdown()
  }
}
