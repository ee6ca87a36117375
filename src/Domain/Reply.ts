import * as Model from "effect/schema/Model"
import * as Schema from "effect/Schema"
import { Passage } from "../Ai/Llm/Contract.js"
import { CreatedAt, Internal, Jsonb } from "./Fields.js"
import { ConversationId, MessageId, WorkspaceId } from "./Ids.js"

export const ReplyActionName = Schema.Literals(["answer", "escalate", "close"])
export type ReplyActionName = typeof ReplyActionName.Type

/**
 * What answered one trigger (the customer message a reply job ran for) and what produced it: a row
 * of `reply_metadata`. One per trigger, whether or not a message was sent.
 */
export class ReplyRecord extends Model.Class<ReplyRecord>("ReplyRecord")({
  triggerMessageId: MessageId,
  conversationId: ConversationId,
  workspaceId: Internal(WorkspaceId),
  /** The message sent to the customer; `null` when the outcome sent none (a hand-over without a message). */
  messageId: Schema.NullOr(MessageId),
  action: ReplyActionName,
  /** A hand-over's reason: `no_answer`, `handover` or `ai_unavailable`. */
  reason: Schema.NullOr(Schema.String),
  /** `embedded`, `openai` or `anthropic`. */
  provider: Schema.String,
  model: Schema.NullOr(Schema.String),
  /** Tokens of every model call the trigger caused: the reply's turns, and its title and summary. */
  inputTokens: Schema.Int,
  outputTokens: Schema.Int,
  /** Model calls of the reply's tool loop (0 for the embedded responder). */
  turns: Schema.Int,
  /** From the start of generation to the reply being ready (model calls and retries included). */
  latencyMs: Schema.Int,
  /** The knowledge-base passages the reply is built on, with their articles' links. */
  citations: Jsonb(Schema.Array(Passage)),
  /** Why the model could not be used (`AiUnavailable`), when the reply is the fallback. */
  error: Schema.NullOr(Schema.String),
  /** The title generated after the conversation's first exchange (`conversationTitle`). */
  title: Schema.NullOr(Schema.String),
  /** The summary generated at a hand-over or close (`conversationSummary`). */
  summary: Schema.NullOr(Schema.String),
  createdAt: CreatedAt
}) {}

export const ReplyRecordJson = ReplyRecord.json.annotate({
  identifier: "ReplyRecord",
  description: "What answered a customer message and what produced it: provider, model, tokens, latency, passages."
})
