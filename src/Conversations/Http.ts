import * as Effect from "effect/Effect"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import * as Option from "effect/Option"
import { Api } from "../Api.js"
import { makeCsatHandler } from "../Csat/Http.js"
import type { InboundMessage, MessageReceived } from "../Domain/Conversation.js"
import { CurrentIntegration, inputFromBody } from "../Handlers.js"
import { Conversations, type Incoming, type Received } from "./Conversations.js"

const toIncoming = (message: InboundMessage, defaultChannel: string): Incoming => {
  const channel = message.requestContext?.["channel"]
  return {
    externalMessageId: message.id,
    externalConversationId: message.conversationId,
    customer: { _tag: "ParleyId", id: message.customerId, external: false },
    role: message.role,
    type: "default",
    text: message.text,
    attachments: message.attachments,
    sentAt: Option.fromNullishOr(message.sentAt),
    syncOnly: message.syncOnly,
    requestContext: Option.fromNullishOr(message.requestContext),
    agentInfo: null,
    channel: typeof channel === "string" && channel !== "" ? channel : defaultChannel
  }
}

/** The response of endpoints 4 and 6. */
export const messageReceived = ({ conversation, firstUnreadMessageId, message }: Received): MessageReceived => ({
  message,
  conversation: { ...conversation, firstUnreadMessageId }
})

export const WebhooksHttpLive = HttpApiBuilder.group(Api, "webhooks", (handlers) =>
  Effect.gen(function*() {
    const currentIntegration = yield* CurrentIntegration
    const conversations = yield* Conversations
    const csat = yield* makeCsatHandler
    return handlers
      .handle("messageReceived", ({ params, payload }) =>
        Effect.gen(function*() {
          const integration = yield* currentIntegration(params.integration_id)
          const received = yield* conversations.ingest(integration, toIncoming(payload, integration.integration))
          return messageReceived(received)
        }).pipe(inputFromBody))
      .handle("csatResponseReceived", csat)
  }))
