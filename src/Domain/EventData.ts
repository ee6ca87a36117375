/**
 * The `data` of each outbound event kind (docs/webhooks.md), and `EventData`, the one record of kind →
 * data schema that the envelopes (`WebhookEvents`) and `Events.emit` are typed from. Message ids are
 * Parley's.
 */
import * as Schema from "effect/Schema"
import { MessageJson } from "./Conversation.js"
import type { EventKind } from "./Delivery.js"
import { MessageId } from "./Ids.js"

/** `send_messages`: the AI's messages, as the API shows messages (docs/api.md). */
export const SendMessagesData = Schema.Struct({ messages: Schema.Array(MessageJson) }).annotate({
  identifier: "SendMessagesData"
})

/** `typing`: the AI started writing the answer to the customer's message `messageId`. */
export const TypingData = Schema.Struct({ messageId: MessageId }).annotate({ identifier: "TypingData" })

/**
 * Why the AI handed a conversation over:
 * - `no_answer`: it could not answer (nothing relevant in the knowledge base, or the model reached no
 *   answer within its turns);
 * - `handover`: the model decided a person is needed (`escalate_to_human`; `detail` is its reason);
 * - `ai_unavailable`: the model could not be reached within the retry budget;
 * - `invalid_tool_calls`: the model kept calling tools with arguments that do not match their parameters
 *   until its turns ran out (it was told each time);
 * - `guardrail`: the customer's message was abusive (`customerMessageGuardrails`), not passed to the model;
 * - `unverified`: the draft and its redraft failed the verifier (`verifierEscalation`).
 */
export const EscalationReason = Schema.Literals([
  "no_answer",
  "handover",
  "ai_unavailable",
  "invalid_tool_calls",
  "guardrail",
  "unverified"
])
export type EscalationReason = typeof EscalationReason.Type

/**
 * `escalate`: the AI handed the conversation to a person; it is now `escalated` and the AI stays
 * silent. `reason`: `no_answer` (nothing answered the question), `handover` (the model decided a
 * person is needed), `ai_unavailable` (the model could not be reached), `guardrail` (an abusive message,
 * not passed to the model), `unverified` (the draft failed the verifier twice). `detail` says why in words,
 * `summary` is for the human agent; `messageId` is the hand-over message sent to the customer, if any.
 */
export const EscalateData = Schema.Struct({
  reason: EscalationReason,
  detail: Schema.String,
  summary: Schema.String,
  messageId: Schema.NullOr(MessageId)
}).annotate({ identifier: "EscalateData" })

/**
 * Why a conversation was closed: `resolved` (the AI closed it, the customer's problem solved;
 * `closeTicket`), `inactivity` (the customer stayed silent; `conversationTimeout`).
 */
export const CloseReason = Schema.Literals(["resolved", "inactivity"])
export type CloseReason = typeof CloseReason.Type

/**
 * `close_conversation`: the conversation is closed, `reason` says why; `messageId` is the goodbye, if one
 * was sent.
 */
export const CloseConversationData = Schema.Struct({
  summary: Schema.String,
  messageId: Schema.NullOr(MessageId),
  reason: CloseReason
}).annotate({ identifier: "CloseConversationData" })

/** `conversation_summary`: a summary for the human agent, at a hand-over or a close. */
export const ConversationSummaryData = Schema.Struct({
  summary: Schema.String,
  at: Schema.Literals(["escalation", "close"])
}).annotate({ identifier: "ConversationSummaryData" })

/** `conversation_title`: a short title, after the conversation's first exchange. */
export const ConversationTitleData = Schema.Struct({ title: Schema.String }).annotate({
  identifier: "ConversationTitleData"
})

/** `send_csat`: the conversation was closed; ask the customer for a rating (then POST csat-response-received). */
export const SendCsatData = Schema.Struct({}).annotate({ identifier: "SendCsatData" })

/**
 * `message_delta` (`streaming`): the AI's message `messageId` while it is written: `text` is the text so
 * far (not an increment), `sequence` counts the message's deltas from 1. At most one every 300 ms; the
 * final `send_messages` with the same message id carries the whole text and always follows. A delta is
 * delivered at most once (never retried): a receiver that missed one shows the next.
 */
export const MessageDeltaData = Schema.Struct({
  messageId: MessageId,
  sequence: Schema.Int,
  text: Schema.String
}).annotate({ identifier: "MessageDeltaData" })

/**
 * Each event kind's `data`. A kind added to `EventKind` without its schema here (or the other way round)
 * does not compile.
 */
export const EventData = {
  send_messages: SendMessagesData,
  typing: TypingData,
  escalate: EscalateData,
  close_conversation: CloseConversationData,
  conversation_summary: ConversationSummaryData,
  conversation_title: ConversationTitleData,
  send_csat: SendCsatData,
  message_delta: MessageDeltaData
} as const satisfies { readonly [K in EventKind]: Schema.Top }

/** The `data` of a `K` event as Parley holds it (messages with their `DateTime`s), before it is encoded. */
export type EventDataOf<K extends EventKind> = (typeof EventData)[K]["Type"]
