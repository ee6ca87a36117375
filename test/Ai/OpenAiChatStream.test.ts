/**
 * The chat-completions model's `streamText`: a real `"stream": true` request whose parts arrive as the
 * server-sent chunks do, tool calls assembled from their fragments, the usage of the last chunk, the
 * same failures as the non-streamed call before the stream starts, and a cut stream as a failure.
 */
import * as AiError from "effect/ai/AiError"
import * as LanguageModel from "effect/ai/LanguageModel"
import * as Prompt from "effect/ai/Prompt"
import type * as Response from "effect/ai/Response"
import * as Tool from "effect/ai/Tool"
import * as Toolkit from "effect/ai/Toolkit"
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { classify } from "../../src/Ai/Llm/Errors.js"
import * as OpenAiChat from "../../src/Ai/Llm/OpenAiChat.js"
import {
  chatBody,
  chatCompletion,
  chatCompletionStream,
  type LlmServer,
  makeLlmServer,
  rateLimited,
  serverError,
  sseFrame,
  sseStream
} from "../support/LlmServers.js"

const modelFor = (server: LlmServer, toolNames?: ReadonlyArray<string>) =>
  OpenAiChat.layer({
    model: "gpt-test",
    maxTokens: 300,
    endpoint: { baseUrl: server.baseUrl, headers: { authorization: "Bearer sk-stream" } },
    toolNames
  }).pipe(Layer.provide(NodeHttpClient.layerUndici))

/** Every part of one streamed answer. */
const streamed = (server: LlmServer, prompt = "Hi") =>
  LanguageModel.streamText({ prompt }).pipe(Stream.runCollect, Effect.provide(modelFor(server)))

const deltas = (parts: ReadonlyArray<Response.AnyPart>): Array<string> =>
  parts.flatMap((part) => part.type === "text-delta" ? [part.delta] : [])

const finishOf = (parts: ReadonlyArray<Response.AnyPart>) => {
  const finish = parts.find((part) => part.type === "finish")
  if (finish === undefined) throw new Error("no finish part")
  return finish
}

const StreamFields = Schema.Struct({
  stream: Schema.Boolean,
  stream_options: Schema.Struct({ include_usage: Schema.Boolean })
})

/** A promise and its resolver: the test's latch on the server. */
const latch = () => {
  let open: () => void = () => undefined
  const opened = new Promise<void>((resolve) => {
    open = resolve
  })
  return { open, opened }
}

const LookupOrder = Tool.make("lookup_order", {
  description: "Look an order up.",
  parameters: Schema.Struct({ order: Schema.String, lines: Schema.Array(Schema.Number) }),
  success: Schema.Struct({ status: Schema.String })
})
const Orders = Toolkit.make(LookupOrder)

describe("the request", () => {
  it.live("is the non-streamed request with stream: true and stream_options.include_usage, asking for an event stream", () =>
    Effect.gen(function*() {
      const server = yield* makeLlmServer
      server.enqueue(chatCompletion({ text: "Hello" }), chatCompletionStream({ text: "Hello" }))
      yield* LanguageModel.generateText({ prompt: "Where is my parcel?" }).pipe(Effect.provide(modelFor(server)))
      yield* streamed(server, "Where is my parcel?")
      const [plain, stream] = server.requests()
      expect(stream!.path).toBe("/v1/chat/completions")
      expect(stream!.body).toEqual({ ...(plain!.body as object), stream: true, stream_options: { include_usage: true } })
      expect(Schema.decodeUnknownSync(StreamFields)(stream!.body)).toEqual({
        stream: true,
        stream_options: { include_usage: true }
      })
      expect(stream!.headers["accept"]).toBe("text/event-stream")
      expect(stream!.headers["authorization"]).toBe("Bearer sk-stream")
      expect(plain!.headers["accept"]).toBe("application/json")
      expect(plain!.body).not.toHaveProperty("stream")
    }))
})

describe("text", () => {
  it.live("arrives delta by delta: the first delta is read while the server still holds the last chunks", () =>
    Effect.gen(function*() {
      const server = yield* makeLlmServer
      const { open, opened } = latch()
      const sent: Array<number> = []
      const chunks = ["Your parcel ", "left our warehouse ", "this morning."]
      server.enqueue(chatCompletionStream({ text: chunks.join("") }, {
        chunks,
        delayMs: 10,
        holdFinish: opened,
        onFrameSent: (frame) => sent.push(frame)
      }))
      const parts: Array<Response.StreamPart<{}>> = []
      let sentAtFirstDelta: number | undefined
      yield* LanguageModel.streamText({ prompt: "Where is my parcel?" }).pipe(
        Stream.runForEach((part) =>
          Effect.sync(() => {
            if (part.type === "text-delta" && sentAtFirstDelta === undefined) {
              sentAtFirstDelta = sent.length
              // The finishing chunks are only sent once a delta has been read: a client that
              // waited for the whole answer would never get here (and the test would time out).
              open()
            }
            parts.push(part)
          })
        ),
        Effect.provide(modelFor(server)),
        Effect.timeoutOrElse({
          duration: "10 seconds",
          orElse: () => Effect.die(new Error("the stream did not deliver a delta before its end"))
        })
      )
      // 1 role chunk + 3 text chunks before the hold; finish, usage and [DONE] after it.
      expect(sentAtFirstDelta).toBeGreaterThanOrEqual(1)
      expect(sentAtFirstDelta).toBeLessThanOrEqual(4)
      expect(sent).toHaveLength(7)
      expect(deltas(parts)).toEqual(chunks)
      expect(deltas(parts).join("")).toBe("Your parcel left our warehouse this morning.")
      expect(parts.map((part) => part.type)).toEqual([
        "response-metadata",
        "text-start",
        "text-delta",
        "text-delta",
        "text-delta",
        "text-end",
        "finish"
      ])
    }))

  it.live("the response metadata, finish reason and the usage of the last chunk are read", () =>
    Effect.gen(function*() {
      const server = yield* makeLlmServer
      server.enqueue(chatCompletionStream({ text: "Hello there, how can I help you today?", usage: { input: 42, output: 9 } }))
      const parts = yield* streamed(server)
      expect(deltas(parts).length).toBeGreaterThan(1)
      expect(deltas(parts).join("")).toBe("Hello there, how can I help you today?")
      const metadata = parts.find((part) => part.type === "response-metadata")
      expect(metadata?.id).toMatch(/^chatcmpl-/)
      expect(metadata?.modelId).toBe("gpt-test")
      expect(metadata?.timestamp !== undefined && DateTime.isDateTime(metadata.timestamp)).toBe(true)
      const finish = finishOf(parts)
      expect(finish.reason).toBe("stop")
      expect(finish.usage.inputTokens.total).toBe(42)
      expect(finish.usage.outputTokens.total).toBe(9)
    }))
})

describe("tool calls", () => {
  it.live("split over several chunks are assembled, one tool-call part each, and decide the finish reason", () =>
    Effect.gen(function*() {
      const server = yield* makeLlmServer
      const args = { order: "A-1001", lines: [1, 2, 3] }
      server.enqueue(chatCompletionStream({
        text: "Let me check.",
        toolCalls: [
          { name: "lookup_order", args, id: "call_a" },
          { name: "lookup_order", args: { order: "B-7", lines: [] }, id: "call_b" }
        ]
      }))
      const parts = yield* LanguageModel.streamText({
        prompt: "Where are my orders?",
        toolkit: Orders,
        disableToolCallResolution: true
      }).pipe(Stream.runCollect, Effect.provide(modelFor(server)))
      const calls = parts.filter((part) => part.type === "tool-call")
      expect(calls.map((call) => [call.id, call.name, call.params])).toEqual([
        ["call_a", "lookup_order", args],
        ["call_b", "lookup_order", { order: "B-7", lines: [] }]
      ])
      expect(deltas(parts).join("")).toBe("Let me check.")
      expect(finishOf(parts).reason).toBe("tool-calls")
    }))

  it.live("arguments that are not JSON fail as the non-streamed answer's do (unreadable output)", () =>
    Effect.gen(function*() {
      const server = yield* makeLlmServer
      const chunk = (delta: unknown, finish: string | null = null) => ({ choices: [{ index: 0, delta, finish_reason: finish }] })
      const frames = [
        sseFrame(chunk({ tool_calls: [{ index: 0, id: "c1", function: { name: "lookup_order", arguments: "{order:" } }] })),
        sseFrame(chunk({ tool_calls: [{ index: 0, function: { arguments: " A-1" } }] })),
        sseFrame(chunk({}, "tool_calls")),
        sseFrame("[DONE]")
      ]
      server.enqueue(sseStream(frames), chatCompletion({
        toolCalls: [{ name: "lookup_order", args: {} }]
      }))
      const streamedError = yield* Effect.flip(streamed(server))
      expect(streamedError.reason._tag).toBe("InvalidOutputError")
      expect(streamedError.reason.message).toContain("Tool call arguments for 'lookup_order' are not JSON: {order: A-1")
      expect(classify(streamedError, 0, 0)).toMatchObject({ transient: true })
    }))

  it.live("with a toolkit, LanguageModel.streamText runs the handler and emits its result before the finish", () =>
    Effect.gen(function*() {
      const server = yield* makeLlmServer
      server.enqueue(chatCompletionStream({
        text: "One moment.",
        toolCalls: [{ name: "lookup_order", args: { order: "A-1001", lines: [4] }, id: "call_1" }]
      }, { chunks: ["One ", "moment."] }))
      const handled: Array<unknown> = []
      const parts = yield* LanguageModel.streamText({ prompt: "Where is A-1001?", toolkit: Orders }).pipe(
        Stream.runCollect,
        Effect.provide(Orders.toLayer({
          lookup_order: (params) =>
            Effect.sync(() => {
              handled.push(params)
              return { status: `shipped ${params.order}` }
            })
        })),
        Effect.provide(modelFor(server, ["lookup_order"]))
      )
      expect(handled).toEqual([{ order: "A-1001", lines: [4] }])
      expect(parts.map((part) => part.type)).toEqual([
        "response-metadata",
        "text-start",
        "text-delta",
        "text-delta",
        "text-end",
        "tool-call",
        "tool-result",
        "finish"
      ])
      const result = parts.find((part) => part.type === "tool-result")
      expect(result).toMatchObject({ id: "call_1", name: "lookup_order", result: { status: "shipped A-1001" }, isFailure: false })
      expect(finishOf(parts).reason).toBe("tool-calls")
      expect(finishOf(parts).usage.inputTokens.total).toBe(100)
    }))

  it.live("the collected parts make the next turn's prompt: assistant text and tool_calls, then the tool's result", () =>
    Effect.gen(function*() {
      const server = yield* makeLlmServer
      server.enqueue(
        chatCompletionStream({
          text: "Checking.",
          toolCalls: [{ name: "lookup_order", args: { order: "A-1001", lines: [4] }, id: "call_1" }]
        }),
        chatCompletionStream({ text: "It has shipped." })
      )
      const handlers = Orders.toLayer({ lookup_order: (params) => Effect.succeed({ status: `shipped ${params.order}` }) })
      const first = Prompt.make("Where is A-1001?")
      const turn = (prompt: Prompt.Prompt) =>
        LanguageModel.streamText({ prompt, toolkit: Orders }).pipe(
          Stream.runCollect,
          Effect.provide(handlers),
          Effect.provide(modelFor(server, ["lookup_order"]))
        )
      const parts = yield* turn(first)
      const second = yield* turn(Prompt.concat(first, Prompt.fromResponseParts(parts)))
      expect(deltas(second).join("")).toBe("It has shipped.")
      expect(chatBody(server.requests()[1]!).messages).toEqual([
        { role: "user", content: "Where is A-1001?" },
        {
          role: "assistant",
          content: "Checking.",
          tool_calls: [{ function: { name: "lookup_order", arguments: "{\"order\":\"A-1001\",\"lines\":[4]}" } }]
        },
        { role: "tool", tool_call_id: "call_1", content: "{\"status\":\"shipped A-1001\"}" }
      ])
      expect(server.requests()[1]!.raw).toContain("\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\"")
    }))

  it.live("a call of a tool the caller cannot run is refused with its name, as in the non-streamed answer", () =>
    Effect.gen(function*() {
      const server = yield* makeLlmServer
      server.enqueue(chatCompletionStream({ toolCalls: [{ name: "delete_account", args: {} }] }))
      const error = yield* Effect.flip(
        LanguageModel.streamText({ prompt: "Hi", toolkit: Orders }).pipe(
          Stream.runCollect,
          Effect.provide(Orders.toLayer({ lookup_order: () => Effect.succeed({ status: "x" }) })),
          Effect.provide(modelFor(server, ["lookup_order"]))
        )
      )
      expect(error.reason).toMatchObject({ _tag: "ToolNotFoundError", toolName: "delete_account" })
    }))
})

describe("failures", () => {
  const both = (server: LlmServer) =>
    Effect.gen(function*() {
      const plain = yield* Effect.flip(LanguageModel.generateText({ prompt: "Hi" }).pipe(Effect.provide(modelFor(server))))
      const stream = yield* Effect.flip(streamed(server))
      return { plain, stream }
    })

  it.live("a 429 before the stream starts is the non-streamed call's rate limit, Retry-After and body kept", () =>
    Effect.gen(function*() {
      const server = yield* makeLlmServer
      server.enqueue(rateLimited("openai-chat", 7), rateLimited("openai-chat", 7))
      const { plain, stream } = yield* both(server)
      expect(stream.reason._tag).toBe("RateLimitError")
      expect(stream.reason._tag).toBe(plain.reason._tag)
      const now = Date.now()
      expect(classify(stream, 5, now)).toEqual(classify(plain, 5, now))
      expect(classify(stream, 5, now)).toMatchObject({ transient: true, status: 429, retryAfterMs: 7000 })
      expect(classify(stream, 5, now).reason).toContain("Rate limit reached")
    }))

  it.live("a 500 before the stream starts is the non-streamed call's provider error", () =>
    Effect.gen(function*() {
      const server = yield* makeLlmServer
      server.enqueue(serverError("openai-chat", 500), serverError("openai-chat", 500))
      const { plain, stream } = yield* both(server)
      expect(stream.reason._tag).toBe("InternalProviderError")
      const now = Date.now()
      expect(classify(stream, 5, now)).toEqual(classify(plain, 5, now))
      expect(classify(stream, 5, now)).toMatchObject({ transient: true, status: 500 })
    }))

  it.live("a connection cut mid-stream fails with a transport AiError after the deltas that arrived", () =>
    Effect.gen(function*() {
      const server = yield* makeLlmServer
      server.enqueue(chatCompletionStream({ text: "ignored" }, { chunks: ["Your parcel ", "left ", "today."], cutAfterFrames: 3 }))
      const received: Array<string> = []
      const error = yield* Effect.flip(
        LanguageModel.streamText({ prompt: "Hi" }).pipe(
          Stream.runForEach((part) => Effect.sync(() => part.type === "text-delta" && received.push(part.delta))),
          Effect.provide(modelFor(server))
        )
      )
      expect(AiError.isAiError(error)).toBe(true)
      expect(error.reason).toMatchObject({ _tag: "NetworkError", reason: "TransportError", method: "POST" })
      expect(received).toEqual(["Your parcel ", "left "])
      const failure = classify(error, 0, Date.now())
      expect(failure.transient).toBe(true)
      expect(failure.reason).toContain("/v1/chat/completions")
    }))

  it.live("a stream that ends without a finish reason or [DONE] was cut short", () =>
    Effect.gen(function*() {
      const server = yield* makeLlmServer
      server.enqueue(sseStream([sseFrame({ choices: [{ index: 0, delta: { content: "Your parcel" } }] })]))
      const error = yield* Effect.flip(streamed(server))
      expect(error.reason).toMatchObject({ _tag: "NetworkError", reason: "TransportError" })
      expect(classify(error, 0, 0).transient).toBe(true)
    }))

  it.live("an error event mid-stream is the provider's failure; a chunk that is not JSON is unreadable", () =>
    Effect.gen(function*() {
      const server = yield* makeLlmServer
      server.enqueue(
        sseStream([
          sseFrame({ choices: [{ index: 0, delta: { content: "Hel" } }] }),
          sseFrame({ error: { message: "The server had an error while processing your request.", type: "server_error" } })
        ]),
        sseStream([sseFrame({ choices: [{ index: 0, delta: { content: "Hel" } }] }), "data: {\"choices\": [\n\n"])
      )
      const reported = yield* Effect.flip(streamed(server))
      expect(reported.reason._tag).toBe("InternalProviderError")
      expect(reported.reason.message).toContain("The server had an error")
      const unreadable = yield* Effect.flip(streamed(server))
      expect(unreadable.reason._tag).toBe("InvalidOutputError")
      expect(classify(unreadable, 0, 0).transient).toBe(true)
    }))

  it.live("an answer without a single choice is unreadable, as in the non-streamed answer", () =>
    Effect.gen(function*() {
      const server = yield* makeLlmServer
      server.enqueue(sseStream([sseFrame({ id: "x", choices: [], usage: { prompt_tokens: 1, completion_tokens: 0 } }), sseFrame("[DONE]")]))
      const error = yield* Effect.flip(streamed(server))
      expect(error.reason._tag).toBe("InvalidOutputError")
    }))
})

describe("compatible servers", () => {
  it.live("comments, keep-alives, CRLF, sparse chunks, no usage and no [DONE] are read", () =>
    Effect.gen(function*() {
      const server = yield* makeLlmServer
      server.enqueue(sseStream([
        ": keep-alive\n\n",
        "data:{\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\r\n\r\n",
        ": ping\n\n",
        sseFrame({ choices: [{ delta: { content: "Hello" }, finish_reason: null }] }),
        sseFrame({ choices: [{ delta: { content: null } }] }),
        "data: {\"choices\":[{\"delta\":{\"content\":\" world\"}}]}\n",
        "\n",
        sseFrame({ choices: [{ delta: {}, finish_reason: "length" }] })
      ]))
      const parts = yield* streamed(server)
      expect(deltas(parts)).toEqual(["Hello", " world"])
      expect(parts.find((part) => part.type === "response-metadata")).toMatchObject({ type: "response-metadata" })
      const finish = finishOf(parts)
      expect(finish.reason).toBe("length")
      expect(finish.usage.inputTokens.total).toBeUndefined()
      expect(finish.usage.outputTokens.total).toBeUndefined()
    }))

  it.live("tool calls without an index, with the whole arguments object, or without an id are read", () =>
    Effect.gen(function*() {
      const server = yield* makeLlmServer
      server.enqueue(sseStream([
        sseFrame({ choices: [{ delta: { tool_calls: [{ id: "c1", function: { name: "lookup_order", arguments: "{\"order\":" } }] } }] }),
        sseFrame({ choices: [{ delta: { tool_calls: [{ function: { arguments: "\"A\",\"lines\":[]}" } }] } }] }),
        sseFrame({ choices: [{ delta: { tool_calls: [{ id: "c2", function: { name: "lookup_order", arguments: { order: "B", lines: [2] } } }] } }] }),
        sseFrame({ choices: [{ delta: { tool_calls: [{ index: 5, function: { name: "lookup_order", arguments: "{\"order\":\"C\"," } }] } }] }),
        sseFrame({ choices: [{ delta: { tool_calls: [{ index: 5, function: { arguments: "\"lines\":[9]}" } }] } }] }),
        sseFrame({ choices: [{ delta: {}, finish_reason: "stop" }], usage: { prompt_tokens: 3, completion_tokens: 4 } }),
        sseFrame("[DONE]")
      ]))
      const parts = yield* LanguageModel.streamText({ prompt: "Hi", toolkit: Orders, disableToolCallResolution: true }).pipe(
        Stream.runCollect,
        Effect.provide(modelFor(server))
      )
      const calls = parts.filter((part) => part.type === "tool-call")
      expect(calls.map((call) => [call.id, call.params])).toEqual([
        ["c1", { order: "A", lines: [] }],
        ["c2", { order: "B", lines: [2] }],
        [calls[2]!.id, { order: "C", lines: [9] }]
      ])
      expect(calls[2]!.id).not.toBe("")
      expect(finishOf(parts)).toMatchObject({ reason: "tool-calls", usage: { inputTokens: { total: 3 }, outputTokens: { total: 4 } } })
    }))

  it.live("a server that ignores stream: true and answers JSON has its answer replayed as stream parts", () =>
    Effect.gen(function*() {
      const server = yield* makeLlmServer
      server.enqueue(chatCompletion({ text: "Hello there", usage: { input: 5, output: 2 } }))
      const parts = yield* streamed(server)
      expect(parts.map((part) => part.type)).toEqual(["response-metadata", "text-start", "text-delta", "text-end", "finish"])
      expect(deltas(parts)).toEqual(["Hello there"])
      expect(finishOf(parts).usage.inputTokens.total).toBe(5)
    }))
})
