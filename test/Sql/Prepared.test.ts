/**
 * Statements with parameters are prepared once per connection (named statements), on PostgreSQL and on
 * the embedded database; a migration that changes a table's columns costs at most one failed execution
 * of a statement prepared before it, never a connection that keeps failing.
 */
import { describe, expect, layer } from "@effect/vitest"
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import { TestDatabase } from "../support/Database.js"

describe("prepared statements", () => {
  layer(TestDatabase, { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("a statement with parameters is parsed once per connection, and runs again after a migration changed its columns", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`CREATE TABLE prepared_probe (id int PRIMARY KEY, a text)`
        yield* sql`INSERT INTO prepared_probe VALUES (1, 'one')`
        const connection = yield* sql.reserve
        const select = "SELECT * FROM prepared_probe WHERE id = $1"
        const run = connection.execute(select, [1], undefined)
        expect(yield* run).toEqual([{ id: 1, a: "one" }])
        expect(yield* run).toEqual([{ id: 1, a: "one" }])
        // The connection's own prepared statements: this one, by name, once.
        const prepared = connection.execute("SELECT name FROM pg_prepared_statements WHERE statement = $1", [select], undefined)
        const names = yield* prepared
        expect(names).toHaveLength(1)
        expect(String(names[0]?.name)).toMatch(/^effect_/)
        // Without parameters: sql-pg 4 prepares these as well (in the same bounded cache), once.
        yield* connection.execute("SELECT count(*) FROM prepared_probe", [], undefined)
        yield* connection.execute("SELECT count(*) FROM prepared_probe", [], undefined)
        expect(yield* connection.execute("SELECT count(*)::int AS n FROM pg_prepared_statements WHERE statement LIKE 'SELECT count(*) FROM prepared_probe%'", [], undefined))
          .toEqual([{ n: 1 }])

        // A migration (another instance's, during a rolling upgrade) adds a column. (On the connection held
        // here: the embedded database has only this one.)
        yield* connection.execute("ALTER TABLE prepared_probe ADD COLUMN b text DEFAULT 'new'", [], undefined)
        // PostgreSQL refuses the old plan's result type at most once; then the statement is prepared anew.
        const first = yield* Effect.result(run)
        if (Result.isFailure(first)) expect(String(first.failure.cause)).toContain("cached plan must not change result type")
        else expect(first.success).toEqual([{ id: 1, a: "one", b: "new" }])
        expect(yield* run).toEqual([{ id: 1, a: "one", b: "new" }])
        expect(yield* run).toEqual([{ id: 1, a: "one", b: "new" }])
        yield* connection.execute("DROP TABLE prepared_probe", [], undefined)
      }))
  })
})
