import * as Schema from "effect/Schema"
import { ConversationId, CustomerId, MessageId } from "./Ids.js"
import { ExternalId, HttpUrl, JsonObject, Timestamp } from "./Primitives.js"

/** PRODUCT.md §4. */
export const Role = Schema.Literal("human", "ai", "agent", "system")
export type Role = typeof Role.Type

export const MessageType = Schema.Literal("default", "note", "event")
export type MessageType = typeof MessageType.Type

export const ConversationStatus = Schema.Literal("open", "escalated", "closed")
export type ConversationStatus = typeof ConversationStatus.Type

export const Attachment = Schema.Struct({
  name: Schema.String,
  url: HttpUrl
}).annotations({ identifier: "Attachment" })
export type Attachment = typeof Attachment.Type

export const AgentInfo = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  avatar: Schema.String
}).annotations({ identifier: "AgentInfo" })
export type AgentInfo = typeof AgentInfo.Type

/** Spec 2.7. `externalId` is the integrator's id for the message, kept beside Parley's. */
export const Message = Schema.Struct({
  id: MessageId,
  externalId: Schema.NullOr(Schema.String),
  role: Role,
  sentAt: Timestamp,
  type: MessageType,
  text: Schema.String,
  attachments: Schema.Array(Attachment),
  isSuggestion: Schema.Boolean,
  agentInfo: Schema.NullOr(AgentInfo)
}).annotations({ identifier: "Message" })
export type Message = typeof Message.Type

/** Spec 2.8. `externalId` is the integrator's `conversationId`. */
export const Conversation = Schema.Struct({
  id: ConversationId,
  externalId: Schema.String,
  status: ConversationStatus,
  createdAt: Timestamp,
  customerId: CustomerId,
  channel: Schema.String,
  firstUnreadMessageId: Schema.NullOr(MessageId)
}).annotations({ identifier: "Conversation" })
export type Conversation = typeof Conversation.Type

export const MessageReceived = Schema.Struct({
  message: Message,
  conversation: Conversation
}).annotations({ identifier: "MessageReceivedResponse" })
export type MessageReceived = typeof MessageReceived.Type

/**
 * Spec 2.6. The snake_case spellings of the getting-started example are accepted too
 * (see `messageAliases`); both spellings with different values is a 422.
 */
export const InboundMessage = Schema.Struct({
  id: ExternalId,
  role: Role,
  sentAt: Schema.optionalWith(Timestamp, { exact: true }),
  customerId: ExternalId,
  text: Schema.String,
  attachments: Schema.optionalWith(Schema.Array(Attachment), { default: () => [] }),
  conversationId: ExternalId,
  syncOnly: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  requestContext: Schema.optionalWith(JsonObject, { exact: true })
}).annotations({
  identifier: "InboundMessage",
  description:
    "camelCase is the reference; sent_at, customer_id, conversation_id, sync_only and request_context are accepted too."
})
export type InboundMessage = typeof InboundMessage.Type

export const messageAliases = {
  sent_at: "sentAt",
  customer_id: "customerId",
  conversation_id: "conversationId",
  sync_only: "syncOnly",
  request_context: "requestContext"
} as const
