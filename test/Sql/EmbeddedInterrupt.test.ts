import { describe, expect, layer } from "@effect/vitest"
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import { PGliteTest } from "../support/Database.js"

// The embedded database's one connection: an interrupted statement (a client hanging up mid-request)
// must not hold up the next one. sql-pg used to answer an interruption with `pg_cancel_backend`, sent
// through the pool whose only connection was the one to cancel: 5 s of stall for every request.
describe("embedded database: an interrupted statement", () => {
  layer(PGliteTest, { timeout: 120_000, excludeTestServices: true })((it) => {
    it.effect("does not stall the next statement, and a transaction interrupted mid-way is rolled back", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`CREATE TABLE IF NOT EXISTS interrupt_probe (n int)`
        // Never commits: on a fast day the 20 statements can end before the interruption lands, and the
        // transaction must still be open then (it committed once in CI, and the rows stayed).
        const work = Effect.gen(function*() {
          for (let i = 0; i < 20; i++) yield* sql`INSERT INTO interrupt_probe SELECT count(*) FROM generate_series(1, 2000)`
          yield* Effect.sleep("1 minute")
        }).pipe(sql.withTransaction)
        let slowest = 0
        for (let round = 0; round < 10; round++) {
          const fiber = yield* Effect.forkChild(work)
          yield* Effect.sleep(`${5 + round * 3} millis`)
          const started = Date.now()
          yield* Fiber.interrupt(fiber)
          yield* sql`SELECT 1`
          slowest = Math.max(slowest, Date.now() - started)
        }
        expect(slowest).toBeLessThan(2_000)
        // Every interrupted transaction was rolled back.
        expect(yield* sql<{ readonly n: number }>`SELECT n FROM interrupt_probe`).toEqual([])
      }))
  })
})
