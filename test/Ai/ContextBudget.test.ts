/**
 * The conversation a model reads, within its context budget (src/Ai/ContextBudget.ts): the pure fitting,
 * then through the reply step with a scripted chat-completions server (long conversations, huge
 * messages, the cached summary, and a provider's context-length error).
 */
import { describe, expect, it, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as ContextBudget from "../../src/Ai/ContextBudget.js"
import { Replies } from "../../src/Ai/GenerateReply.js"
import type { HistoryMessage } from "../../src/Ai/Llm/Contract.js"
import { Conversations } from "../../src/Conversations/Conversations.js"
import { ConversationsRepo } from "../../src/Conversations/Repo.js"
import { Integrations } from "../../src/Integrations/Integrations.js"
import { Workspaces } from "../../src/Workspaces/Workspaces.js"
import { incoming } from "../support/Incoming.js"
import { chatBody, conversationOf, type Scripted, turn } from "../support/LlmServers.js"
import { anIntegration as setup, Llm, withModel } from "../support/ReplySetup.js"

const message = (text: string, i = 0): HistoryMessage => ({
  role: i % 2 === 0 ? "human" : "ai",
  text,
  sentAt: `2026-11-20T10:${String(i % 60).padStart(2, "0")}:00Z`
})

describe("fitting a conversation to a budget", () => {
  it("keeps the newest messages whole while they fit, and drops the oldest", () => {
    const history = Array.from({ length: 10 }, (_, i) => message(`message ${i} ${"x".repeat(400)}`, i))
    const fitted = ContextBudget.fitHistory(history, 500)
    expect(fitted.kept.map((m) => m.text)).toEqual(history.slice(-4).map((m) => m.text))
    expect(fitted.dropped).toEqual(history.slice(0, 6))
    expect(fitted.cut).toBe(0)
    expect(fitted.tokens).toBeLessThanOrEqual(500)
  })

  it("cuts a single message over a quarter of the budget, with a marker saying how much was left out", () => {
    const huge = "a".repeat(31_000)
    const fitted = ContextBudget.fitHistory([message("before"), message(huge, 1)], 4_000)
    expect(fitted.cut).toBe(1)
    const [, cut] = fitted.kept
    expect(cut!.text).toMatch(/\n\[… message cut: \d+ more characters not shown\]$/)
    expect(ContextBudget.estimateTokens(cut!.text)).toBeLessThanOrEqual(1_000)
    expect(fitted.kept[0]!.text).toBe("before")
  })

  it("estimates multi-byte text as heavier than ASCII of the same length", () => {
    expect(ContextBudget.estimateTokens("日本語のテキスト")).toBeGreaterThan(ContextBudget.estimateTokens("abcdefgh"))
  })

  it("reads the providers' context-length refusals", () => {
    for (
      const reason of [
        "HTTP 400: This model's maximum context length is 8192 tokens. However, your messages resulted in 151000 tokens.",
        "HTTP 400: context_length_exceeded",
        "HTTP 400: prompt is too long: 210000 tokens > 200000 maximum",
        "HTTP 400: the request exceeds the available context size, try increasing it"
      ]
    ) expect(ContextBudget.isContextLengthError(reason), reason).toBe(true)
    expect(ContextBudget.isContextLengthError("HTTP 401: Incorrect API key provided")).toBe(false)
  })

  it("budgets by model family when AI_CONTEXT_TOKENS is not set", () => {
    expect(ContextBudget.contextBudgetFor("gpt-4o-mini")).toBe(32_000)
    expect(ContextBudget.contextBudgetFor("llama3.2")).toBe(12_000)
    expect(ContextBudget.contextBudgetFor("phi3")).toBe(3_000)
    expect(ContextBudget.contextBudgetFor("some-model")).toBe(8_000)
  })
})

const BUDGET = 3_000

const WithModel = withModel({ AI_CONTEXT_TOKENS: String(BUDGET), AI_MAX_RETRIES: "0" })

let n = 0

/** A conversation with `history` synced in (no replies), and a function asking a question in it. */
const aConversation = (history: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const { workspace } = yield* Effect.flatMap(Workspaces, (w) => w.create("Context"))
    const integration = yield* Effect.flatMap(Integrations, (i) =>
      i.create(workspace.id, {
        name: "Context",
        integration: "api",
        webhook: { url: "https://receiver.example/hook", headers: {}, metadata: {} },
        supportedFeatures: { typing: false },
        channelsSettings: {}
      }))
    const conversation = `ctx-${++n}`
    const conversations = yield* Conversations
    for (const [i, text] of history.entries()) {
      yield* conversations.ingest(integration, {
        ...incoming(conversation, `${conversation}-h${i}`, text, i % 2 === 0 ? "human" : "agent"),
        syncOnly: true
      })
    }
    const ask = (id: string, text: string) =>
      Effect.gen(function*() {
        const { conversation: stored, message: asked } = yield* conversations.ingest(
          integration,
          incoming(conversation, `${conversation}-${id}`, text)
        )
        yield* Effect.flatMap(Replies, (r) => r.generate({ conversationId: stored.id, messageId: asked.id }))
        return stored.id
      })
    return { ask }
  }).pipe(Effect.orDie)

const isReply = (request: { readonly body: unknown }) => {
  const body = chatBody({ body: request.body } as never)
  return (body.tools ?? []).length > 0
}

/** The request's conversation turns' estimated tokens. */
const turnsTokens = (request: Parameters<typeof conversationOf>[1]) =>
  conversationOf("openai-chat", request).reduce((sum, t) => sum + ContextBudget.messageTokens(t), 0)

describe("the conversation a model reads, through the reply step", () => {
  layer(WithModel, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("a 200-message conversation: the newest turns within the budget, the older ones summarised once", () =>
      Effect.gen(function*() {
        const llm = yield* Llm
        const before = llm.requests().length
        const history = Array.from({ length: 200 }, (_, i) =>
          `Message ${i}: ${"about my order and its delivery ".repeat(8)}`)
        llm.enqueue(
          turn("openai-chat", { text: "The customer has been asking about an order's delivery." }),
          turn("openai-chat", { text: "It ships tomorrow." })
        )
        const { ask } = yield* aConversation(history)
        const id = yield* ask("q1", "So when does it ship?")
        const [summary, reply] = llm.requests().slice(before)
        expect(isReply(summary!)).toBe(false)
        expect(isReply(reply!)).toBe(true)
        const turns = conversationOf("openai-chat", reply!)
        expect(turns[0]).toMatch(/Summary of the \d+ earlier messages of this conversation: The customer has been asking/)
        expect(turns.at(-1)).toBe("user: So when does it ship?")
        expect(turnsTokens(reply!)).toBeLessThanOrEqual(BUDGET)
        // Kept whole: the newest synced message is there as it was.
        expect(turns).toContain(`user: ${history[198]}`)
        const cached = yield* Effect.flatMap(ConversationsRepo, (r) => r.contextSummary(id)).pipe(Effect.orDie)
        expect(Option.map(cached, (c) => c.summary)).toEqual(Option.some("The customer has been asking about an order's delivery."))

        // The next question reuses the cached summary: one model call.
        llm.enqueue(turn("openai-chat", { text: "Yes, tomorrow." }))
        yield* ask("q2", "Tomorrow, really?")
        expect(llm.requests().length - before).toBe(3)
      }))

    it.effect("19 synced messages of 31,000 characters: each cut with a marker; the request stays within the budget", () =>
      Effect.gen(function*() {
        const llm = yield* Llm
        const before = llm.requests().length
        const history = Array.from({ length: 19 }, (_, i) => `Log ${i}: ${"0123456789".repeat(3_100)}`)
        llm.enqueue(turn("openai-chat", { text: "Summary of the logs." }), turn("openai-chat", { text: "I see the error." }))
        const { ask } = yield* aConversation(history)
        yield* ask("q1", "Can you see what's wrong?")
        const reply = llm.requests().slice(before).find(isReply)!
        expect(reply.raw.length).toBeLessThan(20_000)
        expect(conversationOf("openai-chat", reply).some((t) => t.includes("[… message cut:"))).toBe(true)
        expect(turnsTokens(reply)).toBeLessThanOrEqual(BUDGET)
      }))

    it.effect("attachments: the model reads their names and kinds, never their links", () =>
      Effect.gen(function*() {
        const llm = yield* Llm
        const before = llm.requests().length
        llm.enqueue(turn("openai-chat", { text: "Thanks, I see the invoice." }))
        const { ask } = yield* setup({})
        yield* ask("1", "Here is my invoice and a photo of the damage.", (m) => ({
          ...m,
          attachments: [
            { name: "invoice.pdf", url: "https://files.example.com/signed/abc?token=secret-1" },
            { name: "damage", url: "https://files.example.com/signed/photo.jpg?token=secret-2" }
          ]
        }))
        const [request] = llm.requests().slice(before)
        expect(conversationOf("openai-chat", request!).at(-1)).toBe(
          "user: Here is my invoice and a photo of the damage.\n[Attachments: invoice.pdf (PDF document), damage (image)]"
        )
        expect(request!.raw).not.toContain("secret-")
      }))

    it.effect("with channelsSettings.imageAttachments the images go to the model as image parts", () =>
      Effect.gen(function*() {
        const llm = yield* Llm
        const before = llm.requests().length
        llm.enqueue(turn("openai-chat", { text: "I see the damage." }))
        const { ask } = yield* setup({ channelsSettings: { imageAttachments: true } })
        yield* ask("1", "Look at this.", (m) => ({
          ...m,
          attachments: [
            { name: "damage.jpg", url: "https://files.example.com/damage.jpg" },
            { name: "invoice.pdf", url: "https://files.example.com/invoice.pdf" }
          ]
        }))
        const [request] = llm.requests().slice(before)
        expect(request!.raw).toContain(`{"type":"image_url","image_url":{"url":"https://files.example.com/damage.jpg"}}`)
        expect(request!.raw).not.toContain("https://files.example.com/invoice.pdf")
      }))

    it.effect("a provider's context-length error: the reply shrinks its context once and is answered", () =>
      Effect.gen(function*() {
        const llm = yield* Llm
        const before = llm.requests().length
        const tooLong: Scripted = {
          _tag: "Answer",
          status: 400,
          body: () => ({
            error: {
              message: "This model's maximum context length is 2048 tokens. However, your messages resulted in 2900 tokens.",
              type: "invalid_request_error",
              param: "messages",
              code: "context_length_exceeded"
            }
          })
        }
        const history = Array.from({ length: 30 }, (_, i) => `Message ${i}: ${"about my parcel ".repeat(20)}`)
        llm.enqueue(
          turn("openai-chat", { text: "Parcel questions." }),
          tooLong,
          turn("openai-chat", { text: "Your parcel is on its way." })
        )
        const { ask } = yield* aConversation(history)
        const id = yield* ask("q1", "Where is it now?")
        const replies = llm.requests().slice(before).filter(isReply)
        expect(replies).toHaveLength(2)
        expect(turnsTokens(replies[1]!)).toBeLessThan(turnsTokens(replies[0]!))
        const answered = yield* Effect.flatMap(ConversationsRepo, (r) => r.listMessages(id)).pipe(Effect.orDie)
        expect(answered.filter((m) => m.role === "ai").map((m) => m.text)).toEqual(["Your parcel is on its way."])
      }))
  })
})
