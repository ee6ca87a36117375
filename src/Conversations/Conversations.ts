/**
 * Threading messages into conversations (docs/api.md): idempotent on the integrator's message id,
 * customer resolution, status rules, and the reply job (`ReplyJob.ts`) enqueued in the same
 * transaction. What the AI's reply then does to the conversation is `ReplyWorkflow`'s.
 */
import * as SqlClient from "effect/sql/SqlClient"
import * as DateTime from "effect/DateTime"
import * as Data from "effect/Data"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as AppConfig from "../Config.js"
import { type CustomerRef, Customers } from "../Customers/Customers.js"
import type {
  AgentInfo,
  Attachment,
  Conversation,
  ConversationStatus,
  Message,
  MessageType,
  Role
} from "../Domain/Conversation.js"
import { InvalidInput } from "../Domain/Errors.js"
import type { Integration } from "../Domain/Integration.js"
import { JobQueue } from "../Jobs/Queue.js"
import { orDieSql } from "../Sql.js"
import { GenerateReply } from "./ReplyJob.js"
import { ConversationsRepo } from "./Repo.js"
import { ConversationTimers } from "./Timers.js"

/** A message to store, whatever door it came through (endpoint 4 or a helpdesk adapter). */
export interface Incoming {
  readonly externalMessageId: string
  readonly externalConversationId: string
  readonly customer: CustomerRef
  readonly role: Role
  readonly type: MessageType
  readonly text: string
  readonly attachments: ReadonlyArray<Attachment>
  readonly sentAt: Option.Option<DateTime.Utc>
  readonly syncOnly: boolean
  readonly requestContext: Option.Option<{ readonly [key: string]: unknown }>
  readonly agentInfo: AgentInfo | null
  readonly channel: string
  /**
   * A status the event itself sets (a helpdesk's "resolved"), applied after the message rules;
   * with `from`, only when the conversation is in that status.
   */
  readonly statusChange?: { readonly to: ConversationStatus; readonly cause: string; readonly from?: ConversationStatus }
}

/** A stored message and its conversation, as message-received answers them. */
export interface Received {
  readonly message: Message
  readonly conversation: Conversation
  readonly firstUnreadMessageId: Message["id"] | null
}

/** The message id was stored before: the transaction that tried to store it again rolls back. */
class AlreadyStored extends Data.TaggedError("AlreadyStored") {}

/** The status a new message moves its conversation to, and why (docs/api.md). */
const nextStatus = (
  status: ConversationStatus,
  message: { readonly role: Role; readonly type: MessageType; readonly syncOnly: boolean }
): Option.Option<{ readonly to: ConversationStatus; readonly cause: string }> => {
  if (message.type !== "default" || message.syncOnly) return Option.none()
  if (message.role === "human" && status === "closed") return Option.some({ to: "open", cause: "customer_message" })
  if (message.role === "agent" && status === "open") return Option.some({ to: "escalated", cause: "agent_message" })
  return Option.none()
}

export class Conversations extends Context.Service<Conversations>()("Parley/Conversations", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const repo = yield* ConversationsRepo
    const customers = yield* Customers
    const queue = yield* JobQueue
    const timers = yield* ConversationTimers
    const maxChars = yield* AppConfig.MaxMessageChars
    const maxAttachments = yield* AppConfig.MaxAttachments
    const debounce = yield* AppConfig.ReplyDebounce

    const received = (message: Message, conversation: Conversation) =>
      Effect.map(repo.firstUnreadMessageId(conversation.id), (firstUnreadMessageId): Received => ({
        message,
        conversation,
        firstUnreadMessageId
      }))

    /** The stored message and its conversation, for a message id seen before. */
    const again = (message: Message) =>
      repo.findById(message.conversationId).pipe(
        Effect.flatMap(Effect.fromOption),
        Effect.flatMap((conversation) => received(message, conversation))
      )

    const checkLimits = (incoming: Incoming) => {
      if ([...incoming.text].length > maxChars) {
        return InvalidInput.one(["text"], `String should have at most ${maxChars} characters`, "string_too_long")
      }
      if (incoming.attachments.length > maxAttachments) {
        return InvalidInput.one(["attachments"], `List should have at most ${maxAttachments} items`, "too_long")
      }
      return Effect.void
    }

    /** The answer for a message id the integration has sent before (a retry, or a concurrent twin that won). */
    const stored = (integration: Integration, incoming: Incoming) =>
      repo.findMessageByExternalId({
        integrationId: integration.integrationId,
        externalId: incoming.externalMessageId
      })

    /**
     * Stores a new message in one transaction: the customer, the conversation (created or locked by one
     * statement), the message, any status change and the reply job. A message id stored before makes the
     * insert do nothing: the transaction then rolls back (undoing a customer or conversation it made)
     * and the stored message is answered. New messages, nearly all of them, are not looked up first: one
     * statement fewer per message than checking before storing (bench `sql`).
     */
    const store = (integration: Integration, incoming: Incoming) =>
      Effect.gen(function*() {
        const customerId = yield* customers.resolve(
          integration.workspaceId,
          incoming.customer._tag === "ParleyId"
            ? { ...incoming.customer, external: integration.settings.supportedFeatures.externalCustomerId }
            : incoming.customer
        )
        let conversation = yield* repo.findOrCreate({
          workspaceId: integration.workspaceId,
          integrationId: integration.integrationId,
          externalId: incoming.externalConversationId,
          status: "open",
          customerId,
          channel: incoming.channel
        })
        const sentAt = yield* Option.match(incoming.sentAt, { onNone: () => DateTime.now, onSome: Effect.succeed })
        const inserted = yield* repo.insertMessage({
          conversationId: conversation.id,
          integrationId: integration.integrationId,
          externalId: incoming.externalMessageId,
          role: incoming.role,
          type: incoming.type,
          text: incoming.text,
          attachments: incoming.attachments,
          sentAt,
          syncOnly: incoming.syncOnly,
          requestContext: Option.getOrNull(incoming.requestContext),
          isSuggestion: false,
          agentInfo: incoming.agentInfo,
          replyTo: null
        })
        if (Option.isNone(inserted)) return yield* new AlreadyStored()
        const message = inserted.value

        const requested = Option.fromNullishOr(incoming.statusChange).pipe(
          Option.filter((change) => change.from === undefined || change.from === conversation.status)
        )
        const before = conversation.status
        for (const change of [nextStatus(conversation.status, incoming), requested]) {
          if (Option.isSome(change) && change.value.to !== conversation.status) {
            conversation = yield* repo.setStatus(conversation, change.value.to, change.value.cause, message.id)
          }
        }
        // The inactivity timers: a new message in an open conversation re-arms them; leaving `open` ends them.
        if (conversation.status === "open") {
          if (message.type === "default" && !message.syncOnly) yield* timers.arm(integration, conversation.id)
        } else if (before === "open") {
          yield* timers.disarm(conversation.id)
        }

        if (
          message.role === "human" && message.type === "default" && !message.syncOnly && conversation.status === "open"
        ) {
          yield* queue.enqueue(
            GenerateReply,
            { conversationId: conversation.id, messageId: message.id },
            { orderKey: conversation.id, group: integration.workspaceId, delay: debounce }
          )
        }
        return yield* received(message, conversation)
      }).pipe(sql.withTransaction)

    const ingest = Effect.fn("Conversations.ingest")(function*(integration: Integration, incoming: Incoming) {
      yield* checkLimits(incoming)
      yield* Effect.annotateCurrentSpan({
        "integration.id": integration.integrationId,
        "workspace.id": integration.workspaceId
      })
      return yield* store(integration, incoming).pipe(
        Effect.catchTags({
          AlreadyStored: () => stored(integration, incoming).pipe(Effect.flatMap(Effect.fromOption), Effect.flatMap(again)),
          // A retry is answered with what was stored even where its customer would no longer resolve.
          InvalidInput: (invalid) =>
            Effect.gen(function*() {
              const seen = yield* stored(integration, incoming)
              return Option.isSome(seen) ? yield* again(seen.value) : yield* invalid
            })
        })
      )
    }, orDieSql)

    return { ingest } as const
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
  static readonly layer = this.layerWithoutDependencies.pipe(Layer.provide([ConversationsRepo.layer, Customers.layer, JobQueue.layer, ConversationTimers.layer]))
}
