/**
 * An `effect/ai` `LanguageModel` over OpenAI's chat-completions API (`POST {base}/chat/completions`),
 * the common ground of OpenAI-compatible servers (vLLM, Ollama, llama.cpp, LiteLLM). Tool handling
 * stays in `effect/ai`: this module only converts prompts, tools and answers to and from the wire.
 *
 * It sends through the shared HTTP client (`Wire.ts`: base URL, bearer key, HTTP failures as
 * `AiError`), and reads the answer with its own lenient schema: compatible servers leave out fields
 * OpenAI's own answers carry (`message.refusal`, `choices[].logprobs`) and use other `finish_reason`
 * words, so a strict reading of OpenAI's format would refuse Ollama's and llama.cpp's answers.
 *
 * `streamText` streams for real (`"stream": true`): text deltas are emitted as the server-sent chunks
 * arrive; tool calls, whose arguments arrive in fragments, are emitted whole when the stream ends.
 */
import * as AiError from "effect/ai/AiError"
import * as IdGenerator from "effect/ai/IdGenerator"
import * as LanguageModel from "effect/ai/LanguageModel"
import type * as Prompt from "effect/ai/Prompt"
import type * as Response from "effect/ai/Response"
import * as Arr from "effect/Array"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Sse from "effect/encoding/Sse"
import * as HttpClient from "effect/http/HttpClient"
import type * as HttpClientResponse from "effect/http/HttpClientResponse"
import type * as JsonSchema from "effect/JsonSchema"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
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
  | { readonly role: "user"; readonly content: string | ReadonlyArray<ChatUserContent> }
  | { readonly role: "assistant"; readonly content: string | null; readonly tool_calls?: ReadonlyArray<ChatToolCall> }
  | { readonly role: "tool"; readonly tool_call_id: string; readonly content: string }

/** A user message's parts, when it has images (otherwise its content is one string). */
export type ChatUserContent =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "image_url"; readonly image_url: { readonly url: string } }

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

/** A request for a streamed answer; `include_usage` asks for a last chunk with the token usage. */
export interface ChatStreamRequest extends ChatRequest {
  readonly stream: true
  readonly stream_options: { readonly include_usage: boolean }
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

const ChatUsage = Schema.Struct({
  prompt_tokens: maybe(Schema.Number),
  completion_tokens: maybe(Schema.Number)
})
type ChatUsage = typeof ChatUsage.Type

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
  usage: maybe(ChatUsage)
})
export type ChatCompletion = typeof ChatCompletion.Type

const finishReasons: Record<string, Response.FinishReason> = {
  stop: "stop",
  length: "length",
  tool_calls: "tool-calls",
  function_call: "tool-calls",
  content_filter: "content-filter"
}

/** Some servers answer "stop" while calling tools: the calls decide. */
const finishReasonOf = (reason: string | null | undefined, calledTools: boolean): Response.FinishReason =>
  calledTools
    ? "tool-calls"
    : reason === undefined || reason === null
    ? "stop"
    : (Object.hasOwn(finishReasons, reason) ? finishReasons[reason] : undefined) ?? "other"

/** The token usage as `effect/ai` reads it; unknown counts stay unset. */
const usageOf = (usage: ChatUsage | null | undefined): Response.FinishPartEncoded["usage"] => ({
  inputTokens: { total: usage?.prompt_tokens ?? undefined },
  outputTokens: { total: usage?.completion_tokens ?? undefined }
})

const timestampOf = (created: number | null | undefined): string | undefined =>
  created === null || created === undefined
    ? undefined
    : Option.getOrUndefined(Option.map(DateTime.make(created * 1000), DateTime.formatIso))

/** What identifies an answer, whole or streamed (its first chunk). */
interface AnswerIdentity {
  readonly id?: string | null | undefined
  readonly model?: string | null | undefined
  readonly created?: number | null | undefined
}

const metadataPart = (answer: AnswerIdentity): Response.ResponseMetadataPartEncoded => {
  const timestamp = timestampOf(answer.created)
  return {
    type: "response-metadata",
    ...(answer.id === undefined || answer.id === null ? {} : { id: answer.id }),
    ...(answer.model === undefined || answer.model === null ? {} : { modelId: answer.model }),
    ...(timestamp === undefined ? {} : { timestamp })
  }
}

/** A user message's content: its text, or its text and image parts when it has images. */
const userContentOf = (parts: ReadonlyArray<Prompt.UserMessagePart>) =>
  Effect.forEach(parts, (part): Effect.Effect<ChatUserContent, AiError.AiError> => {
    if (part.type === "text") return Effect.succeed({ type: "text", text: part.text })
    const url = Wire.imageUrlOf(part)
    return url === undefined
      ? Effect.fail(
        Wire.unsupported(MODULE, `file parts (${part.mediaType}) are not supported by the chat-completions model`)
      )
      : Effect.succeed({ type: "image_url", image_url: { url } })
  }).pipe(
    Effect.map((content): string | ReadonlyArray<ChatUserContent> =>
      content.every((c) => c.type === "text") ? content.map((c) => c.text).join("\n\n") : content
    )
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
          messages.push({ role: "user", content: yield* userContentOf(message.content) })
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

/** The answer as `effect/ai` response parts; `toolNames`: the tools the caller can run (see `Wire.knownTool`). */
export const fromChatCompletion = (
  completion: ChatCompletion,
  toolNames?: ReadonlyArray<string>
): Effect.Effect<Array<Response.PartEncoded>, AiError.AiError, IdGenerator.IdGenerator> =>
  Effect.gen(function*() {
    const choice = completion.choices[0]
    if (choice === undefined) return yield* Wire.unreadable(MODULE, "The chat completion has no choices")
    const idGenerator = yield* IdGenerator.IdGenerator
    const parts: Array<Response.PartEncoded> = [metadataPart(completion)]
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
    parts.push({
      type: "finish",
      reason: finishReasonOf(choice.finish_reason, toolCalls.length > 0),
      usage: usageOf(completion.usage)
    })
    return parts
  })

const annotateRequest = (span: Span, request: ChatRequest): void =>
  Wire.annotate(span, {
    system: "openai",
    operation: { name: "chat" },
    request: { model: request.model, maxTokens: request.max_tokens }
  })

interface AnswerSummary {
  readonly id: string | null | undefined
  readonly model: string | null | undefined
  readonly finishReasons: ReadonlyArray<string>
  readonly usage: ChatUsage | null | undefined
}

const annotateAnswer = (span: Span, answer: AnswerSummary): void =>
  Wire.annotate(span, {
    response: { id: answer.id, model: answer.model, finishReasons: [...answer.finishReasons] },
    usage: { inputTokens: answer.usage?.prompt_tokens, outputTokens: answer.usage?.completion_tokens }
  })

const annotateResponse = (span: Span, completion: ChatCompletion): void =>
  annotateAnswer(span, {
    id: completion.id,
    model: completion.model,
    finishReasons: completion.choices.flatMap((choice) =>
      choice.finish_reason === undefined || choice.finish_reason === null ? [] : [choice.finish_reason]
    ),
    usage: completion.usage
  })

// ---------------------------------------------------------------------------------------------------
// The streamed answer: server-sent chunks
// ---------------------------------------------------------------------------------------------------

const ToolCallDelta = Schema.Struct({
  index: maybe(Schema.Number),
  id: maybe(Schema.String),
  function: maybe(Schema.Struct({
    name: maybe(Schema.String),
    // A fragment of the JSON string per the API; some servers send the whole object at once.
    arguments: maybe(Schema.Union([Schema.String, Schema.Record(Schema.String, Schema.Unknown)]))
  }))
})
type ToolCallDelta = typeof ToolCallDelta.Type

/**
 * The part of a streamed chat completion's chunk (`chat.completion.chunk`) Parley reads. Every field is
 * optional: the last chunk (`include_usage`) has no choices, only `usage`; servers that fail mid-way
 * send an `error` object instead of a chunk.
 */
export const ChatCompletionChunk = Schema.Struct({
  id: maybe(Schema.String),
  model: maybe(Schema.String),
  created: maybe(Schema.Number),
  choices: maybe(Schema.Array(Schema.Struct({
    finish_reason: maybe(Schema.String),
    delta: maybe(Schema.Struct({
      content: maybe(Schema.String),
      tool_calls: maybe(Schema.Array(ToolCallDelta))
    }))
  }))),
  usage: maybe(ChatUsage),
  error: maybe(Schema.Union([Schema.String, Schema.Struct({ message: maybe(Schema.String) })]))
})
export type ChatCompletionChunk = typeof ChatCompletionChunk.Type

const ChunkJson = Schema.fromJsonString(ChatCompletionChunk)

/** The one text block of an answer (chat completions have one). */
const TEXT_ID = "text-0"

/** `data: [DONE]`: the stream's last event. */
const isDone = (event: Sse.Event): boolean => event.data.trim() === "[DONE]"

/** What the stream says: a chunk, `[DONE]`, or (`Closed`) nothing more: the body ended. */
type StreamEvent =
  | { readonly _tag: "Chunk"; readonly chunk: ChatCompletionChunk }
  | { readonly _tag: "Done" }
  | { readonly _tag: "Closed" }

/** A tool call as far as it has arrived. */
interface StreamedCall {
  readonly index: number | undefined
  readonly id: string | undefined
  readonly name: string | undefined
  /** The argument fragments joined, or the arguments themselves from a server that sends an object. */
  readonly arguments: string | Readonly<Record<string, unknown>>
}

/** What the stream has said so far, beyond the parts already emitted. */
interface StreamState {
  /** A chunk arrived (and with it the `response-metadata` part). */
  readonly started: boolean
  /** A chunk had a choice: the answer is not empty. */
  readonly answered: boolean
  readonly textOpen: boolean
  /** `data: [DONE]` arrived. */
  readonly done: boolean
  readonly id: string | undefined
  readonly model: string | undefined
  readonly finishReason: string | undefined
  /** The last usage a chunk carried (OpenAI: the last chunk; some servers: every chunk). */
  readonly usage: ChatUsage | undefined
  readonly calls: ReadonlyArray<StreamedCall>
}

const initialState: StreamState = {
  started: false,
  answered: false,
  textOpen: false,
  done: false,
  id: undefined,
  model: undefined,
  finishReason: undefined,
  usage: undefined,
  calls: []
}

const present = (value: string | null | undefined): string | undefined =>
  value === undefined || value === null || value === "" ? undefined : value

/**
 * Which call a fragment continues: the latest at its `index`, unless it brings another id (a server
 * that numbers every call 0); without an index, the one with its id, or the last one when it has no id.
 * None: it starts a new call.
 */
const callFor = (calls: ReadonlyArray<StreamedCall>, delta: ToolCallDelta): Option.Option<number> => {
  const id = present(delta.id)
  const index = delta.index ?? undefined
  if (index !== undefined) {
    return Arr.findLastIndex(calls, (call) => call.index === index && (id === undefined || call.id === undefined || call.id === id))
  }
  if (id !== undefined) return Arr.findFirstIndex(calls, (call) => call.id === id)
  return calls.length > 0 ? Option.some(calls.length - 1) : Option.none()
}

const newCall = (delta: ToolCallDelta): StreamedCall => ({
  index: delta.index ?? undefined,
  id: present(delta.id),
  name: present(delta.function?.name),
  arguments: delta.function?.arguments ?? ""
})

/** The first id and name win; argument fragments are joined; an arguments object replaces them. */
const withFragment = (call: StreamedCall, delta: ToolCallDelta): StreamedCall => {
  const fragment = delta.function?.arguments ?? undefined
  return {
    index: call.index,
    id: call.id ?? present(delta.id),
    name: call.name ?? present(delta.function?.name),
    arguments: fragment === undefined
      ? call.arguments
      : typeof fragment !== "string"
      ? fragment
      : typeof call.arguments === "string"
      ? call.arguments + fragment
      : call.arguments
  }
}

/** The calls with one fragment added, to the call it continues or as a new one. */
const addFragment = (calls: ReadonlyArray<StreamedCall>, delta: ToolCallDelta): ReadonlyArray<StreamedCall> =>
  Option.flatMap(callFor(calls, delta), (at) => Arr.modify(calls, at, (call) => withFragment(call, delta))).pipe(
    Option.getOrElse(() => [...calls, newCall(delta)])
  )

/** A part to emit now, or the end of the body with what the stream said (see `endParts`). */
type Emitted =
  | { readonly _tag: "Part"; readonly part: Response.StreamPartEncoded }
  | { readonly _tag: "End"; readonly state: StreamState }

/**
 * One event read: the parts it carries at once (`response-metadata` with the first chunk, a text delta
 * per chunk with text) and what is kept for the end (tool-call fragments, finish reason, usage).
 */
const readEvent = (state: StreamState, event: StreamEvent): readonly [StreamState, ReadonlyArray<Emitted>] => {
  if (event._tag === "Done") return [{ ...state, done: true }, []]
  if (event._tag === "Closed") return [state, [{ _tag: "End", state }]]
  const chunk = event.chunk
  const parts: Array<Response.StreamPartEncoded> = state.started ? [] : [metadataPart(chunk)]
  const choice = chunk.choices?.[0]
  const text = choice?.delta?.content ?? ""
  if (text !== "") {
    if (!state.textOpen) parts.push({ type: "text-start", id: TEXT_ID })
    parts.push({ type: "text-delta", id: TEXT_ID, delta: text })
  }
  const next: StreamState = {
    started: true,
    answered: state.answered || choice !== undefined,
    textOpen: state.textOpen || text !== "",
    done: state.done,
    id: state.id ?? present(chunk.id),
    model: state.model ?? present(chunk.model),
    finishReason: present(choice?.finish_reason) ?? state.finishReason,
    usage: chunk.usage ?? state.usage,
    calls: (choice?.delta?.tool_calls ?? []).reduce(addFragment, state.calls)
  }
  return [next, parts.map((part) => ({ _tag: "Part", part }))]
}

/**
 * The parts of the stream's end: the text's end, each tool call whole (arguments decoded like the
 * non-streamed answer's), the finish with the usage. A stream that stopped before both `[DONE]` and a
 * finish reason was cut short (a transport failure); one without a single choice is unreadable.
 */
const endParts = (
  state: StreamState,
  options: {
    readonly toolNames: ReadonlyArray<string> | undefined
    readonly response: HttpClientResponse.HttpClientResponse
    readonly span: Span
  }
): Effect.Effect<Array<Response.StreamPartEncoded>, AiError.AiError, IdGenerator.IdGenerator> =>
  Effect.gen(function*() {
    if (!state.done && state.finishReason === undefined) {
      return yield* Wire.cutShort(
        MODULE,
        "streamText",
        options.response.request,
        "The answer's stream ended before the answer was complete"
      )
    }
    if (!state.answered) return yield* Wire.unreadable(MODULE, "The chat completion stream has no choices", "streamText")
    const idGenerator = yield* IdGenerator.IdGenerator
    const parts: Array<Response.StreamPartEncoded> = state.textOpen ? [{ type: "text-end", id: TEXT_ID }] : []
    for (const call of state.calls) {
      if (call.name === undefined) return yield* Wire.unreadable(MODULE, "A streamed tool call has no name", "streamText")
      yield* Wire.knownTool(MODULE, options.toolNames, call.name, "streamText")
      const params = typeof call.arguments === "string"
        ? yield* Wire.decodeArguments(MODULE, call.name, call.arguments, "streamText")
        : call.arguments
      parts.push({ type: "tool-call", id: call.id ?? (yield* idGenerator.generateId()), name: call.name, params })
    }
    annotateAnswer(options.span, {
      id: state.id,
      model: state.model,
      finishReasons: state.finishReason === undefined ? [] : [state.finishReason],
      usage: state.usage
    })
    parts.push({
      type: "finish",
      reason: finishReasonOf(state.finishReason, state.calls.length > 0),
      usage: usageOf(state.usage)
    })
    return parts
  })

/** The server-sent events of a text stream, read by Effect's SSE parser (comments and `retry:` are not events). */
const sseEvents = <E, R>(text: Stream.Stream<string, E, R>): Stream.Stream<Sse.Event, E | Sse.SseError, R> =>
  Stream.suspend(() => {
    const parsed: Array<Sse.Event> = []
    const parser = Sse.makeParser((event) => {
      if (event._tag === "Event") parsed.push(event)
    })
    return text.pipe(
      Stream.mapEffect((chunk) => {
        const error = parser.feed(chunk)
        return error === undefined ? Effect.succeed(parsed.splice(0)) : Effect.fail(error)
      }),
      Stream.flattenIterable
    )
  })

/** One `data:` payload: `[DONE]`, or a chunk (one with an `error` is the server's failure). */
const readData = (event: Sse.Event): Effect.Effect<StreamEvent, AiError.AiError> =>
  isDone(event)
    ? Effect.succeed({ _tag: "Done" })
    : Schema.decodeUnknownEffect(ChunkJson)(event.data).pipe(
      Effect.mapError(() =>
        Wire.unreadable(MODULE, `A streamed chunk is not a chat completion chunk: ${event.data.slice(0, 200)}`, "streamText")
      ),
      Effect.flatMap((chunk) => {
        if (chunk.error === undefined || chunk.error === null) return Effect.succeed({ _tag: "Chunk", chunk } as const)
        const message = typeof chunk.error === "string" ? chunk.error : chunk.error.message ?? event.data.slice(0, 200)
        return Effect.fail(
          AiError.make({
            module: MODULE,
            method: "streamText",
            reason: new AiError.InternalProviderError({ description: `The stream reported an error: ${message}` })
          })
        )
      })
    )

/**
 * A streamed answer's body as `effect/ai` stream parts, emitted as its chunks arrive. A body that
 * breaks off is a transport failure (`Wire.cutShort`); an unreadable chunk is unreadable output.
 */
export const fromChatStream = (
  response: HttpClientResponse.HttpClientResponse,
  options: { readonly toolNames: ReadonlyArray<string> | undefined; readonly span: Span }
): Stream.Stream<Response.StreamPartEncoded, AiError.AiError, IdGenerator.IdGenerator> =>
  response.stream.pipe(
    Stream.mapError((error) =>
      Wire.cutShort(MODULE, "streamText", response.request, `The answer's stream broke off: ${error.message}`, error)
    ),
    Stream.decodeText,
    sseEvents,
    Stream.mapError((error) =>
      error._tag === "SseError"
        ? Wire.unreadable(MODULE, `The stream could not be read: ${error.message}`, "streamText")
        : error
    ),
    Stream.takeUntil(isDone),
    Stream.mapEffect(readData),
    // Only a body that ended (not one that failed) has its end read.
    Stream.concat(Stream.succeed<StreamEvent>({ _tag: "Closed" })),
    Stream.mapAccum(() => initialState, readEvent),
    Stream.mapEffect((emitted) =>
      emitted._tag === "Part"
        ? Effect.succeed([emitted.part])
        : endParts(emitted.state, { ...options, response })
    ),
    Stream.flattenIterable
  )

// ---------------------------------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------------------------------

export interface ChatModelOptions {
  readonly model: string
  /** The server's base URL (`…/v1`) and the bearer key, if any. */
  readonly endpoint: Wire.Endpoint
  /** `max_tokens` of each answer; the server's default when unset. */
  readonly maxTokens?: number | undefined
  /** Every tool the caller can run, offered or not (see `Wire.knownTool`); unset: not checked here. */
  readonly toolNames?: ReadonlyArray<string> | undefined
}

/** A server that ignores `"stream": true` answers with the whole completion as JSON. */
const isJsonAnswer = (response: HttpClientResponse.HttpClientResponse): boolean =>
  (response.headers["content-type"] ?? "").includes("application/json")

/**
 * The chat-completions `LanguageModel`. `generateText` posts the request and reads the whole answer;
 * `streamText` posts it with `"stream": true` and emits the parts as the chunks arrive (a server that
 * answers with the whole completion anyway has it replayed as stream parts).
 */
export const make = (options: ChatModelOptions): Effect.Effect<LanguageModel.LanguageModel, never, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const httpClient = yield* HttpClient.HttpClient
    const client = Wire.clientFor(httpClient, options.endpoint)
    const streamClient = Wire.clientFor(httpClient, options.endpoint, "text/event-stream")

    const chatRequest = (providerOptions: LanguageModel.ProviderOptions, method: Wire.Method) =>
      Effect.gen(function*() {
        if (providerOptions.responseFormat.type === "json") {
          return yield* Wire.unsupported(
            MODULE,
            "Structured output (generateObject) is not supported by the chat-completions model",
            method
          )
        }
        const messages = yield* toChatMessages(providerOptions.prompt)
        if (!Arr.isArrayNonEmpty(messages)) return yield* Wire.unsupported(MODULE, "The prompt is empty", method)
        const request: ChatRequest = {
          model: options.model,
          messages,
          ...toChatTools(providerOptions),
          ...(options.maxTokens === undefined ? {} : { max_tokens: options.maxTokens })
        }
        annotateRequest(providerOptions.span, request)
        return request
      })

    const generateText = (providerOptions: LanguageModel.ProviderOptions) =>
      Effect.gen(function*() {
        const request = yield* chatRequest(providerOptions, "generateText")
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

    const streamText = (providerOptions: LanguageModel.ProviderOptions) =>
      Stream.unwrap(Effect.gen(function*() {
        const request = yield* chatRequest(providerOptions, "streamText")
        const body: ChatStreamRequest = { ...request, stream: true, stream_options: { include_usage: true } }
        const response = yield* Wire.post({
          client: streamClient,
          module: MODULE,
          method: "streamText",
          path: "/chat/completions",
          body
        })
        if (!isJsonAnswer(response)) {
          return fromChatStream(response, { toolNames: options.toolNames, span: providerOptions.span })
        }
        const completion = yield* Wire.readJson(response, ChatCompletion, { module: MODULE, method: "streamText" })
        annotateResponse(providerOptions.span, completion)
        const parts = yield* fromChatCompletion(completion, options.toolNames)
        return Stream.fromIterable(parts.flatMap(Wire.toStreamParts))
      }))

    return yield* LanguageModel.make({ generateText, streamText })
  })

export const layer = (options: ChatModelOptions): Layer.Layer<LanguageModel.LanguageModel, never, HttpClient.HttpClient> =>
  Layer.effect(LanguageModel.LanguageModel, make(options))
