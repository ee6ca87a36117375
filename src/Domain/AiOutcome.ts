/**
 * What the AI makes of a customer's messages (the `generate_reply` job, docs/ai.md): the message the
 * customer gets, what the AI asks of the conversation, and how the outcome was produced. A value, no
 * I/O: the AI side (`Replies.decide`, src/Ai/GenerateReply.ts) produces it without touching the
 * conversation; the conversation side (`ReplyWorkflow.apply`, src/Conversations/ReplyWorkflow.ts)
 * applies it: the stored message, the status, the events, the CSAT survey.
 */
import type * as DateTime from "effect/DateTime"
import type { EscalationReason } from "./EventData.js"
import type { MessageId } from "./Ids.js"
import type { InstructionsUsed } from "./Instructions.js"
import type { Language } from "./Language.js"
import type { GuardrailDecisionRecord, ReplyRecord, VerificationRecord } from "./Reply.js"

/** What the AI asks of the conversation besides answering: nothing more, a hand-over, or a close. */
export type ReplyAction =
  | { readonly _tag: "Answer" }
  | {
    readonly _tag: "Escalate"
    /** The `escalate` event's `reason`. */
    readonly reason: EscalationReason
    /** In words, for the human agent. */
    readonly detail: string
    /** For the human agent: what the customer wants. */
    readonly summary: string
  }
  | { readonly _tag: "Close"; readonly summary: string }

/** How an outcome was produced: the figures of its `reply_metadata` row. */
export interface ReplyProvenance {
  /** `embedded`, `openai` or `anthropic`. */
  readonly provider: string
  /** `null` for the embedded responder. */
  readonly model: string | null
  /** The reply's turns plus its title and summary calls. */
  readonly inputTokens: number
  readonly outputTokens: number
  /**
   * Model calls of the reply: its tool loop's, the verifier's and the guardrail classifier's (0 for the
   * embedded responder; the title and summary calls are not counted here).
   */
  readonly turns: number
  /** From the start of generation to the reply being ready. */
  readonly latencyMs: number
  /** Why the model could not be used, when the reply is the fallback. */
  readonly error: string | null
}

export interface AiOutcome {
  /** The customer message the reply job ran for: one outcome per trigger. */
  readonly trigger: MessageId
  /** When the earliest message this reply answers was received (end-to-end latency starts there). */
  readonly originAt: DateTime.Utc
  /**
   * What the customer reads, `null` for none: an answer always; a hand-over note or a goodbye only
   * where the integration takes one (`messageInEscalation`, `messageInEndConversation`).
   */
  readonly text: string | null
  /**
   * The id the message was announced with while it was written (`message_delta` events, `streaming`);
   * `null`: the message gets its id when stored.
   */
  readonly streamedAs: MessageId | null
  /** The knowledge-base passages the reply is built on, with their articles' links. */
  readonly citations: ReplyRecord["citations"]
  /** Only what the integration allows (`escalation`, `closeTicket`): a refused action is an answer. */
  readonly action: ReplyAction
  /** Asks for the customer's rating once the conversation is over; the integration's `csat` flag decides. */
  readonly requestCsat: boolean
  /** The conversation's title (`conversationTitle`, after its first exchange), if one was generated. */
  readonly title: string | null
  /** A summary for the human agent (`conversationSummary`, at a hand-over or close), if one was generated. */
  readonly summary: string | null
  readonly provenance: ReplyProvenance
  /** The guardrail's decision on each message answered; null without `customerMessageGuardrails`. */
  readonly guardrails: ReadonlyArray<GuardrailDecisionRecord> | null
  /** The verifier's verdicts; null when nothing was verified. */
  readonly verification: VerificationRecord | null
  /** The versions of standing instructions the model followed; null when none. */
  readonly instructions: ReadonlyArray<InstructionsUsed> | null
  /** The customer's language as this reply decided it: stored on the conversation. */
  readonly language: Language
}
