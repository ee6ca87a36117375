/**
 * Replies (the `generate_reply` job, PRODUCT.md §6). It runs `REPLY_DEBOUNCE` after a customer
 * message; when a later customer message arrived meanwhile, that message's job answers both. The AI is
 * called outside any transaction; the reply, its `send_messages` event (and an `escalate` event when
 * the AI hands over) are then stored in one. A retried job never makes a second reply: one reply per
 * trigger.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Clock from "effect/Clock"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { ConversationsRepo } from "../Conversations/Repo.js"
import { type Message, MessageJson } from "../Domain/Conversation.js"
import type { ConversationId, MessageId } from "../Domain/Ids.js"
import { Events } from "../Delivery/Events.js"
import { IntegrationsRepo } from "../Integrations/Repo.js"
import { Outcome } from "../Jobs/Job.js"
import { aiLatency, aiTokens } from "../Observability/Metrics.js"
import { orDieSql } from "../Sql.js"
import { AiReplies } from "./AiReplies.js"

const HISTORY = 20

const isCustomerMessage = (m: Message) => m.role === "human" && m.type === "default" && !m.syncOnly
const isAnswer = (m: Message) => (m.role === "ai" || m.role === "agent") && m.type === "default"

/** Arrival order, not the client's `sentAt`: webhooks often arrive out of order. */
const after = (a: Message, b: Message) => a.seq > b.seq

export class Replies extends Effect.Service<Replies>()("Parley/Replies", {
  dependencies: [ConversationsRepo.Default, IntegrationsRepo.Default, Events.Default],
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const conversations = yield* ConversationsRepo
    const integrations = yield* IntegrationsRepo
    const events = yield* Events
    const ai = yield* AiReplies
    const encodeMessage = Schema.encode(MessageJson)

    const countUsage = (provider: string, usage: { readonly inputTokens: number; readonly outputTokens: number }) =>
      Effect.all([
        Metric.incrementBy(Metric.tagged(Metric.tagged(aiTokens, "provider", provider), "direction", "input"), usage.inputTokens),
        Metric.incrementBy(Metric.tagged(Metric.tagged(aiTokens, "provider", provider), "direction", "output"), usage.outputTokens)
      ], { discard: true })

    /** Answers the customer's messages up to `messageId`, unless a later one will, or it was answered. */
    const generate = Effect.fn("Replies.generate")(function*(
      { conversationId, messageId }: { readonly conversationId: ConversationId; readonly messageId: MessageId }
    ) {
      const conversation = yield* conversations.findById(conversationId)
      if (Option.isNone(conversation) || conversation.value.status !== "open") return Outcome.Done()
      const messages = yield* conversations.listMessages(conversationId)
      const trigger = messages.find((m) => m.id === messageId)
      if (trigger === undefined) return Outcome.Done()
      if (messages.some((m) => m.replyTo === trigger.id)) return Outcome.Done()
      if (messages.some((m) => isCustomerMessage(m) && after(m, trigger))) {
        yield* Effect.annotateCurrentSpan({ "reply.superseded": true })
        return Outcome.Done()
      }
      const lastAnswer = messages.filter(isAnswer).reduce<Message | undefined>(
        (last, m) => (last === undefined || after(m, last) ? m : last),
        undefined
      )
      const unanswered = messages.filter((m) =>
        isCustomerMessage(m) && !after(m, trigger) && (lastAnswer === undefined || after(m, lastAnswer))
      )
      const integration = yield* integrations.findById(conversation.value.integrationId)
      if (Option.isNone(integration)) return Outcome.Done()

      const started = yield* Clock.currentTimeMillis
      const reply = yield* ai.reply({
        integration: integration.value,
        conversation: conversation.value,
        history: messages.slice(-HISTORY),
        unanswered: unanswered.length > 0 ? unanswered : [trigger]
      })
      const elapsed = (yield* Clock.currentTimeMillis) - started
      yield* Metric.update(Metric.tagged(aiLatency, "provider", reply.provider), elapsed / 1000)
      if (reply.usage !== undefined) yield* countUsage(reply.provider, reply.usage)

      return yield* Effect.gen(function*() {
        // Re-read under lock: an agent may have taken the conversation over while the AI was thinking.
        const current = yield* conversations.lock(conversationId)
        if (Option.isNone(current) || current.value.status !== "open") return Outcome.Done()
        const stored = yield* conversations.insertReply({
          conversationId,
          integrationId: integration.value.integrationId,
          externalId: null,
          role: "ai",
          type: "default",
          text: reply.text,
          attachments: [],
          sentAt: yield* DateTime.now,
          syncOnly: false,
          requestContext: null,
          isSuggestion: false,
          agentInfo: null,
          replyTo: trigger.id
        })
        if (Option.isNone(stored)) return Outcome.Done()
        // End-to-end latency starts when the earliest message this reply answers was received.
        const originAt = (unanswered[0] ?? trigger).createdAt
        yield* events.emit({
          integration: integration.value,
          conversation: current.value,
          kind: "send_messages",
          data: { messages: [yield* encodeMessage(stored.value)] },
          originAt
        })
        if (reply.escalate && integration.value.settings.supportedFeatures.escalation) {
          yield* conversations.setStatus(current.value, "escalated", "ai_escalation", stored.value.id)
          yield* events.emit({
            integration: integration.value,
            conversation: current.value,
            kind: "escalate",
            data: { reason: "no_answer", messageId: stored.value.id }
          })
        }
        yield* Effect.annotateCurrentSpan({
          "reply.message_id": stored.value.id,
          "reply.escalated": reply.escalate,
          "ai.provider": reply.provider
        })
        return Outcome.Done()
      }).pipe(sql.withTransaction)
    }, orDieSql)

    return { generate } as const
  })
}) {}
