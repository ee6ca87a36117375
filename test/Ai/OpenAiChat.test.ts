/**
 * The chat-completions `LanguageModel`: prompt and tool conversion, lenient answers, and why it reads
 * answers with its own lenient schema instead of a strict reading of OpenAI's format.
 */
import * as IdGenerator from "effect/ai/IdGenerator"
import * as LanguageModel from "effect/ai/LanguageModel"
import * as Prompt from "effect/ai/Prompt"
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as OpenAiChat from "../../src/Ai/Llm/OpenAiChat.js"
import * as Prompts from "../../src/Ai/Llm/Prompt.js"
import { chatBody, chatCompletion, makeLlmServer } from "../support/LlmServers.js"

const OLLAMA_ANSWER = {
  id: "chatcmpl-42",
  object: "chat.completion",
  created: 1_764_000_000,
  model: "llama3.2",
  system_fingerprint: "fp_ollama",
  choices: [{ index: 0, message: { role: "assistant", content: "Hello!" }, finish_reason: "stop" }],
  usage: { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 }
}

const decode = Schema.decodeUnknownSync(OpenAiChat.ChatCompletion)

/**
 * What a strict reading of OpenAI's format requires that compatible servers leave out: OpenAI's own
 * answers always carry `choices[].logprobs` and `message.refusal` (null when unused), and the
 * generated OpenAI schema Parley used before its own adapter required both.
 */
const StrictChoices = Schema.Struct({
  choices: Schema.Array(Schema.Struct({
    logprobs: Schema.NullOr(Schema.Struct({})),
    message: Schema.Struct({ refusal: Schema.NullOr(Schema.String) })
  }))
})
const withIds = Effect.provideService(IdGenerator.IdGenerator, IdGenerator.defaultIdGenerator)

describe("answers", () => {
  it("a strict reading of OpenAI's format rejects an Ollama answer (no refusal, no logprobs); ours reads it", () => {
    expect(Result.isFailure(Schema.decodeUnknownResult(StrictChoices)(OLLAMA_ANSWER))).toBe(true)
    expect(decode(OLLAMA_ANSWER).choices[0]!.message.content).toBe("Hello!")
  })

  it("ours reads OpenAI's full answer, and nulls or absences wherever compatible servers differ", () => {
    const openAi = {
      ...OLLAMA_ANSWER,
      choices: [{
        index: 0,
        message: { role: "assistant", content: "Hello!", refusal: null, annotations: [] },
        logprobs: null,
        finish_reason: "stop"
      }],
      service_tier: "default"
    }
    expect(Result.isSuccess(Schema.decodeUnknownResult(StrictChoices)(openAi))).toBe(true)
    expect(decode(openAi).choices[0]!.message).toEqual({ content: "Hello!", refusal: null })
    const sparse = decode({
      id: null,
      model: null,
      created: null,
      choices: [{ finish_reason: null, message: { content: null, refusal: null, tool_calls: null } }],
      usage: null
    })
    expect(sparse.choices[0]!.message).toEqual({ content: null, refusal: null, tool_calls: null })
    expect(decode({ choices: [{ message: {} }] }).choices[0]!.message).toEqual({})
    // What Parley needs is still required: the choices, and each call's function name.
    expect(Result.isFailure(Schema.decodeUnknownResult(OpenAiChat.ChatCompletion)({ id: "x" }))).toBe(true)
    expect(
      Result.isFailure(Schema.decodeUnknownResult(OpenAiChat.ChatCompletion)({
        choices: [{ message: { tool_calls: [{ id: "c", function: { arguments: "{}" } }] } }]
      }))
    ).toBe(true)
  })

  it.effect("tool calls decide the finish reason; object arguments, missing ids and empty arguments are read", () =>
    Effect.gen(function*() {
      const parts = yield* OpenAiChat.fromChatCompletion(decode({
        ...OLLAMA_ANSWER,
        choices: [{
          index: 0,
          finish_reason: "stop",
          message: {
            role: "assistant",
            content: "",
            tool_calls: [
              { type: "function", function: { name: "search_knowledge", arguments: { query: "parcel" } } },
              { id: "call_2", type: "function", function: { name: "get_past_conversations", arguments: "" } }
            ]
          }
        }]
      })).pipe(withIds)
      const calls = parts.filter((part) => part.type === "tool-call")
      expect(calls.map((call) => [call.name, call.params])).toEqual([
        ["search_knowledge", { query: "parcel" }],
        ["get_past_conversations", {}]
      ])
      expect(calls[0]!.id).not.toBe("")
      expect(calls[1]!.id).toBe("call_2")
      expect(parts.find((part) => part.type === "finish")).toMatchObject({
        reason: "tool-calls",
        usage: { inputTokens: { total: 12 }, outputTokens: { total: 3 } }
      })
      expect(parts.some((part) => part.type === "text")).toBe(false)
    }))

  it.effect("arguments that are not JSON are unreadable output (retried by the agent)", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(OpenAiChat.fromChatCompletion(decode({
        ...OLLAMA_ANSWER,
        choices: [{
          index: 0,
          finish_reason: "tool_calls",
          message: { content: null, tool_calls: [{ id: "c", function: { name: "search_knowledge", arguments: "{query:" } }] }
        }]
      })).pipe(withIds))
      expect(error.reason._tag).toBe("InvalidOutputError")
    }))

  it.effect("no choices is unreadable output", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(OpenAiChat.fromChatCompletion(decode({ ...OLLAMA_ANSWER, choices: [] })).pipe(withIds))
      expect(error.reason._tag).toBe("InvalidOutputError")
    }))
})

describe("requests", () => {
  it.effect("the prompt becomes system, user, assistant tool_calls and tool messages", () =>
    Effect.gen(function*() {
      const prompt = Prompt.fromMessages([
        Prompt.makeMessage("system", { content: "Be brief." }),
        Prompt.makeMessage("user", { content: [Prompt.makePart("text", { text: "Where is my parcel?" })] }),
        Prompt.makeMessage("assistant", {
          content: [
            Prompt.makePart("text", { text: "Let me check." }),
            Prompt.makePart("tool-call", { id: "call_1", name: "search_knowledge", params: { query: "parcel" }, providerExecuted: false })
          ]
        }),
        Prompt.makeMessage("tool", {
          content: [Prompt.makePart("tool-result", { id: "call_1", name: "search_knowledge", isFailure: false, result: { passages: [] }, providerExecuted: false })]
        })
      ])
      expect(yield* OpenAiChat.toChatMessages(prompt)).toEqual([
        { role: "system", content: "Be brief." },
        { role: "user", content: "Where is my parcel?" },
        {
          role: "assistant",
          content: "Let me check.",
          tool_calls: [{ id: "call_1", type: "function", function: { name: "search_knowledge", arguments: "{\"query\":\"parcel\"}" } }]
        },
        { role: "tool", tool_call_id: "call_1", content: "{\"passages\":[]}" }
      ])
    }))

  it("tools are offered as functions, filtered by oneOf; no tools means no tool_choice", () => {
    const tools = Object.values(Prompts.SupportToolkit.tools)
    const offered = OpenAiChat.toChatTools({ tools, toolChoice: { mode: "auto", oneOf: ["search_knowledge"] } })
    expect(offered.tool_choice).toBe("auto")
    expect(offered.tools).toEqual([{
      type: "function",
      function: {
        name: "search_knowledge",
        description: Prompts.SearchKnowledge.description,
        parameters: {
          type: "object",
          required: ["query"],
          properties: { query: { type: "string", description: "What to look for: a few keywords or a short question." } },
          additionalProperties: false
        }
      }
    }])
    expect(OpenAiChat.toChatTools({ tools, toolChoice: { tool: "close_conversation" } }).tool_choice).toEqual({
      type: "function",
      function: { name: "close_conversation" }
    })
    expect(OpenAiChat.toChatTools({ tools: [], toolChoice: "auto" })).toEqual({})
  })
})

describe("streaming", () => {
  it.live("streamText replays the whole answer as stream parts (not incremental)", () =>
    Effect.gen(function*() {
      const server = yield* makeLlmServer
      server.enqueue(chatCompletion({ text: "Hello there", usage: { input: 5, output: 2 } }))
      const model = OpenAiChat.layer({ model: "llama3.2", maxTokens: 256, endpoint: { baseUrl: server.baseUrl, headers: {} } }).pipe(
        Layer.provide(NodeHttpClient.layerUndici)
      )
      const parts = yield* LanguageModel.streamText({ prompt: "Hi" }).pipe(Stream.runCollect, Effect.provide(model))
      const types = parts.map((part) => part.type)
      expect(types).toEqual(["response-metadata", "text-start", "text-delta", "text-end", "finish"])
      expect(parts.flatMap((part) => part.type === "text-delta" ? [part.delta] : [])).toEqual(["Hello there"])
      const body = chatBody(server.requests()[0]!)
      expect(body.model).toBe("llama3.2")
      expect(server.requests()[0]!.headers["authorization"]).toBeUndefined()
      expect(Schema.decodeUnknownSync(Schema.Struct({ max_tokens: Schema.Number }))(server.requests()[0]!.body).max_tokens).toBe(256)
    }))
})
