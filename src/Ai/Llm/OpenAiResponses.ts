/**
 * An `effect/ai` `LanguageModel` over OpenAI's Responses API (`POST {base}/responses`). Parley's own
 * adapter, written like `OpenAiChat.ts`: the `@effect/ai-openai` package that used to speak this API
 * exists for Effect 4 only as a beta built on modules the installed Effect does not have.
 *
 * What it sends is what that package sent for Parley's calls: the model, `store: false` (customers'
 * messages are not kept on OpenAI's side), the prompt as `input` items (system or developer message,
 * user `input_text`, assistant `output_text` and `function_call` items, tool results as
 * `function_call_output`), `include: []`, `text.format: text`, and the offered tools as strict
 * functions with the tool choice. Earlier answers go back by content, never by item id, and reasoning
 * items are not sent back: with `store: false` OpenAI keeps no item a later request could refer to.
 * The answer is read with a lenient schema: only the fields Parley uses. Provider-executed tools (web
 * search, file search, code interpreter) are never offered, so their items are ignored.
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
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { Span } from "effect/Tracer"
import * as Wire from "./Wire.js"

const MODULE = "OpenAiResponses"

// ---------------------------------------------------------------------------------------------------
// The request, as Parley sends it
// ---------------------------------------------------------------------------------------------------

type InputContent =
  | { readonly type: "input_text"; readonly text: string }
  | { readonly type: "input_image"; readonly image_url: string }
  | { readonly type: "output_text"; readonly text: string }

export type InputItem =
  | { readonly role: "system" | "developer"; readonly content: string }
  | { readonly role: "user"; readonly content: ReadonlyArray<InputContent> }
  | { readonly role: "assistant"; readonly content: ReadonlyArray<InputContent> }
  | { readonly type: "function_call"; readonly call_id: string; readonly name: string; readonly arguments: string }
  | { readonly type: "function_call_output"; readonly call_id: string; readonly output: string }

export interface FunctionTool {
  readonly type: "function"
  readonly name: string
  readonly description?: string
  readonly parameters: JsonSchema.JsonSchema
  readonly strict: boolean
}

export type ToolChoice = "none" | "auto" | "required" | { readonly type: "function"; readonly name: string }

export interface ResponsesRequest {
  readonly model: string
  readonly store: boolean
  readonly input: ReadonlyArray<InputItem>
  readonly include: ReadonlyArray<string>
  readonly text: { readonly format: { readonly type: "text" } }
  readonly tools?: ReadonlyArray<FunctionTool>
  readonly tool_choice?: ToolChoice
}

// ---------------------------------------------------------------------------------------------------
// The answer, as far as Parley reads it
// ---------------------------------------------------------------------------------------------------

const maybe = <S extends Schema.Top>(schema: S) => Schema.optional(Schema.NullOr(schema))

/** One `output` item; which fields it has depends on its `type` (`message`, `function_call`, `reasoning`, …). */
const OutputItem = Schema.Struct({
  type: Schema.String,
  id: maybe(Schema.String),
  /** `message`: `output_text` and `refusal` parts. */
  content: maybe(Schema.Array(Schema.Struct({
    type: Schema.String,
    text: maybe(Schema.String),
    refusal: maybe(Schema.String)
  }))),
  /** `function_call`. */
  call_id: maybe(Schema.String),
  name: maybe(Schema.String),
  arguments: maybe(Schema.String),
  /** `reasoning`. */
  summary: maybe(Schema.Array(Schema.Struct({ text: Schema.String })))
})

export const ResponsesResponse = Schema.Struct({
  id: maybe(Schema.String),
  model: maybe(Schema.String),
  created_at: maybe(Schema.Number),
  output: Schema.Array(OutputItem),
  incomplete_details: maybe(Schema.Struct({ reason: maybe(Schema.String) })),
  service_tier: maybe(Schema.String),
  usage: maybe(Schema.Struct({
    input_tokens: maybe(Schema.Number),
    output_tokens: maybe(Schema.Number),
    input_tokens_details: maybe(Schema.Struct({ cached_tokens: maybe(Schema.Number) })),
    output_tokens_details: maybe(Schema.Struct({ reasoning_tokens: maybe(Schema.Number) }))
  }))
})
export type ResponsesResponse = typeof ResponsesResponse.Type

// ---------------------------------------------------------------------------------------------------
// Prompt → input
// ---------------------------------------------------------------------------------------------------

/** OpenAI's reasoning models take the system prompt as a `developer` message. */
const systemRole = (model: string): "system" | "developer" =>
  model.startsWith("o") || model.startsWith("gpt-5") || model.startsWith("codex-") || model.startsWith("computer-use")
    ? "developer"
    : "system"

export const toInput = (prompt: Prompt.Prompt, model: string): Effect.Effect<Array<InputItem>, AiError.AiError> =>
  Effect.gen(function*() {
    const input: Array<InputItem> = []
    for (const message of prompt.content) {
      switch (message.role) {
        case "system": {
          input.push({ role: systemRole(model), content: message.content })
          break
        }
        case "user": {
          const content: Array<InputContent> = []
          for (const part of message.content) {
            if (part.type !== "text") {
              const url = Wire.imageUrlOf(part)
              if (url === undefined) {
                return yield* Wire.unsupported(
                  MODULE,
                  `file parts (${part.mediaType}) are not supported by Parley's Responses model`
                )
              }
              content.push({ type: "input_image", image_url: url })
              continue
            }
            content.push({ type: "input_text", text: part.text })
          }
          input.push({ role: "user", content })
          break
        }
        case "assistant": {
          for (const part of message.content) {
            if (part.type === "text") {
              input.push({ role: "assistant", content: [{ type: "output_text", text: part.text }] })
            }
            if (part.type === "tool-call" && !part.providerExecuted) {
              input.push({
                type: "function_call",
                call_id: part.id,
                name: part.name,
                arguments: JSON.stringify(part.params)
              })
            }
          }
          break
        }
        case "tool": {
          for (const part of message.content) {
            if (part.type === "tool-result") {
              input.push({ type: "function_call_output", call_id: part.id, output: Wire.toolResultText(part) })
            }
          }
          break
        }
      }
    }
    return input
  })

/** The offered tools (strict functions) and the tool choice; neither without tools. */
export const toTools = (
  options: Pick<LanguageModel.ProviderOptions, "tools" | "toolChoice">
): { readonly tools?: Array<FunctionTool>; readonly tool_choice?: ToolChoice } => {
  if (options.tools.length === 0) return {}
  const tools = Wire.functionTools(options).map((tool): FunctionTool => ({
    type: "function",
    name: tool.name,
    ...(tool.description === undefined ? {} : { description: tool.description }),
    parameters: tool.parameters,
    strict: true
  }))
  const choice = options.toolChoice
  const tool_choice: ToolChoice = typeof choice === "string"
    ? choice
    : "tool" in choice
    ? { type: "function", name: choice.tool }
    : choice.mode === "required"
    ? "required"
    : "auto"
  return { tools, tool_choice }
}

// ---------------------------------------------------------------------------------------------------
// Answer → response parts
// ---------------------------------------------------------------------------------------------------

const finishReasons: Record<string, Response.FinishReason> = {
  content_filter: "content-filter",
  function_call: "tool-calls",
  length: "length",
  max_output_tokens: "length",
  stop: "stop",
  tool_calls: "tool-calls"
}

/** No `incomplete_details`: complete, with or without tool calls. */
const finishReasonOf = (incomplete: string | undefined, hasToolCalls: boolean): Response.FinishReason => {
  if (incomplete === undefined) return hasToolCalls ? "tool-calls" : "stop"
  return finishReasons[incomplete] ?? (hasToolCalls ? "tool-calls" : "unknown")
}

/** The answer as `effect/ai` response parts; `toolNames`: the tools the caller can run (see `Wire.knownTool`). */
export const fromResponse = (
  response: ResponsesResponse,
  toolNames?: ReadonlyArray<string>
): Effect.Effect<Array<Response.PartEncoded>, AiError.AiError> =>
  Effect.gen(function*() {
    const parts: Array<Response.PartEncoded> = []
    const createdAt = response.created_at ?? undefined
    const timestamp = createdAt === undefined
      ? undefined
      : Option.getOrUndefined(Option.map(DateTime.make(createdAt * 1000), DateTime.formatIso))
    parts.push({
      type: "response-metadata",
      ...(response.id === undefined || response.id === null ? {} : { id: response.id }),
      ...(response.model === undefined || response.model === null ? {} : { modelId: response.model }),
      ...(timestamp === undefined ? {} : { timestamp })
    })
    let hasToolCalls = false
    // The API has been seen to repeat an output item: each id is read once.
    const seen = new Set<string>()
    for (const item of response.output) {
      const itemId = item.id ?? undefined
      if (itemId !== undefined) {
        if (seen.has(itemId)) continue
        seen.add(itemId)
      }
      switch (item.type) {
        case "message": {
          for (const content of item.content ?? []) {
            // A refusal is an empty answer (its text is OpenAI's, not for the customer).
            if (content.type === "output_text" || content.type === "refusal") {
              parts.push({ type: "text", text: content.type === "output_text" ? content.text ?? "" : "" })
            }
          }
          break
        }
        case "function_call": {
          const name = item.name ?? undefined
          const callId = item.call_id ?? undefined
          if (name === undefined || callId === undefined) {
            return yield* Wire.unreadable(MODULE, "A function call without a name or call_id")
          }
          yield* Wire.knownTool(MODULE, toolNames, name)
          hasToolCalls = true
          parts.push({
            type: "tool-call",
            id: callId,
            name,
            params: yield* Wire.decodeArguments(MODULE, name, item.arguments ?? "")
          })
          break
        }
        case "reasoning": {
          // Read for the response's `reasoningText`; not sent back (see above).
          for (const summary of item.summary ?? []) parts.push({ type: "reasoning", text: summary.text })
          break
        }
      }
    }
    const usage = response.usage ?? undefined
    const serviceTier = response.service_tier ?? undefined
    parts.push({
      type: "finish",
      reason: finishReasonOf(response.incomplete_details?.reason ?? undefined, hasToolCalls),
      usage: {
        inputTokens: {
          total: usage?.input_tokens ?? undefined,
          cacheRead: usage?.input_tokens_details?.cached_tokens ?? undefined
        },
        outputTokens: {
          total: usage?.output_tokens ?? undefined,
          reasoning: usage?.output_tokens_details?.reasoning_tokens ?? undefined
        }
      },
      ...(serviceTier === undefined ? {} : { metadata: { openai: { serviceTier } } })
    })
    return parts
  })

// ---------------------------------------------------------------------------------------------------
// Telemetry
// ---------------------------------------------------------------------------------------------------

const annotateRequest = (span: Span, request: ResponsesRequest): void => {
  Wire.annotate(span, { system: "openai", operation: { name: "chat" }, request: { model: request.model } })
  Wire.annotateWithPrefix(span, "gen_ai.openai.request", { response_format: request.text.format.type })
}

/** Finish reasons only for incomplete answers, as the Responses API reports them (the agent adds the rest). */
const annotateResponse = (span: Span, response: ResponsesResponse): void => {
  const incomplete = response.incomplete_details?.reason ?? undefined
  Wire.annotate(span, {
    response: {
      id: response.id,
      model: response.model,
      finishReasons: incomplete === undefined ? undefined : [incomplete]
    },
    usage: { inputTokens: response.usage?.input_tokens, outputTokens: response.usage?.output_tokens }
  })
  Wire.annotateWithPrefix(span, "gen_ai.openai.response", { service_tier: response.service_tier })
}

// ---------------------------------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------------------------------

export interface ResponsesModelOptions {
  readonly model: string
  /** OpenAI's base URL (`…/v1`) and the bearer key, if any. */
  readonly endpoint: Wire.Endpoint
  /** Every tool the caller can run, offered or not (see `Wire.knownTool`); unset: not checked here. */
  readonly toolNames?: ReadonlyArray<string> | undefined
}

export const make = (
  options: ResponsesModelOptions
): Effect.Effect<LanguageModel.LanguageModel, never, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const client = Wire.clientFor(yield* HttpClient.HttpClient, options.endpoint)

    const generateText = (providerOptions: LanguageModel.ProviderOptions) =>
      Effect.gen(function*() {
        if (providerOptions.responseFormat.type === "json") {
          return yield* Wire.unsupported(
            MODULE,
            "Structured output (generateObject) is not supported by Parley's Responses model"
          )
        }
        const request: ResponsesRequest = {
          model: options.model,
          // Customers' messages are not kept on OpenAI's side for later retrieval.
          store: false,
          input: yield* toInput(providerOptions.prompt, options.model),
          include: [],
          text: { format: { type: "text" } },
          ...toTools(providerOptions)
        }
        annotateRequest(providerOptions.span, request)
        const response = yield* Wire.postJson({
          client,
          module: MODULE,
          path: "/responses",
          body: request,
          response: ResponsesResponse
        })
        annotateResponse(providerOptions.span, response)
        return yield* fromResponse(response, options.toolNames)
      })

    return yield* Wire.languageModel(generateText)
  })

export const layer = (
  options: ResponsesModelOptions
): Layer.Layer<LanguageModel.LanguageModel, never, HttpClient.HttpClient> =>
  Layer.effect(LanguageModel.LanguageModel, make(options))
