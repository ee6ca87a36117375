import { describe, expect, it } from "@effect/vitest"
import * as SqlClient from "effect/sql/SqlClient"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { existsSync, mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlLive } from "../../src/Sql.js"
import { usingPostgres } from "../support/Database.js"

/** The embedded database as `npm start` opens it: a data folder, created on first use. */
const embedded = (dataDir: string, settings: ReadonlyArray<readonly [string, string]> = []) =>
  SqlLive.pipe(
    Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord(Object.fromEntries([["PARLEY_DATA_DIR", dataDir], ...settings]))))
  )

// Database-independent (it opens its own embedded database): once is enough.
describe.skipIf(usingPostgres)("the embedded database's data folder", () => {
  it.live("is created on first start (in a child process), migrated, and keeps its data across restarts", () =>
    Effect.gen(function*() {
      const dataDir = mkdtempSync(join(tmpdir(), "parley-datadir-"))
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        // Migrated on first start.
        expect(yield* sql`SELECT count(*)::int AS n FROM workspaces`).toEqual([{ n: 0 }])
        yield* sql`CREATE TABLE kept (name text)`
        yield* sql`INSERT INTO kept VALUES ('kept')`
        // Small shared buffers: PostgreSQL's default 128 MB would sit in a memory that never shrinks.
        expect(yield* sql`SHOW shared_buffers`).toEqual([{ sharedBuffers: "16MB" }])
      }).pipe(Effect.provide(embedded(dataDir)), Effect.scoped)
      expect(existsSync(join(dataDir, "pgdata", "PG_VERSION"))).toBe(true)
      const [names, buffers] = yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        return [yield* sql<{ readonly name: string }>`SELECT name FROM kept`, yield* sql`SHOW shared_buffers`] as const
      }).pipe(Effect.provide(embedded(dataDir, [["PARLEY_EMBEDDED_SHARED_BUFFERS", "8MB"]])), Effect.scoped)
      expect(names).toEqual([{ name: "kept" }])
      expect(buffers).toEqual([{ sharedBuffers: "8MB" }])
    }), 120_000)
})
