import * as Effect from "effect/Effect"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import { Api } from "../Api.js"
import { CurrentWorkspace } from "../Auth/Api.js"
import { messageReceived } from "../Conversations/Http.js"
import type { IntegrationId } from "../Domain/Ids.js"
import { Integrations } from "../Integrations/Integrations.js"
import { Helpdesk } from "./Helpdesk.js"

export const HelpdeskHttpLive = HttpApiBuilder.group(Api, "helpdesk", (handlers) =>
  Effect.gen(function*() {
    const integrations = yield* Integrations
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
        const { workspaceId } = yield* CurrentWorkspace
        const integration = yield* integrations.find(workspaceId, params.integration_id)
        yield* Effect.annotateCurrentSpan({ "integration.id": integration.integrationId })
        // The platform's signature covers the exact bytes (already read and parsed for `payload`).
        const rawBody = yield* Effect.orDie(request.text)
        const received = yield* helpdesk.receive(integration, { headers: request.headers, rawBody, body: payload }, platform)
        return messageReceived(received)
      }).pipe(Effect.catchTag("InvalidInput", (error) => Effect.fail(error.at("body"))))
    return handlers
      .handle("eventReceived", (request) => receive(request))
      .handle("chatwootEventReceived", (request) => receive(request, "chatwoot"))
  }))
