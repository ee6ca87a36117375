import * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import * as HttpApiGroup from "effect/http-api/HttpApiGroup"
import * as OpenApi from "effect/http-api/OpenApi"
import { WorkspaceAuth } from "../Auth/Api.js"
import { CsatResponseReceived } from "../Csat/Api.js"
import { InboundMessage, MessageReceived } from "../Domain/Conversation.js"
import { NotFoundBody } from "../Domain/Errors.js"
import { IntegrationPath } from "../Integrations/Api.js"

/** Endpoints 4 and 5: what the integrator's support system posts. */
export class WebhooksApi extends HttpApiGroup.make("webhooks")
  .add(
    HttpApiEndpoint.post("messageReceived", "/v1/webhooks/:integration_id/message-received", {
      params: IntegrationPath,
      payload: InboundMessage,
      success: MessageReceived,
      error: NotFoundBody
    })
      .annotate(OpenApi.Summary, "Message received")
      .annotate(
        OpenApi.Description,
        "Stores a message and threads it by conversationId. Idempotent on the message id. A human message " +
          "(not syncOnly) on an open conversation schedules an AI reply, delivered later as a send_messages webhook."
      )
  )
  .add(CsatResponseReceived)
  .middleware(WorkspaceAuth)
  .annotate(OpenApi.Description, "What the integrator's support system posts to Parley: customer messages and CSAT answers.")
{}
