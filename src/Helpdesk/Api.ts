import * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import * as HttpApiGroup from "effect/http-api/HttpApiGroup"
import * as OpenApi from "effect/http-api/OpenApi"
import { HelpdeskAuth, UnauthorizedResponse } from "../Auth/Api.js"
import { MessageReceived } from "../Domain/Conversation.js"
import { NotFoundBody } from "../Domain/Errors.js"
import { ForeignJsonObject } from "../Domain/Primitives.js"
import { IntegrationPath } from "../Integrations/Api.js"

const HelpdeskEvent = ForeignJsonObject.annotate({
  identifier: "HelpdeskEvent",
  description: "A webhook payload as the helpdesk sends it (Chatwoot: message_created, conversation_status_changed)."
})

const description = "Takes a Chatwoot webhook event. An incoming message is answered like message-received; an " +
  "outgoing agent message escalates the conversation; resolved closes it. The API token may be sent as the " +
  "access_token query parameter. When channelsSettings.chatwoot.webhookSecret is set, X-Chatwoot-Signature is required."

export class HelpdeskApi extends HttpApiGroup.make("helpdesk")
  .add(
    HttpApiEndpoint.post("eventReceived", "/v1/webhooks/:integration_id/helpdesk-event-received", {
      params: IntegrationPath,
      payload: HelpdeskEvent,
      success: MessageReceived,
      error: [NotFoundBody, UnauthorizedResponse]
    })
      .annotate(OpenApi.Summary, "Helpdesk event received")
      .annotate(OpenApi.Description, description)
  )
  .add(
    HttpApiEndpoint.post("chatwootEventReceived", "/v1/webhooks/:integration_id/chatwoot-event-received", {
      params: IntegrationPath,
      payload: HelpdeskEvent,
      success: MessageReceived,
      error: [NotFoundBody, UnauthorizedResponse]
    })
      .annotate(OpenApi.Summary, "Chatwoot event received (same as helpdesk-event-received)")
      .annotate(OpenApi.Description, description)
  )
  .middleware(HelpdeskAuth)
  .annotate(OpenApi.Description, "A helpdesk's own webhooks (Chatwoot), posted to Parley as the helpdesk sends them.")
{}
