/**
 * The steps the feature groups' HTTP handlers (each feature's `Http.ts`) share: the integration a path
 * names, and where a service's `InvalidInput` lies in the request.
 */
import * as Effect from "effect/Effect"
import { CurrentWorkspace } from "./Auth/Api.js"
import { InvalidInput, type ValidationError } from "./Domain/Errors.js"
import type { IntegrationId } from "./Domain/Ids.js"
import { Integrations } from "./Integrations/Integrations.js"

/**
 * The step that finds the integration `{integration_id}` of the caller's workspace and puts it on the
 * request's span; another workspace's integration is not found (404), as one that does not exist. Made
 * once per group (`const currentIntegration = yield* CurrentIntegration`), used in its handlers.
 */
export const CurrentIntegration = Effect.map(Integrations, (integrations) => (id: IntegrationId) =>
  Effect.gen(function*() {
    const { workspaceId } = yield* CurrentWorkspace
    const integration = yield* integrations.find(workspaceId, id)
    yield* Effect.annotateCurrentSpan({ "integration.id": integration.integrationId })
    return integration
  }))

/**
 * The 422 of a service's `InvalidInput` about the request's body: its problems' paths are within the
 * body, which only the handler knows the input to be.
 */
export const inputFromBody = <A, E, R>(
  effect: Effect.Effect<A, E | InvalidInput, R>
): Effect.Effect<A, E | ValidationError, R> =>
  Effect.mapError(effect, (error) => error instanceof InvalidInput ? error.at("body") : error)
