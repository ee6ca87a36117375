import * as Effect from "effect/Effect"
import { CurrentWorkspace } from "../Auth/Api.js"
import type { CsatResponse } from "../Domain/Csat.js"
import type { IntegrationId } from "../Domain/Ids.js"
import { Integrations } from "../Integrations/Integrations.js"
import { Csat } from "./Csat.js"

/** The handler of endpoint 5 (the `webhooks` group is built in `Conversations/Http.ts`). */
export const makeCsatHandler = Effect.gen(function*() {
  const integrations = yield* Integrations
  const csat = yield* Csat
  return ({ params, payload }: { readonly params: { readonly integration_id: IntegrationId }; readonly payload: CsatResponse }) =>
    Effect.gen(function*() {
      const { workspaceId } = yield* CurrentWorkspace
      const integration = yield* integrations.find(workspaceId, params.integration_id)
      yield* Effect.annotateCurrentSpan({ "integration.id": integration.integrationId })
      return yield* csat.record(integration, payload)
    }).pipe(Effect.catchTag("InvalidInput", (error) => Effect.fail(error.at("body"))))
})
