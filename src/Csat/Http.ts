import * as Effect from "effect/Effect"
import type { CsatResponse } from "../Domain/Csat.js"
import type { IntegrationId } from "../Domain/Ids.js"
import { CurrentIntegration, inputFromBody } from "../Handlers.js"
import { Csat } from "./Csat.js"

/** The handler of endpoint 5 (the `webhooks` group is built in `Conversations/Http.ts`). */
export const makeCsatHandler = Effect.gen(function*() {
  const currentIntegration = yield* CurrentIntegration
  const csat = yield* Csat
  return ({ params, payload }: { readonly params: { readonly integration_id: IntegrationId }; readonly payload: CsatResponse }) =>
    Effect.flatMap(currentIntegration(params.integration_id), (integration) => csat.record(integration, payload)).pipe(
      inputFromBody
    )
})
