/**
 * Reply generation alone: the `generate_reply` step called directly, on the real database, with the
 * embedded responder (the default model). No HTTP, no workers, no sleeps.
 */
import { describe, expect, layer } from "@effect/vitest"
import * as SqlClient from "effect/sql/SqlClient"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Replies } from "../../src/Ai/GenerateReply.js"
import { Knowledge } from "../../src/Ai/Knowledge.js"
import { Conversations } from "../../src/Conversations/Conversations.js"
import { ConversationsRepo } from "../../src/Conversations/Repo.js"
import { Integrations } from "../../src/Integrations/Integrations.js"
import { Outcome } from "../../src/Jobs/Job.js"
import { Workspaces } from "../../src/Workspaces/Workspaces.js"
import { incoming } from "../support/Incoming.js"
import { hang, type LlmServer, makeLlmServer, type Scripted, turn } from "../support/LlmServers.js"
import { replyServices } from "../support/ReplySetup.js"
import { layerTest } from "../support/Services.js"

/** `Replies` as the app builds it, and the services the tests set conversations up with. */
const RepliesWith = (config: Record<string, string>) => layerTest(replyServices, config)

const RepliesTest = RepliesWith({})

class Llm extends Context.Service<Llm, LlmServer>()("test/Llm") {}

/** `Replies` with a model on a local chat-completions server. */
const ModelRepliesTest = Layer.unwrap(
  Effect.map(makeLlmServer, (server) =>
    Layer.merge(
      RepliesWith({ AI_PROVIDER: "openai", AI_MODEL: "test-model", OPENAI_BASE_URL: server.baseUrl }),
      Layer.succeed(Llm, server)
    ))
)

/** A model with a 1-second reply deadline and a 20-second attempt time-out: the deadline must win. */
const DeadlineTest = Layer.unwrap(
  Effect.map(makeLlmServer, (server) =>
    Layer.merge(
      RepliesWith({
        AI_PROVIDER: "openai",
        AI_MODEL: "test-model",
        OPENAI_BASE_URL: server.baseUrl,
        AI_TIMEOUT: "20 seconds",
        AI_REPLY_TIMEOUT: "1 second"
      }),
      Layer.succeed(Llm, server)
    ))
)

/** The same answer, a little late: long enough for two runs to be in their model calls at once. */
const late = (answer: Scripted): Scripted => answer._tag === "Answer" ? { ...answer, delayMs: 300 } : answer


/** A new integration (features as given) with a shipping article, and a function storing its customer's messages. */
const anIntegration = (features: Record<string, boolean> = {}) =>
  Effect.gen(function*() {
    const { workspace } = yield* Effect.flatMap(Workspaces, (w) => w.create("Replies"))
    yield* Effect.flatMap(Knowledge, (k) =>
      k.addArticle(workspace.id, {
        title: "Shipping",
        url: "https://help.example.com/shipping",
        body: "Shipping takes 3 days within the country."
      }))
    const integration = yield* Effect.flatMap(Integrations, (i) =>
      i.create(workspace.id, {
        name: "Replies test",
        integration: "api",
        webhook: { url: "https://receiver.example/hook", headers: {}, metadata: {} },
        supportedFeatures: features,
        channelsSettings: {}
      }))
    const say = (id: string, text: string) =>
      Effect.flatMap(Conversations, (c) => c.ingest(integration, incoming("c-1", id, text)))
    return { integration, say }
  }).pipe(Effect.orDie)

const eventsOf = (conversationId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ readonly kind: string }>`SELECT kind FROM events WHERE conversation_id = ${conversationId} ORDER BY created_at`)
    .pipe(Effect.map((rows) => rows.map((row) => row.kind)), Effect.orDie)

const recordsOf = (conversationId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ readonly triggerMessageId: string; readonly messageId: string | null; readonly action: string; readonly provider: string }>`
      SELECT trigger_message_id, message_id, action, provider FROM reply_metadata WHERE conversation_id = ${conversationId}`)
    .pipe(Effect.orDie)

describe("Replies.generate", () => {
  layer(RepliesTest)((it) => {
    it.effect("answers the customer's messages once, and queues the reply's send_messages event", () =>
      Effect.gen(function*() {
        const { say } = yield* anIntegration()
        yield* say("m-1", "Hello")
        const { conversation, message } = yield* say("m-2", "How long does shipping take?")
        const replies = yield* Replies
        const job = { conversationId: conversation.id, messageId: message.id }
        expect(yield* replies.generate(job)).toEqual(Outcome.Done())
        const stored = yield* Effect.flatMap(ConversationsRepo, (r) => r.listMessages(conversation.id)).pipe(Effect.orDie)
        const reply = stored.filter((m) => m.role === "ai")
        expect(reply).toHaveLength(1)
        expect(reply[0]).toMatchObject({ replyTo: message.id })
        expect(reply[0]!.text).toContain("Shipping takes 3 days")
        expect(yield* eventsOf(conversation.id)).toEqual(["send_messages"])
        expect(yield* recordsOf(conversation.id)).toEqual([
          { triggerMessageId: message.id, messageId: reply[0]!.id, action: "answer", provider: "embedded" }
        ])
        // The same trigger again (a retried job): no second reply, no second event.
        expect(yield* replies.generate(job)).toEqual(Outcome.Done())
        expect(yield* eventsOf(conversation.id)).toEqual(["send_messages"])
        expect(yield* recordsOf(conversation.id)).toHaveLength(1)
      }))

    it.effect("a message that a later one supersedes is answered by the later one's job, not its own", () =>
      Effect.gen(function*() {
        const { say } = yield* anIntegration()
        const first = yield* say("s-1", "Hi")
        yield* say("s-2", "Where is my order?")
        const replies = yield* Replies
        yield* replies.generate({ conversationId: first.conversation.id, messageId: first.message.id })
        expect(yield* eventsOf(first.conversation.id)).toEqual([])
        expect(yield* recordsOf(first.conversation.id)).toEqual([])
      }))

    it.effect("a hand-over: the reply, then escalate; the conversation is escalated and gets no further reply", () =>
      Effect.gen(function*() {
        const { say } = yield* anIntegration({ escalation: true })
        const { conversation, message } = yield* say("e-1", "Can I pay with gold bars?")
        const replies = yield* Replies
        yield* replies.generate({ conversationId: conversation.id, messageId: message.id })
        expect(yield* eventsOf(conversation.id)).toEqual(["send_messages", "escalate"])
        const after = yield* Effect.flatMap(ConversationsRepo, (r) => r.findById(conversation.id)).pipe(Effect.orDie)
        expect(Option.map(after, (c) => c.status)).toEqual(Option.some("escalated"))
        const next = yield* say("e-2", "Hello?")
        yield* replies.generate({ conversationId: conversation.id, messageId: next.message.id })
        expect(yield* eventsOf(conversation.id)).toEqual(["send_messages", "escalate"])
        expect(yield* recordsOf(conversation.id)).toMatchObject([{ action: "escalate", provider: "embedded" }])
      }))
  })
})

describe("Replies.generate with a model", () => {
  layer(ModelRepliesTest, { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("two runs of one trigger at once (a worker presumed dead and its replacement) store one reply", () =>
      Effect.gen(function*() {
        const llm = yield* Llm
        const { say } = yield* anIntegration()
        const { conversation, message } = yield* say("twice-1", "Hello?")
        llm.enqueue(late(turn("openai-chat", { text: "Hi! How can I help?" })), late(turn("openai-chat", { text: "Hello there!" })))
        const replies = yield* Replies
        const job = { conversationId: conversation.id, messageId: message.id }
        yield* Effect.all([replies.generate(job), replies.generate(job)], { concurrency: 2 })
        // Both runs asked the model; one stored its answer.
        expect(llm.requests()).toHaveLength(2)
        const answers = (yield* Effect.flatMap(ConversationsRepo, (r) => r.listMessages(conversation.id)).pipe(Effect.orDie))
          .filter((m) => m.role === "ai")
        expect(answers).toHaveLength(1)
        expect(yield* eventsOf(conversation.id)).toEqual(["typing", "typing", "send_messages"])
        expect(yield* recordsOf(conversation.id)).toEqual([
          { triggerMessageId: message.id, messageId: answers[0]!.id, action: "answer", provider: "openai" }
        ])
      }))

    it.effect("two runs of one trigger whose outcome sends no message (a hand-over) store one outcome, one escalate", () =>
      Effect.gen(function*() {
        const llm = yield* Llm
        const { say } = yield* anIntegration()
        const { conversation, message } = yield* say("twice-2", "A person, please")
        const handover = turn("openai-chat", {
          toolCalls: [{ name: "escalate_to_human", args: { reason: "Asked for a person.", summary: "Wants a person.", message: "One moment." } }]
        })
        llm.enqueue(late(handover), late(handover))
        const replies = yield* Replies
        const job = { conversationId: conversation.id, messageId: message.id }
        yield* Effect.all([replies.generate(job), replies.generate(job)], { concurrency: 2 })
        expect(yield* eventsOf(conversation.id)).toEqual(["typing", "typing", "escalate"])
        expect(yield* recordsOf(conversation.id)).toMatchObject([{ action: "escalate", messageId: null }])
      }))
  })
})

describe("Replies.generate with a model that hangs", () => {
  layer(DeadlineTest, { timeout: 30_000, excludeTestServices: true })((it) => {
    it.effect("the customer hears back within AI_REPLY_TIMEOUT: the hand-over, not 2 × AI_TIMEOUT of typing", () =>
      Effect.gen(function*() {
        const llm = yield* Llm
        llm.enqueue(hang)
        const { say } = yield* anIntegration({ escalation: true })
        const { conversation, message } = yield* say("hang-1", "Where is my order?")
        const replies = yield* Replies
        yield* replies.generate({ conversationId: conversation.id, messageId: message.id })
        expect(yield* eventsOf(conversation.id)).toEqual(["typing", "escalate"])
        const sql = yield* SqlClient.SqlClient
        const [record] = yield* sql<{ readonly reason: string; readonly error: string; readonly latencyMs: number }>`
          SELECT reason, error, latency_ms FROM reply_metadata WHERE conversation_id = ${conversation.id}`.pipe(Effect.orDie)
        expect(record).toMatchObject({ reason: "ai_unavailable", error: expect.stringContaining("AI_REPLY_TIMEOUT (1s)") })
        // One attempt, cut by the deadline: the 20-second attempt time-out never came into play.
        expect(llm.requests()).toHaveLength(1)
      }))
  })
})
