/**
 * Reply generation alone: the `generate_reply` step called directly, on the real database, with the AI
 * provider a typed double that records what it was asked. No HTTP, no workers, no sleeps.
 */
import { describe, expect, layer } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { AiReplies, type Reply, type ReplyRequest } from "../../src/Ai/AiReplies.js"
import { Replies } from "../../src/Ai/GenerateReply.js"
import { Conversations, type Incoming } from "../../src/Conversations/Conversations.js"
import { ConversationsRepo } from "../../src/Conversations/Repo.js"
import { Events } from "../../src/Delivery/Events.js"
import { IntegrationsRepo } from "../../src/Integrations/Repo.js"
import { Integrations } from "../../src/Integrations/Integrations.js"
import { Outcome } from "../../src/Jobs/Job.js"
import { Workspaces } from "../../src/Workspaces/Workspaces.js"
import { TestConfig } from "../support/App.js"
import { TestDatabase } from "../support/Database.js"
import { makeTestLayer } from "../support/Layer.js"

/** What the provider double answers, and the requests it got. */
const provider = {
  asked: [] as Array<ReplyRequest>,
  answer: { text: "It takes 3 days.", escalate: false, sources: [], provider: "double" } as Reply
}

const AiDouble = makeTestLayer(AiReplies)({
  reply: (request) => Effect.sync(() => (provider.asked.push(request), provider.answer))
})

const RepliesTest = Replies.DefaultWithoutDependencies.pipe(
  Layer.provide(AiDouble),
  Layer.provideMerge(
    Layer.mergeAll(
      ConversationsRepo.Default,
      IntegrationsRepo.Default,
      Events.Default,
      Conversations.Default,
      Integrations.Default,
      Workspaces.Default
    )
  ),
  Layer.provideMerge(TestDatabase),
  Layer.provide(TestConfig()),
  Layer.orDie
)

const customerId = "6f1c1f8e-1d7e-4c8e-9a0a-1b2c3d4e5f60"

const incoming = (id: string, text: string): Incoming => ({
  externalMessageId: id,
  externalConversationId: "c-1",
  customer: { _tag: "ParleyId", id: customerId, external: false },
  role: "human",
  type: "default",
  text,
  attachments: [],
  sentAt: Option.none(),
  syncOnly: false,
  requestContext: Option.none(),
  agentInfo: null,
  channel: "api"
})

/** A new integration (features as given) and a function storing its customer's messages. */
const anIntegration = (features: { readonly escalation?: boolean } = {}) =>
  Effect.gen(function*() {
    const { workspace } = yield* Effect.flatMap(Workspaces, (w) => w.create("Replies"))
    const integration = yield* Effect.flatMap(Integrations, (i) =>
      i.create(workspace.id, {
        name: "Replies test",
        integration: "api",
        webhook: { url: "https://receiver.example/hook", headers: {}, metadata: {} },
        supportedFeatures: features,
        channelsSettings: {}
      }))
    const say = (id: string, text: string) =>
      Effect.flatMap(Conversations, (c) => c.ingest(integration, incoming(id, text)))
    return { integration, say }
  }).pipe(Effect.orDie)

const eventsOf = (conversationId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ readonly kind: string }>`SELECT kind FROM events WHERE conversation_id = ${conversationId} ORDER BY created_at`)
    .pipe(Effect.map((rows) => rows.map((row) => row.kind)), Effect.orDie)

const reset = (answer: Partial<Reply> = {}) =>
  Effect.sync(() => {
    provider.asked = []
    provider.answer = { text: "It takes 3 days.", escalate: false, sources: [], provider: "double", ...answer }
  })

describe("Replies.generate", () => {
  layer(RepliesTest)((it) => {
    it.effect("answers the customer's messages once, and queues the reply's send_messages event", () =>
      Effect.gen(function*() {
        yield* reset()
        const { say } = yield* anIntegration()
        yield* say("m-1", "Hello")
        const { conversation, message } = yield* say("m-2", "How long does shipping take?")
        const replies = yield* Replies
        const job = { conversationId: conversation.id, messageId: message.id }
        expect(yield* replies.generate(job)).toEqual(Outcome.Done())
        expect(provider.asked).toHaveLength(1)
        expect(provider.asked[0]!.unanswered.map((m) => m.text)).toEqual(["Hello", "How long does shipping take?"])
        const stored = yield* Effect.flatMap(ConversationsRepo, (r) => r.listMessages(conversation.id)).pipe(Effect.orDie)
        const reply = stored.find((m) => m.role === "ai")
        expect(reply).toMatchObject({ text: "It takes 3 days.", replyTo: message.id })
        expect(yield* eventsOf(conversation.id)).toEqual(["send_messages"])
        // The same trigger again (a retried job): no second reply, no second call.
        expect(yield* replies.generate(job)).toEqual(Outcome.Done())
        expect(provider.asked).toHaveLength(1)
        expect(yield* eventsOf(conversation.id)).toEqual(["send_messages"])
      }))

    it.effect("a message that a later one supersedes is answered by the later one's job, not its own", () =>
      Effect.gen(function*() {
        yield* reset()
        const { say } = yield* anIntegration()
        const first = yield* say("s-1", "Hi")
        yield* say("s-2", "Where is my order?")
        const replies = yield* Replies
        yield* replies.generate({ conversationId: first.conversation.id, messageId: first.message.id })
        expect(provider.asked).toEqual([])
        expect(yield* eventsOf(first.conversation.id)).toEqual([])
      }))

    it.effect("a hand-over: the reply, then escalate; the conversation is escalated and gets no further reply", () =>
      Effect.gen(function*() {
        yield* reset({ text: "Passing you to a person.", escalate: true })
        const { say } = yield* anIntegration({ escalation: true })
        const { conversation, message } = yield* say("e-1", "Can I pay with gold bars?")
        const replies = yield* Replies
        yield* replies.generate({ conversationId: conversation.id, messageId: message.id })
        expect(yield* eventsOf(conversation.id)).toEqual(["send_messages", "escalate"])
        const after = yield* Effect.flatMap(ConversationsRepo, (r) => r.findById(conversation.id)).pipe(Effect.orDie)
        expect(Option.map(after, (c) => c.status)).toEqual(Option.some("escalated"))
        const next = yield* say("e-2", "Hello?")
        yield* replies.generate({ conversationId: conversation.id, messageId: next.message.id })
        expect(provider.asked).toHaveLength(1)
      }))
  })
})
