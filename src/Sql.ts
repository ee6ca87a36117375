/**
 * The database: a real PostgreSQL when `DATABASE_URL` is set, otherwise an embedded one (PGlite, kept
 * in `PARLEY_DATA_DIR`) served over a loopback socket, so the same `PgClient` code runs on both.
 * Migrations run before the layer is built: nothing that needs the database starts before them.
 */
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import { PgClient } from "@effect/sql-pg"
import { PGlite } from "@electric-sql/pglite"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
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

/** Serves a PGlite instance on a loopback port and connects a `PgClient` pool to it. */
export const layerPGlite = (
  acquire: Effect.Effect<PGlite, unknown>,
  options: { readonly poolSize?: number } = {}
): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, unknown> =>
  Layer.unwrapScoped(
    Effect.gen(function*() {
      const db = yield* Effect.acquireRelease(acquire, (db) => Effect.promise(() => db.close()))
      const poolSize = options.poolSize ?? 4
      // One more socket than the pool: LISTEN holds a connection of its own.
      const server = new PGLiteSocketServer({ db, host: "127.0.0.1", port: 0, maxConnections: poolSize + 2 })
      yield* Effect.acquireRelease(
        Effect.tryPromise(() => server.start()),
        () => Effect.promise(() => server.stop())
      )
      const port = Number(server.getServerConn().split(":").pop())
      return PgClient.layer({
        ...clientOptions,
        host: "127.0.0.1",
        port,
        database: "postgres",
        username: "postgres",
        maxConnections: poolSize
      })
    })
  )

/** PGlite persisted in a folder (created if missing). */
export const openDataDir = (dataDir: string) =>
  Effect.tryPromise(async () => {
    const folder = path.resolve(dataDir, "pgdata")
    fs.mkdirSync(folder, { recursive: true })
    return PGlite.create(folder)
  })

export const layerUrl = (url: Parameters<typeof PgClient.layer>[0]["url"], poolSize: number) =>
  PgClient.layer({ ...clientOptions, url, maxConnections: poolSize })

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
