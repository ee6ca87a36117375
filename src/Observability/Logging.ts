/**
 * Logs: one structured line per event, JSON by default (`LOG_FORMAT=logfmt` or `pretty` otherwise),
 * each with the trace and span ids of the span it was written in, at `LOG_LEVEL` and above, with
 * anything that looks like a credential masked (`Redaction.ts`). Logs go to stdout and nothing else
 * does: human banners (the development admin token, the demo credentials) are written to stderr.
 * The records and their fields are listed in docs/observability.md ("Logs").
 */
import * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as FiberRefs from "effect/FiberRefs"
import * as HashMap from "effect/HashMap"
import * as HashSet from "effect/HashSet"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Tracer from "effect/Tracer"
import { describeConfigError } from "../Config.js"
import { redactSecrets } from "./Redaction.js"

export const LoggingConfig = Config.all({
  format: Config.literal("json", "logfmt", "pretty")("LOG_FORMAT").pipe(Config.withDefault("json" as const)),
  level: Config.logLevel("LOG_LEVEL").pipe(Config.withDefault(LogLevel.Info))
})

/** Adds `trace_id` and `span_id` of the current span to a logger's annotations. */
const withTraceIds = <Output>(logger: Logger.Logger<unknown, Output>): Logger.Logger<unknown, Output> =>
  Logger.make((options) => {
    const context = FiberRefs.getOrDefault(options.context, FiberRef.currentContext)
    const span = Context.getOption(context, Tracer.ParentSpan)
    const annotations = span._tag === "Some"
      ? HashMap.set(HashMap.set(options.annotations, "trace_id", span.value.traceId), "span_id", span.value.spanId)
      : options.annotations
    return logger.log({ ...options, annotations })
  })

/**
 * Exactly this logger, whatever was installed before: `NodeRuntime.runMain` adds a pretty logger of
 * its own, which would print every record a second time, in another format, on stdout.
 */
export const LoggingLive = Layer.unwrapEffect(
  Effect.gen(function*() {
    // Without a logger, the only place left to say so.
    const config = yield* Effect.tapError(LoggingConfig, (error) => {
      const { reason, setting } = describeConfigError(error)
      return Console.error(`Parley failed to start${setting === undefined ? "" : ` (${setting})`}: ${reason}`)
    })
    const base = config.format === "pretty"
      ? Logger.prettyLogger()
      : Logger.withConsoleLog(
        Logger.map(config.format === "json" ? Logger.jsonLogger : Logger.logfmtLogger, redactSecrets)
      )
    return Layer.merge(
      Layer.locallyScoped(FiberRef.currentLoggers, HashSet.make(withTraceIds(base))),
      Logger.minimumLogLevel(config.level)
    )
  })
)
