/**
 * Start-up and shutdown as log records: `Parley started` once the server listens and the workers run
 * (version, mode, database kind, worker counts, ports), `Parley stopping` when shutdown begins, and
 * `Parley stopped` when everything, the database included, has been released. A start that fails is
 * one `Parley failed to start` record with its cause (`App.ts`).
 */
import * as HttpServer from "effect/http/HttpServer"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as AppConfig from "../Config.js"
import { DatabaseKind } from "../Sql.js"

const PackageJson = Schema.fromJsonString(Schema.Struct({ version: Schema.String }))

/** Parley's version, from its `package.json` (next to `src/` and `dist/`, in the image too). */
export const packageVersion: Effect.Effect<string> = Effect.try(() =>
  fs.readFileSync(new URL("../../package.json", import.meta.url), "utf8")
).pipe(
  Effect.flatMap(Schema.decodeUnknownEffect(PackageJson)),
  Effect.map((pkg) => pkg.version),
  Effect.orElseSucceed(() => "unknown")
)

/**
 * `Parley started` when built, `Parley stopping` when released. Build it after the server and the
 * workers (so that it is the first thing released).
 */
export const StartedLive = (options: { readonly workers: boolean }) =>
  Layer.effectDiscard(
    Effect.gen(function*() {
      const server = yield* HttpServer.HttpServer
      const database = yield* DatabaseKind
      const workers = yield* AppConfig.WorkerConfig
      const metricsPort = yield* AppConfig.MetricsPort
      const port = server.address._tag === "UnixPathAddress" ? null : server.address.port
      const started = yield* Clock.currentTimeMillis
      yield* Effect.logInfo("Parley started").pipe(
        Effect.annotateLogs({
          "service.version": yield* packageVersion,
          "parley.mode": yield* AppConfig.Mode,
          "database.kind": database.embedded ? "embedded" : "postgresql",
          "worker.concurrency": options.workers ? workers.concurrency : 0,
          "delivery.concurrency": options.workers ? workers.deliveryConcurrency : 0,
          "server.port": port,
          "metrics.port": Option.getOrNull(metricsPort),
          ...(port !== null ? {
            url: `http://localhost:${port}`,
            docs: `http://localhost:${port}/docs`,
            dashboard: `http://localhost:${port}/dashboard`
          } : {})
        })
      )
      yield* Effect.addFinalizer(() =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Effect.logInfo("Parley stopping").pipe(Effect.annotateLogs({ uptime_s: Math.round((now - started) / 1000) })))
      )
    })
  )

/**
 * `Parley stopped` when released: provide it outermost, so that it is released last. Not after a start
 * that failed: that one is `Parley failed to start`.
 */
export const StoppedLive = Layer.effectDiscard(
  Effect.addFinalizer((exit) =>
    Exit.isFailure(exit) && !Cause.hasInterruptsOnly(exit.cause) ? Effect.void : Effect.logInfo("Parley stopped")
  )
)
