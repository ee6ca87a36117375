/**
 * The conversation's side of an AI reply on its own: given an AI outcome (a value, no model involved),
 * `ReplyWorkflow.apply` sets the conversation's status, stores the message and the `reply_metadata`
 * row, emits the events in their order with their data, and sends `send_csat` only when the AI asks for
 * a rating and the integration takes one. Also `pending` (what a run answers) and `typing`.
 */
import { describe, expect, layer } from "@effect/vitest"
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Conversations, type Incoming } from "../../src/Conversations/Conversations.js"
import { ConversationsRepo } from "../../src/Conversations/Repo.js"
import { ReplyWorkflow } from "../../src/Conversations/ReplyWorkflow.js"
import type { AiOutcome } from "../../src/Domain/AiOutcome.js"
import type { Message } from "../../src/Domain/Conversation.js"
import { Integrations } from "../../src/Integrations/Integrations.js"
import { Workspaces } from "../../src/Workspaces/Workspaces.js"
import { TestConfig } from "../support/App.js"
import { TestDatabase } from "../support/Database.js"
import { incoming } from "../support/Incoming.js"

const WorkflowTest = ReplyWorkflow.layer.pipe(
  Layer.provideMerge(Layer.mergeAll(ConversationsRepo.layer, Conversations.layer, Integrations.layer, Workspaces.layer)),
  Layer.provideMerge(TestDatabase),
  Layer.provide(TestConfig()),
  Layer.orDie
)

/** A new integration with `features`, and a customer message in a new conversation of it. */
const aConversation = (features: Record<string, boolean> = {}) =>
  Effect.gen(function*() {
    const { workspace } = yield* Effect.flatMap(Workspaces, (w) => w.create("Workflow"))
    const integration = yield* Effect.flatMap(Integrations, (i) =>
      i.create(workspace.id, {
        name: "Workflow test",
        integration: "api",
        webhook: { url: "https://receiver.example/hook", headers: {}, metadata: {} },
        supportedFeatures: features,
        channelsSettings: {}
      }))
    const external = `c-${crypto.randomUUID()}`
    const say = (id: string, text: string, role: Incoming["role"] = "human") =>
      Effect.flatMap(Conversations, (c) => c.ingest(integration, incoming(external, id, text, role)))
    const { conversation, message } = yield* say(`${external}-1`, "How long does shipping take?")
    return { integration, conversation, trigger: message, say }
  }).pipe(Effect.orDie)

const outcomeFor = (trigger: Message, overrides: Partial<AiOutcome> = {}): AiOutcome => ({
  trigger: trigger.id,
  originAt: trigger.createdAt,
  text: "Shipping takes 3 days.",
  streamedAs: null,
  guardrails: null,
  verification: null,
  instructions: null,
  language: "en",
  citations: [],
  action: { _tag: "Answer" },
  requestCsat: false,
  title: null,
  summary: null,
  provenance: {
    provider: "openai",
    model: "test-model",
    inputTokens: 120,
    outputTokens: 30,
    turns: 1,
    latencyMs: 41.6,
    error: null
  },
  ...overrides
})

/** The conversation's events, in the order they were emitted: kind and `data`. */
const eventsOf = (conversationId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ readonly kind: string; readonly body: string }>`
      SELECT kind, body FROM events WHERE conversation_id = ${conversationId} ORDER BY seq`)
    .pipe(
      Effect.map((rows) => rows.map((row) => ({ kind: row.kind, data: JSON.parse(row.body).data }))),
      Effect.orDie
    )

const stateOf = (conversationId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [conversation] = yield* sql<{ readonly status: string }>`SELECT status FROM conversations WHERE id = ${conversationId}`
    const changes = yield* sql<{ readonly fromStatus: string; readonly toStatus: string; readonly cause: string; readonly messageId: string | null }>`
      SELECT from_status, to_status, cause, message_id FROM conversation_status_changes
      WHERE conversation_id = ${conversationId} ORDER BY id`
    const records = yield* sql<Record<string, unknown>>`
      SELECT trigger_message_id, message_id, action, reason, provider, model, input_tokens, output_tokens, turns,
        latency_ms, error, title, summary
      FROM reply_metadata WHERE conversation_id = ${conversationId}`
    const replies = yield* sql<{ readonly id: string; readonly text: string; readonly replyTo: string }>`
      SELECT id, text, reply_to FROM messages WHERE conversation_id = ${conversationId} AND role = 'ai'`
    return { status: conversation?.status, changes, records, replies }
  }).pipe(Effect.orDie)

describe("ReplyWorkflow.apply", () => {
  layer(WorkflowTest)((it) => {
    it.effect("an answer: the message and send_messages; the conversation stays open; once per trigger", () =>
      Effect.gen(function*() {
        const { conversation, integration, trigger } = yield* aConversation()
        const workflow = yield* ReplyWorkflow
        const outcome = outcomeFor(trigger)
        expect(yield* workflow.apply({ integration, conversationId: conversation.id, outcome })).toBe(true)
        const state = yield* stateOf(conversation.id)
        expect(state.status).toBe("open")
        expect(state.changes).toEqual([])
        expect(state.replies).toEqual([{ id: expect.any(String), text: "Shipping takes 3 days.", replyTo: trigger.id }])
        expect(state.records).toEqual([{
          triggerMessageId: trigger.id,
          messageId: state.replies[0]!.id,
          action: "answer",
          reason: null,
          provider: "openai",
          model: "test-model",
          inputTokens: 120,
          outputTokens: 30,
          turns: 1,
          latencyMs: 42,
          error: null,
          title: null,
          summary: null
        }])
        const events = yield* eventsOf(conversation.id)
        expect(events.map((e) => e.kind)).toEqual(["send_messages"])
        expect(events[0]!.data.messages).toMatchObject([{ id: state.replies[0]!.id, text: "Shipping takes 3 days.", role: "ai" }])

        // Another run of the same trigger (a retry, a second worker): nothing more.
        const again = outcomeFor(trigger, { text: "Another answer", action: { _tag: "Close", summary: "Done." } })
        expect(yield* workflow.apply({ integration, conversationId: conversation.id, outcome: again })).toBe(false)
        expect(yield* stateOf(conversation.id)).toEqual(state)
        expect((yield* eventsOf(conversation.id)).map((e) => e.kind)).toEqual(["send_messages"])
      }))

    it.effect("a hand-over: message, title, escalate (with the reason), summary; the conversation is escalated", () =>
      Effect.gen(function*() {
        const { conversation, integration, trigger } = yield* aConversation()
        const workflow = yield* ReplyWorkflow
        yield* workflow.apply({
          integration,
          conversationId: conversation.id,
          outcome: outcomeFor(trigger, {
            text: "One moment, a colleague will answer.",
            action: { _tag: "Escalate", reason: "handover", detail: "Asked for a person.", summary: "Wants a person." },
            title: "Shipping question",
            summary: "The customer asks about shipping times."
          })
        })
        const state = yield* stateOf(conversation.id)
        const messageId = state.replies[0]!.id
        expect(state.status).toBe("escalated")
        expect(state.changes).toEqual([{ fromStatus: "open", toStatus: "escalated", cause: "ai_escalation", messageId }])
        expect(state.records).toMatchObject([{ action: "escalate", reason: "handover", messageId, title: "Shipping question" }])
        expect(yield* eventsOf(conversation.id)).toEqual([
          { kind: "send_messages", data: { messages: [expect.objectContaining({ id: messageId })] } },
          { kind: "conversation_title", data: { title: "Shipping question" } },
          {
            kind: "escalate",
            data: { reason: "handover", detail: "Asked for a person.", summary: "Wants a person.", messageId }
          },
          { kind: "conversation_summary", data: { summary: "The customer asks about shipping times.", at: "escalation" } }
        ])
      }))

    it.effect("a close that asks for a rating: close_conversation, summary, send_csat when the integration takes CSAT", () =>
      Effect.gen(function*() {
        const { conversation, integration, trigger } = yield* aConversation({ csat: true })
        const workflow = yield* ReplyWorkflow
        yield* workflow.apply({
          integration,
          conversationId: conversation.id,
          outcome: outcomeFor(trigger, {
            text: null,
            action: { _tag: "Close", summary: "Resolved." },
            requestCsat: true,
            summary: "Shipping explained."
          })
        })
        const state = yield* stateOf(conversation.id)
        expect(state.status).toBe("closed")
        expect(state.replies).toEqual([])
        expect(state.changes).toEqual([{ fromStatus: "open", toStatus: "closed", cause: "ai_close", messageId: null }])
        expect(state.records).toMatchObject([{ action: "close", messageId: null, summary: "Shipping explained." }])
        expect(yield* eventsOf(conversation.id)).toEqual([
          { kind: "close_conversation", data: { summary: "Resolved.", messageId: null, reason: "resolved" } },
          { kind: "conversation_summary", data: { summary: "Shipping explained.", at: "close" } },
          { kind: "send_csat", data: {} }
        ])
      }))

    it.effect("no send_csat when the integration takes no CSAT, nor when the AI does not ask for a rating", () =>
      Effect.gen(function*() {
        const workflow = yield* ReplyWorkflow
        const close = { _tag: "Close", summary: "Resolved." } as const
        const noCsat = yield* aConversation({ csat: false })
        yield* workflow.apply({
          integration: noCsat.integration,
          conversationId: noCsat.conversation.id,
          outcome: outcomeFor(noCsat.trigger, { action: close, requestCsat: true })
        })
        expect((yield* eventsOf(noCsat.conversation.id)).map((e) => e.kind)).toEqual(["send_messages", "close_conversation"])
        const notAsked = yield* aConversation({ csat: true })
        yield* workflow.apply({
          integration: notAsked.integration,
          conversationId: notAsked.conversation.id,
          outcome: outcomeFor(notAsked.trigger, { action: close, requestCsat: false })
        })
        expect((yield* eventsOf(notAsked.conversation.id)).map((e) => e.kind)).toEqual(["send_messages", "close_conversation"])
        expect((yield* stateOf(notAsked.conversation.id)).status).toBe("closed")
      }))

    it.effect("a conversation an agent took over meanwhile takes no outcome, and no typing", () =>
      Effect.gen(function*() {
        const { conversation, integration, say, trigger } = yield* aConversation()
        yield* say(`${conversation.externalId}-agent`, "I'll take this one.", "agent")
        const workflow = yield* ReplyWorkflow
        expect(yield* workflow.typing({ integration, conversationId: conversation.id, trigger: trigger.id })).toBe(false)
        expect(yield* workflow.apply({ integration, conversationId: conversation.id, outcome: outcomeFor(trigger) }))
          .toBe(false)
        const state = yield* stateOf(conversation.id)
        expect(state.status).toBe("escalated")
        expect(state.records).toEqual([])
        expect(state.replies).toEqual([])
        expect(yield* eventsOf(conversation.id)).toEqual([])
      }))
  })
})

describe("ReplyWorkflow.pending", () => {
  layer(WorkflowTest)((it) => {
    it.effect("answers every customer message since the last answer; a superseded or answered trigger is none", () =>
      Effect.gen(function*() {
        const { conversation, integration, say, trigger } = yield* aConversation()
        const workflow = yield* ReplyWorkflow
        const second = yield* say(`${conversation.externalId}-2`, "And to Norway?")
        expect(yield* workflow.pending({ conversationId: conversation.id, messageId: trigger.id })).toEqual(Option.none())
        const pending = yield* workflow.pending({ conversationId: conversation.id, messageId: second.message.id })
        expect(Option.map(pending, (p) => p.unanswered.map((m) => m.id))).toEqual(Option.some([trigger.id, second.message.id]))
        expect(Option.map(pending, (p) => p.integration.integrationId)).toEqual(Option.some(integration.integrationId))
        yield* workflow.apply({ integration, conversationId: conversation.id, outcome: outcomeFor(second.message) })
        expect(yield* workflow.pending({ conversationId: conversation.id, messageId: second.message.id }))
          .toEqual(Option.none())
        const third = yield* say(`${conversation.externalId}-3`, "Thanks!")
        const next = yield* workflow.pending({ conversationId: conversation.id, messageId: third.message.id })
        expect(Option.map(next, (p) => p.unanswered.map((m) => m.id))).toEqual(Option.some([third.message.id]))
      }))
  })
})
