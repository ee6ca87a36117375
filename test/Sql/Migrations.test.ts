import { describe, expect, it, layer } from "@effect/vitest"
import * as SqlClient from "effect/sql/SqlClient"
import { PGlite } from "@electric-sql/pglite"
import * as Effect from "effect/Effect"
import { readdirSync } from "node:fs"
import { layerPGlite, migrate } from "../../src/Sql.js"
import { TestDatabase, usingPostgres } from "../support/Database.js"

/**
 * Every migration file of src/migrations, as the Migrator reports it: `0001_initial.ts` is [1, "initial"].
 * Migration 1 must be first; later ones are whatever has landed since.
 */
const migrationFiles = readdirSync(new URL("../../src/migrations/", import.meta.url))
  .map((file) => /^(\d{4})_(.+)\.ts$/.exec(file))
  .filter((match) => match !== null)
  .map((match) => [Number(match[1]), match[2]!] as const)
  .sort((a, b) => a[0] - b[0])

const appliedRows = migrationFiles.map(([migrationId, name]) => ({ migrationId, name }))

/** Every table of migration 1. */
const tables = [
  "api_tokens",
  "conversation_status_changes",
  "conversations",
  "csat_responses",
  "customers",
  "integrations",
  "jobs",
  "messages",
  "tones",
  "workspaces"
]

const publicTables = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql<{ readonly tableName: string }>`
    SELECT table_name FROM information_schema.tables
    WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'
    ORDER BY table_name`).pipe(Effect.map((rows) => rows.map((row) => row.tableName)))

const appliedMigrations = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql<{ readonly migrationId: number; readonly name: string }>`
    SELECT migration_id, name FROM effect_sql_migrations ORDER BY migration_id`)

describe("migrations", () => {
  it("the migration files start with 0001_initial and are numbered without gaps", () => {
    expect(migrationFiles[0]).toEqual([1, "initial"])
    expect(migrationFiles.map(([id]) => id)).toEqual(migrationFiles.map((_, i) => i + 1))
  })

  it.effect("from an empty PGlite: migrate applies [1, \"initial\"] (then any later ones), creates every table, and is then a no-op", () =>
    Effect.gen(function*() {
      expect(yield* publicTables).toEqual([])

      // The Migrator answers the applied migrations as [id, name] pairs, in order.
      const applied = yield* migrate
      expect(applied[0]).toEqual([1, "initial"])
      expect(applied).toEqual(migrationFiles)

      const created = yield* publicTables
      expect(created).toEqual(expect.arrayContaining([...tables, "effect_sql_migrations"]))
      expect(yield* appliedMigrations).toEqual(appliedRows)

      const again = yield* migrate
      expect(again).toEqual([])
      expect(yield* appliedMigrations).toEqual(appliedRows)
      expect(yield* publicTables).toEqual(created)
    }).pipe(Effect.provide(layerPGlite(Effect.promise(() => PGlite.create())))), 120_000)
})

// The standalone `layer` (not `it.layer`, which would nest into a previous block's layer).
describe(`the test database of this project (${usingPostgres ? "postgres" : "pglite"})`, () => {
  layer(TestDatabase, { timeout: 120_000 })((it) => {
    it.effect("is migrated: every table exists, and migrate again applies nothing", () =>
      Effect.gen(function*() {
        const created = yield* publicTables
        expect(created).toEqual(expect.arrayContaining([...tables, "effect_sql_migrations"]))
        expect(yield* appliedMigrations).toEqual(appliedRows)

        const again = yield* migrate
        expect(again).toEqual([])
        expect(yield* appliedMigrations).toEqual(appliedRows)
        expect(yield* publicTables).toEqual(created)
      }))

    it.effect.runIf(usingPostgres)("on PostgreSQL: a fresh database of its own on the server", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const [row] = yield* sql<{ readonly name: string }>`SELECT current_database() AS name`
        expect(row!.name).toMatch(/^parley_test_[0-9a-f]{12}$/)
      }))
  })
})
