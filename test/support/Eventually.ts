/** Waiting for what happens in the background (workers, deliveries), on the real clock. */
import * as Effect from "effect/Effect"

/**
 * Runs `check` every 25 ms until `predicate` holds of its result, which it returns; dies after
 * `timeoutMs` with the last result, so the failure says what was seen.
 */
export const eventually = <A, E, R>(
  check: Effect.Effect<A, E, R>,
  predicate: (value: A) => boolean,
  timeoutMs = 15_000
): Effect.Effect<A, E, R> =>
  Effect.gen(function*() {
    const deadline = Date.now() + timeoutMs
    while (true) {
      const value = yield* check
      if (predicate(value)) return value
      if (Date.now() > deadline) {
        return yield* Effect.die(`Timed out after ${timeoutMs} ms; last seen: ${JSON.stringify(value)}`)
      }
      yield* Effect.sleep("25 millis")
    }
  })
