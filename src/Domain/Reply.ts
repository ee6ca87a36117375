import * as Model from "effect/schema/Model"
import * as Schema from "effect/Schema"
import { Passage } from "../Ai/Llm/Contract.js"
import { CreatedAt, Internal, Jsonb, NullableJsonb } from "./Fields.js"
import { ConversationId, MessageId, WorkspaceId } from "./Ids.js"
import { InstructionsUsed } from "./Instructions.js"

export const ReplyActionName = Schema.Literals(["answer", "escalate", "close"])
export type ReplyActionName = typeof ReplyActionName.Type

/**
 * The guardrail's decision on one customer message (`customerMessageGuardrails`): `pass` (it reached the
 * model as it is), `redact` (with its secrets replaced), `block` (not at all: a safe reply or a
 * hand-over instead). `by`: the rule set, or the model classifier after it. `rules`: the ids of the rules
 * that matched (docs/ai.md), or the classifier's reason.
 */
export const GuardrailDecisionRecord = Schema.Struct({
  messageId: MessageId,
  action: Schema.Literals(["pass", "redact", "block"]),
  categories: Schema.Array(Schema.Literals(["prompt_injection", "abuse", "secret"])),
  rules: Schema.Array(Schema.String),
  by: Schema.Literals(["rules", "model"])
}).annotate({ identifier: "GuardrailDecision" })
export type GuardrailDecisionRecord = typeof GuardrailDecisionRecord.Type

/**
 * The verifier's verdicts on a reply (`verifier`, `verifierResolution`): `lexical` without a model,
 * `model` with one; each checked draft's verdict (the first, then the redraft's); what went out
 * (`passed`, `redrafted`, `escalated`, `fallback`, or `unchecked` when only the resolution was
 * checked); and, for a close, whether the customer's problem was confirmed solved (a close not confirmed
 * is sent as an answer and the conversation stays open).
 */
export const VerificationRecord = Schema.Struct({
  method: Schema.Literals(["lexical", "model"]),
  drafts: Schema.Array(Schema.Struct({ supported: Schema.Boolean, reason: Schema.NullOr(Schema.String) })),
  outcome: Schema.Literals(["passed", "redrafted", "escalated", "fallback", "unchecked"]),
  resolution: Schema.NullOr(Schema.Struct({ confirmed: Schema.Boolean }))
}).annotate({ identifier: "Verification" })
export type VerificationRecord = typeof VerificationRecord.Type

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
  /** A hand-over's reason (`EscalationReason`: `no_answer`, `handover`, `ai_unavailable`, `guardrail`, `unverified`). */
  reason: Schema.NullOr(Schema.String),
  /** `embedded`, `openai` or `anthropic`. */
  provider: Schema.String,
  model: Schema.NullOr(Schema.String),
  /** Tokens of every model call the trigger caused: the reply's turns, and its title and summary. */
  inputTokens: Schema.Int,
  outputTokens: Schema.Int,
  /**
   * Model calls of the reply: its tool loop's, the verifier's and the guardrail classifier's (0 for the
   * embedded responder; the title and summary calls are not counted here).
   */
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
  /** The guardrail's decision on each message the reply answers; null without `customerMessageGuardrails`. */
  guardrails: NullableJsonb(Schema.Array(GuardrailDecisionRecord)),
  /** The verifier's verdicts; null when nothing was verified. */
  verification: NullableJsonb(VerificationRecord),
  /** The versions of standing instructions the model followed; null when there were none (or no model). */
  instructions: NullableJsonb(Schema.Array(InstructionsUsed)),
  createdAt: CreatedAt
}) {}

export const ReplyRecordJson = ReplyRecord.json.annotate({
  identifier: "ReplyRecord",
  description: "What answered a customer message and what produced it: provider, model, tokens, latency, passages."
})
