/**
 * The contract of the LLM agent (`Agent.ts`): which model to call, what the caller gives it, and what it
 * answers. Plain data, no I/O. The caller (the `generate_reply` job) resolves the settings per
 * workspace, loads history and passages, and stores the reply with its metadata.
 */
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { Texts } from "../Texts.js"

export const Provider = Schema.Literals(["openai", "anthropic"])
export type Provider = typeof Provider.Type

/**
 * `chat` = `POST {base}/chat/completions` (what OpenAI-compatible servers speak: vLLM, Ollama,
 * llama.cpp, LiteLLM); `responses` = OpenAI's Responses API (`POST {base}/responses`).
 */
export const OpenAiApi = Schema.Literals(["chat", "responses"])
export type OpenAiApi = typeof OpenAiApi.Type

/** Which model a call uses. Built per call: one workspace's key is never used for another. */
export const ModelSettings = Schema.Struct({
  provider: Provider,
  model: Schema.Trimmed.check(Schema.isNonEmpty()),
  /** Empty for servers that take no key (a local Ollama): then no credential header is sent. */
  apiKey: Schema.Redacted(Schema.String),
  /**
   * The vendor SDKs' base URL, ending in `/v1` (`https://api.openai.com/v1`,
   * `https://api.anthropic.com/v1`, `http://localhost:11434/v1`); `undefined` = the vendor's own.
   */
  baseUrl: Schema.UndefinedOr(Schema.String),
  /** Only read when `provider` is `openai`. */
  openAiApi: OpenAiApi
})
export type ModelSettings = typeof ModelSettings.Type

/** A knowledge-base passage: what retrieval finds, what the model may cite. */
export const Passage = Schema.Struct({
  articleId: Schema.String,
  title: Schema.String,
  url: Schema.NullOr(Schema.String),
  heading: Schema.NullOr(Schema.String),
  text: Schema.String
})
export type Passage = typeof Passage.Type

export const HistoryRole = Schema.Literals(["human", "ai", "agent", "system"])
export type HistoryRole = typeof HistoryRole.Type

export const HistoryMessage = Schema.Struct({
  role: HistoryRole,
  text: Schema.String,
  /** ISO 8601. */
  sentAt: Schema.String
})
export type HistoryMessage = typeof HistoryMessage.Type

/** The integration's `supportedFeatures` flags the agent acts on. */
export const AgentFeatures = Schema.Struct({
  /** Offers `escalate_to_human`. */
  escalation: Schema.Boolean,
  /** Offers `close_conversation`. */
  closeTicket: Schema.Boolean,
  /** Offers `get_past_conversations`. */
  getPastConversationsTool: Schema.Boolean,
  /** `retrieved` passages are put in the prompt before the first model call. */
  preemptiveRetrieval: Schema.Boolean,
  /** `tone` instructions are put in the prompt. */
  tone: Schema.Boolean
})
export type AgentFeatures = typeof AgentFeatures.Type

export const Tone = Schema.Struct({ name: Schema.String, instructions: Schema.String })
export type Tone = typeof Tone.Type

export const PastConversation = Schema.Struct({
  id: Schema.String,
  createdAt: Schema.String,
  status: Schema.String,
  title: Schema.NullOr(Schema.String),
  messages: Schema.Array(Schema.Struct({ role: Schema.String, text: Schema.String }))
})
export type PastConversation = typeof PastConversation.Type

/** What the model may call back into. Both are the caller's, bounded by the caller. */
export interface AgentTools {
  /** The same retrieval as the embedded responder, over the workspace's articles; best first. */
  readonly searchKnowledge: (query: string) => Effect.Effect<ReadonlyArray<Passage>>
  /** The same customer's earlier conversations in the same workspace (not this one), newest first. */
  readonly pastConversations: () => Effect.Effect<ReadonlyArray<PastConversation>>
}

/** A customer message the reply answers; with images for models that read them (`imageAttachments`). */
export interface UnansweredMessage {
  readonly text: string
  readonly images?: ReadonlyArray<{ readonly url: string; readonly mediaType: string }> | undefined
}

export interface AgentRequest {
  readonly settings: ModelSettings
  readonly features: AgentFeatures
  /** The caller's choice: `firstResponseTone` for the first reply, `tone` for later ones; or none. */
  readonly tone: Tone | null
  /** The conversation before `unanswered`, oldest first, bounded by the caller. */
  readonly history: ReadonlyArray<HistoryMessage>
  /** The customer messages this reply answers, oldest first (at least one). */
  readonly unanswered: ReadonlyArray<UnansweredMessage>
  /** Preemptive retrieval results, best first; empty when `features.preemptiveRetrieval` is off. */
  readonly retrieved: ReadonlyArray<Passage>
  readonly tools: AgentTools
  /** Most model calls for this reply (the tool loop's bound). */
  readonly maxTurns: number
  /** Parley's own texts in the customer's language (the hand-over, fallback and goodbye defaults). */
  readonly texts?: Texts | undefined
  /** The business's standing instructions in force (the workspace's, then the integration's). */
  readonly instructions?: ReadonlyArray<string> | undefined
  /** What the integration lets the model know about the customer, as data; none by default. */
  readonly customerData?: { readonly [path: string]: unknown } | null | undefined
  /**
   * A redraft (`verifier`): why the previous draft failed the check. The model is told, and asked to
   * answer again from the passages only.
   */
  readonly correction?: string | undefined
  /**
   * Streaming (`streaming`): called with the answer's text so far as the model writes it (citation
   * markers removed). The model is then called with streaming.
   */
  readonly onText?: ((text: string) => Effect.Effect<void>) | undefined
}

export const AgentAction = Schema.Union([
  Schema.TaggedStruct("Answer", {}),
  /** Hand the conversation to a person: `reason` says why, `summary` is for the human agent. */
  Schema.TaggedStruct("Escalate", { reason: Schema.String, summary: Schema.String }),
  /** The customer's issue is resolved: close the conversation. */
  Schema.TaggedStruct("Close", { summary: Schema.String })
])
export type AgentAction = typeof AgentAction.Type

export const Usage = Schema.Struct({ inputTokens: Schema.Int, outputTokens: Schema.Int })
export type Usage = typeof Usage.Type

/** Two calls' tokens together. */
export const addUsage = (a: Usage, b: Usage): Usage => ({
  inputTokens: a.inputTokens + b.inputTokens,
  outputTokens: a.outputTokens + b.outputTokens
})

/** A passage as the model saw it: its number (`[n]`), title, heading, link and text. */
export const PassageForVerifier = Schema.Struct({
  ref: Schema.Int,
  title: Schema.String,
  url: Schema.NullOr(Schema.String),
  heading: Schema.NullOr(Schema.String),
  text: Schema.String
})

/** A verifier's verdict from a model (`verifier`, `verifierResolution`): strict JSON, nothing else. */
export const ModelVerdict = Schema.Struct({
  supported: Schema.Boolean,
  unsupportedClaims: Schema.Array(Schema.String),
  resolved: Schema.NullOr(Schema.Boolean)
})
export type ModelVerdict = typeof ModelVerdict.Type

/** A guardrail classifier's verdict on one customer message (`customerMessageGuardrails`): strict JSON. */
export const ModelScreening = Schema.Struct({
  verdict: Schema.Literals(["safe", "prompt_injection", "abuse"]),
  reason: Schema.String
})
export type ModelScreening = typeof ModelScreening.Type

export const AgentReply = Schema.Struct({
  /**
   * What the customer gets; never empty. With Escalate or Close it is the model's message for the
   * hand-over or the goodbye (or Parley's default one), which the caller sends or not according to
   * `messageInEscalation` / `messageInEndConversation`.
   */
  text: Schema.String,
  action: AgentAction,
  /** The passages the reply cites (given in the prompt or found with `search_knowledge`), in citation order. */
  citations: Schema.Array(Passage),
  /** Summed over every model turn (retried attempts that failed are not billed by the providers). */
  usage: Usage,
  provider: Provider,
  model: Schema.String,
  /** Model calls that answered (the tool loop's turns). */
  turns: Schema.Int,
  latencyMs: Schema.Number,
  /** The model's own text, citation markers included: what the verifier checks. */
  draft: Schema.String,
  /** Every passage the model saw, numbered as its markers name them. */
  sources: Schema.Array(PassageForVerifier)
})
export type AgentReply = typeof AgentReply.Type

/** A plain model call's result: a conversation title or a summary for the human agent. */
export const GeneratedText = Schema.Struct({
  text: Schema.String,
  usage: Usage,
  provider: Provider,
  model: Schema.String,
  latencyMs: Schema.Number
})
export type GeneratedText = typeof GeneratedText.Type

export interface ConversationRequest {
  readonly settings: ModelSettings
  /** The whole conversation so far, oldest first, bounded by the caller. */
  readonly history: ReadonlyArray<HistoryMessage>
}
