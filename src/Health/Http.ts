import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import * as SqlClient from "effect/sql/SqlClient"
import { Api } from "../Api.js"
import { latestMigrationId } from "../migrations/index.js"
import { NotReady } from "./Api.js"

/**
 * `self` in a fiber of its own, detached: interrupting the result answers at once, and `self` is
 * interrupted in the background, taking as long as it takes.
 */
const disconnect = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(Effect.forkDetach(self), (fiber) =>
    Fiber.join(fiber).pipe(Effect.onInterrupt(() => Effect.asVoid(Effect.forkDetach(Fiber.interrupt(fiber))))))

export const HealthHttpLive = HttpApiBuilder.group(Api, "health", (handlers) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ready = Effect.gen(function*() {
      const rows = yield* sql<{ readonly latest: number | null }>`
        SELECT max(migration_id) AS latest FROM effect_sql_migrations`
      const latest = rows[0]?.latest ?? 0
      if (latest < latestMigrationId) {
        return yield* new NotReady({ detail: `Database migrated to ${latest}, expected ${latestMigrationId}` })
      }
      return { status: "ok", database: "ok" } as const
    }).pipe(
      // A query that hangs is left to end in the background (its cancel needs a connection too): the
      // answer comes within the 2 s, however long the database takes to give up.
      disconnect,
      Effect.timeoutOrElse({
        duration: "2 seconds",
        orElse: () => Effect.fail(new NotReady({ detail: "Database did not answer within 2 seconds" }))
      }),
      Effect.catchTag("SqlError", () => Effect.fail(new NotReady({ detail: "Database unreachable" })))
    )
    return handlers
      .handle("live", () => Effect.succeed({ status: "ok" } as const))
      .handle("ready", () => ready)
  }))
