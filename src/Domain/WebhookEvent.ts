/**
 * The body of every webhook Parley sends (docs/webhooks.md): one envelope, whose `data` depends on the
 * `event` kind (`EventData`, the one record of kind → data schema). These schemas are the contract:
 * `Events.emit` encodes every body with them, the OpenAPI document's `webhooks` section is generated
 * from them, and TypeScript receivers can decode a body with `WebhookEvent`.
 */
import * as Schema from "effect/Schema"
import { EventKind } from "./Delivery.js"
import { EventData } from "./EventData.js"
import { CustomerId, EventId, IntegrationId } from "./Ids.js"
import { JsonObject, Timestamp } from "./Primitives.js"

/** The envelope of a `kind` event; its `data` is that kind's schema in `EventData`. */
const envelope = <K extends EventKind>(kind: K, identifier: string, description: string) =>
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
    data: EventData[kind]
  }).annotate({ identifier, description })

/** The envelope schema of a `K` event. */
export type WebhookEnvelope<K extends EventKind> = ReturnType<typeof envelope<K>>

/** Each kind's envelope, with what it means for the receiver. */
export const WebhookEvents: { readonly [K in EventKind]: WebhookEnvelope<K> } = {
  send_messages: envelope(
    "send_messages",
    "SendMessagesEvent",
    "The AI's reply to the customer: data.messages are messages with role ai, as the API shows messages."
  ),
  typing: envelope(
    "typing",
    "TypingEvent",
    "The AI started writing an answer to the customer's message data.messageId (show a typing indicator). " +
      "Sent before a language model is called, with the typing flag."
  ),
  escalate: envelope(
    "escalate",
    "EscalateEvent",
    "The AI handed the conversation to a person (escalation flag): the conversation is now escalated and " +
      "the AI stays silent on it. data.summary is for the human agent."
  ),
  close_conversation: envelope(
    "close_conversation",
    "CloseConversationEvent",
    "The conversation is now closed: data.reason is resolved (the AI closed it, closeTicket flag) or " +
      "inactivity (the customer stayed silent, conversationTimeout flag)."
  ),
  conversation_summary: envelope(
    "conversation_summary",
    "ConversationSummaryEvent",
    "A summary of the conversation for the human agent, at a hand-over or a close (conversationSummary flag)."
  ),
  conversation_title: envelope(
    "conversation_title",
    "ConversationTitleEvent",
    "A short title for the conversation, after its first exchange (conversationTitle flag)."
  ),
  send_csat: envelope(
    "send_csat",
    "SendCsatEvent",
    "The conversation was closed: ask the customer for a rating (csat flag), then send it to " +
      "POST /v1/webhooks/{integration_id}/csat-response-received."
  ),
  message_delta: envelope(
    "message_delta",
    "MessageDeltaEvent",
    "The AI's message data.messageId while it is written (streaming flag): data.text is the text so far, " +
      "data.sequence counts from 1. At most one every 300 ms, delivered at most once (never retried); the " +
      "send_messages event with the same message id and the whole text always follows."
  )
}

/** Any webhook body; `event` tells which. */
export const WebhookEvent = Schema.Union(EventKind.literals.map((kind) => WebhookEvents[kind])).annotate({
  identifier: "WebhookEvent"
})
export type WebhookEvent = typeof WebhookEvent.Type
