/**
 * Replies (the `generate_reply` job, docs/ai.md). It runs `REPLY_DEBOUNCE` after a customer
 * message; when a later customer message arrived meanwhile, that message's job answers both.
 *
 * One run: resolve the workspace's model (`ModelSettingsFor`), send `typing` (model providers), ask
 * `AiReplies` outside any transaction — when the model cannot be reached within its retry budget the
 * conversation is handed over (`escalation`) or the customer gets the fallback message, never silence —
 * then generate the title and summary the flags ask for, and store everything in one transaction: the
 * outcome (`reply_metadata`, keyed by the trigger), the message, the status change and the events.
 * The outcome's key makes a second run of the same trigger (a retry, a worker that died mid-call, two
 * runs at once after a lost lease) store nothing and send nothing: one reply per trigger.
 */
import * as SqlClient from "effect/sql/SqlClient"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as AppConfig from "../Config.js"
import { ConversationsRepo } from "../Conversations/Repo.js"
import type { Conversation, Message } from "../Domain/Conversation.js"
import type { EventKind } from "../Domain/Delivery.js"
import type { EventDataOf } from "../Domain/EventData.js"
import type { ConversationId, MessageId } from "../Domain/Ids.js"
import type { Integration, SupportedFeatures } from "../Domain/Integration.js"
import { Events } from "../Delivery/Events.js"
import { IntegrationsRepo } from "../Integrations/Repo.js"
import { Outcome } from "../Jobs/Job.js"
import { aiLatencyOf, aiTokensOf } from "../Observability/Metrics.js"
import { orDieSql } from "../Sql.js"
import { Workspaces } from "../Workspaces/Workspaces.js"
import { AiReplies, type Generated, type Reply, type ReplyAction } from "./AiReplies.js"
import type { HistoryMessage, Tone, Usage } from "./Llm/Contract.js"
import type { AiUnavailable } from "./Llm/Errors.js"
import * as Prompts from "./Llm/Prompt.js"
import { toHistory } from "./ModelReplies.js"
import { ModelSettingsFor, type ReplyModel } from "./ModelSettingsFor.js"
import { ReplyRepo } from "./ReplyRepo.js"
import { WorkspaceAiSettings } from "./Settings.js"

const HISTORY = 20

const isCustomerMessage = (m: Message) => m.role === "human" && m.type === "default" && !m.syncOnly
const isAnswer = (m: Message) => (m.role === "ai" || m.role === "agent") && m.type === "default"

/** Arrival order, not the client's `sentAt`: webhooks often arrive out of order. */
const after = (a: Message, b: Message) => a.seq > b.seq

/** An action the integration does not allow is not taken: its text is then an ordinary answer. */
const allowed = (action: ReplyAction, features: SupportedFeatures): ReplyAction =>
  (action._tag === "Escalate" && !features.escalation) || (action._tag === "Close" && !features.closeTicket)
    ? { _tag: "Answer" }
    : action

/**
 * The message the customer gets, if any. An answer always; a hand-over note with
 * `messageInEscalation`, a goodbye with `messageInEndConversation`. The embedded responder's
 * hand-over is its honest answer to a question it could not answer ("I couldn't find an answer…"),
 * so it is always sent.
 */
const customerText = (reply: Reply, action: ReplyAction, features: SupportedFeatures): string | null => {
  switch (action._tag) {
    case "Answer":
      return reply.text
    case "Escalate":
      return features.messageInEscalation || reply.provider === "embedded" ? reply.text : null
    case "Close":
      return features.messageInEndConversation ? reply.text : null
  }
}

const addUsage = (a: Usage, b: Usage): Usage => ({
  inputTokens: a.inputTokens + b.inputTokens,
  outputTokens: a.outputTokens + b.outputTokens
})

export class Replies extends Context.Service<Replies>()("Parley/Replies", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const conversations = yield* ConversationsRepo
    const integrations = yield* IntegrationsRepo
    const events = yield* Events
    const records = yield* ReplyRepo
    const workspaces = yield* Workspaces
    const ai = yield* AiReplies
    const modelFor = yield* ModelSettingsFor
    const aiSettings = yield* WorkspaceAiSettings
    const fallbackMessage = yield* AppConfig.AiFallbackMessage

    const countUsage = (provider: string, usage: Usage) =>
      Effect.all([
        Metric.update(aiTokensOf(provider, "input"), usage.inputTokens),
        Metric.update(aiTokensOf(provider, "output"), usage.outputTokens)
      ], { discard: true })

    /** The tone of this reply: `firstResponseToneId` for the first one (else `toneId`), `toneId` later. */
    const toneOf = (integration: Integration, first: boolean) =>
      Effect.gen(function*() {
        const { firstResponseToneId, supportedFeatures, toneId } = integration.settings
        if (!supportedFeatures.tone) return null
        const id = first ? firstResponseToneId ?? toneId : toneId
        if (id === null) return null
        const tone = yield* workspaces.findTone(integration.workspaceId, id)
        return Option.match(tone, {
          onNone: () => null,
          onSome: (tone): Tone => ({ name: tone.name, instructions: tone.instructions })
        })
      })

    /** When the model cannot be reached: a hand-over with `escalation`, else the fallback message. */
    const unavailable = (
      error: AiUnavailable,
      features: SupportedFeatures,
      unanswered: ReadonlyArray<Message>
    ): Reply => ({
      text: features.escalation ? Prompts.HANDOVER_TEXT : fallbackMessage,
      action: features.escalation
        ? {
          _tag: "Escalate",
          reason: "ai_unavailable",
          detail: error.message,
          summary: Prompts.fallbackSummary(unanswered)
        }
        : { _tag: "Answer" },
      citations: [],
      provider: error.provider,
      model: error.model,
      usage: error.usage,
      turns: 0
    })

    /** A title or summary: a failure to generate one is logged and costs only that event. */
    const optional = (what: string, generated: Effect.Effect<Generated, AiUnavailable>) =>
      generated.pipe(
        Effect.map(Option.some),
        Effect.catch((error) =>
          Effect.as(
            Effect.logWarning(`No conversation ${what}: the model is unavailable`).pipe(
              Effect.annotateLogs({ reason: error.message })
            ),
            Option.none<Generated>()
          )
        )
      )

    /** `typing`, in its own transaction so that it leaves before the model is called. */
    const sendTyping = (integration: Integration, conversationId: ConversationId, trigger: MessageId) =>
      Effect.gen(function*() {
        const current = yield* conversations.lock(conversationId)
        if (Option.isNone(current) || current.value.status !== "open") return false
        yield* events.emit("typing", { integration, conversation: current.value, data: { messageId: trigger } })
        return true
      }).pipe(sql.withTransaction)

    /** Stores the outcome and everything it causes, once per trigger. */
    const store = (input: {
      readonly integration: Integration
      readonly conversationId: ConversationId
      readonly trigger: Message
      readonly originAt: DateTime.Utc
      readonly reply: Reply
      readonly action: ReplyAction
      readonly text: string | null
      readonly error: string | null
      readonly latencyMs: number
      readonly usage: Usage
      readonly title: Option.Option<Generated>
      readonly summary: Option.Option<Generated>
    }) =>
      Effect.gen(function*() {
        const { action, integration, reply, trigger } = input
        // Re-read under lock: an agent may have taken the conversation over while the AI was thinking.
        const locked = yield* conversations.lock(input.conversationId)
        if (Option.isNone(locked) || locked.value.status !== "open") return Outcome.Done()
        const current: Conversation = locked.value
        const recorded = yield* records.insert({
          triggerMessageId: trigger.id,
          conversationId: current.id,
          workspaceId: current.workspaceId,
          messageId: null,
          action: action._tag === "Answer" ? "answer" : action._tag === "Escalate" ? "escalate" : "close",
          reason: action._tag === "Escalate" ? action.reason : null,
          provider: reply.provider,
          model: reply.model,
          inputTokens: input.usage.inputTokens,
          outputTokens: input.usage.outputTokens,
          turns: reply.turns,
          latencyMs: Math.round(input.latencyMs),
          citations: reply.citations,
          error: input.error,
          title: Option.getOrNull(Option.map(input.title, (t) => t.text)),
          summary: Option.getOrNull(Option.map(input.summary, (s) => s.text))
        })
        if (Option.isNone(recorded)) return Outcome.Done()
        const emit = <K extends EventKind>(kind: K, data: EventDataOf<K>) =>
          events.emit(kind, {
            integration,
            conversation: current,
            data,
            ...(kind === "send_messages" ? { originAt: input.originAt } : {})
          })

        let messageId: MessageId | null = null
        if (input.text !== null) {
          const stored = yield* conversations.insertReply({
            conversationId: current.id,
            integrationId: integration.integrationId,
            externalId: null,
            role: "ai",
            type: "default",
            text: input.text,
            attachments: [],
            sentAt: yield* DateTime.now,
            syncOnly: false,
            requestContext: null,
            isSuggestion: false,
            agentInfo: null,
            replyTo: trigger.id
          })
          if (Option.isSome(stored)) {
            messageId = stored.value.id
            yield* records.setMessage(trigger.id, messageId)
            yield* emit("send_messages", { messages: [stored.value] })
          }
        }
        if (Option.isSome(input.title)) {
          yield* emit("conversation_title", { title: input.title.value.text })
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
          yield* emit("close_conversation", { summary: action.summary, messageId })
        }
        if (action._tag !== "Answer" && Option.isSome(input.summary)) {
          const at: EventDataOf<"conversation_summary">["at"] = action._tag === "Escalate" ? "escalation" : "close"
          yield* emit("conversation_summary", { summary: input.summary.value.text, at })
        }
        if (action._tag === "Close" && integration.settings.supportedFeatures.csat) {
          yield* emit("send_csat", {})
        }
        yield* Effect.annotateCurrentSpan({
          "reply.message_id": messageId ?? "",
          "reply.action": action._tag,
          "reply.escalated": action._tag === "Escalate"
        })
        return Outcome.Done()
      }).pipe(sql.withTransaction)

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
      if (yield* records.exists(trigger.id)) return Outcome.Done()
      if (messages.some((m) => isCustomerMessage(m) && after(m, trigger))) {
        yield* Effect.annotateCurrentSpan({ "reply.superseded": true })
        return Outcome.Done()
      }
      const lastAnswer = messages.filter(isAnswer).reduce<Message | undefined>(
        (last, m) => (last === undefined || after(m, last) ? m : last),
        undefined
      )
      const found = messages.filter((m) =>
        isCustomerMessage(m) && !after(m, trigger) && (lastAnswer === undefined || after(m, lastAnswer))
      )
      const unanswered = found.length > 0 ? found : [trigger]
      const integration = yield* integrations.findById(conversation.value.integrationId)
      if (Option.isNone(integration)) return Outcome.Done()
      const features = integration.value.settings.supportedFeatures

      const model: ReplyModel = yield* modelFor.forWorkspace(conversation.value.workspaceId)
      const provider = model === "embedded" ? "embedded" : model.provider
      yield* Effect.annotateCurrentSpan({ "ai.provider": provider, "ai.model": model === "embedded" ? "" : model.model })
      // A model takes seconds; the embedded responder answers at once, so only a model is announced.
      if (model !== "embedded" && features.typing) {
        if (!(yield* sendTyping(integration.value, conversationId, trigger.id))) return Outcome.Done()
      }
      const firstExchange = !messages.some((m) => m.role === "ai" && m.type === "default")

      const started = yield* Clock.currentTimeMillis
      const { error, reply } = yield* ai.reply({
        integration: integration.value,
        conversation: conversation.value,
        history: messages.slice(-HISTORY),
        unanswered,
        model,
        tone: yield* toneOf(integration.value, firstExchange)
      }).pipe(
        Effect.map((reply) => ({ reply, error: null })),
        Effect.catch((error) =>
          Effect.as(
            Effect.logWarning("The AI model is unavailable; the reply falls back").pipe(
              Effect.annotateLogs({ reason: error.message, escalation: features.escalation })
            ),
            { reply: unavailable(error, features, unanswered), error: error.message }
          )
        )
      )
      const latencyMs = (yield* Clock.currentTimeMillis) - started
      const action = allowed(reply.action, features)
      const text = customerText(reply, action, features)

      // The title and the summary read the conversation with this reply's message in it. When the model
      // just proved unreachable they are the embedded responder's (extractive): asking it again would
      // only spend another retry budget before the hand-over reaches anyone.
      const textModel: ReplyModel = error === null ? model : "embedded"
      const transcript: ReadonlyArray<HistoryMessage> = [
        ...messages.filter((m) => m.type === "default").slice(-HISTORY).map(toHistory),
        ...(text === null ? [] : [{ role: "ai" as const, text, sentAt: DateTime.formatIso(yield* DateTime.now) }])
      ]
      const [title, summary] = yield* Effect.all([
        features.conversationTitle && firstExchange
          ? optional("title", ai.title({ model: textModel, history: transcript }))
          : Effect.succeedNone,
        features.conversationSummary && action._tag !== "Answer"
          ? optional("summary", ai.summary({ model: textModel, history: transcript }))
          : Effect.succeedNone
      ], { concurrency: 2 })
      const usage = [title, summary].reduce(
        (sum, generated) => Option.isSome(generated) ? addUsage(sum, generated.value.usage) : sum,
        reply.usage
      )
      yield* Metric.update(aiLatencyOf(reply.provider), latencyMs / 1000)
      yield* countUsage(reply.provider, usage)
      // Per workspace and day, outside the reply's transaction: what a provider billed counts even when
      // this run then loses the race to store its outcome, or the job runs again.
      if (reply.provider !== "embedded" && reply.model !== null) {
        const textCalls = textModel === "embedded" ? 0 : [title, summary].filter(Option.isSome).length
        const requests = reply.turns + textCalls
        if (requests > 0 || usage.inputTokens > 0 || usage.outputTokens > 0) {
          yield* aiSettings.recordUsage(conversation.value.workspaceId, reply.provider, reply.model, { ...usage, requests })
        }
      }

      return yield* store({
        integration: integration.value,
        conversationId,
        trigger,
        // End-to-end latency starts when the earliest message this reply answers was received.
        originAt: (unanswered[0] ?? trigger).createdAt,
        reply,
        action,
        text,
        error,
        latencyMs,
        usage,
        title,
        summary
      })
    }, orDieSql)

    return { generate } as const
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
  static readonly layer = this.layerWithoutDependencies.pipe(
    Layer.provide([
      ConversationsRepo.layer,
      IntegrationsRepo.layer,
      Events.layer,
      ReplyRepo.layer,
      Workspaces.layer,
      WorkspaceAiSettings.layer
    ])
  )
}
