/**
 * Local LLM provider doubles on loopback, speaking each provider's real wire format: OpenAI chat
 * completions (`POST /v1/chat/completions`), OpenAI's Responses API (`POST /v1/responses`) and
 * Anthropic messages (`POST /v1/messages`). Scripted per test: a queue of answers, one per request;
 * every request is recorded (path, headers, raw and parsed body). An empty queue answers 500 with a
 * body saying so, so a test that under-scripts fails loudly. Streamed answers (`text/event-stream`,
 * `chatCompletionStream`, `sseStream`) are written frame by frame, and can wait on a test's latch or
 * be cut mid-way.
 *
 * The answer shapes are complete: copied from the vendor SDKs' generated schemas (`@effect/ai-openai`
 * `CreateChatCompletionResponse` / `Response`, `@effect/ai-anthropic` `BetaMessage` and
 * `BetaErrorResponse`) and from the vendors' documented examples, fields Parley's adapters ignore
 * included.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as http from "node:http"
import type { Socket } from "node:net"
import type { ModelSettings } from "../../src/Ai/Llm/Contract.js"

export type Wire = "openai-chat" | "openai-responses" | "anthropic"
export const wires: ReadonlyArray<Wire> = ["openai-chat", "openai-responses", "anthropic"]

export interface RecordedRequest {
  readonly method: string
  /** Path and query, e.g. `/v1/messages?beta=true`. */
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
  readonly raw: string
  /** The JSON body; `undefined` when it was not JSON. */
  readonly body: unknown
  readonly at: number
}

export type Scripted =
  | {
    readonly _tag: "Answer"
    readonly status: number
    readonly headers?: Readonly<Record<string, string>>
    /** The JSON body, built from the request it answers (some answers echo the model or tools). */
    readonly body: (request: RecordedRequest) => unknown
    readonly delayMs?: number
  }
  /**
   * A `text/event-stream` answer (status 200): `frames` written one at a time, `delayMs` apart (see
   * `Frame`). `onFrameSent`: told each written frame's index (among the written ones).
   */
  | {
    readonly _tag: "Stream"
    readonly frames: (request: RecordedRequest) => ReadonlyArray<Frame>
    readonly delayMs?: number
    readonly onFrameSent?: (frame: number) => void
  }
  /** Never answers: the client must give up on its own. */
  | { readonly _tag: "Hang" }
  /** Closes the connection without an answer. */
  | { readonly _tag: "Reset" }

/**
 * One step of a streamed answer: a text written as is (a whole event, `data: …\n\n`, or any bytes),
 * a wait until a promise settles (what the test latches on), or a cut: the connection destroyed
 * without the response's end.
 */
export type Frame =
  | string
  | { readonly _tag: "Wait"; readonly until: PromiseLike<unknown> }
  | { readonly _tag: "Cut" }

export interface LlmServer {
  /** The SDK-style base URL: `http://127.0.0.1:<port>/v1`. */
  readonly baseUrl: string
  readonly requests: () => ReadonlyArray<RecordedRequest>
  readonly enqueue: (...answers: ReadonlyArray<Scripted>) => void
  /** Answers left in the queue. */
  readonly pending: () => number
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Writes a `Stream` answer's frames, one `write` each (a client reading incrementally sees them apart). */
const writeStream = async (
  req: http.IncomingMessage,
  res: http.ServerResponse,
  script: Extract<Scripted, { readonly _tag: "Stream" }>,
  frames: ReadonlyArray<Frame>
): Promise<void> => {
  res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" })
  res.flushHeaders()
  let written = 0
  for (const frame of frames) {
    if (typeof frame !== "string") {
      if (frame._tag === "Cut") {
        req.socket.destroy()
        return
      }
      await frame.until
      continue
    }
    if (written > 0 && script.delayMs !== undefined) await sleep(script.delayMs)
    if (res.destroyed) return
    // Flushed before the next step, so that a cut never swallows what was written before it.
    await new Promise<void>((resolve) => res.write(frame, () => resolve()))
    script.onFrameSent?.(written)
    written += 1
  }
  res.end()
}

export const makeLlmServer: Effect.Effect<LlmServer, never, Scope.Scope> = Effect.gen(function*() {
  const requests: Array<RecordedRequest> = []
  const queue: Array<Scripted> = []
  const sockets = new Set<Socket>()
  const server = yield* Effect.acquireRelease(
    Effect.callback<http.Server>((resume) => {
      const server = http.createServer((req, res) => {
        const chunks: Array<Buffer> = []
        req.on("data", (chunk: Buffer) => chunks.push(chunk))
        req.on("end", () => {
          const headers: Record<string, string> = {}
          for (const [name, value] of Object.entries(req.headers)) {
            if (typeof value === "string") headers[name] = value
            else if (Array.isArray(value)) headers[name] = value.join(", ")
          }
          const raw = Buffer.concat(chunks).toString("utf8")
          let body: unknown = undefined
          try {
            body = JSON.parse(raw)
          } catch {
            body = undefined
          }
          const recorded: RecordedRequest = { method: req.method ?? "", path: req.url ?? "", headers, raw, body, at: Date.now() }
          requests.push(recorded)
          const next = queue.shift()
          if (next === undefined) {
            res.writeHead(500, { "content-type": "application/json" })
            res.end(JSON.stringify({ error: { message: "LlmServer: no scripted answer left", type: "test_script" } }))
            return
          }
          switch (next._tag) {
            case "Hang":
              return
            case "Reset":
              req.socket.destroy()
              return
            case "Answer": {
              const payload = JSON.stringify(next.body(recorded))
              setTimeout(() => {
                res.writeHead(next.status, { "content-type": "application/json", ...next.headers })
                res.end(payload)
              }, next.delayMs ?? 0)
              return
            }
            case "Stream": {
              void writeStream(req, res, next, next.frames(recorded))
            }
          }
        })
      })
      server.on("connection", (socket) => {
        sockets.add(socket)
        socket.on("close", () => sockets.delete(socket))
      })
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
    }),
    (server) =>
      Effect.callback<void>((resume) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resume(Effect.void))
      })
  )
  const address = server.address()
  const port = typeof address === "object" && address !== null ? address.port : 0
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests: () => [...requests],
    enqueue: (...answers) => {
      queue.push(...answers)
    },
    pending: () => queue.length
  } satisfies LlmServer
})

/** A base URL on which nothing listens (connection refused). */
export const refusedBaseUrl: Effect.Effect<string> = Effect.callback<string>((resume) => {
  const probe = http.createServer()
  probe.listen(0, "127.0.0.1", () => {
    const address = probe.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    probe.close(() => resume(Effect.succeed(`http://127.0.0.1:${port}/v1`)))
  })
})

// ---------------------------------------------------------------------------------------------------
// Scripted turns, per wire format
// ---------------------------------------------------------------------------------------------------

export interface ToolCallScript {
  readonly name: string
  readonly args: Readonly<Record<string, unknown>>
  readonly id?: string
}

export interface TurnScript {
  readonly text?: string
  readonly toolCalls?: ReadonlyArray<ToolCallScript>
  readonly usage?: { readonly input: number; readonly output: number }
}

let sequence = 0
const nextId = () => {
  sequence += 1
  return `${sequence}`.padStart(6, "0")
}

const DEFAULT_USAGE = { input: 100, output: 20 }
const now = () => Math.floor(Date.now() / 1000)
const Echo = Schema.Struct({
  model: Schema.optional(Schema.String),
  tools: Schema.optional(Schema.Array(Schema.Unknown)),
  tool_choice: Schema.optional(Schema.Unknown)
})
const echo = (request: RecordedRequest) =>
  Schema.decodeUnknownOption(Echo)(request.body).pipe(Option.getOrElse(() => ({ model: undefined, tools: undefined, tool_choice: undefined })))
const modelOf = (request: RecordedRequest): string => echo(request).model ?? "unknown"

const answer = (
  body: (request: RecordedRequest) => unknown,
  status = 200,
  headers: Readonly<Record<string, string>> = {}
): Scripted => ({ _tag: "Answer", status, headers, body })

/** `POST /v1/chat/completions`, as OpenAI answers it (OpenAI-compatible servers send a subset). */
export const chatCompletion = (turn: TurnScript): Scripted =>
  answer((request) => {
    const usage = turn.usage ?? DEFAULT_USAGE
    const toolCalls = (turn.toolCalls ?? []).map((call) => ({
      id: call.id ?? `call_${nextId()}`,
      type: "function",
      function: { name: call.name, arguments: JSON.stringify(call.args) }
    }))
    return {
      id: `chatcmpl-${nextId()}`,
      object: "chat.completion",
      created: now(),
      model: modelOf(request),
      choices: [{
        index: 0,
        message: {
          role: "assistant",
          content: turn.text ?? null,
          refusal: null,
          ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
          annotations: []
        },
        logprobs: null,
        finish_reason: toolCalls.length > 0 ? "tool_calls" : "stop"
      }],
      usage: {
        prompt_tokens: usage.input,
        completion_tokens: usage.output,
        total_tokens: usage.input + usage.output,
        prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
        completion_tokens_details: {
          reasoning_tokens: 0,
          audio_tokens: 0,
          accepted_prediction_tokens: 0,
          rejected_prediction_tokens: 0
        }
      },
      service_tier: "default",
      system_fingerprint: "fp_parley_test"
    }
  })

/** One server-sent event carrying `data` as JSON (or `[DONE]` as is). */
export const sseFrame = (data: unknown): string => `data: ${data === "[DONE]" ? data : JSON.stringify(data)}\n\n`

export interface StreamOptions {
  /** The text's deltas, one chunk each; default: `turn.text` in pieces of a few words. */
  readonly chunks?: ReadonlyArray<string>
  /** Between frames. */
  readonly delayMs?: number
  /** The finishing frames (finish reason, usage, `[DONE]`) wait until this settles. */
  readonly holdFinish?: PromiseLike<unknown>
  /** The connection is destroyed after this many frames, mid-stream. */
  readonly cutAfterFrames?: number
  readonly onFrameSent?: (frame: number) => void
}

/** `text` in pieces of about three words, spaces kept: what a streaming model's deltas look like. */
const piecesOf = (text: string): Array<string> => text.match(/(?:\S+\s*){1,3}|\s+/g) ?? []

/** A tool call's arguments in fragments of `size` characters (OpenAI splits the JSON string anywhere). */
const fragmentsOf = (json: string, size = 7): Array<string> => {
  const fragments: Array<string> = []
  for (let at = 0; at < json.length; at += size) fragments.push(json.slice(at, at + size))
  return fragments
}

/**
 * The frames of a streamed chat completion, as OpenAI sends them: a first chunk with the role, a chunk
 * per text delta, each tool call as a first fragment (index, id, name, empty arguments) and then its
 * arguments in several fragments, a chunk with the finish reason, a last chunk with the usage and no
 * choices (`stream_options.include_usage`), then `data: [DONE]`. The last three are the finishing frames.
 */
export const chatCompletionStreamFrames = (
  request: RecordedRequest,
  turn: TurnScript,
  chunks?: ReadonlyArray<string>
): { readonly body: Array<string>; readonly finishing: Array<string> } => {
  const usage = turn.usage ?? DEFAULT_USAGE
  const id = `chatcmpl-${nextId()}`
  const created = now()
  const model = modelOf(request)
  const chunk = (choices: ReadonlyArray<unknown>, usageField: unknown = null) => ({
    id,
    object: "chat.completion.chunk",
    created,
    model,
    service_tier: "default",
    system_fingerprint: "fp_parley_test",
    choices,
    usage: usageField
  })
  const choice = (delta: unknown, finishReason: string | null = null) => ({
    index: 0,
    delta,
    logprobs: null,
    finish_reason: finishReason
  })
  const body = [sseFrame(chunk([choice({ role: "assistant", content: "", refusal: null })]))]
  for (const piece of chunks ?? piecesOf(turn.text ?? "")) body.push(sseFrame(chunk([choice({ content: piece })])))
  const calls = turn.toolCalls ?? []
  for (const [index, call] of calls.entries()) {
    body.push(sseFrame(chunk([choice({
      tool_calls: [{ index, id: call.id ?? `call_${nextId()}`, type: "function", function: { name: call.name, arguments: "" } }]
    })])))
    for (const fragment of fragmentsOf(JSON.stringify(call.args))) {
      body.push(sseFrame(chunk([choice({ tool_calls: [{ index, function: { arguments: fragment } }] })])))
    }
  }
  const finishing = [
    sseFrame(chunk([choice({}, calls.length > 0 ? "tool_calls" : "stop")])),
    sseFrame(chunk([], {
      prompt_tokens: usage.input,
      completion_tokens: usage.output,
      total_tokens: usage.input + usage.output,
      prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
      completion_tokens_details: {
        reasoning_tokens: 0,
        audio_tokens: 0,
        accepted_prediction_tokens: 0,
        rejected_prediction_tokens: 0
      }
    })),
    sseFrame("[DONE]")
  ]
  return { body, finishing }
}

/**
 * `POST /v1/chat/completions` with `"stream": true`, as OpenAI answers it: `text/event-stream` with
 * the frames of `chatCompletionStreamFrames`.
 */
export const chatCompletionStream = (turn: TurnScript, options: StreamOptions = {}): Scripted => ({
  _tag: "Stream",
  frames: (request) => {
    const { body, finishing } = chatCompletionStreamFrames(request, turn, options.chunks)
    const frames: Array<Frame> = [
      ...body,
      ...(options.holdFinish === undefined ? [] : [{ _tag: "Wait", until: options.holdFinish } as const]),
      ...finishing
    ]
    if (options.cutAfterFrames === undefined) return frames
    const strings = frames.flatMap((frame, index) => typeof frame === "string" ? [index] : [])
    const cutAt = strings[options.cutAfterFrames] ?? frames.length
    return [...frames.slice(0, cutAt), { _tag: "Cut" }]
  },
  ...(options.delayMs === undefined ? {} : { delayMs: options.delayMs }),
  ...(options.onFrameSent === undefined ? {} : { onFrameSent: options.onFrameSent })
})

/** A `text/event-stream` answer of raw frames (what a compatible server, or a broken one, sends). */
export const sseStream = (frames: ReadonlyArray<Frame>, options: { readonly delayMs?: number } = {}): Scripted => ({
  _tag: "Stream",
  frames: () => frames,
  ...options
})

/** A chat completion as Ollama's `/v1/chat/completions` sends it: no `refusal`, no `logprobs`. */
export const ollamaChatCompletion = (turn: TurnScript): Scripted =>
  answer((request) => {
    const usage = turn.usage ?? DEFAULT_USAGE
    const toolCalls = (turn.toolCalls ?? []).map((call, index) => ({
      id: call.id ?? `call_${nextId()}`,
      index,
      type: "function",
      function: { name: call.name, arguments: JSON.stringify(call.args) }
    }))
    return {
      id: `chatcmpl-${nextId()}`,
      object: "chat.completion",
      created: now(),
      model: modelOf(request),
      system_fingerprint: "fp_ollama",
      choices: [{
        index: 0,
        message: { role: "assistant", content: turn.text ?? "", ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}) },
        finish_reason: toolCalls.length > 0 ? "tool_calls" : "stop"
      }],
      usage: { prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.input + usage.output }
    }
  })

/** `POST /v1/responses`: `output` items of type `message` and `function_call`. */
export const responsesResponse = (turn: TurnScript): Scripted =>
  answer((request) => {
    const usage = turn.usage ?? DEFAULT_USAGE
    const output: Array<unknown> = []
    if (turn.text !== undefined) {
      output.push({
        type: "message",
        id: `msg_${nextId()}`,
        status: "completed",
        role: "assistant",
        content: [{ type: "output_text", text: turn.text, annotations: [], logprobs: [] }]
      })
    }
    for (const call of turn.toolCalls ?? []) {
      output.push({
        type: "function_call",
        id: `fc_${nextId()}`,
        call_id: call.id ?? `call_${nextId()}`,
        name: call.name,
        arguments: JSON.stringify(call.args),
        status: "completed"
      })
    }
    return {
      id: `resp_${nextId()}`,
      object: "response",
      created_at: now(),
      status: "completed",
      background: false,
      error: null,
      incomplete_details: null,
      instructions: null,
      max_output_tokens: null,
      model: modelOf(request),
      output,
      parallel_tool_calls: true,
      previous_response_id: null,
      reasoning: { effort: null, summary: null },
      service_tier: "default",
      store: false,
      temperature: 1,
      text: { format: { type: "text" }, verbosity: "medium" },
      tool_choice: echo(request).tool_choice ?? "auto",
      tools: echo(request).tools ?? [],
      top_p: 1,
      truncation: "disabled",
      usage: {
        input_tokens: usage.input,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: usage.output,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: usage.input + usage.output
      },
      user: null,
      metadata: {}
    }
  })

/** `POST /v1/messages`: `content` blocks `text` and `tool_use`, `stop_reason: "tool_use"`. */
export const anthropicMessage = (turn: TurnScript): Scripted =>
  answer((request) => {
    const usage = turn.usage ?? DEFAULT_USAGE
    const content: Array<unknown> = []
    if (turn.text !== undefined) content.push({ type: "text", text: turn.text })
    for (const call of turn.toolCalls ?? []) {
      content.push({ type: "tool_use", id: call.id ?? `toolu_${nextId()}`, name: call.name, input: call.args })
    }
    return {
      id: `msg_${nextId()}`,
      type: "message",
      role: "assistant",
      model: modelOf(request),
      content,
      stop_reason: (turn.toolCalls ?? []).length > 0 ? "tool_use" : "end_turn",
      stop_sequence: null,
      usage: {
        input_tokens: usage.input,
        output_tokens: usage.output,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        service_tier: "standard"
      }
    }
  })

export const turn = (wire: Wire, script: TurnScript): Scripted => {
  switch (wire) {
    case "openai-chat":
      return chatCompletion(script)
    case "openai-responses":
      return responsesResponse(script)
    case "anthropic":
      return anthropicMessage(script)
  }
}

// ---------------------------------------------------------------------------------------------------
// Scripted failures, per vendor
// ---------------------------------------------------------------------------------------------------

const openAiError = (message: string, type: string, code: string | null) => ({
  error: { message, type, param: null, code }
})

const anthropicError = (type: string, message: string) => ({
  type: "error",
  error: { type, message },
  request_id: `req_${nextId()}`
})

/** 429 with `Retry-After` (seconds), in the vendor's error format. */
export const rateLimited = (wire: Wire, retryAfterSeconds: number): Scripted =>
  wire === "anthropic"
    ? answer(() => anthropicError("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"), 429, {
      "retry-after": `${retryAfterSeconds}`
    })
    : answer(
      () => openAiError("Rate limit reached for requests. Please try again later.", "requests", "rate_limit_exceeded"),
      429,
      { "retry-after": `${retryAfterSeconds}` }
    )

/** A 5xx in the vendor's format (Anthropic's 529 is `overloaded_error`). */
export const serverError = (wire: Wire, status = 500): Scripted =>
  wire === "anthropic"
    ? answer(() => anthropicError(status === 529 ? "overloaded_error" : "api_error", "Internal server error"), status)
    : answer(() => openAiError("The server had an error while processing your request.", "server_error", null), status)

export const unauthorized = (wire: Wire): Scripted =>
  wire === "anthropic"
    ? answer(() => anthropicError("authentication_error", "invalid x-api-key"), 401)
    : answer(() => openAiError("Incorrect API key provided.", "invalid_request_error", "invalid_api_key"), 401)

export const hang: Scripted = { _tag: "Hang" }
export const reset: Scripted = { _tag: "Reset" }

// ---------------------------------------------------------------------------------------------------
// Reading what reached the model, per wire format
// ---------------------------------------------------------------------------------------------------

export const settingsFor = (wire: Wire, baseUrl: string, apiKey = "sk-test-key", model = "test-model"): ModelSettings => ({
  provider: wire === "anthropic" ? "anthropic" : "openai",
  model,
  apiKey: Redacted.make(apiKey),
  baseUrl,
  openAiApi: wire === "openai-chat" ? "chat" : "responses"
})

export const expectedPath = (wire: Wire): string => {
  switch (wire) {
    case "openai-chat":
      return "/v1/chat/completions"
    case "openai-responses":
      return "/v1/responses"
    case "anthropic":
      return "/v1/messages?beta=true"
  }
}

const Text = Schema.Struct({ text: Schema.String })

/** The request bodies, as far as the tests read them. */
const ChatBody = Schema.Struct({
  model: Schema.String,
  messages: Schema.Array(Schema.Struct({
    role: Schema.String,
    content: Schema.optional(Schema.NullOr(Schema.String)),
    tool_call_id: Schema.optional(Schema.String),
    tool_calls: Schema.optional(Schema.Array(Schema.Struct({ function: Schema.Struct({ name: Schema.String, arguments: Schema.String }) })))
  })),
  tools: Schema.optional(Schema.Array(Schema.Struct({ function: Schema.Struct({ name: Schema.String, description: Schema.String }) }))),
  tool_choice: Schema.optional(Schema.Unknown)
})

const ResponsesBody = Schema.Struct({
  model: Schema.String,
  store: Schema.optional(Schema.Boolean),
  input: Schema.Array(Schema.Union([
    Schema.Struct({ role: Schema.String, content: Schema.Union([Schema.String, Schema.Array(Text)]) }),
    Schema.Struct({ type: Schema.Literal("function_call"), call_id: Schema.String, name: Schema.String, arguments: Schema.String }),
    Schema.Struct({ type: Schema.Literal("function_call_output"), call_id: Schema.String, output: Schema.String })
  ])),
  tools: Schema.optional(Schema.Array(Schema.Struct({ name: Schema.String, description: Schema.String }))),
  tool_choice: Schema.optional(Schema.Unknown)
})

const AnthropicBlock = Schema.Union([
  Schema.Struct({ type: Schema.Literal("text"), text: Schema.String }),
  Schema.Struct({ type: Schema.Literal("tool_use"), id: Schema.String, name: Schema.String, input: Schema.Unknown }),
  Schema.Struct({ type: Schema.Literal("tool_result"), tool_use_id: Schema.String, content: Schema.String })
])

const AnthropicBody = Schema.Struct({
  model: Schema.String,
  max_tokens: Schema.Number,
  system: Schema.optional(Schema.Array(Text)),
  messages: Schema.Array(Schema.Struct({ role: Schema.String, content: Schema.Array(AnthropicBlock) })),
  tools: Schema.optional(Schema.Array(Schema.Struct({ name: Schema.String, description: Schema.String }))),
  tool_choice: Schema.optional(Schema.Unknown)
})

export const chatBody = (request: RecordedRequest) => Schema.decodeUnknownSync(ChatBody)(request.body)
export const responsesBody = (request: RecordedRequest) => Schema.decodeUnknownSync(ResponsesBody)(request.body)
export const anthropicBody = (request: RecordedRequest) => Schema.decodeUnknownSync(AnthropicBody)(request.body)

const contentText = (content: string | ReadonlyArray<{ readonly text: string }>): string =>
  typeof content === "string" ? content : content.map((part) => part.text).join("")

/** The system prompt the request carried. */
export const systemPromptOf = (wire: Wire, request: RecordedRequest): string => {
  switch (wire) {
    case "openai-chat":
      return chatBody(request).messages.filter((m) => m.role === "system").map((m) => m.content ?? "").join("\n")
    case "openai-responses":
      return responsesBody(request).input.flatMap((item) =>
        "role" in item && (item.role === "system" || item.role === "developer") ? [contentText(item.content)] : []
      ).join("\n")
    case "anthropic":
      return (anthropicBody(request).system ?? []).map((block) => block.text).join("\n")
  }
}

/** The names of the tools the request offered, sorted. */
export const toolNamesOf = (wire: Wire, request: RecordedRequest): Array<string> => {
  switch (wire) {
    case "openai-chat":
      return (chatBody(request).tools ?? []).map((tool) => tool.function.name).sort()
    case "openai-responses":
      return (responsesBody(request).tools ?? []).map((tool) => tool.name).sort()
    case "anthropic":
      return (anthropicBody(request).tools ?? []).map((tool) => tool.name).sort()
  }
}

/** The tool results the request sent back: the JSON strings the client encoded. */
export const toolResultsOf = (wire: Wire, request: RecordedRequest): Array<string> => {
  switch (wire) {
    case "openai-chat":
      return chatBody(request).messages.flatMap((m) => m.role === "tool" ? [m.content ?? ""] : [])
    case "openai-responses":
      return responsesBody(request).input.flatMap((item) => "type" in item && item.type === "function_call_output" ? [item.output] : [])
    case "anthropic":
      return anthropicBody(request).messages.flatMap((m) =>
        m.content.flatMap((block) => block.type === "tool_result" ? [block.content] : [])
      )
  }
}

/** The conversation's text messages as `role: text`, in order (system prompt and tool traffic left out). */
export const conversationOf = (wire: Wire, request: RecordedRequest): Array<string> => {
  switch (wire) {
    case "openai-chat":
      return chatBody(request).messages.flatMap((m) =>
        (m.role === "user" || m.role === "assistant") && typeof m.content === "string" ? [`${m.role}: ${m.content}`] : []
      )
    case "openai-responses":
      return responsesBody(request).input.flatMap((item) =>
        "role" in item && (item.role === "user" || item.role === "assistant") ? [`${item.role}: ${contentText(item.content)}`] : []
      )
    case "anthropic":
      return anthropicBody(request).messages.flatMap((m) =>
        m.content.flatMap((block) => block.type === "text" ? [`${m.role}: ${block.text}`] : [])
      )
  }
}

/** The credential header the request carried. */
export const credentialOf = (wire: Wire, request: RecordedRequest): string | undefined =>
  wire === "anthropic" ? request.headers["x-api-key"] : request.headers["authorization"]

export const expectedCredential = (wire: Wire, key: string): string => wire === "anthropic" ? key : `Bearer ${key}`
