import * as Model from "effect/schema/Model"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { At, CreatedAt, Generated, Internal, InternalCreatedAt, InternalJsonb, Jsonb, NullableJsonb, Sequence } from "./Fields.js"
import { ConversationId, CustomerId, IntegrationId, MessageId, WorkspaceId } from "./Ids.js"
import { Language } from "./Language.js"
import { ExternalId, HttpUrl, JsonObject, Text, Timestamp } from "./Primitives.js"
import { withAliases } from "./Validation.js"

/** docs/api.md. */
export const Role = Schema.Literals(["human", "ai", "agent", "system"])
export type Role = typeof Role.Type

export const MessageType = Schema.Literals(["default", "note", "event"])
export type MessageType = typeof MessageType.Type

export const ConversationStatus = Schema.Literals(["open", "escalated", "closed"])
export type ConversationStatus = typeof ConversationStatus.Type

export const Attachment = Schema.Struct({
  name: Text,
  url: HttpUrl
}).annotate({ identifier: "Attachment" })
export type Attachment = typeof Attachment.Type

export const AgentInfo = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  avatar: Schema.String
}).annotate({ identifier: "AgentInfo" })
export type AgentInfo = typeof AgentInfo.Type

/**
 * A conversation (docs/api.md): the integrator's `conversationId` is its `externalId`, unique per
 * integration; `id` is Parley's.
 */
export class Conversation extends Model.Class<Conversation>("Conversation")({
  id: Model.GeneratedByDb(ConversationId),
  workspaceId: Internal(WorkspaceId),
  integrationId: Internal(IntegrationId),
  externalId: Schema.String,
  status: ConversationStatus,
  createdAt: CreatedAt,
  customerId: CustomerId,
  channel: Schema.String,
  /** The customer's language as the last reply detected it (src/Ai/Texts.ts); not on the wire. */
  language: Generated(Schema.NullOr(Language))
}) {}

/** A conversation as responses show it: with the customer's first message nobody has answered yet. */
export const ConversationView = Schema.Struct({
  ...Conversation.json.fields,
  firstUnreadMessageId: Schema.NullOr(MessageId)
}).annotate({ identifier: "Conversation" })
export type ConversationView = typeof ConversationView.Type

/** A message (docs/api.md). `externalId` is the integrator's id for it, kept beside Parley's. */
export class Message extends Model.Class<Message>("Message")({
  id: Model.GeneratedByDb(MessageId),
  conversationId: Internal(ConversationId),
  integrationId: Internal(IntegrationId),
  externalId: Schema.NullOr(Schema.String),
  role: Role,
  sentAt: At,
  type: MessageType,
  text: Schema.String,
  attachments: Jsonb(Schema.Array(Attachment)),
  isSuggestion: Schema.Boolean,
  agentInfo: NullableJsonb(AgentInfo),
  syncOnly: Internal(Schema.Boolean),
  requestContext: InternalJsonb(JsonObject),
  /** An AI reply names the message it answers: one reply per trigger. */
  replyTo: Internal(Schema.NullOr(MessageId)),
  /** Arrival order (a client's `sentAt` may arrive out of order): what the reply debounce goes by. */
  seq: Sequence,
  createdAt: InternalCreatedAt
}) {}

export const MessageJson = Message.json.annotate({ identifier: "Message" })

export const MessageReceived = Schema.Struct({
  message: MessageJson,
  conversation: ConversationView
}).annotate({
  identifier: "MessageReceivedResponse",
  description: "The message as stored, and its conversation as it is now"
})
export type MessageReceived = typeof MessageReceived.Type

/** docs/api.md, camelCase: the reference spelling. */
const InboundMessageFields = {
  id: ExternalId,
  role: Role,
  sentAt: Schema.optionalKey(Timestamp),
  customerId: ExternalId,
  text: Text,
  attachments: Schema.Array(Attachment).pipe(Schema.withDecodingDefaultTypeKey(Effect.succeed([]))),
  conversationId: ExternalId,
  syncOnly: Schema.Boolean.pipe(Schema.withDecodingDefaultTypeKey(Effect.succeed(false))),
  requestContext: Schema.optionalKey(JsonObject)
}

/**
 * The body of message-received (docs/api.md). The snake_case spellings of the getting-started example
 * are accepted too (docs/api.md); both spellings of one field with different values is a 422.
 */
export const InboundMessage = withAliases(InboundMessageFields, {
  sent_at: "sentAt",
  customer_id: "customerId",
  conversation_id: "conversationId",
  sync_only: "syncOnly",
  request_context: "requestContext"
}, {
  identifier: "InboundMessage",
  description: "camelCase is the reference; sent_at, customer_id, conversation_id, sync_only and request_context " +
    "are accepted too. Required: id, role, customerId, text, conversationId (in either spelling)."
})
export type InboundMessage = typeof InboundMessage.Type
