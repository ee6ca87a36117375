/**
 * An `@effect/ai` `LanguageModel` over OpenAI's chat-completions API (`POST {base}/chat/completions`),
 * the common ground of OpenAI-compatible servers (vLLM, Ollama, llama.cpp, LiteLLM). The library's own
 * `OpenAiLanguageModel` only speaks the Responses API. Tool handling stays in `@effect/ai`: this module
 * only converts prompts, tools and answers to and from the wire.
 *
 * It sends through `OpenAiClient` (base URL, bearer key, HTTP errors as `AiError`), but reads the answer
 * with its own lenient schema: the generated `CreateChatCompletionResponse` requires fields that
 * compatible servers leave out (`message.refusal`, `choices[].logprobs`) and only OpenAI's own
 * `finish_reason` words, so Ollama's and llama.cpp's answers would fail to decode.
 */
import * as AiError from "@effect/ai/AiError"
import * as IdGenerator from "@effect/ai/IdGenerator"
import * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Prompt from "@effect/ai/Prompt"
import type * as Response from "@effect/ai/Response"
import { addGenAIAnnotations } from "@effect/ai/Telemetry"
import * as Tool from "@effect/ai/Tool"
import type * as Generated from "@effect/ai-openai/Generated"
import { OpenAiClient } from "@effect/ai-openai/OpenAiClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import * as Arr from "effect/Array"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { Span } from "effect/Tracer"

type ChatRequest = typeof Generated.CreateChatCompletionRequest.Encoded
type ChatMessage = typeof Generated.ChatCompletionRequestMessage.Encoded
type ChatTool = typeof Generated.ChatCompletionTool.Encoded
type ChatToolChoice = typeof Generated.ChatCompletionToolChoiceOption.Encoded

const ToolCall = Schema.Struct({
  id: Schema.optionalWith(Schema.String, { nullable: true }),
  type: Schema.optionalWith(Schema.String, { nullable: true }),
  function: Schema.Struct({
    name: Schema.String,
    // A JSON string per the API; some servers send the object itself, or nothing for no arguments.
    arguments: Schema.optionalWith(Schema.Union(Schema.String, Schema.Record({ key: Schema.String, value: Schema.Unknown })), {
      nullable: true
    })
  })
})

/** The part of a chat completion Parley reads; everything else is ignored. */
export const ChatCompletion = Schema.Struct({
  id: Schema.optionalWith(Schema.String, { nullable: true }),
  model: Schema.optionalWith(Schema.String, { nullable: true }),
  created: Schema.optionalWith(Schema.Number, { nullable: true }),
  choices: Schema.Array(Schema.Struct({
    finish_reason: Schema.optionalWith(Schema.String, { nullable: true }),
    message: Schema.Struct({
      content: Schema.optionalWith(Schema.String, { nullable: true }),
      refusal: Schema.optionalWith(Schema.String, { nullable: true }),
      tool_calls: Schema.optionalWith(Schema.Array(ToolCall), { nullable: true })
    })
  })),
  usage: Schema.optionalWith(
    Schema.Struct({
      prompt_tokens: Schema.optionalWith(Schema.Number, { nullable: true }),
      completion_tokens: Schema.optionalWith(Schema.Number, { nullable: true })
    }),
    { nullable: true }
  )
})
export type ChatCompletion = typeof ChatCompletion.Type

const decodeArguments = Schema.decodeUnknown(Schema.parseJson())

const finishReasons: Record<string, Response.FinishReason> = {
  stop: "stop",
  length: "length",
  tool_calls: "tool-calls",
  function_call: "tool-calls",
  content_filter: "content-filter"
}

const malformedInput = (description: string) =>
  new AiError.MalformedInput({ module: "OpenAiChat", method: "prepareMessages", description })

const textOf = (parts: ReadonlyArray<Prompt.TextPart | Prompt.FilePart>) =>
  Effect.forEach(parts, (part) =>
    part.type === "text"
      ? Effect.succeed(part.text)
      : Effect.fail(malformedInput(`file parts (${part.mediaType}) are not supported by the chat-completions model`))).pipe(
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
          const toolCalls: Array<typeof Generated.ChatCompletionMessageToolCall.Encoded> = []
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
            messages.push({ role: "tool", tool_call_id: part.id, content: JSON.stringify(part.result) })
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
  const allowed = typeof options.toolChoice === "object" && "oneOf" in options.toolChoice
    ? new Set<string>(options.toolChoice.oneOf)
    : undefined
  const tools = options.tools
    .filter((tool) => Tool.isUserDefined(tool) && (allowed === undefined || allowed.has(tool.name)))
    .map((tool): ChatTool => {
      const description = tool.description ?? Tool.getDescriptionFromSchemaAst(tool.parametersSchema.ast)
      return {
        type: "function",
        function: {
          name: tool.name,
          ...(description === undefined ? {} : { description }),
          parameters: { ...Tool.getJsonSchemaFromSchemaAst(tool.parametersSchema.ast) }
        }
      }
    })
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

/** The answer as `@effect/ai` response parts. */
export const fromChatCompletion = (
  completion: ChatCompletion
): Effect.Effect<Array<Response.PartEncoded>, AiError.AiError, IdGenerator.IdGenerator> =>
  Effect.gen(function*() {
    const choice = completion.choices[0]
    if (choice === undefined) {
      return yield* new AiError.MalformedOutput({
        module: "OpenAiChat",
        method: "generateText",
        description: "The chat completion has no choices"
      })
    }
    const idGenerator = yield* IdGenerator.IdGenerator
    const parts: Array<Response.PartEncoded> = [{
      type: "response-metadata",
      ...(completion.id === undefined ? {} : { id: completion.id }),
      ...(completion.model === undefined ? {} : { modelId: completion.model }),
      ...(completion.created === undefined
        ? {}
        : { timestamp: DateTime.formatIso(DateTime.unsafeMake(completion.created * 1000)) })
    }]
    const text = choice.message.content ?? ""
    if (text !== "") parts.push({ type: "text", text })
    const toolCalls = choice.message.tool_calls ?? []
    for (const call of toolCalls) {
      const raw = call.function.arguments
      const params = typeof raw === "string" && raw.trim() !== ""
        ? yield* decodeArguments(raw).pipe(
          Effect.mapError((cause) =>
            new AiError.MalformedOutput({
              module: "OpenAiChat",
              method: "generateText",
              description: `Tool call arguments for '${call.function.name}' are not JSON: ${raw.slice(0, 200)}`,
              cause
            })
          )
        )
        : typeof raw === "object" && raw !== undefined
        ? raw
        : {}
      parts.push({
        type: "tool-call",
        id: call.id !== undefined && call.id !== "" ? call.id : yield* idGenerator.generateId(),
        name: call.function.name,
        params
      })
    }
    const inputTokens = completion.usage?.prompt_tokens
    const outputTokens = completion.usage?.completion_tokens
    parts.push({
      type: "finish",
      // Some servers answer "stop" while calling tools: the calls decide.
      reason: toolCalls.length > 0
        ? "tool-calls"
        : finishReasons[choice.finish_reason ?? ""] ?? (choice.finish_reason === undefined ? "stop" : "other"),
      usage: {
        inputTokens,
        outputTokens,
        totalTokens: inputTokens === undefined && outputTokens === undefined
          ? undefined
          : (inputTokens ?? 0) + (outputTokens ?? 0)
      }
    })
    return parts
  })

const annotateRequest = (span: Span, request: ChatRequest): void =>
  addGenAIAnnotations(span, {
    system: "openai",
    operation: { name: "chat" },
    request: { model: request.model, maxTokens: request.max_tokens, temperature: request.temperature }
  })

const annotateResponse = (span: Span, completion: ChatCompletion): void =>
  addGenAIAnnotations(span, {
    response: {
      id: completion.id,
      model: completion.model,
      finishReasons: completion.choices.flatMap((choice) =>
        choice.finish_reason === undefined ? [] : [choice.finish_reason]
      )
    },
    usage: { inputTokens: completion.usage?.prompt_tokens, outputTokens: completion.usage?.completion_tokens }
  })

export interface ChatModelOptions {
  readonly model: string
  /** `max_tokens` of each answer; the server's default when unset. */
  readonly maxTokens?: number | undefined
}

export const make = (options: ChatModelOptions): Effect.Effect<LanguageModel.Service, never, OpenAiClient> =>
  Effect.gen(function*() {
    const openAi = yield* OpenAiClient
    const httpClient = HttpClient.filterStatusOk(openAi.client.httpClient)

    const post = (request: ChatRequest): Effect.Effect<ChatCompletion, AiError.AiError> =>
      HttpClientRequest.post("/chat/completions").pipe(
        HttpClientRequest.bodyJson(request),
        Effect.flatMap(httpClient.execute),
        Effect.flatMap(HttpClientResponse.schemaBodyJson(ChatCompletion)),
        Effect.catchTags({
          HttpBodyError: (error) =>
            Effect.fail(
              new AiError.MalformedInput({
                module: "OpenAiChat",
                method: "generateText",
                description: "The request body could not be encoded as JSON",
                cause: error
              })
            ),
          RequestError: (error) =>
            Effect.fail(AiError.HttpRequestError.fromRequestError({ module: "OpenAiChat", method: "generateText", error })),
          ResponseError: (error) =>
            AiError.HttpResponseError.fromResponseError({ module: "OpenAiChat", method: "generateText", error }),
          ParseError: (error) =>
            Effect.fail(AiError.MalformedOutput.fromParseError({ module: "OpenAiChat", method: "generateText", error }))
        })
      )

    const generateText = (providerOptions: LanguageModel.ProviderOptions) =>
      Effect.gen(function*() {
        if (providerOptions.responseFormat.type === "json") {
          return yield* new AiError.MalformedInput({
            module: "OpenAiChat",
            method: "generateText",
            description: "Structured output (generateObject) is not supported by the chat-completions model"
          })
        }
        const messages = yield* toChatMessages(providerOptions.prompt)
        if (!Arr.isNonEmptyArray(messages)) {
          return yield* new AiError.MalformedInput({ module: "OpenAiChat", method: "generateText", description: "The prompt is empty" })
        }
        const request: ChatRequest = {
          model: options.model,
          messages,
          ...toChatTools(providerOptions),
          ...(options.maxTokens === undefined ? {} : { max_tokens: options.maxTokens })
        }
        annotateRequest(providerOptions.span, request)
        const completion = yield* post(request)
        annotateResponse(providerOptions.span, completion)
        return yield* fromChatCompletion(completion)
      })

    return yield* LanguageModel.make({
      generateText,
      // Not incremental: the whole answer is fetched, then replayed as stream parts.
      streamText: (providerOptions) =>
        Stream.unwrap(Effect.map(generateText(providerOptions), (parts) => Stream.fromIterable(parts.flatMap(toStreamParts))))
    })
  })

const toStreamParts = (part: Response.PartEncoded): Array<Response.StreamPartEncoded> => {
  switch (part.type) {
    case "text": {
      const id = "text-0"
      return [{ type: "text-start", id }, { type: "text-delta", id, delta: part.text }, { type: "text-end", id }]
    }
    case "tool-call":
    case "response-metadata":
    case "finish":
      return [part]
    default:
      return []
  }
}

export const layer = (options: ChatModelOptions): Layer.Layer<LanguageModel.LanguageModel, never, OpenAiClient> =>
  Layer.effect(LanguageModel.LanguageModel, make(options))
