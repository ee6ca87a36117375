/**
 * An `effect/ai` `LanguageModel` over Anthropic's Messages API (`POST {host}/v1/messages?beta=true`).
 * Parley's own adapter, written like `OpenAiChat.ts`: the `@effect/ai-anthropic` package that used to
 * speak this API exists for Effect 4 only as a beta built on modules the installed Effect does not have.
 *
 * What it sends is what that package sent for Parley's calls: `max_tokens` (Anthropic requires a
 * bound), the model, the system prompt as text blocks, the conversation as alternating user and
 * assistant messages (tool results in the user's turn, `tool_use` blocks in the assistant's), and the
 * offered tools with the tool choice; `x-api-key` and `anthropic-version` headers (`Providers.ts`).
 * Thinking is not enabled, and thinking blocks are not sent back. The answer is read with a lenient
 * schema: only the fields Parley uses. Server tools (web search, code execution) are never offered, so
 * their blocks are ignored.
 */
import type * as AiError from "effect/ai/AiError"
import * as LanguageModel from "effect/ai/LanguageModel"
import type * as Prompt from "effect/ai/Prompt"
import type * as Response from "effect/ai/Response"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as HttpClient from "effect/http/HttpClient"
import type * as JsonSchema from "effect/JsonSchema"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type { Span } from "effect/Tracer"
import * as Wire from "./Wire.js"

const MODULE = "AnthropicMessages"

/** The API version the `anthropic-version` header names. */
export const ANTHROPIC_VERSION = "2023-06-01"

// ---------------------------------------------------------------------------------------------------
// The request, as Parley sends it
// ---------------------------------------------------------------------------------------------------

export type ContentBlock =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "image"; readonly source: { readonly type: "url"; readonly url: string } }
  | { readonly type: "tool_use"; readonly id: string; readonly name: string; readonly input: unknown }
  | { readonly type: "tool_result"; readonly tool_use_id: string; readonly content: string; readonly is_error: boolean }

export interface MessageParam {
  readonly role: "user" | "assistant"
  readonly content: ReadonlyArray<ContentBlock>
}

export interface ToolParam {
  readonly name: string
  readonly description?: string
  readonly input_schema: JsonSchema.JsonSchema
}

export type ToolChoice =
  | { readonly type: "auto" }
  | { readonly type: "any" }
  | { readonly type: "tool"; readonly name: string }

export interface SystemBlock {
  readonly type: "text"
  readonly text: string
}

export interface MessagesRequest {
  readonly max_tokens: number
  readonly model: string
  readonly system?: ReadonlyArray<SystemBlock>
  readonly messages: ReadonlyArray<MessageParam>
  readonly tools?: ReadonlyArray<ToolParam>
  readonly tool_choice?: ToolChoice
}

// ---------------------------------------------------------------------------------------------------
// The answer, as far as Parley reads it
// ---------------------------------------------------------------------------------------------------

const maybe = <S extends Schema.Top>(schema: S) => Schema.optional(Schema.NullOr(schema))

/** One `content` block; which fields it has depends on its `type` (`text`, `tool_use`, `thinking`, …). */
const Block = Schema.Struct({
  type: Schema.String,
  /** `text`. */
  text: maybe(Schema.String),
  /** `tool_use`. */
  id: maybe(Schema.String),
  name: maybe(Schema.String),
  input: Schema.optional(Schema.Unknown),
  /** `thinking`. */
  thinking: maybe(Schema.String)
})

export const Message = Schema.Struct({
  id: maybe(Schema.String),
  model: maybe(Schema.String),
  content: Schema.Array(Block),
  stop_reason: maybe(Schema.String),
  stop_sequence: maybe(Schema.String),
  usage: maybe(Schema.Struct({
    input_tokens: maybe(Schema.Number),
    output_tokens: maybe(Schema.Number),
    cache_read_input_tokens: maybe(Schema.Number),
    cache_creation_input_tokens: maybe(Schema.Number)
  }))
})
export type Message = typeof Message.Type

// ---------------------------------------------------------------------------------------------------
// Prompt → messages
// ---------------------------------------------------------------------------------------------------

type Group =
  | { readonly type: "system"; readonly messages: Array<Prompt.SystemMessage> }
  | { readonly type: "assistant"; readonly messages: Array<Prompt.AssistantMessage> }
  | { readonly type: "user"; readonly messages: Array<Prompt.UserMessage | Prompt.ToolMessage> }

/** Consecutive messages of one side in one turn: Anthropic wants user and assistant to alternate. */
const groupMessages = (prompt: Prompt.Prompt): Array<Group> => {
  const groups: Array<Group> = []
  let current: Group | undefined = undefined
  for (const message of prompt.content) {
    switch (message.role) {
      case "system": {
        if (current?.type !== "system") {
          current = { type: "system", messages: [] }
          groups.push(current)
        }
        current.messages.push(message)
        break
      }
      case "assistant": {
        if (current?.type !== "assistant") {
          current = { type: "assistant", messages: [] }
          groups.push(current)
        }
        current.messages.push(message)
        break
      }
      case "tool":
      case "user": {
        if (current?.type !== "user") {
          current = { type: "user", messages: [] }
          groups.push(current)
        }
        current.messages.push(message)
        break
      }
    }
  }
  return groups
}

export const toMessages = (
  prompt: Prompt.Prompt
): Effect.Effect<
  { readonly system: ReadonlyArray<SystemBlock> | undefined; readonly messages: Array<MessageParam> },
  AiError.AiError
> =>
  Effect.gen(function*() {
    const groups = groupMessages(prompt)
    let system: Array<SystemBlock> | undefined = undefined
    const messages: Array<MessageParam> = []
    for (let i = 0; i < groups.length; i++) {
      const group = groups[i]
      if (group === undefined) continue
      const isLastGroup = i === groups.length - 1
      switch (group.type) {
        case "system": {
          system = group.messages.map((message) => ({ type: "text", text: message.content }))
          break
        }
        case "user": {
          const content: Array<ContentBlock> = []
          for (const message of group.messages) {
            if (message.role === "user") {
              for (const part of message.content) {
                if (part.type !== "text") {
                  const url = Wire.imageUrlOf(part)
                  if (url === undefined) {
                    return yield* Wire.unsupported(
                      MODULE,
                      `file parts (${part.mediaType}) are not supported by Parley's Anthropic model`
                    )
                  }
                  content.push({ type: "image", source: { type: "url", url } })
                  continue
                }
                content.push({ type: "text", text: part.text })
              }
            } else {
              for (const part of message.content) {
                if (part.type === "tool-result") {
                  content.push({
                    type: "tool_result",
                    tool_use_id: part.id,
                    content: Wire.toolResultText(part),
                    is_error: part.isFailure
                  })
                }
              }
            }
          }
          messages.push({ role: "user", content })
          break
        }
        case "assistant": {
          const content: Array<ContentBlock> = []
          group.messages.forEach((message, j) => {
            const isLastMessage = j === group.messages.length - 1
            message.content.forEach((part, k) => {
              const isLastPart = k === message.content.length - 1
              switch (part.type) {
                case "text": {
                  // Anthropic does not allow trailing whitespace in the final assistant content block.
                  const last = isLastGroup && isLastMessage && isLastPart
                  content.push({ type: "text", text: last ? part.text.trim() : part.text })
                  break
                }
                case "tool-call": {
                  if (!part.providerExecuted) {
                    content.push({ type: "tool_use", id: part.id, name: part.name, input: part.params })
                  }
                  break
                }
              }
            })
          })
          messages.push({ role: "assistant", content })
          break
        }
      }
    }
    return { system, messages }
  })

/** The offered tools and the tool choice; neither without tools or with `none`. */
export const toTools = (
  options: Pick<LanguageModel.ProviderOptions, "tools" | "toolChoice">
): { readonly tools?: Array<ToolParam>; readonly tool_choice?: ToolChoice } => {
  const choice = options.toolChoice
  if (options.tools.length === 0 || choice === "none") return {}
  const tools = Wire.functionTools(options).map((tool): ToolParam => ({
    name: tool.name,
    ...(tool.description === undefined ? {} : { description: tool.description }),
    input_schema: tool.parameters
  }))
  const tool_choice: ToolChoice = choice === "auto"
    ? { type: "auto" }
    : choice === "required"
    ? { type: "any" }
    : "tool" in choice
    ? { type: "tool", name: choice.tool }
    : { type: choice.mode === "required" ? "any" : "auto" }
  return { tools, tool_choice }
}

// ---------------------------------------------------------------------------------------------------
// Answer → response parts
// ---------------------------------------------------------------------------------------------------

const finishReasons: Record<string, Response.FinishReason> = {
  end_turn: "stop",
  max_tokens: "length",
  pause_turn: "pause",
  refusal: "content-filter",
  stop_sequence: "stop",
  tool_use: "tool-calls"
}

/** The answer as `effect/ai` response parts; `toolNames`: the tools the caller can run (see `Wire.knownTool`). */
export const fromMessage = (
  message: Message,
  toolNames?: ReadonlyArray<string>
): Effect.Effect<Array<Response.PartEncoded>, AiError.AiError> =>
  Effect.gen(function*() {
    const parts: Array<Response.PartEncoded> = [{
      type: "response-metadata",
      ...(message.id === undefined || message.id === null ? {} : { id: message.id }),
      ...(message.model === undefined || message.model === null ? {} : { modelId: message.model }),
      // The Messages API does not say when it answered.
      timestamp: DateTime.formatIso(yield* DateTime.now)
    }]
    for (const block of message.content) {
      switch (block.type) {
        case "text": {
          parts.push({ type: "text", text: block.text ?? "" })
          break
        }
        case "thinking": {
          // Read for the response's `reasoningText`; not sent back (see above).
          parts.push({ type: "reasoning", text: block.thinking ?? "" })
          break
        }
        case "tool_use": {
          const id = block.id ?? undefined
          const name = block.name ?? undefined
          if (id === undefined || name === undefined) {
            return yield* Wire.unreadable(MODULE, "A tool_use block without an id or name")
          }
          yield* Wire.knownTool(MODULE, toolNames, name)
          parts.push({ type: "tool-call", id, name, params: block.input ?? {}, providerExecuted: false })
          break
        }
      }
    }
    const stopSequence = message.stop_sequence ?? undefined
    parts.push({
      type: "finish",
      reason: finishReasons[message.stop_reason ?? ""] ?? "unknown",
      usage: {
        inputTokens: {
          total: message.usage?.input_tokens ?? undefined,
          cacheRead: message.usage?.cache_read_input_tokens ?? undefined,
          cacheWrite: message.usage?.cache_creation_input_tokens ?? undefined
        },
        outputTokens: { total: message.usage?.output_tokens ?? undefined }
      },
      ...(stopSequence === undefined ? {} : { metadata: { anthropic: { stopSequence } } })
    })
    return parts
  })

// ---------------------------------------------------------------------------------------------------
// Telemetry
// ---------------------------------------------------------------------------------------------------

const annotateRequest = (span: Span, request: MessagesRequest): void =>
  Wire.annotate(span, {
    system: "anthropic",
    operation: { name: "chat" },
    request: { model: request.model, maxTokens: request.max_tokens, stopSequences: [] }
  })

const annotateResponse = (span: Span, message: Message): void =>
  Wire.annotate(span, {
    response: {
      id: message.id,
      model: message.model,
      finishReasons: message.stop_reason === undefined || message.stop_reason === null ? undefined : [message.stop_reason]
    },
    usage: { inputTokens: message.usage?.input_tokens, outputTokens: message.usage?.output_tokens }
  })

// ---------------------------------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------------------------------

export interface MessagesModelOptions {
  readonly model: string
  /** Required by the API: the most tokens an answer may have. */
  readonly maxTokens: number
  /** Anthropic's host (`https://api.anthropic.com`, no `/v1`) and the `x-api-key` / `anthropic-version` headers. */
  readonly endpoint: Wire.Endpoint
  /** Every tool the caller can run, offered or not (see `Wire.knownTool`); unset: not checked here. */
  readonly toolNames?: ReadonlyArray<string> | undefined
}

export const make = (
  options: MessagesModelOptions
): Effect.Effect<LanguageModel.LanguageModel, never, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const client = Wire.clientFor(yield* HttpClient.HttpClient, options.endpoint)

    const generateText = (providerOptions: LanguageModel.ProviderOptions) =>
      Effect.gen(function*() {
        if (providerOptions.responseFormat.type === "json") {
          return yield* Wire.unsupported(
            MODULE,
            "Structured output (generateObject) is not supported by Parley's Anthropic model"
          )
        }
        const { messages, system } = yield* toMessages(providerOptions.prompt)
        const request: MessagesRequest = {
          max_tokens: options.maxTokens,
          model: options.model,
          ...(system === undefined ? {} : { system }),
          messages,
          ...toTools(providerOptions)
        }
        annotateRequest(providerOptions.span, request)
        const message = yield* Wire.postJson({
          client,
          module: MODULE,
          // The beta endpoint, as the vendor SDK called it (the query is part of the path in error reasons too).
          path: "/v1/messages?beta=true",
          body: request,
          response: Message
        })
        annotateResponse(providerOptions.span, message)
        return yield* fromMessage(message, options.toolNames)
      })

    return yield* Wire.languageModel(generateText)
  })

export const layer = (
  options: MessagesModelOptions
): Layer.Layer<LanguageModel.LanguageModel, never, HttpClient.HttpClient> =>
  Layer.effect(LanguageModel.LanguageModel, make(options))
