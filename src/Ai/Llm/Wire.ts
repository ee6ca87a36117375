/**
 * What the three model adapters (`OpenAiChat.ts`, `OpenAiResponses.ts`, `AnthropicMessages.ts`) share:
 * the HTTP client of one call (its base URL and credential headers), one JSON `POST` whose failures come
 * back as `AiError`s that `Errors.classify` reads the same way for every provider (the HTTP status, the
 * response headers and body kept in the reason's `http`; `post` alone for a streamed answer), the
 * offered tools with their JSON Schema, and the GenAI attributes of the model call's span.
 *
 * Each adapter reads answers with its own lenient schema: only the fields Parley uses, nothing required
 * that OpenAI-compatible servers or older API versions leave out.
 */
import * as AiError from "effect/ai/AiError"
import type * as IdGenerator from "effect/ai/IdGenerator"
import * as LanguageModel from "effect/ai/LanguageModel"
import * as Prompt from "effect/ai/Prompt"
import type * as Response from "effect/ai/Response"
import { addGenAIAnnotations, type GenAITelemetryAttributeOptions } from "effect/ai/Telemetry"
import * as Tool from "effect/ai/Tool"
import * as Effect from "effect/Effect"
import * as HttpClient from "effect/http/HttpClient"
import type * as HttpClientError from "effect/http/HttpClientError"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import type * as HttpClientResponse from "effect/http/HttpClientResponse"
import type * as JsonSchema from "effect/JsonSchema"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { Span } from "effect/Tracer"

// ---------------------------------------------------------------------------------------------------
// HTTP
// ---------------------------------------------------------------------------------------------------

/** Where one call goes and with which credentials. Built per call: a key never outlives its call. */
export interface Endpoint {
  /** Prepended to every path: `https://api.openai.com/v1`, `https://api.anthropic.com`. */
  readonly baseUrl: string
  /** Credential and version headers (none for a server that takes no key). */
  readonly headers: Readonly<Record<string, string>>
}

/**
 * The shared client (one connection pool) with this endpoint's base URL and headers; `accept`: the
 * answer's media type (JSON unless a streamed answer, `text/event-stream`, is asked for).
 */
export const clientFor = (
  httpClient: HttpClient.HttpClient,
  endpoint: Endpoint,
  accept = "application/json"
): HttpClient.HttpClient =>
  HttpClient.mapRequest(httpClient, (request) =>
    request.pipe(
      HttpClientRequest.prependUrl(endpoint.baseUrl),
      HttpClientRequest.setHeaders(endpoint.headers),
      HttpClientRequest.accept(accept)
    ))

/** `AiError.method`: the `LanguageModel` method a failure happened in. */
export type Method = "generateText" | "streamText"

export interface RequestOptions {
  readonly client: HttpClient.HttpClient
  /** `AiError.module`: the adapter's name. */
  readonly module: string
  /** `AiError.method`; `generateText` when unset. */
  readonly method?: Method | undefined
  /** Appended to the endpoint's base URL. */
  readonly path: string
  /** Sent as JSON. */
  readonly body: unknown
}

export interface PostOptions<S extends Schema.Decoder<unknown>> extends RequestOptions {
  /** How the 2xx answer is read. */
  readonly response: S
}

const METHOD: Method = "generateText"

/** Any JSON text, parsed. */
const JsonText = Schema.fromJsonString(Schema.Unknown)

/** The response's status and headers, and its body when it could be read: what `Errors.classify` reads. */
const httpContext = (response: HttpClientResponse.HttpClientResponse, body: string | undefined) => ({
  response: { status: response.status, headers: { ...response.headers } },
  ...(body === undefined ? {} : { body })
})

/**
 * A request that never got an answer: transport (refused, reset, DNS, TLS; worth another try), or a URL
 * or body that could not be sent (ours). The innermost cause is kept for the reason's text.
 */
const fromClientError = (error: HttpClientError.HttpClientError): AiError.AiErrorReason => {
  const reason = error.reason
  switch (reason._tag) {
    case "TransportError":
    case "EncodeError":
    case "InvalidUrlError":
      return new AiError.NetworkError({
        reason: reason._tag,
        method: reason.request.method,
        url: reason.request.url,
        ...(reason.description === undefined ? {} : { description: reason.description }),
        ...(reason.cause === undefined ? {} : { cause: reason.cause })
      })
    case "StatusCodeError":
    case "DecodeError":
    case "EmptyBodyError":
      return new AiError.InvalidResponseError({
        description: reason.description ?? reason._tag,
        http: httpContext(reason.response, undefined)
      })
  }
}

/**
 * `POST {base}{path}` with `body` as JSON, answered with a 2xx: its body is the caller's to read. A
 * non-2xx answer fails with the reason its status calls for (`AiError.reasonFromHttpStatus`: 429 rate
 * limit, 401/403 authentication, 5xx provider error, …) with the status, headers (`Retry-After`) and
 * body kept; a request that got no answer fails with `NetworkError`.
 */
export const post = (options: RequestOptions): Effect.Effect<HttpClientResponse.HttpClientResponse, AiError.AiError> =>
  Effect.gen(function*() {
    const method = options.method ?? METHOD
    const fail = (reason: AiError.AiErrorReason) => AiError.make({ module: options.module, method, reason })
    const request = yield* HttpClientRequest.post(options.path).pipe(
      HttpClientRequest.bodyJson(options.body),
      Effect.mapError(() =>
        fail(new AiError.InvalidUserInputError({ description: "The request body could not be encoded as JSON" }))
      )
    )
    const response = yield* Effect.mapError(options.client.execute(request), (error) => fail(fromClientError(error)))
    if (response.status >= 200 && response.status < 300) return response
    const text = yield* Effect.result(response.text)
    const body = Result.isSuccess(text) ? text.success : undefined
    return yield* fail(AiError.reasonFromHttpStatus({ status: response.status, http: httpContext(response, body) }))
  })

/**
 * A 2xx answer's body as JSON read with `schema`: one that cannot be read or is not JSON fails with
 * `InvalidResponseError` (status 2xx: sampled again), one that does not fit `schema` with
 * `InvalidOutputError`.
 */
export const readJson = <S extends Schema.Decoder<unknown>>(
  response: HttpClientResponse.HttpClientResponse,
  schema: S,
  options: { readonly module: string; readonly method?: Method | undefined }
): Effect.Effect<S["Type"], AiError.AiError> =>
  Effect.gen(function*() {
    const fail = (reason: AiError.AiErrorReason) =>
      AiError.make({ module: options.module, method: options.method ?? METHOD, reason })
    const text = yield* Effect.result(response.text)
    if (Result.isFailure(text)) {
      return yield* fail(
        new AiError.InvalidResponseError({
          description: `The response body could not be read: ${text.failure.message}`,
          http: httpContext(response, undefined)
        })
      )
    }
    const json = Schema.decodeUnknownOption(JsonText)(text.success)
    if (Option.isNone(json)) {
      return yield* fail(
        new AiError.InvalidResponseError({
          description: "The response body is not JSON",
          http: httpContext(response, text.success)
        })
      )
    }
    return yield* Schema.decodeUnknownEffect(schema)(json.value).pipe(
      Effect.mapError((error) => fail(AiError.InvalidOutputError.fromSchemaError(error)))
    )
  })

/**
 * `POST {base}{path}` with `body` as JSON and the answer read with `response`: `post`'s failures, then
 * `readJson`'s.
 */
export const postJson = <S extends Schema.Decoder<unknown>>(
  options: PostOptions<S>
): Effect.Effect<S["Type"], AiError.AiError> =>
  Effect.flatMap(post(options), (response) => readJson(response, options.response, options))

/**
 * A 2xx answer whose body stopped before the answer was complete (the connection was cut, the server
 * went away): a transport failure, worth another try. `cause`: the client's error, if any.
 */
export const cutShort = (
  module: string,
  method: Method,
  request: HttpClientRequest.HttpClientRequest,
  description: string,
  cause?: unknown
): AiError.AiError =>
  AiError.make({
    module,
    method,
    reason: new AiError.NetworkError({
      reason: "TransportError",
      method: request.method,
      url: request.url,
      description,
      ...(cause === undefined ? {} : { cause })
    })
  })

/** A prompt the adapter cannot express on its wire (a file part, an empty prompt): not sent. */
export const unsupported = (module: string, description: string, method: Method = METHOD): AiError.AiError =>
  AiError.make({ module, method, reason: new AiError.InvalidUserInputError({ description }) })

/** A 2xx answer that does not say what Parley needs (no choices, arguments that are not JSON): sampled again. */
export const unreadable = (module: string, description: string, method: Method = METHOD): AiError.AiError =>
  AiError.make({ module, method, reason: new AiError.InvalidOutputError({ description }) })

// ---------------------------------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------------------------------

/**
 * JSON Schema of a tool's parameters as the providers' strict function calling wants it: an object,
 * every property listed in `required`, `additionalProperties: false` (Effect 4 writes `true` for a
 * struct unless asked), `properties` and `required` present even when empty. Keys in the order the
 * requests have always sent them. How the model's arguments are decoded is the tool's own (a struct
 * ignores unknown keys; a tool without parameters, `Tool.EmptyParams`, takes none).
 */
export const toolParametersJsonSchema = (tool: Tool.Any): JsonSchema.JsonSchema => {
  const parameters = tool.parametersSchema
  if (Tool.isDynamic(tool) && !Schema.isSchema(parameters)) return Tool.getJsonSchema(tool)
  const document = Schema.toJsonSchemaDocument(parameters, { onExcessProperty: "error" })
  const { additionalProperties, properties, required, type, ...rest } = document.schema
  const definitions = Object.keys(document.definitions).length > 0 ? { $defs: document.definitions } : {}
  if (type !== "object") return { ...document.schema, ...definitions }
  return {
    type,
    required: required ?? [],
    properties: properties ?? {},
    additionalProperties: additionalProperties ?? false,
    ...rest,
    ...definitions
  }
}

export interface FunctionTool {
  readonly name: string
  readonly description: string | undefined
  readonly parameters: JsonSchema.JsonSchema
}

/**
 * The tools to offer: the caller's own (provider-defined ones are not Parley's), only those the tool
 * choice's `oneOf` allows (`LanguageModel` has filtered them already; kept for direct callers).
 */
export const functionTools = (
  options: Pick<LanguageModel.ProviderOptions, "tools" | "toolChoice">
): Array<FunctionTool> => {
  const choice = options.toolChoice
  const allowed = typeof choice === "object" && "oneOf" in choice ? new Set<string>(choice.oneOf) : undefined
  return options.tools
    .filter((tool) => Tool.isUserDefined(tool) && (allowed === undefined || allowed.has(tool.name)))
    .map((tool) => ({
      name: tool.name,
      description: Tool.getDescription(tool),
      parameters: toolParametersJsonSchema(tool)
    }))
}

/** What a tool answered, as the text sent back to the model: its encoded result as JSON. */
export const toolResultText = (part: Prompt.ToolResultPart): string =>
  part.modelOutput === undefined ? JSON.stringify(part.result) : Prompt.toolModelOutputToText(part.modelOutput)

/**
 * A call of a tool the caller's toolkit does not have (`toolNames`: every tool it can run, offered or
 * not) is unreadable output, refused here with the tool's name: `LanguageModel` would refuse it too,
 * but with a message listing every kind of part the answer could have had.
 */
export const knownTool = (
  module: string,
  toolNames: ReadonlyArray<string> | undefined,
  name: string,
  method: Method = METHOD
): Effect.Effect<void, AiError.AiError> =>
  toolNames === undefined || toolNames.includes(name)
    ? Effect.void
    : Effect.fail(
      AiError.make({
        module,
        method,
        reason: new AiError.ToolNotFoundError({ toolName: name, availableTools: toolNames })
      })
    )

/** Arguments the model sent as a JSON string; empty means none. */
export const decodeArguments = (
  module: string,
  toolName: string,
  raw: string,
  method: Method = METHOD
): Effect.Effect<unknown, AiError.AiError> =>
  raw.trim() === ""
    ? Effect.succeed({})
    : Schema.decodeUnknownEffect(JsonText)(raw).pipe(
      Effect.mapError(() =>
        unreadable(module, `Tool call arguments for '${toolName}' are not JSON: ${raw.slice(0, 200)}`, method)
      )
    )

// ---------------------------------------------------------------------------------------------------
// Telemetry
// ---------------------------------------------------------------------------------------------------

/**
 * The GenAI semantic-convention attributes of a model call's span (docs/ai.md). `gen_ai.system` is set
 * as is: Effect 4's helper writes the provider as `gen_ai.provider.name` instead.
 */
export const annotate = (
  span: Span,
  options: GenAITelemetryAttributeOptions & { readonly system?: string | undefined }
): void => {
  const { system, ...rest } = options
  if (Predicate.isNotNullish(system)) span.attribute("gen_ai.system", system)
  addGenAIAnnotations(span, rest)
}

/** Prefixed attributes that are not GenAI conventions (`gen_ai.openai.request.response_format`, …). */
export const annotateWithPrefix = (span: Span, prefix: string, attributes: Record<string, unknown>): void => {
  for (const [key, value] of Object.entries(attributes)) {
    if (Predicate.isNotNullish(value)) span.attribute(`${prefix}.${key}`, value)
  }
}

/** One answer's parts as the stream parts that would have carried it. */
export const toStreamParts = (part: Response.PartEncoded): Array<Response.StreamPartEncoded> => {
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

/**
 * The `LanguageModel` of a wire that answers a request with the whole answer: `generateText` posts it
 * and reads the answer; `streamText` is not incremental, it replays that answer as stream parts.
 */
export const languageModel = (
  generateText: (
    options: LanguageModel.ProviderOptions
  ) => Effect.Effect<Array<Response.PartEncoded>, AiError.AiError, IdGenerator.IdGenerator>
): Effect.Effect<LanguageModel.LanguageModel> =>
  LanguageModel.make({
    generateText,
    streamText: (options) =>
      Stream.unwrap(Effect.map(generateText(options), (parts) => Stream.fromIterable(parts.flatMap(toStreamParts))))
  })

/**
 * An image part's link (`FilePart` with an `image/*` media type and a URL): what the adapters pass to
 * models that read images (`channelsSettings.imageAttachments`); none for any other file part.
 */
export const imageUrlOf = (part: Prompt.FilePart): string | undefined =>
  part.mediaType.startsWith("image/") && part.data instanceof URL ? part.data.href : undefined

