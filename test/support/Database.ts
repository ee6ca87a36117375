/**
 * The database a test file runs on: PGlite loaded from the migrated snapshot, or, in the `postgres`
 * project, a fresh database created on `TEST_DATABASE_URL`'s server, migrated, and dropped afterwards.
 */
import * as SqlClient from "effect/sql/SqlClient"
import { PgClient } from "@effect/sql-pg"
import { PGlite } from "@electric-sql/pglite"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { randomBytes } from "node:crypto"
import { readFileSync } from "node:fs"
import { inject } from "vitest"
import type { DatabaseTimeouts } from "../../src/Config.js"
import { type DatabaseKind, layerPGlite, layerUrl, MigrationsLive } from "../../src/Sql.js"

export const usingPostgres = process.env["PARLEY_TEST_DB"] === "postgres"

/** PGlite from the snapshot made by `globalSetup.ts`. */
export const PGliteTest = layerPGlite(
  Effect.promise(() => PGlite.create({ loadDataDir: new Blob([readFileSync(inject("pgliteSnapshot"))]) }))
)

const adminUrl = () => {
  const url = process.env["TEST_DATABASE_URL"]
  if (url === undefined || url === "") throw new Error("TEST_DATABASE_URL is not set")
  return url
}

const onServer = <A, E>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, E>) =>
  Effect.flatMap(SqlClient.SqlClient, f).pipe(
    Effect.provide(PgClient.layer({ url: Redacted.make(adminUrl()), maxConnections: 1 }))
  )

/**
 * A fresh, migrated database on the PostgreSQL server of `TEST_DATABASE_URL`, dropped afterwards;
 * `via` reaches it through another local port (a `tcpProxy`), with `timeouts` instead of the defaults.
 */
export const postgresTest = (
  options: { readonly via?: number; readonly timeouts?: DatabaseTimeouts } = {}
) =>
  Layer.unwrap(
    Effect.gen(function*() {
      const name = `parley_test_${randomBytes(6).toString("hex")}`
      yield* Effect.acquireRelease(
        onServer((sql) => sql`CREATE DATABASE ${sql(name)}`),
        () => onServer((sql) => sql`DROP DATABASE IF EXISTS ${sql(name)} WITH (FORCE)`).pipe(Effect.orDie)
      )
      const url = new URL(adminUrl())
      url.pathname = `/${name}`
      if (options.via !== undefined) url.host = `127.0.0.1:${options.via}`
      return Layer.provideMerge(MigrationsLive, layerUrl(Redacted.make(url.toString()), 8, options.timeouts))
    })
  )

export const PostgresTest = postgresTest()

/** Where `TEST_DATABASE_URL`'s server listens. */
export const postgresAddress = () => {
  const url = new URL(adminUrl())
  return { host: url.hostname, port: Number(url.port === "" ? "5432" : url.port) }
}

/**
 * The connection pool (sql-pg 4) reaps idle connections on a loop on the Effect clock: on a test's
 * TestClock, `TestClock.setTime` to a date years away would run years of that loop (one per minute of
 * test time). Its waits are wall-clock waits on the network, whatever clock the app runs on.
 */
const onLiveClock = <A, E, R>(layer: Layer.Layer<A, E, R>) =>
  Layer.provide(layer, Layer.succeed(Clock.Clock, Clock.Clock.defaultValue()))

/** The database of this test project. */
export const TestDatabase: Layer.Layer<PgClient.PgClient | SqlClient.SqlClient | DatabaseKind, unknown> = onLiveClock(
  usingPostgres ? PostgresTest : PGliteTest
)
