/**
 * LISTEN on a connection of its own that is re-established whenever it drops (a PostgreSQL restart, a
 * network failure). `PgClient.listen` of @effect/sql-pg keeps its listening connection forever and
 * swallows its errors, so after a restart notifications silently stop and workers fall back to polling.
 * Here the connection is also probed every `probeInterval`: a half-open connection (a partition) is
 * noticed within a probe, not after the operating system's TCP keep-alive.
 */
import { PgClient } from "@effect/sql-pg"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import pg from "pg"

/** Emitted after each (re)connection: notifications sent while disconnected are lost, so look now. */
export const CONNECTED = "connected"

const clientConfig = (config: PgClient.PgClientConfig): pg.ClientConfig => ({
  ...(config.url !== undefined ? { connectionString: Redacted.value(config.url) } : {}),
  ...(config.host !== undefined ? { host: config.host } : {}),
  ...(config.port !== undefined ? { port: config.port } : {}),
  ...(config.database !== undefined ? { database: config.database } : {}),
  ...(config.username !== undefined ? { user: config.username } : {}),
  ...(config.password !== undefined ? { password: Redacted.value(config.password) } : {}),
  ...(config.ssl !== undefined ? { ssl: config.ssl } : {}),
  application_name: `${config.applicationName ?? "parley"}-listen`,
  keepAlive: true,
  connectionTimeoutMillis: 5_000
})

const connectOnce = (config: pg.ClientConfig, channel: string, probeInterval: Duration.Duration) =>
  Stream.asyncScoped<string, Error>((emit) =>
    Effect.gen(function*() {
      const client = yield* Effect.acquireRelease(
        Effect.tryPromise({
          try: async () => {
            const client = new pg.Client(config)
            // Registered before connecting: an error event with no listener would crash the process.
            client.on("error", (error) => void emit.fail(error))
            client.on("end", () => void emit.fail(new Error("LISTEN connection ended")))
            await client.connect()
            return client
          },
          catch: (cause) => new Error("LISTEN connection failed", { cause })
        }),
        (client) => Effect.promise(() => client.end().catch(() => undefined))
      )
      client.on("notification", (message) => {
        if (message.channel === channel) void emit.single(message.payload ?? "")
      })
      yield* Effect.tryPromise({
        try: () => client.query(`LISTEN ${pg.escapeIdentifier(channel)}`),
        catch: (cause) => new Error("LISTEN failed", { cause })
      })
      void emit.single(CONNECTED)
      yield* Effect.tryPromise({
        try: () => client.query("SELECT 1"),
        catch: (cause) => new Error("LISTEN connection probe failed", { cause })
      }).pipe(
        Effect.timeoutFail({ duration: probeInterval, onTimeout: () => new Error("LISTEN connection probe timed out") }),
        Effect.repeat(Schedule.spaced(probeInterval)),
        Effect.catchAll((error) => Effect.sync(() => void emit.fail(error))),
        Effect.forkScoped
      )
    })
  )

/**
 * Notification payloads of `channel`, and `CONNECTED` after every (re)connection. Never fails: a lost
 * connection is logged and connected again with backoff (100 ms doubling to 10 s).
 */
export const listen = (
  config: PgClient.PgClientConfig,
  channel: string,
  probeInterval: Duration.DurationInput = Duration.seconds(10),
  what = "Job notifications"
): Stream.Stream<string> =>
  connectOnce(clientConfig(config), channel, Duration.decode(probeInterval)).pipe(
    Stream.tapError((error) => Effect.logWarning(`${what} interrupted; reconnecting`, error)),
    Stream.retry(
      Schedule.exponential("100 millis").pipe(
        Schedule.modifyDelay((_, delay) => Duration.min(delay, Duration.seconds(10))),
        Schedule.resetAfter("1 minute")
      )
    ),
    Stream.orDie
  )
