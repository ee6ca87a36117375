/**
 * The body of every webhook Parley sends (docs/webhooks.md): one envelope, whose `data` depends on the
 * `event` kind. These schemas are the contract: the OpenAPI document's `webhooks` section is generated
 * from them, and TypeScript receivers can decode a body with `WebhookEvent`.
 */
import * as Schema from "effect/Schema"
import type { EventKind } from "./Delivery.js"
import {
  CloseConversationData,
  ConversationSummaryData,
  ConversationTitleData,
  EscalateData,
  SendCsatData,
  SendMessagesData,
  TypingData
} from "./EventData.js"
import { CustomerId, EventId, IntegrationId } from "./Ids.js"
import { JsonObject, Timestamp } from "./Primitives.js"

const envelope = <K extends EventKind, S extends Schema.Codec<unknown, unknown>>(
  kind: K,
  identifier: string,
  data: S,
  description: string
) =>
  Schema.Struct({
    event: Schema.Literal(kind),
    eventId: EventId.annotate({
      description: "The same on every attempt of this event: deduplicate on it (delivery is at least once)."
    }),
    integrationId: IntegrationId,
    conversationId: Schema.NullOr(Schema.String).annotate({ description: "The integrator's conversation id." }),
    customerId: Schema.NullOr(CustomerId).annotate({ description: "Parley's customer UUID." }),
    createdAt: Timestamp,
    metadata: JsonObject.annotate({ description: "The integration's webhook.metadata, sent with every event." }),
    data
  }).annotate({ identifier, description })

/** Each kind's envelope, with what it means for the receiver. */
export const WebhookEvents = {
  send_messages: envelope(
    "send_messages",
    "SendMessagesEvent",
    SendMessagesData,
    "The AI's reply to the customer: data.messages are messages with role ai, as the API shows messages."
  ),
  typing: envelope(
    "typing",
    "TypingEvent",
    TypingData,
    "The AI started writing an answer to the customer's message data.messageId (show a typing indicator). " +
      "Sent before a language model is called, with the typing flag."
  ),
  escalate: envelope(
    "escalate",
    "EscalateEvent",
    EscalateData,
    "The AI handed the conversation to a person (escalation flag): the conversation is now escalated and " +
      "the AI stays silent on it. data.summary is for the human agent."
  ),
  close_conversation: envelope(
    "close_conversation",
    "CloseConversationEvent",
    CloseConversationData,
    "The AI closed a resolved conversation (closeTicket flag): the conversation is now closed."
  ),
  conversation_summary: envelope(
    "conversation_summary",
    "ConversationSummaryEvent",
    ConversationSummaryData,
    "A summary of the conversation for the human agent, at a hand-over or a close (conversationSummary flag)."
  ),
  conversation_title: envelope(
    "conversation_title",
    "ConversationTitleEvent",
    ConversationTitleData,
    "A short title for the conversation, after its first exchange (conversationTitle flag)."
  ),
  send_csat: envelope(
    "send_csat",
    "SendCsatEvent",
    SendCsatData,
    "The conversation was closed: ask the customer for a rating (csat flag), then send it to " +
      "POST /v1/webhooks/{integration_id}/csat-response-received."
  )
} as const satisfies Record<EventKind, Schema.Codec<unknown, unknown>>

/** Any webhook body; `event` tells which. */
export const WebhookEvent = Schema.Union([
  WebhookEvents.send_messages,
  WebhookEvents.typing,
  WebhookEvents.escalate,
  WebhookEvents.close_conversation,
  WebhookEvents.conversation_summary,
  WebhookEvents.conversation_title,
  WebhookEvents.send_csat
]).annotate({ identifier: "WebhookEvent" })
export type WebhookEvent = typeof WebhookEvent.Type
