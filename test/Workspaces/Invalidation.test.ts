/**
 * Two instances on one PostgreSQL database, each with its token cache (here remembered for a minute):
 * a token revoked, or a workspace deleted, through one instance stops working on the other at once,
 * told by NOTIFY, not after the cache's time to live. (The embedded database is one process.)
 */
import { describe, expect, layer } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Workspaces } from "../../src/Workspaces/Workspaces.js"
import { TestDatabase, usingPostgres } from "../support/Database.js"
import { eventually } from "../support/Eventually.js"
import { layerTest } from "../support/Services.js"

/**
 * A `Workspaces` service of its own (its own caches and listening connection), as another instance has,
 * on the database the test layer built (memoized: the same `TestDatabase`).
 */
const instance = Effect.map(
  Layer.build(layerTest(Workspaces.layer, { PARLEY_TOKEN_CACHE_TTL: "1 minute" })),
  Context.get(Workspaces)
)

describe("cache invalidation across instances", () => {
  layer(Layer.orDie(TestDatabase), {
    excludeTestServices: true,
    timeout: 60_000
  })((it) => {
    it.effect.skipIf(!usingPostgres)("a revoked token and a deleted workspace's tokens stop working on the other instance at once", () =>
      Effect.gen(function*() {
        const a = yield* instance
        const b = yield* instance
        const first = yield* a.create("Revoked")
        const second = yield* a.create("Deleted")
        // Remembered by b for a minute.
        expect(Option.isSome(yield* b.authenticate(first.apiToken))).toBe(true)
        expect(Option.isSome(yield* b.authenticate(second.apiToken))).toBe(true)

        const tokens = yield* a.listTokens(first.workspace.id)
        yield* a.revokeToken(tokens[0]!.id)
        yield* eventually(b.authenticate(first.apiToken), Option.isNone, 5_000)

        yield* a.delete(second.workspace.id)
        yield* eventually(b.authenticate(second.apiToken), Option.isNone, 5_000)
      }))
  })
})
