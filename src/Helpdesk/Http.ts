import * as Effect from "effect/Effect"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import { Api } from "../Api.js"
import { messageReceived } from "../Conversations/Http.js"
import type { IntegrationId } from "../Domain/Ids.js"
import { CurrentIntegration, inputFromBody } from "../Handlers.js"
import { Helpdesk } from "./Helpdesk.js"

export const HelpdeskHttpLive = HttpApiBuilder.group(Api, "helpdesk", (handlers) =>
  Effect.gen(function*() {
    const currentIntegration = yield* CurrentIntegration
    const helpdesk = yield* Helpdesk
    const receive = (
      { params, payload, request }: {
        readonly params: { readonly integration_id: IntegrationId }
        readonly payload: { readonly [key: string]: unknown }
        readonly request: { readonly headers: Readonly<Record<string, string | undefined>>; readonly text: Effect.Effect<string, unknown> }
      },
      platform?: string
    ) =>
      Effect.gen(function*() {
        const integration = yield* currentIntegration(params.integration_id)
        // The platform's signature covers the exact bytes (already read and parsed for `payload`).
        const rawBody = yield* Effect.orDie(request.text)
        const received = yield* helpdesk.receive(integration, { headers: request.headers, rawBody, body: payload }, platform)
        return messageReceived(received)
      }).pipe(inputFromBody)
    return handlers
      .handle("eventReceived", (request) => receive(request))
      .handle("chatwootEventReceived", (request) => receive(request, "chatwoot"))
  }))
