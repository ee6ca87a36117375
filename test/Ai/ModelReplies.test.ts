/**
 * Replies from a language model through the real app: a customer message posted to message-received,
 * the `generate_reply` job on the real workers, the agent over its real `effect/ai` model adapters and
 * HTTP client, and every event signed and delivered to a receiver on loopback. Only the provider's HTTP is
 * doubled: a local server speaking its wire format (test/support/LlmServers.ts), scripted per test.
 */
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { describe, expect, layer } from "@effect/vitest"
import * as SqlClient from "effect/sql/SqlClient"
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Schema from "effect/Schema"
import { ESCALATION_TEXT, NO_ANSWER_DETAIL } from "../../src/Ai/Embedded.js"
import * as Prompts from "../../src/Ai/Llm/Prompt.js"
import { MessageReceived } from "../../src/Domain/Conversation.js"
import { ReplyRecordJson } from "../../src/Domain/Reply.js"
import { ToneJson } from "../../src/Domain/Workspace.js"
import {
  CloseConversationData,
  ConversationSummaryData,
  ConversationTitleData,
  EscalateData,
  SendCsatData,
  SendMessagesData,
  TypingData
} from "../../src/Domain/EventData.js"
import { aiRequestsOf, aiTokensOf } from "../../src/Observability/Metrics.js"
import { ADMIN_TOKEN, bodyAs, call, makeTenant, type Tenant, TestAppWithWorkers } from "../support/App.js"
import { eventually, jobsSettled } from "../support/Eventually.js"
import {
  hang,
  type LlmServer,
  makeLlmServer,
  rateLimited,
  type RecordedRequest,
  systemPromptOf,
  toolNamesOf,
  toolResultsOf,
  turn,
  type Wire
} from "../support/LlmServers.js"
import { AnyEvent, Envelope, makeReceiver, type Receiver, webhookBody } from "../support/Receiver.js"

class Llm extends Context.Service<Llm, LlmServer>()("test/Llm") {}

const spans = new InMemorySpanExporter()
const Telemetry = NodeSdk.layer(() => ({
  resource: { serviceName: "parley-test" },
  spanProcessor: new SimpleSpanProcessor(spans)
}))

const MODEL = "test-model"

const providerEnv = (wire: Wire, baseUrl: string): Record<string, string> =>
  wire === "anthropic"
    ? { AI_PROVIDER: "anthropic", ANTHROPIC_BASE_URL: baseUrl, ANTHROPIC_API_KEY: "sk-ant-test" }
    : { AI_PROVIDER: "openai", OPENAI_BASE_URL: baseUrl, OPENAI_API_KEY: "sk-test", OPENAI_API: wire === "openai-chat" ? "chat" : "responses" }

/** Parley with its workers, configured for a model on a local server speaking `wire`. */
const AppOn = (wire: Wire, overrides: Record<string, string> = {}) =>
  Layer.unwrap(
    Effect.map(makeLlmServer, (server) =>
      Layer.merge(
        TestAppWithWorkers({
          ...providerEnv(wire, server.baseUrl),
          AI_MODEL: MODEL,
          // Long enough never to cut a hanging call short in the crash test; failures here are HTTP errors.
          AI_TIMEOUT: "20 seconds",
          AI_RETRY_BUDGET: "3 seconds",
          AI_MAX_RETRIES: "5",
          // A lease a busy test machine keeps: a run abandoned by a late heartbeat would send typing twice.
          JOB_LEASE: "3 seconds",
          ...overrides
        }),
        Layer.succeed(Llm, server)
      )
    )
  )

const customerId = "6f1c1f8e-1d7e-4c8e-9a0a-1b2c3d4e5f60"

const SHIPPING = {
  title: "Shipping times",
  url: "https://help.example.com/shipping",
  body: "Standard shipping to Canada takes 3 to 5 business days. Express shipping takes 1 to 2 business days."
}

const addArticle = (tenant: Tenant) =>
  call("POST", `/admin/v1/workspaces/${tenant.workspaceId}/articles`, { token: ADMIN_TOKEN, body: SHIPPING }).pipe(
    Effect.tap((reply) => Effect.sync(() => expect(reply.status).toBe(201)))
  )

const ask = (
  tenant: Tenant,
  message: { id: string; conversationId: string; text: string; syncOnly?: boolean; role?: string; customerId?: string }
) =>
  call("POST", `/v1/webhooks/${tenant.integrationId}/message-received`, {
    token: tenant.token,
    body: { role: "human", customerId, ...message }
  }).pipe(
    Effect.tap((reply) => Effect.sync(() => expect(reply.status, JSON.stringify(reply.body)).toBe(200))),
    Effect.flatMap(bodyAs(MessageReceived)),
    Effect.map((reply) => reply.body)
  )

const kinds = (receiver: Receiver) => receiver.received().map((r) => webhookBody(AnyEvent)(r).event)

const typingOf = webhookBody(Envelope(Schema.Literal("typing"), TypingData))
const sendOf = webhookBody(Envelope(Schema.Literal("send_messages"), SendMessagesData))
const escalateOf = webhookBody(Envelope(Schema.Literal("escalate"), EscalateData))
const closeOf = webhookBody(Envelope(Schema.Literal("close_conversation"), CloseConversationData))
const summaryOf = webhookBody(Envelope(Schema.Literal("conversation_summary"), ConversationSummaryData))
const titleOf = webhookBody(Envelope(Schema.Literal("conversation_title"), ConversationTitleData))
const csatOf = webhookBody(Envelope(Schema.Literal("send_csat"), SendCsatData))

/** The model requests made since `from` (an index into the server's log). */
const requestsSince = (llm: LlmServer, from: number): ReadonlyArray<RecordedRequest> => llm.requests().slice(from)

interface Row {
  readonly status: string
}

const conversationStatus = (id: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql<Row>`SELECT status FROM conversations WHERE id = ${id}`).pipe(
    Effect.map((rows) => rows[0]?.status)
  )

interface MetadataRow {
  readonly triggerMessageId: string
  readonly messageId: string | null
  readonly action: string
  readonly reason: string | null
  readonly provider: string
  readonly model: string | null
  readonly inputTokens: number
  readonly outputTokens: number
  readonly turns: number
  readonly latencyMs: number
  readonly citations: ReadonlyArray<{ readonly title: string; readonly url: string | null; readonly text: string }>
  readonly error: string | null
  readonly title: string | null
  readonly summary: string | null
}

const metadataOf = (conversationId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<MetadataRow>`SELECT * FROM reply_metadata WHERE conversation_id = ${conversationId} ORDER BY created_at`)

const aiMessagesOf = (conversationId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ readonly id: string; readonly text: string }>`
      SELECT id, text FROM messages WHERE conversation_id = ${conversationId} AND role = 'ai' ORDER BY seq`)

/** A counter's current count, for one set of labels (`aiTokensOf("openai", "input")`). */
const counter = (metric: Metric.Counter<number>) => Effect.map(Metric.value(metric), (state) => state.count)

/** Waits for `count` webhooks, then for the tenant's jobs to be done: no more can arrive after that. */
const settled = (receiver: Receiver, count: number, tenant: Tenant) =>
  Effect.gen(function*() {
    yield* receiver.waitFor(count)
    yield* jobsSettled(tenant)
    return receiver.received()
  })

const setup = (supportedFeatures: Record<string, boolean> = {}) =>
  Effect.gen(function*() {
    const llm = yield* Llm
    const receiver = yield* makeReceiver()
    const tenant = yield* makeTenant({ webhookUrl: receiver.url, supportedFeatures })
    expect(llm.pending()).toBe(0)
    return { llm, receiver, tenant, from: llm.requests().length }
  })

describe("replies from a model (OpenAI chat completions), through the app", () => {
  layer(AppOn("openai-chat").pipe(Layer.provide(Telemetry)), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("answers grounded in the article it searched for: typing first, then the answer with its link; metadata, metrics and span", () =>
      Effect.gen(function*() {
        const { from, llm, receiver, tenant } = yield* setup()
        yield* addArticle(tenant)
        const inputBefore = yield* counter(aiTokensOf("openai", "input"))
        const successBefore = yield* counter(aiRequestsOf("openai", "success"))
        spans.reset()
        llm.enqueue(
          turn("openai-chat", {
            toolCalls: [{ name: "search_knowledge", args: { query: "shipping Canada" } }],
            usage: { input: 120, output: 15 }
          }),
          turn("openai-chat", { text: "Standard shipping to Canada takes 3 to 5 business days [1].", usage: { input: 260, output: 30 } })
        )
        const { conversation, message } = yield* ask(tenant, {
          id: "g-1",
          conversationId: "grounded",
          text: "How long does shipping to Canada take?"
        })
        const received = yield* settled(receiver, 2, tenant)
        expect(kinds(receiver)).toEqual(["typing", "send_messages"])
        expect(typingOf(received[0]!).data).toEqual({ messageId: message.id })
        const [sent] = sendOf(received[1]!).data.messages
        expect(sent!.role).toBe("ai")
        // The citation marker is gone; the cited article is linked.
        expect(sent!.text).toBe(
          "Standard shipping to Canada takes 3 to 5 business days.\n\nMore in “Shipping times”: https://help.example.com/shipping."
        )
        // Grounded: the model was given the article's passage as the search result.
        const requests = requestsSince(llm, from)
        expect(requests).toHaveLength(2)
        expect(toolResultsOf("openai-chat", requests[1]!).join()).toContain("3 to 5 business days")

        const [record] = yield* metadataOf(conversation.id)
        expect(record).toMatchObject({
          triggerMessageId: message.id,
          messageId: sent!.id,
          action: "answer",
          provider: "openai",
          model: MODEL,
          inputTokens: 380,
          outputTokens: 45,
          turns: 2,
          error: null
        })
        expect(record!.latencyMs).toBeGreaterThan(0)
        expect(record!.citations).toEqual([
          expect.objectContaining({ title: SHIPPING.title, url: SHIPPING.url, text: SHIPPING.body })
        ])
        expect((yield* counter(aiTokensOf("openai", "input"))) - inputBefore).toBe(380)
        expect((yield* counter(aiRequestsOf("openai", "success"))) - successBefore).toBe(2)

        // The same, as the replies endpoint shows it (by the integrator's conversation id or Parley's).
        for (const id of ["grounded", conversation.id]) {
          const listed = yield* call("GET", `/v1/integration/${tenant.integrationId}/conversations/${id}/replies`, {
            token: tenant.token
          })
          expect(listed.status).toBe(200)
          expect((yield* bodyAs(Schema.Array(ReplyRecordJson))(listed)).body).toEqual([{
            triggerMessageId: message.id,
            conversationId: conversation.id,
            messageId: sent!.id,
            action: "answer",
            reason: null,
            provider: "openai",
            model: MODEL,
            inputTokens: 380,
            outputTokens: 45,
            turns: 2,
            latencyMs: record!.latencyMs,
            citations: [{
              articleId: expect.any(String),
              title: SHIPPING.title,
              url: SHIPPING.url,
              heading: null,
              text: SHIPPING.body
            }],
            error: null,
            title: null,
            summary: null,
            guardrails: null,
            verification: null,
            instructions: null,
            createdAt: expect.stringMatching(/Z$/)
          }])
        }
        // Another workspace's conversation, or none: 404.
        const stranger = yield* makeTenant()
        for (const [token, integrationId] of [[stranger.token, tenant.integrationId], [tenant.token, tenant.integrationId]] as const) {
          const id = token === tenant.token ? "no-such-conversation" : "grounded"
          const missing = yield* call("GET", `/v1/integration/${integrationId}/conversations/${id}/replies`, { token })
          expect(missing.status).toBe(404)
        }

        const replySpan = yield* eventually(
          Effect.sync(() => spans.getFinishedSpans().find((s) => s.name === "AiReplies.reply")),
          (span) => span !== undefined
        )
        expect(replySpan!.attributes).toMatchObject({
          "gen_ai.system": "openai",
          "gen_ai.request.model": MODEL,
          "gen_ai.usage.input_tokens": 380,
          "gen_ai.usage.output_tokens": 45
        })
        // The call to the model is a child span named like the server's (`http.server POST`).
        const calls = spans.getFinishedSpans().filter((s) =>
          s.spanContext().traceId === replySpan!.spanContext().traceId && s.attributes["url.full"] !== undefined
        )
        expect(calls.map((s) => s.name)).toContain("http.client POST")
      }))

    it.effect("typing off: no typing event", () =>
      Effect.gen(function*() {
        const { llm, receiver, tenant } = yield* setup({ typing: false })
        llm.enqueue(turn("openai-chat", { text: "Hello! How can I help?" }))
        yield* ask(tenant, { id: "t-1", conversationId: "no-typing", text: "Hi" })
        yield* settled(receiver, 1, tenant)
        expect(kinds(receiver)).toEqual(["send_messages"])
      }))

    it.effect("a tool call to escalate hands over: hand-over message, escalate with reason and summary, conversation_summary; then silence", () =>
      Effect.gen(function*() {
        const { from, llm, receiver, tenant } = yield* setup({ messageInEscalation: true, conversationSummary: true })
        llm.enqueue(
          turn("openai-chat", {
            toolCalls: [{
              name: "escalate_to_human",
              args: {
                reason: "The customer wants a refund for a damaged order.",
                summary: "Order 1234 arrived damaged; the customer wants a refund.",
                message: "I'm passing you to a colleague who can arrange the refund."
              }
            }]
          }),
          turn("openai-chat", { text: "The customer's order 1234 arrived damaged and they want a refund." })
        )
        const { conversation, message } = yield* ask(tenant, {
          id: "e-1",
          conversationId: "escalated",
          text: "My order 1234 arrived damaged, I want my money back."
        })
        const received = yield* settled(receiver, 4, tenant)
        expect(kinds(receiver)).toEqual(["typing", "send_messages", "escalate", "conversation_summary"])
        const [handover] = sendOf(received[1]!).data.messages
        expect(handover!.text).toBe("I'm passing you to a colleague who can arrange the refund.")
        expect(escalateOf(received[2]!).data).toEqual({
          reason: "handover",
          detail: "The customer wants a refund for a damaged order.",
          summary: "Order 1234 arrived damaged; the customer wants a refund.",
          messageId: handover!.id
        })
        expect(summaryOf(received[3]!).data).toEqual({
          summary: "The customer's order 1234 arrived damaged and they want a refund.",
          at: "escalation"
        })
        // The summary call read the conversation, hand-over message included.
        const requests = requestsSince(llm, from)
        expect(systemPromptOf("openai-chat", requests[1]!)).toBe(Prompts.SUMMARY_INSTRUCTIONS)
        expect(yield* conversationStatus(conversation.id)).toBe("escalated")
        expect(yield* metadataOf(conversation.id)).toEqual([
          expect.objectContaining({
            triggerMessageId: message.id,
            action: "escalate",
            reason: "handover",
            summary: "The customer's order 1234 arrived damaged and they want a refund."
          })
        ])
        // Escalated: the AI stays silent.
        yield* ask(tenant, { id: "e-2", conversationId: "escalated", text: "Hello?" })
        yield* jobsSettled(tenant)
        expect(receiver.received()).toHaveLength(4)
        expect(requestsSince(llm, from)).toHaveLength(2)
      }))

    it.effect("without messageInEscalation the hand-over sends no message; without conversationSummary no summary", () =>
      Effect.gen(function*() {
        const { from, llm, receiver, tenant } = yield* setup()
        llm.enqueue(turn("openai-chat", {
          toolCalls: [{ name: "escalate_to_human", args: { reason: "Asked for a person.", summary: "Wants a human.", message: "One moment." } }]
        }))
        const { conversation } = yield* ask(tenant, { id: "s-1", conversationId: "silent-handover", text: "Let me talk to a human" })
        const received = yield* settled(receiver, 2, tenant)
        expect(kinds(receiver)).toEqual(["typing", "escalate"])
        expect(escalateOf(received[1]!).data).toEqual({
          reason: "handover",
          detail: "Asked for a person.",
          summary: "Wants a human.",
          messageId: null
        })
        expect(yield* aiMessagesOf(conversation.id)).toEqual([])
        expect(yield* conversationStatus(conversation.id)).toBe("escalated")
        expect(requestsSince(llm, from)).toHaveLength(1)
      }))

    it.effect("a close with CSAT: goodbye, close_conversation, conversation_summary, send_csat; the conversation is closed", () =>
      Effect.gen(function*() {
        const { from, llm, receiver, tenant } = yield* setup({
          messageInEndConversation: true,
          csat: true,
          conversationSummary: true
        })
        llm.enqueue(
          turn("openai-chat", {
            toolCalls: [{
              name: "close_conversation",
              args: { summary: "Shipping time answered; the customer is satisfied.", message: "Glad I could help. Goodbye!" }
            }]
          }),
          turn("openai-chat", { text: "The customer asked about shipping and is satisfied." })
        )
        const { conversation } = yield* ask(tenant, { id: "c-1", conversationId: "closed", text: "Thanks, that solved it!" })
        const received = yield* settled(receiver, 5, tenant)
        expect(kinds(receiver)).toEqual(["typing", "send_messages", "close_conversation", "conversation_summary", "send_csat"])
        const [goodbye] = sendOf(received[1]!).data.messages
        expect(goodbye!.text).toBe("Glad I could help. Goodbye!")
        expect(closeOf(received[2]!).data).toEqual({
          summary: "Shipping time answered; the customer is satisfied.",
          messageId: goodbye!.id,
          reason: "resolved"
        })
        expect(summaryOf(received[3]!).data).toEqual({ summary: "The customer asked about shipping and is satisfied.", at: "close" })
        expect(csatOf(received[4]!).data).toEqual({})
        expect(yield* conversationStatus(conversation.id)).toBe("closed")
        // The close tool was offered because of closeTicket (on by default).
        expect(toolNamesOf("openai-chat", requestsSince(llm, from)[0]!)).toContain("close_conversation")
      }))

    it.effect("a close without messageInEndConversation and csat: only close_conversation", () =>
      Effect.gen(function*() {
        const { llm, receiver, tenant } = yield* setup()
        llm.enqueue(turn("openai-chat", {
          toolCalls: [{ name: "close_conversation", args: { summary: "Resolved.", message: "Bye!" } }]
        }))
        const { conversation } = yield* ask(tenant, { id: "q-1", conversationId: "quiet-close", text: "All good now, thanks" })
        yield* settled(receiver, 2, tenant)
        expect(kinds(receiver)).toEqual(["typing", "close_conversation"])
        expect(yield* aiMessagesOf(conversation.id)).toEqual([])
        expect(yield* conversationStatus(conversation.id)).toBe("closed")
      }))

    it.effect("closeTicket off: the close tool is not offered, and a close the model calls anyway is not taken", () =>
      Effect.gen(function*() {
        const { from, llm, receiver, tenant } = yield* setup({ closeTicket: false, csat: true })
        llm.enqueue(
          turn("openai-chat", { toolCalls: [{ name: "close_conversation", args: { summary: "Resolved.", message: "Bye!" } }] }),
          turn("openai-chat", { text: "You're welcome!" })
        )
        const { conversation } = yield* ask(tenant, { id: "n-1", conversationId: "no-close", text: "Thanks!" })
        yield* settled(receiver, 2, tenant)
        expect(kinds(receiver)).toEqual(["typing", "send_messages"])
        expect(toolNamesOf("openai-chat", requestsSince(llm, from)[0]!)).not.toContain("close_conversation")
        expect(yield* conversationStatus(conversation.id)).toBe("open")
      }))

    it.effect("a 429 then success: one reply, after the Retry-After; the error is counted", () =>
      Effect.gen(function*() {
        const { from, llm, receiver, tenant } = yield* setup()
        const errorsBefore = yield* counter(aiRequestsOf("openai", "error"))
        llm.enqueue(rateLimited("openai-chat", 1), turn("openai-chat", { text: "Hello! How can I help?" }))
        const { conversation } = yield* ask(tenant, { id: "r-1", conversationId: "rate-limited", text: "Hi there" })
        const received = yield* settled(receiver, 2, tenant)
        expect(kinds(receiver)).toEqual(["typing", "send_messages"])
        expect(sendOf(received[1]!).data.messages[0]!.text).toBe("Hello! How can I help?")
        const requests = requestsSince(llm, from)
        expect(requests).toHaveLength(2)
        expect(requests[1]!.at - requests[0]!.at).toBeGreaterThanOrEqual(1000)
        expect((yield* counter(aiRequestsOf("openai", "error"))) - errorsBefore).toBe(1)
        expect(yield* aiMessagesOf(conversation.id)).toHaveLength(1)
      }))

    it.effect("a provider down past the budget: the conversation is handed over, never silent, one outcome; the job is done", () =>
      Effect.gen(function*() {
        // Nothing scripted: every call answers 500 until the 3-second retry budget is spent.
        const { from, llm, receiver, tenant } = yield* setup({
          messageInEscalation: true,
          conversationTitle: true,
          conversationSummary: true
        })
        const { conversation, message } = yield* ask(tenant, { id: "d-1", conversationId: "down", text: "Where is my order?" })
        const received = yield* settled(receiver, 5, tenant)
        expect(kinds(receiver)).toEqual(["typing", "send_messages", "conversation_title", "escalate", "conversation_summary"])
        // The title and summary do not wait for the model again: they are the extractive ones.
        expect(titleOf(received[2]!).data).toEqual({ title: "Where is my order?" })
        expect(summaryOf(received[4]!).data).toEqual({
          summary: `Customer: Where is my order?\nAssistant: ${Prompts.HANDOVER_TEXT}`,
          at: "escalation"
        })
        for (const request of requestsSince(llm, from)) {
          expect(toolNamesOf("openai-chat", request)).toContain("search_knowledge")
        }
        const [handover] = sendOf(received[1]!).data.messages
        expect(handover!.text).toBe(Prompts.HANDOVER_TEXT)
        expect(escalateOf(received[3]!).data).toMatchObject({
          reason: "ai_unavailable",
          summary: "The customer asked: Where is my order?",
          messageId: handover!.id
        })
        // The webhook carries neutral words; the provider's error is in the replies record and the logs.
        expect(escalateOf(received[3]!).data.detail).toBe(Prompts.AI_UNAVAILABLE_DETAIL)
        for (const request of received) expect(request.body).not.toMatch(/HTTP 500|exhausted|Internal Server Error/)
        expect(requestsSince(llm, from).length).toBeGreaterThan(1)
        expect(yield* conversationStatus(conversation.id)).toBe("escalated")
        expect(yield* metadataOf(conversation.id)).toEqual([
          expect.objectContaining({ triggerMessageId: message.id, action: "escalate", reason: "ai_unavailable", provider: "openai" })
        ])
        const [record] = yield* metadataOf(conversation.id)
        expect(record!.error).toContain("exhausted")
        expect(record!.error).toContain("HTTP 500")
        const sql = yield* SqlClient.SqlClient
        const jobs = yield* sql<{ readonly status: string; readonly attempts: number }>`
          SELECT status, attempts FROM jobs WHERE conversation_id = ${conversation.id} AND kind = 'generate_reply'`
        expect(jobs).toEqual([{ status: "done", attempts: 1 }])
      }))

    it.effect("a provider down, escalation off: the customer gets the fallback message", () =>
      Effect.gen(function*() {
        const { receiver, tenant } = yield* setup({ escalation: false })
        const { conversation } = yield* ask(tenant, { id: "f-1", conversationId: "fallback", text: "Where is my order?" })
        const received = yield* settled(receiver, 2, tenant)
        expect(kinds(receiver)).toEqual(["typing", "send_messages"])
        expect(sendOf(received[1]!).data.messages[0]!.text).toBe(
          "I'm sorry, I can't answer right now. Please try again in a few minutes."
        )
        expect(yield* conversationStatus(conversation.id)).toBe("open")
        expect(yield* metadataOf(conversation.id)).toEqual([expect.objectContaining({ action: "answer", provider: "openai" })])
      }))

    it.effect("a worker lost during the model call: the job runs again elsewhere, and the trigger still gets one reply", () =>
      Effect.gen(function*() {
        const { from, llm, receiver, tenant } = yield* setup()
        // The first call never answers (the worker making it dies); the second run's call answers.
        llm.enqueue(hang, turn("openai-chat", { text: "Hello! How can I help?" }))
        const { conversation } = yield* ask(tenant, { id: "k-1", conversationId: "killed", text: "Hi there" })
        yield* eventually(Effect.sync(() => requestsSince(llm, from).length), (n) => n === 1)
        const sql = yield* SqlClient.SqlClient
        // As the queue sees a worker that died mid-call: its lease has run out. The reaper gives the job
        // back, the dead worker's run is abandoned (here: interrupted, its model call cut), another claims it.
        yield* sql`UPDATE jobs SET locked_by = 'killed-worker', locked_until = now() - interval '1 second'
                   WHERE conversation_id = ${conversation.id} AND kind = 'generate_reply' AND status = 'running'`
        yield* receiver.waitFor(3)
        yield* jobsSettled(tenant)
        expect(kinds(receiver)).toEqual(["typing", "typing", "send_messages"])
        expect(requestsSince(llm, from)).toHaveLength(2)
        expect(yield* aiMessagesOf(conversation.id)).toEqual([{ id: expect.any(String), text: "Hello! How can I help?" }])
        expect(yield* metadataOf(conversation.id)).toHaveLength(1)
        const jobs = yield* sql<{ readonly status: string; readonly attempts: number }>`
          SELECT status, attempts FROM jobs WHERE conversation_id = ${conversation.id} AND kind = 'generate_reply'`
        expect(jobs).toEqual([{ status: "done", attempts: 2 }])
      }))

    it.effect("tone: the first reply gets firstResponseToneId's instructions, later replies toneId's; none with the flag off", () =>
      Effect.gen(function*() {
        const { from, llm, receiver, tenant } = yield* setup()
        const tone = (name: string, instructions: string) =>
          call("POST", `/admin/v1/workspaces/${tenant.workspaceId}/tones`, { token: ADMIN_TOKEN, body: { name, instructions } }).pipe(
            Effect.tap((reply) => Effect.sync(() => expect(reply.status).toBe(201))),
            Effect.flatMap(bodyAs(ToneJson)),
            Effect.map((reply) => reply.body)
          )
        const welcoming = yield* tone("welcoming", "Greet the customer warmly by name.")
        const brief = yield* tone("brief", "Answer in one short sentence.")
        const settings = (body: unknown) =>
          call("POST", `/v1/integration/${tenant.integrationId}/update-settings`, { token: tenant.token, body }).pipe(
            Effect.tap((reply) => Effect.sync(() => expect(reply.status, JSON.stringify(reply.body)).toBe(200)))
          )
        yield* settings({ supportedFeatures: { tone: true }, toneId: brief.id, firstResponseToneId: welcoming.id })
        llm.enqueue(turn("openai-chat", { text: "Hello Ada!" }), turn("openai-chat", { text: "Three days." }))
        yield* ask(tenant, { id: "tone-1", conversationId: "tones", text: "Hi, I'm Ada" })
        yield* receiver.waitFor(2)
        yield* ask(tenant, { id: "tone-2", conversationId: "tones", text: "How long is shipping?" })
        yield* receiver.waitFor(4)
        const [first, later] = requestsSince(llm, from).map((r) => systemPromptOf("openai-chat", r))
        expect(first).toContain(Prompts.toneSection({ name: "welcoming", instructions: "Greet the customer warmly by name." }))
        expect(first).not.toContain("Answer in one short sentence.")
        expect(later).toContain(Prompts.toneSection({ name: "brief", instructions: "Answer in one short sentence." }))
        expect(later).not.toContain("Greet the customer warmly")

        yield* settings({ supportedFeatures: { tone: false } })
        llm.enqueue(turn("openai-chat", { text: "You're welcome." }))
        yield* ask(tenant, { id: "tone-3", conversationId: "tones", text: "Thanks" })
        yield* receiver.waitFor(6)
        const last = requestsSince(llm, from)[2]!
        expect(systemPromptOf("openai-chat", last)).not.toContain("## Tone")
      }))

    it.effect("preemptiveRetrieval: the article's passage is in the prompt before the first call, and the cited passage is kept", () =>
      Effect.gen(function*() {
        const { from, llm, receiver, tenant } = yield* setup({ preemptiveRetrieval: true })
        yield* addArticle(tenant)
        llm.enqueue(turn("openai-chat", { text: "It takes 3 to 5 business days [1]." }))
        const { conversation } = yield* ask(tenant, { id: "p-1", conversationId: "preemptive", text: "How long does shipping to Canada take?" })
        const received = yield* settled(receiver, 2, tenant)
        const [request] = requestsSince(llm, from)
        const system = systemPromptOf("openai-chat", request!)
        expect(system).toContain(Prompts.PASSAGES_HEADING)
        expect(system).toContain(`[1] ${SHIPPING.title}\n${SHIPPING.url}\n${SHIPPING.body}`)
        expect(sendOf(received[1]!).data.messages[0]!.text).toBe(
          `It takes 3 to 5 business days.\n\nMore in “${SHIPPING.title}”: ${SHIPPING.url}.`
        )
        const [record] = yield* metadataOf(conversation.id)
        expect(record!.citations).toEqual([expect.objectContaining({ title: SHIPPING.title, url: SHIPPING.url })])
        expect(record!.turns).toBe(1)
      }))

    it.effect("without preemptiveRetrieval nothing is retrieved before the model asks", () =>
      Effect.gen(function*() {
        const { from, llm, receiver, tenant } = yield* setup()
        yield* addArticle(tenant)
        llm.enqueue(turn("openai-chat", { text: "Let me check." }))
        yield* ask(tenant, { id: "np-1", conversationId: "not-preemptive", text: "How long does shipping to Canada take?" })
        yield* settled(receiver, 2, tenant)
        const system = systemPromptOf("openai-chat", requestsSince(llm, from)[0]!)
        expect(system).not.toContain(Prompts.PASSAGES_HEADING)
        expect(system).not.toContain(SHIPPING.body)
        expect(system).toContain(Prompts.KNOWLEDGE_BY_TOOL)
      }))

    it.effect("getPastConversationsTool with externalCustomerId: the model reads the same customer's earlier conversation, found by the integrator's id", () =>
      Effect.gen(function*() {
        const { from, llm, receiver, tenant } = yield* setup({ getPastConversationsTool: true, externalCustomerId: true })
        yield* ask(tenant, { id: "old-1", conversationId: "old", customerId: "user-42", text: "My order 1234 arrived damaged.", syncOnly: true })
        yield* ask(tenant, { id: "old-2", conversationId: "old", customerId: "user-42", role: "ai", text: "A replacement is on its way.", syncOnly: true })
        yield* ask(tenant, { id: "other-1", conversationId: "other", customerId: "user-77", text: "Someone else's order 999.", syncOnly: true })
        llm.enqueue(
          turn("openai-chat", { toolCalls: [{ name: "get_past_conversations", args: {} }] }),
          turn("openai-chat", { text: "Your replacement for order 1234 is on its way." })
        )
        yield* ask(tenant, { id: "new-1", conversationId: "new", customerId: "user-42", text: "Any news about my last order?" })
        yield* settled(receiver, 2, tenant)
        const requests = requestsSince(llm, from)
        expect(toolNamesOf("openai-chat", requests[0]!)).toContain("get_past_conversations")
        const [result] = toolResultsOf("openai-chat", requests[1]!)
        expect(result).toContain("My order 1234 arrived damaged.")
        expect(result).toContain("A replacement is on its way.")
        expect(result).not.toContain("Someone else's order")
        expect(result).not.toContain("Any news about my last order?")
      }))

    it.effect("without getPastConversationsTool the tool is not offered", () =>
      Effect.gen(function*() {
        const { from, llm, receiver, tenant } = yield* setup()
        llm.enqueue(turn("openai-chat", { text: "Hello!" }))
        yield* ask(tenant, { id: "ng-1", conversationId: "no-past", text: "Hi" })
        yield* settled(receiver, 2, tenant)
        expect(toolNamesOf("openai-chat", requestsSince(llm, from)[0]!)).toEqual([
          "close_conversation",
          "escalate_to_human",
          "search_knowledge"
        ])
      }))

    it.effect("conversationTitle: a title after the first exchange, only then", () =>
      Effect.gen(function*() {
        const { from, llm, receiver, tenant } = yield* setup({ conversationTitle: true })
        llm.enqueue(
          turn("openai-chat", { text: "About 3 to 5 business days." }),
          turn("openai-chat", { text: "\"Shipping time to Canada.\"", usage: { input: 50, output: 6 } })
        )
        const { conversation } = yield* ask(tenant, { id: "ti-1", conversationId: "titled", text: "How long does shipping to Canada take?" })
        const received = yield* settled(receiver, 3, tenant)
        expect(kinds(receiver)).toEqual(["typing", "send_messages", "conversation_title"])
        expect(titleOf(received[2]!).data).toEqual({ title: "Shipping time to Canada" })
        const requests = requestsSince(llm, from)
        expect(systemPromptOf("openai-chat", requests[1]!)).toBe(Prompts.TITLE_INSTRUCTIONS)
        const [record] = yield* metadataOf(conversation.id)
        // The title's tokens are the trigger's too.
        expect(record).toMatchObject({ title: "Shipping time to Canada", inputTokens: 150, outputTokens: 26 })

        llm.enqueue(turn("openai-chat", { text: "You're welcome." }))
        yield* ask(tenant, { id: "ti-2", conversationId: "titled", text: "Thanks" })
        yield* settled(receiver, 5, tenant)
        expect(kinds(receiver).slice(3)).toEqual(["typing", "send_messages"])
        expect(requestsSince(llm, from)).toHaveLength(3)
      }))
  })
})

describe.each(["openai-responses", "anthropic"] as const)("replies from a model over %s, through the app", (wire) => {
  layer(AppOn(wire), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("answers grounded in the article it searched for, and hands over with a tool call", () =>
      Effect.gen(function*() {
        const { from, llm, receiver, tenant } = yield* setup()
        yield* addArticle(tenant)
        llm.enqueue(
          turn(wire, { toolCalls: [{ name: "search_knowledge", args: { query: "shipping Canada" } }] }),
          turn(wire, { text: "Standard shipping to Canada takes 3 to 5 business days [1]." })
        )
        const { conversation } = yield* ask(tenant, { id: "w-1", conversationId: "wire", text: "How long does shipping to Canada take?" })
        const received = yield* settled(receiver, 2, tenant)
        expect(sendOf(received[1]!).data.messages[0]!.text).toBe(
          `Standard shipping to Canada takes 3 to 5 business days.\n\nMore in “${SHIPPING.title}”: ${SHIPPING.url}.`
        )
        expect(toolResultsOf(wire, requestsSince(llm, from)[1]!).join()).toContain("3 to 5 business days")
        expect(yield* metadataOf(conversation.id)).toEqual([
          expect.objectContaining({ provider: wire === "anthropic" ? "anthropic" : "openai", model: MODEL, turns: 2 })
        ])

        llm.enqueue(turn(wire, {
          toolCalls: [{ name: "escalate_to_human", args: { reason: "Wants a person.", summary: "Asked for a person.", message: "One moment." } }]
        }))
        yield* ask(tenant, { id: "w-2", conversationId: "wire", text: "I want to talk to a person" })
        const all = yield* settled(receiver, 4, tenant)
        expect(kinds(receiver)).toEqual(["typing", "send_messages", "typing", "escalate"])
        expect(escalateOf(all[3]!).data).toMatchObject({ reason: "handover", detail: "Wants a person.", messageId: null })
      }))
  })
})

describe("the embedded responder's title and summary, through the app", () => {
  layer(TestAppWithWorkers(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("extractive: the title is the customer's words, the summary the conversation's last lines; no typing", () =>
      Effect.gen(function*() {
        const receiver = yield* makeReceiver()
        const tenant = yield* makeTenant({
          webhookUrl: receiver.url,
          supportedFeatures: { conversationTitle: true, conversationSummary: true }
        })
        const { conversation, message } = yield* ask(tenant, {
          id: "x-1",
          conversationId: "extractive",
          text: "Can I pay for my order with gold bars? I have plenty."
        })
        const received = yield* settled(receiver, 4, tenant)
        expect(kinds(receiver)).toEqual(["send_messages", "conversation_title", "escalate", "conversation_summary"])
        const [handover] = sendOf(received[0]!).data.messages
        expect(handover!.text).toBe(ESCALATION_TEXT)
        expect(titleOf(received[1]!).data).toEqual({ title: "Can I pay for my order with gold bars?" })
        expect(escalateOf(received[2]!).data).toEqual({
          reason: "no_answer",
          detail: NO_ANSWER_DETAIL,
          summary: "The customer asked: Can I pay for my order with gold bars? I have plenty.",
          messageId: handover!.id
        })
        expect(summaryOf(received[3]!).data).toEqual({
          summary: `Customer: Can I pay for my order with gold bars? I have plenty.\nAssistant: ${ESCALATION_TEXT}`,
          at: "escalation"
        })
        expect(yield* metadataOf(conversation.id)).toEqual([
          expect.objectContaining({
            triggerMessageId: message.id,
            provider: "embedded",
            model: null,
            inputTokens: 0,
            turns: 0,
            title: "Can I pay for my order with gold bars?"
          })
        ])
      }))
  })
})
