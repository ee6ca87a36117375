import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import { WorkspaceAuth } from "../Auth/Api.js"
import { CsatResponseReceived } from "../Csat/Api.js"
import { InboundMessage, MessageReceived } from "../Domain/Conversation.js"
import { NotFoundBody } from "../Domain/Errors.js"
import { IntegrationPath } from "../Integrations/Api.js"

/** Endpoints 4 and 5: what the integrator's support system posts. */
export class WebhooksApi extends HttpApiGroup.make("webhooks")
  .add(
    HttpApiEndpoint.post("messageReceived", "/v1/webhooks/:integration_id/message-received")
      .setPath(IntegrationPath)
      .setPayload(InboundMessage)
      .addSuccess(MessageReceived)
      .addError(NotFoundBody)
      .annotate(OpenApi.Summary, "Message received")
      .annotate(
        OpenApi.Description,
        "Stores a message and threads it by conversationId. Idempotent on the message id. A human message " +
          "(not syncOnly) on an open conversation schedules an AI reply, delivered later as a send_messages webhook."
      )
  )
  .add(CsatResponseReceived)
  .middleware(WorkspaceAuth)
{}
