/**
 * The conversation's side of an AI reply (the `generate_reply` job, docs/ai.md). The AI decides what to
 * say and what to ask for and returns it as a value (`AiOutcome`); this service decides everything that
 * touches the conversation:
 *
 * - `pending`: which customer messages a run answers, and whether it should run at all (the
 *   conversation is open, the trigger not yet answered nor superseded by a later customer message);
 * - `typing`: the `typing` event, in its own transaction so that it leaves before the model is called;
 * - `delta`: a `message_delta` event while a streamed reply is written (`streaming`), each in its own
 *   transaction; `apply` then gives up the deltas not yet attempted, so the final message goes next;
 * - `apply`: the outcome, in one transaction under the conversation's lock and only while it is still
 *   `open`: the `reply_metadata` row keyed by the trigger (a second run of the same trigger stores and
 *   sends nothing: one reply per trigger), the message, the status change and the events, in this order:
 *   `send_messages`, `conversation_title`, `escalate` or `close_conversation`, `conversation_summary`,
 *   `send_csat` (when the AI asks for a rating and the integration takes one).
 *
 * A new action the AI can ask for is a field of `AiOutcome` (src/Domain/AiOutcome.ts), set by
 * `Replies.decide` (src/Ai/GenerateReply.ts) and applied in `apply` here.
 */
import * as SqlClient from "effect/sql/SqlClient"
import * as Context from "effect/Context"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { AiOutcome } from "../Domain/AiOutcome.js"
import { type Conversation, Message } from "../Domain/Conversation.js"
import type { EventKind } from "../Domain/Delivery.js"
import type { EventDataOf } from "../Domain/EventData.js"
import type { ConversationId, MessageId } from "../Domain/Ids.js"
import type { Integration } from "../Domain/Integration.js"
import { Events } from "../Delivery/Events.js"
import { IntegrationsRepo } from "../Integrations/Repo.js"
import { orDieSql } from "../Sql.js"
import type { GenerateReplyPayload } from "./ReplyJob.js"
import { ReplyRepo } from "./ReplyRepo.js"
import { ConversationsRepo } from "./Repo.js"
import { ConversationTimers } from "./Timers.js"

const isCustomerMessage = (m: Message) => m.role === "human" && m.type === "default" && !m.syncOnly
const isAnswer = (m: Message) => (m.role === "ai" || m.role === "agent") && m.type === "default"

/** Arrival order, not the client's `sentAt`: webhooks often arrive out of order. */
const after = (a: Message, b: Message) => a.seq > b.seq

/** What one run of a reply job answers. */
export interface Pending {
  readonly integration: Integration
  readonly conversation: Conversation
  /** Every message of the conversation, in `listMessages` order. */
  readonly messages: ReadonlyArray<Message>
  /** The customer message the job ran for. */
  readonly trigger: Message
  /** The customer's messages this reply answers (those since the last AI or agent answer), oldest first. */
  readonly unanswered: ReadonlyArray<Message>
}

export class ReplyWorkflow extends Context.Service<ReplyWorkflow>()("Parley/ReplyWorkflow", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const conversations = yield* ConversationsRepo
    const integrations = yield* IntegrationsRepo
    const events = yield* Events
    const records = yield* ReplyRepo
    const timers = yield* ConversationTimers

    /** What the run for `messageId` answers; none when the conversation is not open, or the trigger was answered or superseded. */
    const pending = ({ conversationId, messageId }: GenerateReplyPayload) =>
      Effect.gen(function*() {
        const conversation = yield* conversations.findById(conversationId)
        if (Option.isNone(conversation) || conversation.value.status !== "open") return Option.none<Pending>()
        const messages = yield* conversations.listMessages(conversationId)
        const trigger = messages.find((m) => m.id === messageId)
        if (trigger === undefined) return Option.none<Pending>()
        if (messages.some((m) => m.replyTo === trigger.id)) return Option.none<Pending>()
        if (yield* records.exists(trigger.id)) return Option.none<Pending>()
        if (messages.some((m) => isCustomerMessage(m) && after(m, trigger))) {
          yield* Effect.annotateCurrentSpan({ "reply.superseded": true })
          return Option.none<Pending>()
        }
        const lastAnswer = messages.filter(isAnswer).reduce<Message | undefined>(
          (last, m) => (last === undefined || after(m, last) ? m : last),
          undefined
        )
        const found = messages.filter((m) =>
          isCustomerMessage(m) && !after(m, trigger) && (lastAnswer === undefined || after(m, lastAnswer))
        )
        const integration = yield* integrations.findById(conversation.value.integrationId)
        if (Option.isNone(integration)) return Option.none<Pending>()
        return Option.some<Pending>({
          integration: integration.value,
          conversation: conversation.value,
          messages,
          trigger,
          unanswered: found.length > 0 ? found : [trigger]
        })
      }).pipe(orDieSql)

    /**
     * A `K` event of the reply being made, in its own transaction under the conversation's lock; false
     * (nothing sent) when the conversation is no longer open.
     */
    const whileOpen = <K extends "typing" | "message_delta">(
      kind: K,
      input: { readonly integration: Integration; readonly conversationId: ConversationId; readonly data: EventDataOf<K> }
    ) =>
      Effect.gen(function*() {
        const current = yield* conversations.lock(input.conversationId)
        if (Option.isNone(current) || current.value.status !== "open") return false
        yield* events.emit(kind, { integration: input.integration, conversation: current.value, data: input.data })
        return true
      }).pipe(sql.withTransaction, orDieSql)

    /** `typing` for `trigger`, before the model is called. */
    const typing = (input: {
      readonly integration: Integration
      readonly conversationId: ConversationId
      readonly trigger: MessageId
    }) => whileOpen("typing", { ...input, data: { messageId: input.trigger } })

    /** A `message_delta` of the message `messageId` being written (`streaming`): `text` so far, the `sequence`-th. */
    const delta = (input: {
      readonly integration: Integration
      readonly conversationId: ConversationId
      readonly messageId: MessageId
      readonly sequence: number
      readonly text: string
    }) =>
      whileOpen("message_delta", {
        ...input,
        data: { messageId: input.messageId, sequence: input.sequence, text: input.text }
      })

    /**
     * Applies `outcome` to the conversation, once per trigger; false when it was not applied (the
     * conversation is no longer open, or another run of the same trigger applied its own).
     */
    const apply = (input: {
      readonly integration: Integration
      readonly conversationId: ConversationId
      readonly outcome: AiOutcome
    }) =>
      Effect.gen(function*() {
        const { integration, outcome } = input
        const { action, provenance } = outcome
        // Re-read under lock: an agent may have taken the conversation over while the AI was thinking.
        const locked = yield* conversations.lock(input.conversationId)
        if (Option.isNone(locked) || locked.value.status !== "open") return false
        const current: Conversation = locked.value
        const recorded = yield* records.insert({
          triggerMessageId: outcome.trigger,
          conversationId: current.id,
          workspaceId: current.workspaceId,
          messageId: null,
          action: action._tag === "Answer" ? "answer" : action._tag === "Escalate" ? "escalate" : "close",
          reason: action._tag === "Escalate" ? action.reason : null,
          provider: provenance.provider,
          model: provenance.model,
          inputTokens: provenance.inputTokens,
          outputTokens: provenance.outputTokens,
          turns: provenance.turns,
          latencyMs: Math.round(provenance.latencyMs),
          citations: outcome.citations,
          error: provenance.error,
          title: outcome.title,
          summary: outcome.summary,
          guardrails: outcome.guardrails,
          verification: outcome.verification,
          instructions: outcome.instructions
        })
        if (Option.isNone(recorded)) return false
        if (current.language !== outcome.language) yield* conversations.setLanguage(current.id, outcome.language)
        const emit = <K extends EventKind>(kind: K, data: EventDataOf<K>) =>
          events.emit(kind, {
            integration,
            conversation: current,
            data,
            ...(kind === "send_messages" ? { originAt: outcome.originAt } : {})
          })

        let messageId: MessageId | null = null
        if (outcome.text !== null) {
          const row: typeof Message.insert.Type = {
            conversationId: current.id,
            integrationId: integration.integrationId,
            externalId: null,
            role: "ai",
            type: "default",
            text: outcome.text,
            attachments: [],
            sentAt: yield* DateTime.now,
            syncOnly: false,
            requestContext: null,
            isSuggestion: false,
            agentInfo: null,
            replyTo: outcome.trigger
          }
          const stored = outcome.streamedAs === null
            ? yield* conversations.insertReply(row)
            : yield* conversations.insertReplyAs({ ...row, id: outcome.streamedAs })
          if (Option.isSome(stored)) {
            messageId = stored.value.id
            yield* records.setMessage(outcome.trigger, messageId)
            // The final message is never held back by a delta still waiting for its attempt.
            if (outcome.streamedAs !== null) yield* events.supersedeDeltas(current.id)
            yield* emit("send_messages", { messages: [stored.value] })
          }
        }
        if (outcome.title !== null) {
          yield* emit("conversation_title", { title: outcome.title })
        }
        if (action._tag === "Escalate") {
          yield* conversations.setStatus(current, "escalated", "ai_escalation", messageId)
          yield* emit("escalate", {
            reason: action.reason,
            detail: action.detail,
            summary: action.summary,
            messageId
          })
        }
        if (action._tag === "Close") {
          yield* conversations.setStatus(current, "closed", "ai_close", messageId)
          yield* emit("close_conversation", { summary: action.summary, messageId, reason: "resolved" })
        }
        // The AI's message starts a new silence; a hand-over or a close ends the timers.
        if (action._tag === "Answer") {
          if (messageId !== null) yield* timers.arm(integration, current.id)
        } else {
          yield* timers.disarm(current.id)
        }
        if (action._tag !== "Answer" && outcome.summary !== null) {
          const at: EventDataOf<"conversation_summary">["at"] = action._tag === "Escalate" ? "escalation" : "close"
          yield* emit("conversation_summary", { summary: outcome.summary, at })
        }
        // The AI asks for a rating; whether the customer is surveyed is the integration's choice.
        if (outcome.requestCsat && integration.settings.supportedFeatures.csat) {
          yield* emit("send_csat", {})
        }
        yield* Effect.annotateCurrentSpan({
          "reply.message_id": messageId ?? "",
          "reply.action": action._tag,
          "reply.escalated": action._tag === "Escalate"
        })
        return true
      }).pipe(sql.withTransaction, orDieSql)

    return { pending, typing, delta, apply } as const
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
  static readonly layer = this.layerWithoutDependencies.pipe(
    Layer.provide([ConversationsRepo.layer, IntegrationsRepo.layer, Events.layer, ReplyRepo.layer, ConversationTimers.layer])
  )
}
