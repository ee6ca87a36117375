import { HttpApiBuilder } from "@effect/platform"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { Api } from "../Api.js"
import { CurrentWorkspace } from "../Auth/Api.js"
import { Csat } from "../Csat/Csat.js"
import { InboundMessage, messageAliases } from "../Domain/Conversation.js"
import { CsatResponse } from "../Domain/Csat.js"
import { decodeBody } from "../Http/Request.js"
import { Integrations } from "../Integrations/Integrations.js"
import { Conversations, type Incoming } from "./Conversations.js"

const toIncoming = (message: InboundMessage, defaultChannel: string): Incoming => {
  const channel = message.requestContext?.["channel"]
  return {
    externalMessageId: message.id,
    externalConversationId: message.conversationId,
    customer: { _tag: "ParleyId", id: message.customerId, loc: ["body", "customerId"] },
    role: message.role,
    type: "default",
    text: message.text,
    attachments: message.attachments,
    sentAt: Option.fromNullable(message.sentAt),
    syncOnly: message.syncOnly,
    requestContext: Option.fromNullable(message.requestContext),
    agentInfo: null,
    channel: typeof channel === "string" && channel !== "" ? channel : defaultChannel
  }
}

export const WebhooksHttpLive = HttpApiBuilder.group(Api, "webhooks", (handlers) =>
  Effect.gen(function*() {
    const integrations = yield* Integrations
    const conversations = yield* Conversations
    const csat = yield* Csat
    return handlers
      .handleRaw("messageReceived", ({ path }) =>
        Effect.gen(function*() {
          const { workspaceId } = yield* CurrentWorkspace
          const integration = yield* integrations.find(workspaceId, path.integration_id)
          yield* Effect.annotateCurrentSpan({ "integration.id": integration.id })
          const message = yield* decodeBody(InboundMessage, { aliases: messageAliases })
          return yield* conversations.ingest(integration, toIncoming(message, integration.kind))
        }))
      .handleRaw("csatResponseReceived", ({ path }) =>
        Effect.gen(function*() {
          const { workspaceId } = yield* CurrentWorkspace
          const integration = yield* integrations.find(workspaceId, path.integration_id)
          yield* Effect.annotateCurrentSpan({ "integration.id": integration.id })
          const response = yield* decodeBody(CsatResponse)
          return yield* csat.record(integration, response)
        }))
  }))
