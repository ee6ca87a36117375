/**
 * Typed partial doubles of a service (after tim-smart/effect-http-play `src/lib/Layer.ts`): the methods a
 * test gives, and every other one dies with its name when called, so a test states exactly what it uses.
 */
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

const unimplemented = (service: string, method: PropertyKey) => {
  const dead = Effect.die(`${service}: unimplemented method "${String(method)}"`)
  // Usable both as an effect (`yield* service.count`) and as a function (`service.get(id)`).
  return Object.assign(Object.setPrototypeOf(() => dead, Object.getPrototypeOf(dead)), dead)
}

/** A layer of `tag` whose service is `implementation`; anything else it is asked for dies. */
export const makeTestLayer = <I, S extends object>(tag: Context.Key<I, S>) => (implementation: Partial<S>): Layer.Layer<I> =>
  Layer.succeed(
    tag,
    new Proxy(Object.assign({}, implementation) as S, {
      get: (target, property) =>
        property in target ? target[property as keyof S] : unimplemented(tag.key, property),
      has: () => true
    })
  )

