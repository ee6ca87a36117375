/**
 * The conversation's side of the inactivity timers (`inactivityPrompt`, `conversationTimeout`;
 * docs/features.md). The timers are durable keyed jobs (src/Conversations/TimerJobs.ts): they survive
 * restarts and fire once across instances.
 *
 * - `arm`: every new message of an open conversation (the customer's, the AI's, a reopening one)
 *   moves each enabled timer to its full delay from now, in the message's transaction;
 * - `disarm`: a hand-over or a close removes both, in the status change's transaction: an escalated or
 *   closed conversation has no live timer;
 * - `silence`: when a timer fires, whether the customer is silent: the conversation is open and its last
 *   message is the AI's (a customer waiting for the AI is not silent);
 * - `prompt`: the check-in message, once per silence: its `externalId` names the AI message the silence
 *   started after (`inactivity-prompt:<id>`), so a second run stores nothing, and it re-arms nothing;
 * - `close`: the close for inactivity: an optional goodbye, the status change (cause
 *   `inactivity_timeout`), then `close_conversation` (`reason: "inactivity"`), `conversation_summary`
 *   with `conversationSummary` and `send_csat` with `csat`, in the order of the AI's own close.
 *
 * Both `prompt` and `close` re-check the silence under the conversation's lock: a message that arrived
 * while the AI was writing the text wins, and nothing is sent.
 */
import * as SqlClient from "effect/sql/SqlClient"
import * as Context from "effect/Context"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { Conversation, Message } from "../Domain/Conversation.js"
import type { ConversationId, MessageId } from "../Domain/Ids.js"
import type { Integration } from "../Domain/Integration.js"
import { timersOf } from "../Domain/Timers.js"
import { Events } from "../Delivery/Events.js"
import { IntegrationsRepo } from "../Integrations/Repo.js"
import { JobQueue } from "../Jobs/Queue.js"
import type { Definition } from "../Jobs/Job.js"
import { orDieSql } from "../Sql.js"
import { ConversationsRepo } from "./Repo.js"
import { ConversationTimeout, InactivityPrompt, type TimerPayload } from "./TimerJobs.js"

const PROMPT_PREFIX = "inactivity-prompt:"

/** Messages that count as speaking in the conversation (not notes, not history synced in). */
const spoken = (m: Message) => m.type === "default" && !m.syncOnly

/** Whether `m` is an inactivity prompt: it does not start a new silence. */
export const isInactivityPrompt = (m: Message) => m.role === "ai" && (m.externalId?.startsWith(PROMPT_PREFIX) ?? false)

/** A silent customer: what a timer that fired works from. */
export interface Silence {
  readonly integration: Integration
  readonly conversation: Conversation
  /** Every message of the conversation, in `listMessages` order. */
  readonly messages: ReadonlyArray<Message>
  /** The conversation's last spoken message: the AI's, which the customer has not answered. */
  readonly last: Message
  /** Whether the check-in prompt was already sent in this silence. */
  readonly prompted: boolean
}

export class ConversationTimers extends Context.Service<ConversationTimers>()("Parley/ConversationTimers", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const conversations = yield* ConversationsRepo
    const integrations = yield* IntegrationsRepo
    const events = yield* Events
    const queue = yield* JobQueue

    /** Moves the key's live timer to `seconds` from now, or queues one. */
    const rearm = <I>(
      kind: Definition<TimerPayload, I>,
      integration: Integration,
      conversationId: ConversationId,
      seconds: number
    ) =>
      Effect.gen(function*() {
        const moved = yield* queue.reschedule(kind, conversationId, { delay: `${seconds} seconds` })
        if (!moved) {
          yield* queue.enqueue(kind, { conversationId }, { group: integration.workspaceId, delay: `${seconds} seconds` })
        }
      })

    /** Re-arms the integration's enabled timers for a new message of an open conversation. */
    const arm = (integration: Integration, conversationId: ConversationId) =>
      Effect.gen(function*() {
        const { conversationTimeout, inactivityPrompt } = integration.settings.supportedFeatures
        if (!inactivityPrompt && !conversationTimeout) return
        const timers = timersOf(integration.settings.channelsSettings)
        if (inactivityPrompt) yield* rearm(InactivityPrompt, integration, conversationId, timers.inactivityPromptSeconds)
        if (conversationTimeout) {
          yield* rearm(ConversationTimeout, integration, conversationId, timers.conversationTimeoutSeconds)
        }
      })

    /** Removes both timers: the conversation left `open`. */
    const disarm = (conversationId: ConversationId) =>
      Effect.all([queue.cancel(InactivityPrompt, conversationId), queue.cancel(ConversationTimeout, conversationId)], {
        discard: true
      })

    const silenceIn = (conversation: Conversation, messages: ReadonlyArray<Message>) => {
      const said = messages.filter(spoken)
      const last = said.at(-1)
      if (conversation.status !== "open" || last === undefined || last.role !== "ai") return Option.none()
      return Option.some({ last, prompted: isInactivityPrompt(last) })
    }

    /** The customer's silence in `conversationId`, if they are silent. */
    const silence = ({ conversationId }: TimerPayload) =>
      Effect.gen(function*() {
        const conversation = yield* conversations.findById(conversationId)
        if (Option.isNone(conversation)) return Option.none<Silence>()
        const messages = yield* conversations.listMessages(conversationId)
        const found = silenceIn(conversation.value, messages)
        if (Option.isNone(found)) return Option.none<Silence>()
        const integration = yield* integrations.findById(conversation.value.integrationId)
        if (Option.isNone(integration)) return Option.none<Silence>()
        return Option.some<Silence>({
          integration: integration.value,
          conversation: conversation.value,
          messages,
          ...found.value
        })
      }).pipe(orDieSql)

    /**
     * Locks the conversation and checks that it is still in the silence `seen` found (open, the same last
     * message); none when a message arrived or its status changed meanwhile.
     */
    const stillSilent = (seen: Silence) =>
      Effect.gen(function*() {
        const locked = yield* conversations.lock(seen.conversation.id)
        if (Option.isNone(locked) || locked.value.status !== "open") return Option.none<Conversation>()
        const messages = yield* conversations.listMessages(seen.conversation.id)
        const last = messages.filter(spoken).at(-1)
        return last?.id === seen.last.id ? Option.some(locked.value) : Option.none<Conversation>()
      })

    const storeAiMessage = (conversation: Conversation, integration: Integration, text: string, externalId: string | null) =>
      Effect.gen(function*() {
        return yield* conversations.insertMessage({
          conversationId: conversation.id,
          integrationId: integration.integrationId,
          externalId,
          role: "ai",
          type: "default",
          text,
          attachments: [],
          sentAt: yield* DateTime.now,
          syncOnly: false,
          requestContext: null,
          isSuggestion: false,
          agentInfo: null,
          replyTo: null
        })
      })

    /** Sends the check-in `text` in `seen`'s silence, once; false when nothing was sent. */
    const prompt = (seen: Silence, text: string) =>
      Effect.gen(function*() {
        if (seen.prompted) return false
        const current = yield* stillSilent(seen)
        if (Option.isNone(current)) return false
        const stored = yield* storeAiMessage(current.value, seen.integration, text, `${PROMPT_PREFIX}${seen.last.id}`)
        if (Option.isNone(stored)) return false
        yield* events.emit("send_messages", {
          integration: seen.integration,
          conversation: current.value,
          data: { messages: [stored.value] }
        })
        yield* Effect.annotateCurrentSpan({ "timer.prompt_message_id": stored.value.id })
        return true
      }).pipe(sql.withTransaction, orDieSql)

    /**
     * Closes the conversation for inactivity: `goodbye` first when given, then the status change and the
     * events; false when the silence was broken meanwhile.
     */
    const close = (seen: Silence, input: { readonly goodbye: string | null; readonly summary: string }) =>
      Effect.gen(function*() {
        const current = yield* stillSilent(seen)
        if (Option.isNone(current)) return false
        const { integration } = seen
        const features = integration.settings.supportedFeatures
        const emit = events.emit
        let messageId: MessageId | null = null
        if (input.goodbye !== null) {
          const stored = yield* storeAiMessage(current.value, integration, input.goodbye, null)
          if (Option.isSome(stored)) {
            messageId = stored.value.id
            yield* emit("send_messages", { integration, conversation: current.value, data: { messages: [stored.value] } })
          }
        }
        const closed = yield* conversations.setStatus(current.value, "closed", "inactivity_timeout", messageId)
        yield* disarm(closed.id)
        yield* emit("close_conversation", {
          integration,
          conversation: closed,
          data: { summary: input.summary, messageId, reason: "inactivity" }
        })
        // As after the AI's own close: the summary, then the rating request.
        if (features.conversationSummary) {
          yield* emit("conversation_summary", { integration, conversation: closed, data: { summary: input.summary, at: "close" } })
        }
        if (features.csat) yield* emit("send_csat", { integration, conversation: closed, data: {} })
        yield* Effect.annotateCurrentSpan({ "timer.closed": true, "timer.goodbye_message_id": messageId ?? "" })
        return true
      }).pipe(sql.withTransaction, orDieSql)

    return { arm, disarm, silence, prompt, close } as const
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
  static readonly layer = this.layerWithoutDependencies.pipe(
    Layer.provide([ConversationsRepo.layer, IntegrationsRepo.layer, Events.layer, JobQueue.layer])
  )
}
