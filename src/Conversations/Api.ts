import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { WorkspaceAuth } from "../Auth/Api.js"
import { InboundMessage, MessageReceived } from "../Domain/Conversation.js"
import { CsatRecord, CsatResponse } from "../Domain/Csat.js"
import { NotFoundBody } from "../Domain/Errors.js"
import { IntegrationPath } from "../Integrations/Api.js"

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
  .add(
    HttpApiEndpoint.post("csatResponseReceived", "/v1/webhooks/:integration_id/csat-response-received")
      .setPath(IntegrationPath)
      .setPayload(CsatResponse)
      .addSuccess(CsatRecord)
      .addError(NotFoundBody)
      .annotate(OpenApi.Summary, "CSAT response received")
      .annotate(
        OpenApi.Description,
        "Stores the raw answer and its reading: a 1-5 score and good/bad. One per conversation; a later one replaces it."
      )
  )
  .middleware(WorkspaceAuth)
{}
