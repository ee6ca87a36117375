/**
 * The agent against local servers speaking each provider's wire format: OpenAI chat completions
 * (OpenAI-compatible servers), OpenAI's Responses API and Anthropic messages. Only the provider's HTTP
 * is doubled; the agent, the @effect/ai clients and the HTTP client are the real ones.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { type AgentService, makeAgent } from "../../src/Ai/Llm/Agent.js"
import type { AgentFeatures, AgentRequest, ModelSettings, Passage, PastConversation } from "../../src/Ai/Llm/Contract.js"
import { AiUnavailable } from "../../src/Ai/Llm/Errors.js"
import * as Prompts from "../../src/Ai/Llm/Prompt.js"
import type { RetryPolicy } from "../../src/Ai/Llm/Retry.js"
import {
  credentialOf,
  expectedCredential,
  expectedPath,
  hang,
  type LlmServer,
  makeLlmServer,
  rateLimited,
  refusedBaseUrl,
  reset,
  serverError,
  settingsFor,
  systemPromptOf,
  toolNamesOf,
  toolResultsOf,
  turn,
  unauthorized,
  type Wire,
  wires
} from "../support/LlmServers.js"

const DELIVERY: Passage = {
  articleId: "article-shipping",
  title: "Shipping and delivery",
  url: "https://help.example.com/shipping",
  heading: "Delivery times",
  text: "Orders leave our warehouse within 1–2 business days. Standard delivery takes 3–5 business days."
}

const REFUNDS: Passage = {
  articleId: "article-returns",
  title: "Returns and refunds",
  url: "https://help.example.com/returns",
  heading: "Refunds",
  text: "Refunds go back to your original payment method within 5 business days after the item arrives."
}

const PAST: PastConversation = {
  id: "c-earlier",
  createdAt: "2026-10-01T09:00:00Z",
  status: "closed",
  title: "Order 1234 arrived damaged",
  messages: [{ role: "human", text: "My order 1234 arrived damaged." }, { role: "ai", text: "Sorry! A replacement is on its way." }]
}

const NO_FEATURES: AgentFeatures = {
  escalation: false,
  closeTicket: false,
  getPastConversationsTool: false,
  preemptiveRetrieval: false,
  tone: false
}
const ALL_FEATURES: AgentFeatures = {
  escalation: true,
  closeTicket: true,
  getPastConversationsTool: true,
  preemptiveRetrieval: true,
  tone: true
}

/** Fast in tests: short delays, a small budget. */
const POLICY: RetryPolicy = {
  timeout: Duration.seconds(5),
  retryBudget: Duration.seconds(5),
  maxRetries: 5,
  baseDelay: Duration.millis(20),
  maxDelay: Duration.millis(200)
}

/** The agent over the real HTTP client, which lives as long as the test's scope. */
const agentWith = (policy: RetryPolicy = POLICY) =>
  Effect.flatMap(Layer.build(NodeHttpClient.layerUndici), (context) => makeAgent(policy).pipe(Effect.provide(context)))

interface Searches {
  readonly queries: Array<string>
}

const request = (
  settings: ModelSettings,
  overrides: Partial<AgentRequest> = {},
  searches: Searches = { queries: [] }
): AgentRequest => ({
  settings,
  features: NO_FEATURES,
  tone: null,
  history: [],
  unanswered: [{ text: "How long does shipping take?" }],
  retrieved: [],
  tools: {
    searchKnowledge: (query) =>
      Effect.sync(() => {
        searches.queries.push(query)
        return [DELIVERY]
      }),
    pastConversations: () => Effect.succeed([PAST])
  },
  maxTurns: 4,
  ...overrides
})

const setup = (wire: Wire) =>
  Effect.gen(function*() {
    const server = yield* makeLlmServer
    const agent = yield* agentWith()
    return { server, agent, settings: settingsFor(wire, server.baseUrl) }
  })

const onlyRequest = (server: LlmServer) => {
  const requests = server.requests()
  expect(requests).toHaveLength(1)
  return requests[0]!
}

describe.each(wires)("Agent over %s", (wire) => {
  it.scopedLive("answers grounded in a passage it searched for, citing it; usage summed over turns", () =>
    Effect.gen(function*() {
      const { agent, server, settings } = yield* setup(wire)
      server.enqueue(
        turn(wire, {
          toolCalls: [{ name: "search_knowledge", args: { query: "shipping time" } }],
          usage: { input: 120, output: 15 }
        }),
        turn(wire, { text: "Standard delivery takes 3–5 business days [1].", usage: { input: 260, output: 30 } })
      )
      const searches: Searches = { queries: [] }
      const reply = yield* agent.reply(request(settings, {}, searches))

      expect(reply).toMatchObject({
        text: "Standard delivery takes 3–5 business days.",
        action: { _tag: "Answer" },
        citations: [DELIVERY],
        usage: { inputTokens: 380, outputTokens: 45 },
        provider: settings.provider,
        model: "test-model",
        turns: 2
      })
      expect(reply.latencyMs).toBeGreaterThanOrEqual(0)
      expect(searches.queries).toEqual(["shipping time"])
      const [first, second] = server.requests()
      expect(first!.path).toBe(expectedPath(wire))
      expect(toolResultsOf(wire, first!)).toEqual([])
      // The passage went back to the model as the tool's result, with its ref to cite.
      const [result] = toolResultsOf(wire, second!)
      expect(JSON.parse(result!)).toEqual({
        passages: [{ ref: 1, title: DELIVERY.title, url: DELIVERY.url, heading: DELIVERY.heading, text: DELIVERY.text }]
      })
    }))
})
