import { HttpApiBuilder, HttpServerRequest } from "@effect/platform"
import * as Effect from "effect/Effect"
import { Api } from "../Api.js"
import { CurrentWorkspace } from "../Auth/Api.js"
import type { IntegrationId } from "../Domain/Ids.js"
import { parseJson, rawBody } from "../Http/Request.js"
import { Integrations } from "../Integrations/Integrations.js"
import { Helpdesk } from "./Helpdesk.js"

export const HelpdeskHttpLive = HttpApiBuilder.group(Api, "helpdesk", (handlers) =>
  Effect.gen(function*() {
    const integrations = yield* Integrations
    const helpdesk = yield* Helpdesk
    const receive = (integrationId: IntegrationId, platform?: string) =>
      Effect.gen(function*() {
        const { workspaceId } = yield* CurrentWorkspace
        const integration = yield* integrations.find(workspaceId, integrationId)
        yield* Effect.annotateCurrentSpan({ "integration.id": integration.id })
        const request = yield* HttpServerRequest.HttpServerRequest
        const text = yield* rawBody
        const body = yield* parseJson(text)
        return yield* helpdesk.receive(integration, { headers: request.headers, rawBody: text, body }, platform)
      })
    return handlers
      .handleRaw("eventReceived", ({ path }) => receive(path.integration_id))
      .handleRaw("chatwootEventReceived", ({ path }) => receive(path.integration_id, "chatwoot"))
  }))
