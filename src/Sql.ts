/**
 * The database: a real PostgreSQL when `DATABASE_URL` is set, otherwise an embedded one (PGlite, kept
 * in `PARLEY_DATA_DIR`) served over a loopback socket, so the same `PgClient` code runs on both.
 * Migrations run before the layer is built: nothing that needs the database starts before them.
 */
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlError from "@effect/sql/SqlError"
import { PgClient } from "@effect/sql-pg"
import { PGlite } from "@electric-sql/pglite"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as String from "effect/String"
import * as fs from "node:fs"
import * as path from "node:path"
import * as AppConfig from "./Config.js"
import { migrations } from "./migrations/index.js"

const clientOptions = {
  transformResultNames: String.snakeToCamel,
  transformQueryNames: String.camelToSnake,
  // jsonb holds integrators' free-form objects: their keys must come back exactly as sent.
  transformJson: false,
  applicationName: "parley"
} as const

/** What kind of database this is; the worker pool listens for NOTIFY only on a real PostgreSQL. */
export class DatabaseKind extends Context.Tag("Parley/DatabaseKind")<
  DatabaseKind,
  { readonly embedded: boolean }
>() {}

/**
 * Serves a PGlite instance on a loopback port and connects a one-connection `PgClient` to it.
 * PGlite is a single session, and pglite-socket interleaves the extended-protocol messages of
 * concurrent connections (a Parse of one, then the Bind of another): more than one connection
 * corrupts queries. One connection serializes everything, which is what PGlite does anyway.
 */
export const layerPGlite = (
  acquire: Effect.Effect<PGlite, unknown>
): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient | DatabaseKind, unknown> =>
  Layer.unwrapScoped(
    Effect.gen(function*() {
      const db = yield* Effect.acquireRelease(acquire, (db) => Effect.promise(() => db.close()))
      const server = new PGLiteSocketServer({ db, host: "127.0.0.1", port: 0, maxConnections: 1 })
      yield* Effect.acquireRelease(
        Effect.tryPromise(() => server.start()),
        () => Effect.promise(() => server.stop())
      )
      const port = Number(server.getServerConn().split(":").pop())
      return Layer.merge(
        PgClient.layer({
          ...clientOptions,
          host: "127.0.0.1",
          port,
          database: "postgres",
          username: "postgres",
          maxConnections: 1
        }),
        Layer.succeed(DatabaseKind, { embedded: true })
      )
    })
  )

/** PGlite persisted in a folder (created if missing). */
const openDataDir = (dataDir: string) =>
  Effect.tryPromise(async () => {
    const folder = path.resolve(dataDir, "pgdata")
    fs.mkdirSync(folder, { recursive: true })
    return PGlite.create(folder)
  })

export const layerUrl = (url: Parameters<typeof PgClient.layer>[0]["url"], poolSize: number) =>
  Layer.merge(
    PgClient.layer({ ...clientOptions, url, maxConnections: poolSize }),
    Layer.succeed(DatabaseKind, { embedded: false })
  )

/** Runs every migration not yet applied; concurrent starts are serialized by the Migrator's table lock. */
export const migrate = Migrator.make({})({ loader: migrations })

export const MigrationsLive = Layer.effectDiscard(migrate)


/** The database chosen by configuration, migrated. */
export const SqlLive = Layer.unwrapEffect(
  Effect.gen(function*() {
    const url = yield* AppConfig.DatabaseUrl
    const poolSize = yield* AppConfig.DatabasePoolSize
    const client = Option.match(url, {
      onSome: (url) => layerUrl(url, poolSize),
      onNone: () =>
        Layer.unwrapEffect(
          Effect.map(AppConfig.DataDir, (dataDir) => layerPGlite(openDataDir(dataDir)))
        )
    })
    return Layer.provideMerge(MigrationsLive, client)
  })
).pipe(Layer.orDie)

type Infrastructure = SqlError.SqlError | ParseResult.ParseError | Cause.NoSuchElementException

/**
 * Database failures, rows that do not decode and a missing row a statement must return are defects at
 * a service's boundary: they answer 500 with a trace id, while the service's own failures stay typed.
 */
export const orDieSql = <A, E, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, Exclude<E, Extract<E, Infrastructure>>, R> =>
  Effect.catchIf(
    effect,
    (error): error is Extract<E, Infrastructure> =>
      error instanceof SqlError.SqlError || ParseResult.isParseError(error) || Cause.isNoSuchElementException(error),
    Effect.die
  )
