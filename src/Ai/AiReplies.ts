/**
 * The reply service behind `generate_reply`: one interface, two kinds of provider. The embedded
 * knowledge-base responder (`Embedded.ts`, the offline default) and language models through effect/ai
 * (`ModelReplies.ts`: OpenAI, OpenAI-compatible servers, Anthropic), chosen per request by the
 * `ReplyModel` the caller resolved (`ModelSettingsFor`).
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { Conversation, Message } from "../Domain/Conversation.js"
import type { ReplyAction } from "../Domain/AiOutcome.js"
import type { Integration } from "../Domain/Integration.js"
import type { HistoryMessage, ModelSettings, Passage, Provider, Tone, Usage } from "./Llm/Contract.js"
import type { AiUnavailable } from "./Llm/Errors.js"
import type { InactivityText } from "./Llm/Prompt.js"
import type { ReplyModel } from "./ModelSettingsFor.js"
import type { Language } from "./Texts.js"
import type { SourcePassage } from "./Verifier.js"

/** What a responder asks of the conversation besides answering (the same as an outcome's action). */
export type { ReplyAction }

export interface ReplyRequest {
  readonly integration: Integration
  readonly conversation: Conversation
  /** Recent messages of the conversation, oldest first. */
  readonly history: ReadonlyArray<Message>
  /** The customer's messages this reply answers (those since the last AI or agent message). */
  readonly unanswered: ReadonlyArray<Message>
  /** The model to use; absent: the embedded responder. */
  readonly model?: ReplyModel
  /** The tone for this reply (`firstResponseToneId` or `toneId`), when the `tone` flag is on. */
  readonly tone?: Tone | null
  /** The business's standing instructions in force, for a model. */
  readonly instructions?: ReadonlyArray<string> | undefined
  /** What the integration lets the model know about the customer (`channelsSettings.customerData`). */
  readonly customerData?: { readonly [path: string]: unknown } | null | undefined
  /** The customer's language, for Parley's own texts (src/Ai/Texts.ts); English when absent. */
  readonly language?: Language | undefined
  /** A redraft (`verifier`): why the previous draft failed the check. */
  readonly correction?: string | undefined
  /** Streaming (`streaming`): hears the answer's text so far as a model writes it. */
  readonly onText?: ((text: string) => Effect.Effect<void>) | undefined
}

export interface Reply {
  /**
   * What the customer reads. With `Escalate` / `Close` it is the hand-over note or the goodbye, which
   * the caller sends according to `messageInEscalation` / `messageInEndConversation`.
   */
  readonly text: string
  readonly action: ReplyAction
  /** The knowledge-base passages the reply is built on, with their articles' links. */
  readonly citations: ReadonlyArray<Passage>
  readonly provider: "embedded" | Provider
  /** `null` for the embedded responder. */
  readonly model: string | null
  /** Summed over the model's turns; zero for the embedded responder. */
  readonly usage: Usage
  /** Model calls that answered (0 for the embedded responder). */
  readonly turns: number
  /** What the verifier checks: the text as written, citation markers included ("" for a fallback). */
  readonly draft: string
  /** The passages the draft could cite, numbered as its markers name them. */
  readonly sources: ReadonlyArray<SourcePassage>
}

/** A draft to check (`verifier`), and whether to check that the customer's problem is solved. */
export interface VerifyRequest {
  readonly model: ReplyModel
  readonly draft: string
  readonly sources: ReadonlyArray<SourcePassage>
  /** The customer's messages the draft answers. */
  readonly customer: ReadonlyArray<string>
  /** `verifierResolution`: also judge whether the customer's problem is solved. */
  readonly resolution: boolean
}

/** The verifier's verdict: `lexical` without a model, `model` with one. */
export interface Verification {
  readonly method: "lexical" | "model"
  readonly supported: boolean
  /** Why it is not supported, in one line (for the log, the record and the redraft); null when it is. */
  readonly reason: string | null
  /** Whether the customer's problem is solved; null when not asked. */
  readonly resolved: boolean | null
  readonly usage: Usage
}

/** The guardrail classifier's verdict on one customer message, from a model. */
export interface Screening {
  readonly verdict: "safe" | "prompt_injection" | "abuse"
  readonly reason: string
  readonly usage: Usage
}

/** A conversation's title or summary. */
export interface Generated {
  readonly text: string
  readonly usage: Usage
}

export interface TextRequest {
  readonly model: ReplyModel
  /** The conversation, oldest first. */
  readonly history: ReadonlyArray<HistoryMessage>
}

export interface InactivityRequest extends TextRequest {
  readonly kind: InactivityText
  readonly tone: Tone | null
  /** The bundled text's language, without a model. */
  readonly language: Language
}

export class AiReplies extends Context.Service<
  AiReplies,
  {
    readonly reply: (request: ReplyRequest) => Effect.Effect<Reply, AiUnavailable>
    /** A short title for the conversation (`conversationTitle`). */
    readonly title: (request: TextRequest) => Effect.Effect<Generated, AiUnavailable>
    /** A summary for the human agent (`conversationSummary`). */
    readonly summary: (request: TextRequest) => Effect.Effect<Generated, AiUnavailable>
    /** Checks a draft against its sources (`verifier`): lexical without a model, the model's judgement with one. */
    readonly verify: (request: VerifyRequest) => Effect.Effect<Verification, AiUnavailable>
    /** The model's verdict on one customer message (`customerMessageGuardrails`, after the rule set). */
    readonly screen: (model: ModelSettings, message: string) => Effect.Effect<Screening, AiUnavailable>
    /** The check-in after a silence, or the goodbye of a close for inactivity, in the conversation's tone. */
    readonly inactivity: (request: InactivityRequest) => Effect.Effect<Generated, AiUnavailable>
  }
>()("Parley/AiReplies") {}

export const noUsage: Usage = { inputTokens: 0, outputTokens: 0 }
