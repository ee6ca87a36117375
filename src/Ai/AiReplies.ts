/**
 * The reply service behind `generate_reply`. Providers implement it: the embedded knowledge-base
 * responder (default, offline) now; LLM providers through @effect/ai plug in as other layers.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { Conversation, Message } from "../Domain/Conversation.js"
import type { Integration } from "../Domain/Integration.js"

export interface ReplyRequest {
  readonly integration: Integration
  readonly conversation: Conversation
  /** Recent messages of the conversation, oldest first. */
  readonly history: ReadonlyArray<Message>
  /** The customer's messages this reply answers (those since the last AI or agent message). */
  readonly unanswered: ReadonlyArray<Message>
}

export interface Source {
  readonly title: string
  readonly url: string | null
}

export interface Reply {
  readonly text: string
  /** The AI hands the conversation to a person. */
  readonly escalate: boolean
  readonly sources: ReadonlyArray<Source>
  readonly provider: string
  /** Tokens used, when the provider counts them. */
  readonly usage?: { readonly inputTokens: number; readonly outputTokens: number }
}

export class AiError extends Schema.TaggedError<AiError>()("AiError", {
  message: Schema.String,
  retryable: Schema.Boolean
}) {}

export class AiReplies extends Context.Tag("Parley/AiReplies")<
  AiReplies,
  { readonly reply: (request: ReplyRequest) => Effect.Effect<Reply, AiError> }
>() {}
