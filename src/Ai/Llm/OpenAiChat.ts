/**
 * An `effect/ai` `LanguageModel` over OpenAI's chat-completions API (`POST {base}/chat/completions`),
 * the common ground of OpenAI-compatible servers (vLLM, Ollama, llama.cpp, LiteLLM). Tool handling
 * stays in `effect/ai`: this module only converts prompts, tools and answers to and from the wire.
 *
 * It sends through the shared HTTP client (`Wire.ts`: base URL, bearer key, HTTP failures as
 * `AiError`), and reads the answer with its own lenient schema: compatible servers leave out fields
 * OpenAI's own answers carry (`message.refusal`, `choices[].logprobs`) and use other `finish_reason`
 * words, so a strict reading of OpenAI's format would refuse Ollama's and llama.cpp's answers.
 */
import type * as AiError from "effect/ai/AiError"
import * as IdGenerator from "effect/ai/IdGenerator"
import * as LanguageModel from "effect/ai/LanguageModel"
import type * as Prompt from "effect/ai/Prompt"
import type * as Response from "effect/ai/Response"
import * as Arr from "effect/Array"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as HttpClient from "effect/http/HttpClient"
import type * as JsonSchema from "effect/JsonSchema"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { Span } from "effect/Tracer"
import * as Wire from "./Wire.js"

const MODULE = "OpenAiChat"

// ---------------------------------------------------------------------------------------------------
// The request, as Parley sends it
// ---------------------------------------------------------------------------------------------------

export interface ChatToolCall {
  readonly id: string
  readonly type: "function"
  readonly function: { readonly name: string; readonly arguments: string }
}

export type ChatMessage =
  | { readonly role: "system"; readonly content: string }
  | { readonly role: "user"; readonly content: string }
  | { readonly role: "assistant"; readonly content: string | null; readonly tool_calls?: ReadonlyArray<ChatToolCall> }
  | { readonly role: "tool"; readonly tool_call_id: string; readonly content: string }

export interface ChatTool {
  readonly type: "function"
  readonly function: {
    readonly name: string
    readonly description?: string
    readonly parameters: JsonSchema.JsonSchema
  }
}

export type ChatToolChoice =
  | "none"
  | "auto"
  | "required"
  | { readonly type: "function"; readonly function: { readonly name: string } }

export interface ChatRequest {
  readonly model: string
  readonly messages: ReadonlyArray<ChatMessage>
  readonly tools?: ReadonlyArray<ChatTool>
  readonly tool_choice?: ChatToolChoice
  readonly max_tokens?: number
}

// ---------------------------------------------------------------------------------------------------
// The answer, as far as Parley reads it
// ---------------------------------------------------------------------------------------------------

/** Absent, `undefined` or `null` alike: compatible servers differ in which they send. */
const maybe = <S extends Schema.Top>(schema: S) => Schema.optional(Schema.NullOr(schema))

const ToolCall = Schema.Struct({
  id: maybe(Schema.String),
  type: maybe(Schema.String),
  function: Schema.Struct({
    name: Schema.String,
    // A JSON string per the API; some servers send the object itself, or nothing for no arguments.
    arguments: maybe(Schema.Union([Schema.String, Schema.Record(Schema.String, Schema.Unknown)]))
  })
})

/** The part of a chat completion Parley reads; everything else is ignored. */
export const ChatCompletion = Schema.Struct({
  id: maybe(Schema.String),
  model: maybe(Schema.String),
  created: maybe(Schema.Number),
  choices: Schema.Array(Schema.Struct({
    finish_reason: maybe(Schema.String),
    message: Schema.Struct({
      content: maybe(Schema.String),
      refusal: maybe(Schema.String),
      tool_calls: maybe(Schema.Array(ToolCall))
    })
  })),
  usage: maybe(Schema.Struct({
    prompt_tokens: maybe(Schema.Number),
    completion_tokens: maybe(Schema.Number)
  }))
})
export type ChatCompletion = typeof ChatCompletion.Type

const finishReasons: Record<string, Response.FinishReason> = {
  stop: "stop",
  length: "length",
  tool_calls: "tool-calls",
  function_call: "tool-calls",
  content_filter: "content-filter"
}

const textOf = (parts: ReadonlyArray<Prompt.UserMessagePart>) =>
  Effect.forEach(parts, (part) =>
    part.type === "text"
      ? Effect.succeed(part.text)
      : Effect.fail(
        Wire.unsupported(MODULE, `file parts (${part.mediaType}) are not supported by the chat-completions model`)
      )).pipe(
      Effect.map((texts) => texts.join("\n\n"))
    )

/** The prompt as chat messages: system, user, assistant (with `tool_calls`) and `tool` results. */
export const toChatMessages = (prompt: Prompt.Prompt): Effect.Effect<Array<ChatMessage>, AiError.AiError> =>
  Effect.gen(function*() {
    const messages: Array<ChatMessage> = []
    for (const message of prompt.content) {
      switch (message.role) {
        case "system": {
          messages.push({ role: "system", content: message.content })
          break
        }
        case "user": {
          messages.push({ role: "user", content: yield* textOf(message.content) })
          break
        }
        case "assistant": {
          const text: Array<string> = []
          const toolCalls: Array<ChatToolCall> = []
          for (const part of message.content) {
            // Reasoning is not sent back: compatible servers do not take it as input.
            if (part.type === "text") text.push(part.text)
            if (part.type === "tool-call" && !part.providerExecuted) {
              toolCalls.push({
                id: part.id,
                type: "function",
                function: { name: part.name, arguments: JSON.stringify(part.params) }
              })
            }
          }
          messages.push({
            role: "assistant",
            content: text.length > 0 ? text.join("") : null,
            ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {})
          })
          break
        }
        case "tool": {
          for (const part of message.content) {
            if (part.type === "tool-result") {
              messages.push({ role: "tool", tool_call_id: part.id, content: Wire.toolResultText(part) })
            }
          }
          break
        }
      }
    }
    return messages
  })

/** The offered tools and the tool choice, as chat-completions takes them. */
export const toChatTools = (
  options: Pick<LanguageModel.ProviderOptions, "tools" | "toolChoice">
): { readonly tools?: Array<ChatTool>; readonly tool_choice?: ChatToolChoice } => {
  const tools = Wire.functionTools(options).map((tool): ChatTool => ({
    type: "function",
    function: {
      name: tool.name,
      ...(tool.description === undefined ? {} : { description: tool.description }),
      parameters: tool.parameters
    }
  }))
  if (tools.length === 0) return {}
  const choice = options.toolChoice
  const tool_choice: ChatToolChoice = typeof choice === "string"
    ? choice
    : "tool" in choice
    ? { type: "function", function: { name: choice.tool } }
    : choice.mode === "required"
    ? "required"
    : "auto"
  return { tools, tool_choice }
}

const timestampOf = (created: number | null | undefined): string | undefined =>
  created === null || created === undefined
    ? undefined
    : Option.getOrUndefined(Option.map(DateTime.make(created * 1000), DateTime.formatIso))

/** The answer as `effect/ai` response parts; `toolNames`: the tools the caller can run (see `Wire.knownTool`). */
export const fromChatCompletion = (
  completion: ChatCompletion,
  toolNames?: ReadonlyArray<string>
): Effect.Effect<Array<Response.PartEncoded>, AiError.AiError, IdGenerator.IdGenerator> =>
  Effect.gen(function*() {
    const choice = completion.choices[0]
    if (choice === undefined) return yield* Wire.unreadable(MODULE, "The chat completion has no choices")
    const idGenerator = yield* IdGenerator.IdGenerator
    const timestamp = timestampOf(completion.created)
    const parts: Array<Response.PartEncoded> = [{
      type: "response-metadata",
      ...(completion.id === undefined || completion.id === null ? {} : { id: completion.id }),
      ...(completion.model === undefined || completion.model === null ? {} : { modelId: completion.model }),
      ...(timestamp === undefined ? {} : { timestamp })
    }]
    const text = choice.message.content ?? ""
    if (text !== "") parts.push({ type: "text", text })
    const toolCalls = choice.message.tool_calls ?? []
    for (const call of toolCalls) {
      yield* Wire.knownTool(MODULE, toolNames, call.function.name)
      const raw = call.function.arguments
      const params = typeof raw === "string"
        ? yield* Wire.decodeArguments(MODULE, call.function.name, raw)
        : raw ?? {}
      parts.push({
        type: "tool-call",
        id: call.id !== undefined && call.id !== null && call.id !== "" ? call.id : yield* idGenerator.generateId(),
        name: call.function.name,
        params
      })
    }
    const inputTokens = completion.usage?.prompt_tokens ?? undefined
    const outputTokens = completion.usage?.completion_tokens ?? undefined
    const finishReason = choice.finish_reason ?? undefined
    parts.push({
      type: "finish",
      // Some servers answer "stop" while calling tools: the calls decide.
      reason: toolCalls.length > 0
        ? "tool-calls"
        : finishReason === undefined
        ? "stop"
        : finishReasons[finishReason] ?? "other",
      usage: {
        inputTokens: { total: inputTokens },
        outputTokens: { total: outputTokens }
      }
    })
    return parts
  })

const annotateRequest = (span: Span, request: ChatRequest): void =>
  Wire.annotate(span, {
    system: "openai",
    operation: { name: "chat" },
    request: { model: request.model, maxTokens: request.max_tokens }
  })

const annotateResponse = (span: Span, completion: ChatCompletion): void =>
  Wire.annotate(span, {
    response: {
      id: completion.id,
      model: completion.model,
      finishReasons: completion.choices.flatMap((choice) =>
        choice.finish_reason === undefined || choice.finish_reason === null ? [] : [choice.finish_reason]
      )
    },
    usage: { inputTokens: completion.usage?.prompt_tokens, outputTokens: completion.usage?.completion_tokens }
  })

export interface ChatModelOptions {
  readonly model: string
  /** The server's base URL (`…/v1`) and the bearer key, if any. */
  readonly endpoint: Wire.Endpoint
  /** `max_tokens` of each answer; the server's default when unset. */
  readonly maxTokens?: number | undefined
  /** Every tool the caller can run, offered or not (see `Wire.knownTool`); unset: not checked here. */
  readonly toolNames?: ReadonlyArray<string> | undefined
}

export const make = (options: ChatModelOptions): Effect.Effect<LanguageModel.LanguageModel, never, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const client = Wire.clientFor(yield* HttpClient.HttpClient, options.endpoint)

    const generateText = (providerOptions: LanguageModel.ProviderOptions) =>
      Effect.gen(function*() {
        if (providerOptions.responseFormat.type === "json") {
          return yield* Wire.unsupported(
            MODULE,
            "Structured output (generateObject) is not supported by the chat-completions model"
          )
        }
        const messages = yield* toChatMessages(providerOptions.prompt)
        if (!Arr.isArrayNonEmpty(messages)) return yield* Wire.unsupported(MODULE, "The prompt is empty")
        const request: ChatRequest = {
          model: options.model,
          messages,
          ...toChatTools(providerOptions),
          ...(options.maxTokens === undefined ? {} : { max_tokens: options.maxTokens })
        }
        annotateRequest(providerOptions.span, request)
        const completion = yield* Wire.postJson({
          client,
          module: MODULE,
          path: "/chat/completions",
          body: request,
          response: ChatCompletion
        })
        annotateResponse(providerOptions.span, completion)
        return yield* fromChatCompletion(completion, options.toolNames)
      })

    return yield* Wire.languageModel(generateText)
  })

export const layer = (options: ChatModelOptions): Layer.Layer<LanguageModel.LanguageModel, never, HttpClient.HttpClient> =>
  Layer.effect(LanguageModel.LanguageModel, make(options))
