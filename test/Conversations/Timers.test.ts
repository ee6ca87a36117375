/**
 * The inactivity timers (`inactivityPrompt`, `conversationTimeout`): armed, re-armed and removed with
 * the messages and status changes that cause it (the jobs table is read), and what each does when it
 * fires (the handlers called directly, as a worker would; the embedded responder, no model). The
 * settings' validation is at the end. The whole loop on real workers is in
 * test/Conversations/TimersLive.test.ts.
 */
import { describe, expect, layer } from "@effect/vitest"
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Replies } from "../../src/Ai/GenerateReply.js"
import * as Prompts from "../../src/Ai/Llm/Prompt.js"
import { InactivityTimers } from "../../src/Ai/Timers.js"
import { Conversations } from "../../src/Conversations/Conversations.js"
import { ConversationsRepo } from "../../src/Conversations/Repo.js"
import type { ConversationId } from "../../src/Domain/Ids.js"
import type { FeatureName } from "../../src/Domain/Integration.js"
import { Integrations } from "../../src/Integrations/Integrations.js"
import { Workspaces } from "../../src/Workspaces/Workspaces.js"
import { incoming } from "../support/Incoming.js"
import { layerTest } from "../support/Services.js"

const TimersTest = layerTest(
  Layer.mergeAll(
    InactivityTimers.layer,
    Replies.layer,
    Conversations.layer,
    ConversationsRepo.layer,
    Integrations.layer,
    Workspaces.layer
  )
)

let n = 0

/** A new integration with `features` and `channelsSettings`, and a function storing its customer's messages. */
const anIntegration = (
  features: Partial<Record<FeatureName, boolean>>,
  channelsSettings: Record<string, unknown> = { timers: { inactivityPromptSeconds: 60, conversationTimeoutSeconds: 600 } }
) =>
  Effect.gen(function*() {
    const { workspace } = yield* Effect.flatMap(Workspaces, (w) => w.create("Timers"))
    const integration = yield* Effect.flatMap(Integrations, (i) =>
      i.create(workspace.id, {
        name: "Timers test",
        integration: "api",
        webhook: { url: "https://receiver.example/hook", headers: {}, metadata: {} },
        // Without escalation the embedded responder answers every message (it would hand over what it cannot).
        supportedFeatures: { escalation: false, ...features },
        channelsSettings
      }))
    const conversation = `t-${++n}`
    const say = (id: string, text: string, role: "human" | "agent" = "human") =>
      Effect.flatMap(Conversations, (c) =>
        c.ingest(integration, { ...incoming(conversation, `${conversation}-${id}`, text), role }))
    return { integration, say }
  }).pipe(Effect.orDie)

/** The conversation's live timers: kind and seconds from now to their run (database clock). */
const timersOf = (conversationId: ConversationId) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ readonly kind: string; readonly inSeconds: number }>`
      SELECT kind, round(extract(epoch FROM run_at - now()))::int AS in_seconds FROM jobs
      WHERE key = ${conversationId} AND kind IN ('inactivity_prompt', 'conversation_timeout')
        AND status IN ('pending', 'running')
      ORDER BY kind`).pipe(Effect.orDie)

const eventsOf = (conversationId: ConversationId) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ readonly kind: string; readonly body: string }>`
      SELECT kind, body FROM events WHERE conversation_id = ${conversationId} ORDER BY seq`)
    .pipe(Effect.orDie)

const kindsOf = (conversationId: ConversationId) => Effect.map(eventsOf(conversationId), (rows) => rows.map((r) => r.kind))

const messagesOf = (conversationId: ConversationId) =>
  Effect.flatMap(ConversationsRepo, (r) => r.listMessages(conversationId)).pipe(Effect.orDie)

/** The AI answers the customer's message `messageId` (the reply job's step, as a worker runs it). */
const aiAnswers = (conversationId: ConversationId, messageId: string) =>
  Effect.flatMap(Replies, (r) => r.generate({ conversationId, messageId: messageId as never }))

/** Runs both timers as if they had come due. */
const fire = (conversationId: ConversationId) =>
  Effect.gen(function*() {
    const timers = yield* InactivityTimers
    yield* timers.prompt({ conversationId })
    yield* timers.timeout({ conversationId })
  })

const statusChanges = (conversationId: ConversationId) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ readonly toStatus: string; readonly cause: string }>`
      SELECT to_status, cause FROM conversation_status_changes WHERE conversation_id = ${conversationId} ORDER BY id`)
    .pipe(Effect.orDie)

describe("inactivity timers", () => {
  layer(TimersTest)((it) => {
    it.effect("a customer message arms each enabled timer at its delay; without the flags none is armed", () =>
      Effect.gen(function*() {
        const on = yield* anIntegration({ inactivityPrompt: true, conversationTimeout: true })
        const { conversation } = yield* on.say("m1", "Hello")
        const live = yield* timersOf(conversation.id)
        expect(live.map((t) => t.kind)).toEqual(["conversation_timeout", "inactivity_prompt"])
        expect(Math.abs(live[0]!.inSeconds - 600)).toBeLessThanOrEqual(5)
        expect(Math.abs(live[1]!.inSeconds - 60)).toBeLessThanOrEqual(5)

        const promptOnly = yield* anIntegration({ inactivityPrompt: true })
        const second = yield* promptOnly.say("m1", "Hello")
        expect((yield* timersOf(second.conversation.id)).map((t) => t.kind)).toEqual(["inactivity_prompt"])

        const off = yield* anIntegration({})
        const third = yield* off.say("m1", "Hello")
        expect(yield* timersOf(third.conversation.id)).toEqual([])
      }))

    it.effect("every new message re-arms the timers (one live timer of each kind), the AI's reply included", () =>
      Effect.gen(function*() {
        const { say } = yield* anIntegration({ inactivityPrompt: true, conversationTimeout: true })
        const { conversation, message } = yield* say("m1", "Hello")
        const sql = yield* SqlClient.SqlClient
        // As if the timers had nearly run out.
        yield* sql`UPDATE jobs SET run_at = now() + interval '1 second' WHERE key = ${conversation.id}`
        yield* aiAnswers(conversation.id, message.id)
        const afterReply = yield* timersOf(conversation.id)
        expect(afterReply.map((t) => t.inSeconds)).toEqual([600, 60])
        yield* sql`UPDATE jobs SET run_at = now() + interval '1 second' WHERE key = ${conversation.id}`
        yield* say("m2", "One more thing")
        const afterMessage = yield* timersOf(conversation.id)
        expect(afterMessage.map((t) => [t.kind, t.inSeconds])).toEqual([["conversation_timeout", 600], ["inactivity_prompt", 60]])
      }))

    it.effect("a hand-over removes the timers; a message on the escalated conversation arms none", () =>
      Effect.gen(function*() {
        const { say } = yield* anIntegration({ inactivityPrompt: true, conversationTimeout: true })
        const { conversation } = yield* say("m1", "Hello")
        expect(yield* timersOf(conversation.id)).toHaveLength(2)
        // An agent's message takes the conversation over.
        yield* say("m2", "Hi, Sam from support here", "agent")
        expect(yield* timersOf(conversation.id)).toEqual([])
        yield* say("m3", "Thanks Sam")
        expect(yield* timersOf(conversation.id)).toEqual([])
      }))

    it.effect("the AI's own hand-over removes the timers", () =>
      Effect.gen(function*() {
        const { say } = yield* anIntegration({ inactivityPrompt: true, conversationTimeout: true, escalation: true })
        // Nothing in the knowledge base: the embedded responder hands over.
        const { conversation, message } = yield* say("m1", "Can I pay with gold bars?")
        expect(yield* timersOf(conversation.id)).toHaveLength(2)
        yield* aiAnswers(conversation.id, message.id)
        expect(yield* kindsOf(conversation.id)).toEqual(["send_messages", "escalate"])
        expect(yield* timersOf(conversation.id)).toEqual([])
      }))

    it.effect("the prompt: one check-in after the AI's message, once per silence; a new silence gets its own", () =>
      Effect.gen(function*() {
        const { say } = yield* anIntegration({ inactivityPrompt: true, conversationTimeout: true })
        const first = yield* say("m1", "Hello")
        const id = first.conversation.id
        // The customer's message is unanswered: the customer is waiting, not silent.
        yield* (yield* InactivityTimers).prompt({ conversationId: id })
        expect(yield* kindsOf(id)).toEqual([])

        yield* aiAnswers(id, first.message.id)
        yield* (yield* InactivityTimers).prompt({ conversationId: id })
        yield* (yield* InactivityTimers).prompt({ conversationId: id })
        expect(yield* kindsOf(id)).toEqual(["send_messages", "send_messages"])
        const texts = (yield* messagesOf(id)).filter((m) => m.role === "ai").map((m) => m.text)
        expect(texts[1]).toBe(Prompts.INACTIVITY_TEXT.prompt)
        // The prompt re-arms nothing: the timeout still runs from the AI's answer.
        expect((yield* timersOf(id)).map((t) => t.kind)).toEqual(["conversation_timeout", "inactivity_prompt"])

        const second = yield* say("m2", "Sorry, I'm back")
        yield* aiAnswers(id, second.message.id)
        yield* (yield* InactivityTimers).prompt({ conversationId: id })
        expect(yield* kindsOf(id)).toEqual(["send_messages", "send_messages", "send_messages", "send_messages"])
      }))

    it.effect("the timeout: goodbye, close_conversation (inactivity), summary, CSAT; closed with its cause; no timer left", () =>
      Effect.gen(function*() {
        const { say } = yield* anIntegration({
          inactivityPrompt: true,
          conversationTimeout: true,
          messageInEndConversation: true,
          csat: true,
          conversationSummary: true
        })
        const { conversation, message } = yield* say("m1", "Hello")
        yield* aiAnswers(conversation.id, message.id)
        yield* fire(conversation.id)
        const events = yield* eventsOf(conversation.id)
        expect(events.map((e) => e.kind)).toEqual([
          "send_messages",
          "send_messages",
          "send_messages",
          "close_conversation",
          "conversation_summary",
          "send_csat"
        ])
        const close = JSON.parse(events[3]!.body)
        expect(close.data).toMatchObject({ reason: "inactivity" })
        const ai = (yield* messagesOf(conversation.id)).filter((m) => m.role === "ai")
        expect(ai.map((m) => m.text).slice(1)).toEqual([Prompts.INACTIVITY_TEXT.prompt, Prompts.INACTIVITY_TEXT.goodbye])
        expect(close.data.messageId).toBe(ai[2]!.id)
        const now = yield* Effect.flatMap(ConversationsRepo, (r) => r.findById(conversation.id)).pipe(Effect.orDie)
        expect(Option.map(now, (c) => c.status)).toEqual(Option.some("closed"))
        expect((yield* statusChanges(conversation.id)).at(-1)).toEqual({ toStatus: "closed", cause: "inactivity_timeout" })
        expect(yield* timersOf(conversation.id)).toEqual([])
        // Firing again (a job run twice) changes nothing.
        yield* fire(conversation.id)
        expect(yield* eventsOf(conversation.id)).toHaveLength(6)
      }))

    it.effect("the timeout without messageInEndConversation, csat and conversationSummary: only close_conversation", () =>
      Effect.gen(function*() {
        const { say } = yield* anIntegration({ conversationTimeout: true })
        const { conversation, message } = yield* say("m1", "Hello")
        yield* aiAnswers(conversation.id, message.id)
        yield* (yield* InactivityTimers).timeout({ conversationId: conversation.id })
        expect(yield* kindsOf(conversation.id)).toEqual(["send_messages", "close_conversation"])
      }))

    it.effect("with the flags off, a timer that fires anyway (queued before they were turned off) does nothing", () =>
      Effect.gen(function*() {
        const { integration, say } = yield* anIntegration({ inactivityPrompt: true, conversationTimeout: true })
        const { conversation, message } = yield* say("m1", "Hello")
        yield* aiAnswers(conversation.id, message.id)
        yield* Effect.flatMap(Integrations, (i) =>
          i.updateSettings(integration.workspaceId, integration.integrationId, {
            supportedFeatures: { inactivityPrompt: false, conversationTimeout: false }
          })).pipe(Effect.orDie)
        yield* fire(conversation.id)
        expect(yield* kindsOf(conversation.id)).toEqual(["send_messages"])
        const now = yield* Effect.flatMap(ConversationsRepo, (r) => r.findById(conversation.id)).pipe(Effect.orDie)
        expect(Option.map(now, (c) => c.status)).toEqual(Option.some("open"))
      }))

    it.effect("a customer message on a closed conversation reopens it and arms the timers again", () =>
      Effect.gen(function*() {
        const { say } = yield* anIntegration({ inactivityPrompt: true, conversationTimeout: true })
        const { conversation, message } = yield* say("m1", "Hello")
        yield* aiAnswers(conversation.id, message.id)
        yield* (yield* InactivityTimers).timeout({ conversationId: conversation.id })
        expect(yield* timersOf(conversation.id)).toEqual([])
        const back = yield* say("m2", "Hi again")
        expect(back.conversation.status).toBe("open")
        expect((yield* timersOf(conversation.id)).map((t) => t.kind)).toEqual(["conversation_timeout", "inactivity_prompt"])
      }))
  })
})

describe("timer settings", () => {
  layer(TimersTest)((it) => {
    const attempt = (timers: unknown) =>
      Effect.gen(function*() {
        const { workspace } = yield* Effect.flatMap(Workspaces, (w) => w.create("Timer settings")).pipe(Effect.orDie)
        return yield* Effect.flatMap(Integrations, (i) =>
          i.create(workspace.id, {
            name: "Settings",
            integration: "api",
            webhook: { url: "https://receiver.example/hook", headers: {}, metadata: {} },
            supportedFeatures: {},
            channelsSettings: { timers }
          })).pipe(Effect.flip, Effect.map((error) => error._tag === "InvalidInput" ? error.problems : error))
      })

    it.effect("whole seconds from 1 to 7 days, the prompt before the timeout; each problem located", () =>
      Effect.gen(function*() {
        expect(yield* attempt({ inactivityPromptSeconds: 0 })).toMatchObject([
          { path: ["channelsSettings", "timers", "inactivityPromptSeconds"] }
        ])
        expect(yield* attempt({ inactivityPromptSeconds: 1.5 })).toMatchObject([
          { path: ["channelsSettings", "timers", "inactivityPromptSeconds"] }
        ])
        expect(yield* attempt({ conversationTimeoutSeconds: 604_801 })).toMatchObject([
          { path: ["channelsSettings", "timers", "conversationTimeoutSeconds"] }
        ])
        expect(yield* attempt({ conversationTimeoutSeconds: "30" })).toMatchObject([
          { path: ["channelsSettings", "timers", "conversationTimeoutSeconds"] }
        ])
        expect(yield* attempt({ inactivityPromptSeconds: 300, conversationTimeoutSeconds: 300 })).toMatchObject([
          { path: ["channelsSettings", "timers", "inactivityPromptSeconds"], type: "timer_order" }
        ])
        // The default timeout (1800 s) counts when only the prompt is given.
        expect(yield* attempt({ inactivityPromptSeconds: 2000 })).toMatchObject([{ type: "timer_order" }])
        expect(yield* attempt("soon")).toMatchObject([{ path: ["channelsSettings", "timers"] }])
      }))

    it.effect("the shortest and longest accepted", () =>
      Effect.gen(function*() {
        const { workspace } = yield* Effect.flatMap(Workspaces, (w) => w.create("Timer settings")).pipe(Effect.orDie)
        const created = yield* Effect.flatMap(Integrations, (i) =>
          i.create(workspace.id, {
            name: "Settings",
            integration: "api",
            webhook: { url: "https://receiver.example/hook", headers: {}, metadata: {} },
            supportedFeatures: {},
            channelsSettings: { timers: { inactivityPromptSeconds: 1, conversationTimeoutSeconds: 604_800 } }
          }))
        expect(created.settings.channelsSettings).toEqual({
          timers: { inactivityPromptSeconds: 1, conversationTimeoutSeconds: 604_800 }
        })
      }).pipe(Effect.orDie))
  })
})
