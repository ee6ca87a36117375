/**
 * Per-token rate limit (docs/api.md): a token bucket per API token, refilled continuously, holding
 * at most one minute's worth. Kept in this instance's memory: with N instances the ceiling is N times
 * the limit, which is documented rather than paid for with a database round trip on every request.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as AppConfig from "../Config.js"
import { RateLimited } from "../Domain/Errors.js"

/** The most keys kept (about 100 bytes each). */
const MAX_KEYS = 100_000

interface Bucket {
  tokens: number
  updatedAt: number
}

export class RateLimiter extends Context.Service<RateLimiter>()("Parley/RateLimiter", {
  make: Effect.gen(function*() {
    const perMinute = yield* AppConfig.RateLimit
    const buckets = new Map<string, Bucket>()
    const refillPerMilli = perMinute / 60_000

    /** Takes one request from the key's bucket, or fails with the seconds until one is available. */
    const take = (key: string) =>
      Effect.gen(function*() {
        if (perMinute <= 0) return
        const now = yield* Clock.currentTimeMillis
        const known = buckets.get(key)
        // Keys are API tokens and, for dashboard sign-ins, client addresses (any number of them): the
        // oldest is forgotten beyond `MAX_KEYS` (a forgotten bucket starts full again).
        if (known === undefined && buckets.size >= MAX_KEYS) {
          const oldest = buckets.keys().next()
          if (oldest.done !== true) buckets.delete(oldest.value)
        }
        const bucket = known ?? { tokens: perMinute, updatedAt: now }
        bucket.tokens = Math.min(perMinute, bucket.tokens + (now - bucket.updatedAt) * refillPerMilli)
        bucket.updatedAt = now
        buckets.set(key, bucket)
        if (bucket.tokens < 1) {
          const retryAfterSeconds = Math.max(1, Math.ceil((1 - bucket.tokens) / refillPerMilli / 1000))
          return yield* new RateLimited({ detail: "Rate limit exceeded", retryAfterSeconds })
        }
        bucket.tokens -= 1
      })

    return { take } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
