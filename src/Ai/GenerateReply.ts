/**
 * The `generate_reply` job (PRODUCT.md §6). It runs `REPLY_DEBOUNCE` after a customer message; when a
 * later customer message arrived meanwhile, that message's job answers both. The AI is called outside
 * any transaction; the reply, its `send_messages` event (and an `escalate` event when the AI hands
 * over) are then stored in one. A retried job never makes a second reply: one reply per trigger.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Clock from "effect/Clock"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { toMessage } from "../Conversations/Conversations.js"
import { ConversationsRepo, type MessageRow } from "../Conversations/Repo.js"
import { Message } from "../Domain/Conversation.js"
import type { ConversationId, MessageId } from "../Domain/Ids.js"
import { Events } from "../Delivery/Events.js"
import { IntegrationsRepo } from "../Integrations/Repo.js"
import { Outcome } from "../Jobs/Job.js"
import { aiLatency, aiTokens } from "../Observability/Metrics.js"
import { AiReplies } from "./AiReplies.js"

const HISTORY = 20

const isCustomerMessage = (m: MessageRow) => m.role === "human" && m.type === "default" && !m.syncOnly
const isAnswer = (m: MessageRow) => (m.role === "ai" || m.role === "agent") && m.type === "default"

/** Arrival order, not the client's `sentAt`: webhooks often arrive out of order. */
const after = (a: MessageRow, b: MessageRow) => a.seq > b.seq

export class Replies extends Effect.Service<Replies>()("Parley/Replies", {
  dependencies: [ConversationsRepo.Default, IntegrationsRepo.Default, Events.Default],
  effect: Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const conversations = yield* ConversationsRepo
  const integrations = yield* IntegrationsRepo
  const events = yield* Events
  const ai = yield* AiReplies
  const encodeMessage = Schema.encode(Message)

  const generate = Effect.fn("Replies.generate")(
    function*({ conversationId, messageId }: { readonly conversationId: ConversationId; readonly messageId: MessageId }) {
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
      const answers = messages.filter(isAnswer)
      const lastAnswer = answers.reduce<MessageRow | undefined>((last, m) => (last === undefined || after(m, last) ? m : last), undefined)
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
      if (reply.usage !== undefined) {
        yield* Metric.incrementBy(
          Metric.tagged(Metric.tagged(aiTokens, "provider", reply.provider), "direction", "input"),
          reply.usage.inputTokens
        )
        yield* Metric.incrementBy(
          Metric.tagged(Metric.tagged(aiTokens, "provider", reply.provider), "direction", "output"),
          reply.usage.outputTokens
        )
      }

      return yield* Effect.gen(function*() {
        // Re-read under lock: an agent may have taken the conversation over while the AI was thinking.
        const current = yield* conversations.lock(conversationId)
        if (Option.isNone(current) || current.value.status !== "open") return Outcome.Done()
        const stored = yield* conversations.insertReply({
          conversationId,
          integrationId: integration.value.id,
          text: reply.text,
          sentAt: yield* DateTime.now,
          replyTo: trigger.id
        })
        if (Option.isNone(stored)) return Outcome.Done()
        // End-to-end latency starts when the earliest message this reply answers was received.
        const originAt = (unanswered[0] ?? trigger).createdAt
        const eventConversation = {
          id: conversationId,
          externalId: current.value.externalId,
          customerId: current.value.customerId
        }
        yield* events.emit({
          integration: integration.value,
          conversation: eventConversation,
          kind: "send_messages",
          data: { messages: [yield* encodeMessage(toMessage(stored.value))] },
          originAt
        })
        if (reply.escalate && integration.value.settings.supportedFeatures.escalation) {
          yield* conversations.setStatus(current.value, "escalated", "ai_escalation", stored.value.id)
          yield* events.emit({
            integration: integration.value,
            conversation: eventConversation,
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
    },
    Effect.orDie
  )

  return { generate } as const
  })
}) {}
