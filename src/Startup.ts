/**
 * Start-up: every setting validated and the ports checked before any work is done, and a start that
 * fails told in one line that names the setting to fix and the cause:
 *
 *     Parley failed to start (DATABASE_URL): password authentication failed for user "parley" (parley@db:5432/parley)
 *
 * on stderr, for the person at the terminal, and as the `Parley failed to start` log record on stdout
 * with `setting`, `reason` and the whole cause (the detail), for the log pipeline. The exit code is 1.
 */
import * as Cause from "effect/Cause"
import * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import type * as Runtime from "effect/Runtime"
import * as net from "node:net"
import * as AppConfig from "./Config.js"
import { LoggingConfig } from "./Observability/Logging.js"
import { MetricsServerError } from "./Observability/Prometheus.js"
import { TelemetryConfig } from "./Observability/Telemetry.js"
import { SeedFailed } from "./Seed.js"
import { DatabaseStartFailure, EmbeddedDatabaseInUse } from "./Sql.js"

/**
 * Every setting Parley reads, read once at start: a value that does not parse or is out of its range
 * fails here, before the database is opened or a port is bound.
 */
const settings: ReadonlyArray<Config.Config<unknown>> = [
  AppConfig.Mode,
  AppConfig.Port,
  AppConfig.Host,
  AppConfig.DatabaseUrl,
  AppConfig.DataDir,
  AppConfig.EmbeddedSharedBuffers,
  AppConfig.DatabasePoolSize,
  AppConfig.DatabasePreparedStatements,
  AppConfig.DatabaseTimeouts,
  AppConfig.ProductionRequirements,
  AppConfig.BodyLimit,
  AppConfig.RateLimit,
  AppConfig.MaxMessageChars,
  AppConfig.MaxAttachments,
  AppConfig.SecretRotationGrace,
  AppConfig.DashboardSessionTtl,
  AppConfig.TokenCacheTtl,
  AppConfig.IntegrationCacheTtl,
  AppConfig.SeedDemo,
  AppConfig.DemoWebhookUrl,
  AppConfig.ReplyDebounce,
  AppConfig.EmbeddedConfig,
  AppConfig.JobLease,
  AppConfig.WorkerConfig,
  AppConfig.DeliveryConfig,
  AppConfig.LogRequests,
  AppConfig.MetricsPort,
  AppConfig.globalModelSettings,
  AppConfig.AiTimeout,
  AppConfig.AiRetryBudget,
  AppConfig.AiMaxRetries,
  AppConfig.AiMaxTurns,
  AppConfig.AiFallbackMessage,
  AppConfig.AiPrices,
  LoggingConfig,
  TelemetryConfig
]

/**
 * Reads every setting, each even when another failed: every bad setting is named at once. (Effect 4's
 * `Config.all` stops at the first failure, and a `ConfigError` holds one; several fail together.)
 */
export const Settings: Effect.Effect<void, Config.ConfigError> = Effect.forEach(settings, Effect.result).pipe(
  Effect.flatMap((results) => {
    const failures = results.flatMap((result) => Result.isFailure(result) ? [Cause.makeFailReason(result.failure)] : [])
    return failures.length === 0 ? Effect.void : Effect.failCause(Cause.fromReasons(failures))
  })
)

/** Validates every setting when built (`makeApp` builds it first). */
export const SettingsLive = Layer.effectDiscard(Settings)

/** A port Parley must listen on is taken (or not Parley's to take). */
export class PortUnavailable extends Data.TaggedError("PortUnavailable")<{
  readonly setting: "PORT" | "METRICS_PORT"
  readonly host: string
  readonly port: number
  readonly code: string
}> {
  override get message() {
    const why = this.code === "EADDRINUSE"
      ? "is already in use"
      : this.code === "EACCES"
      ? "may not be bound by this user"
      : this.code === "EADDRNOTAVAIL"
      ? "cannot be bound: HOST is not an address of this machine"
      : `cannot be bound (${this.code})`
    return `${this.setting}=${this.port} ${why} on ${this.host}: choose another ${this.setting} or stop the process that listens there`
  }
}

const errorCode = (error: unknown): string | undefined =>
  typeof error === "object" && error !== null && "code" in error && typeof error.code === "string"
    ? error.code
    : undefined

/** Whether `host:port` can be listened on now (listened on and closed at once). */
const checkPort = (setting: PortUnavailable["setting"], host: string, port: number) =>
  Effect.callback<void, PortUnavailable>((resume) => {
    const server = net.createServer()
    server.once("error", (error) =>
      resume(Effect.fail(new PortUnavailable({ setting, host, port, code: errorCode(error) ?? error.message }))))
    server.listen({ host, port, exclusive: true }, () => server.close(() => resume(Effect.void)))
  })

/**
 * `PORT` and `METRICS_PORT` are free: checked before the database is opened and the demo created, so
 * that a port in use fails the start in a moment, before anything is printed or stored. (The servers
 * bind them later; a port taken in between still fails the start, with the same message.)
 */
export const PortsFreeLive = Layer.effectDiscard(
  Effect.gen(function*() {
    const host = yield* AppConfig.Host
    yield* checkPort("PORT", host, yield* AppConfig.Port)
    const metricsPort = yield* AppConfig.MetricsPort
    if (Option.isSome(metricsPort)) yield* checkPort("METRICS_PORT", host, metricsPort.value)
  })
)

/** Why a start failed: the setting to fix (when one is to blame) and the cause, in one line. */
export interface StartFailure {
  readonly setting: string | undefined
  readonly reason: string
}

/** An error and the errors it wraps (`cause`, `AggregateError`'s), outermost first. */
const chain = (error: unknown, depth = 0): Array<unknown> => {
  if (depth > 8 || typeof error !== "object" || error === null) return [error]
  const inner = "cause" in error ? chain(error.cause, depth + 1) : []
  const aggregated = error instanceof AggregateError ? error.errors.flatMap((e) => chain(e, depth + 1)) : []
  return [error, ...inner, ...aggregated]
}

const messageOf = (error: unknown): string => {
  const message = error instanceof Error ? error.message : typeof error === "object" && error !== null && "message" in error ? String(error.message) : String(error)
  return message.split("\n")[0]?.trim() || "unknown error"
}

/** What PostgreSQL's (or the network's) error says, in words an operator acts on. */
const databaseReason = (failure: DatabaseStartFailure): string => {
  const errors = chain(failure.cause)
  const coded = errors.find((error) => errorCode(error) !== undefined)
  const code = errorCode(coded)
  const detail = coded !== undefined ? messageOf(coded) : messageOf(errors.at(-1))
  const hint = code === "ECONNREFUSED"
    ? ": nothing accepts connections there (is PostgreSQL running, and are the host and port right?)"
    : code === "ENOTFOUND" || code === "EAI_AGAIN"
    ? ": the host name does not resolve"
    : code === "ETIMEDOUT" || /timeout/i.test(detail)
    ? ": no answer within DATABASE_CONNECT_TIMEOUT"
    : ""
  return `${detail}${hint} (${failure.target})`
}

/** The setting to blame and the reason, for a start that failed with `cause`. */
export const explainStartFailure = (cause: Cause.Cause<unknown>): StartFailure => {
  // Failures first, then defects (each with what it wraps), as a start reports them.
  const errors = [
    ...cause.reasons.flatMap((reason) => Cause.isFailReason(reason) ? [reason.error] : []),
    ...cause.reasons.flatMap((reason) => Cause.isDieReason(reason) ? [reason.defect] : [])
  ].flatMap((error) => chain(error))
  // Every bad setting (`Settings` fails with each), named at once.
  const settingErrors = errors.flatMap((error) => error instanceof Config.ConfigError ? [AppConfig.describeConfigError(error)] : [])
  if (settingErrors.length > 0) {
    const named = [...new Set(settingErrors.flatMap((e) => e.setting === undefined ? [] : e.setting.split(", ")))]
    return {
      setting: named.length === 0 ? undefined : named.join(", "),
      reason: [...new Set(settingErrors.map((e) => e.reason))].join("; ")
    }
  }
  for (const error of errors) {
    if (error instanceof PortUnavailable) return { setting: error.setting, reason: error.message }
    if (error instanceof MetricsServerError) return { setting: "METRICS_PORT", reason: error.message }
    if (error instanceof EmbeddedDatabaseInUse) return { setting: "PARLEY_DATA_DIR", reason: error.message }
    if (error instanceof DatabaseStartFailure) {
      const inUse = chain(error.cause).find((e) => e instanceof EmbeddedDatabaseInUse)
      return inUse !== undefined
        ? { setting: "PARLEY_DATA_DIR", reason: messageOf(inUse) }
        : { setting: error.setting, reason: databaseReason(error) }
    }
    if (error instanceof SeedFailed) return { setting: "PARLEY_DEMO_WEBHOOK_URL", reason: error.message }
    const code = errorCode(error)
    if (code === "EADDRINUSE" || code === "EACCES") return { setting: "PORT", reason: messageOf(error) }
  }
  const squashed = Cause.squash(cause)
  return { setting: undefined, reason: messageOf(squashed) }
}

/** The one line a failed start prints on stderr. */
export const startFailureLine = (failure: StartFailure): string =>
  `Parley failed to start${failure.setting === undefined ? "" : ` (${failure.setting})`}: ${failure.reason}`

/**
 * Reports a start that failed: the line on stderr and the `Parley failed to start` record (with the
 * whole cause) in the log. An interrupted start (a SIGTERM while starting) is not a failure.
 */
export const reportStartFailure = <A, E, R>(layer: Layer.Layer<A, E, R>): Layer.Layer<A, E, R> =>
  Layer.tapCause(layer, (cause) => {
    if (Cause.hasInterruptsOnly(cause)) return Effect.void
    const failure = explainStartFailure(cause)
    return Effect.andThen(
      Console.error(startFailureLine(failure)),
      Effect.logError("Parley failed to start", cause).pipe(
        Effect.annotateLogs({ setting: failure.setting ?? null, reason: failure.reason })
      )
    )
  })

/**
 * How a process of Parley's ends (`NodeRuntime.runMain`'s teardown): 1 when it failed, 0 when it
 * succeeded or was interrupted (SIGTERM, Ctrl-C: a clean stop). Effect 4's default exits 130 after an
 * interruption; Parley's stop has always exited 0. On success the exit code set by the program itself
 * (`process.exitCode`: the CLI's 1 and 2) is left as it is.
 */
export const teardown: Runtime.Teardown = (exit, onExit) =>
  onExit(Exit.isFailure(exit) && !Cause.hasInterruptsOnly(exit.cause) ? 1 : 0)

/**
 * The loggers of a process that does not install Parley's own (`LoggingLive`): the CLI and the demo.
 * Effect's pretty logger in place of its default one, as Effect 3's `runMain` installed (Effect 4's
 * installs none), and the tracer logger, which puts each record on its span.
 */
export const PrettyLoggerLive = Logger.layer([Logger.consolePretty(), Logger.tracerLogger])
