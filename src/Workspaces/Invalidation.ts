/**
 * Caches of credentials and settings (API tokens, integrations) forgotten on every instance when one of
 * them changes them: a revoked token or a deleted workspace stops working at once everywhere, not after
 * the caches' time to live. On PostgreSQL the change's transaction sends a NOTIFY (delivered at commit,
 * to every instance listening, this one included); the embedded database has one process, which is
 * told directly. After the listening connection is re-established (notifications sent meanwhile are
 * lost), every cache is forgotten too.
 */
import * as SqlClient from "effect/sql/SqlClient"
import { PgClient } from "@effect/sql-pg"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import * as Stream from "effect/Stream"
import { listen } from "../Jobs/Listener.js"
import { DatabaseKind } from "../Sql.js"

export const INVALIDATION_CHANNEL = "parley_invalidate"

export class Invalidation extends Context.Service<Invalidation>()("Parley/Invalidation", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { embedded } = yield* DatabaseKind
    const forgetters = yield* Ref.make<ReadonlyArray<Effect.Effect<void>>>([])
    const forgetAll = Effect.flatMap(Ref.get(forgetters), (all) => Effect.all(all, { discard: true }))

    if (!embedded) {
      const pg = yield* PgClient.PgClient
      yield* listen(INVALIDATION_CHANNEL, "10 seconds", "Cache invalidations").pipe(
        Stream.runForEach(() => forgetAll),
        Effect.provideService(PgClient.PgClient, pg),
        // The connection's probes and reconnection back-off are wall-clock waits on the network, whatever
        // clock the app runs on (a test's TestClock, moved by years, would run years of probes).
        Effect.provideService(Clock.Clock, Clock.Clock.defaultValue()),
        Effect.forkScoped
      )
    }

    return {
      /** Registers a cache's `invalidateAll`, run whenever any instance announces a change. */
      register: (forget: Effect.Effect<void>) => Ref.update(forgetters, (all) => [...all, forget]),
      /**
       * Announces a change: in the caller's transaction on PostgreSQL (every instance hears it at
       * commit), at once on the embedded database (its single connection serializes the readers after
       * the writer's commit anyway). This instance's caches are forgotten at once too.
       */
      announce: Effect.andThen(
        embedded ? Effect.void : Effect.orDie(sql`SELECT pg_notify(${INVALIDATION_CHANNEL}, '')`),
        forgetAll
      )
    } as const
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
  static readonly layer = this.layerWithoutDependencies
}
