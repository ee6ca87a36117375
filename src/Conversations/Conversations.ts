/**
 * Threading messages into conversations (PRODUCT.md §4): idempotent on the integrator's message id,
 * customer resolution, status rules, and the reply job enqueued in the same transaction.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as AppConfig from "../Config.js"
import { Customers } from "../Customers/Customers.js"
import type { CustomerFacts } from "../Customers/Repo.js"
import type {
  AgentInfo,
  Attachment,
  Conversation,
  ConversationStatus,
  Message,
  MessageReceived,
  MessageType,
  Role
} from "../Domain/Conversation.js"
import { invalid } from "../Domain/Errors.js"
import type { IntegrationRow } from "../Integrations/Repo.js"
import { GenerateReply } from "../Ai/Jobs.js"
import { JobQueue } from "../Jobs/Queue.js"
import { type ConversationRow, ConversationsRepo, type MessageRow } from "./Repo.js"

/** A message to store, whatever door it came through (endpoint 4 or a helpdesk adapter). */
export interface Incoming {
  readonly externalMessageId: string
  readonly externalConversationId: string
  readonly customer:
    | { readonly _tag: "ParleyId"; readonly id: string; readonly loc: ReadonlyArray<string | number> }
    | { readonly _tag: "UserId"; readonly userId: string; readonly facts?: CustomerFacts }
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

export const toMessage = (row: MessageRow): Message => ({
  id: row.id,
  externalId: row.externalId,
  role: row.role,
  sentAt: row.sentAt,
  type: row.type,
  text: row.text,
  attachments: row.attachments,
  isSuggestion: row.isSuggestion,
  agentInfo: row.agentInfo
})

export const toConversation = (row: ConversationRow, firstUnreadMessageId: Message["id"] | null): Conversation => ({
  id: row.id,
  externalId: row.externalId,
  status: row.status,
  createdAt: row.createdAt,
  customerId: row.customerId,
  channel: row.channel,
  firstUnreadMessageId
})

/** The status a new message moves its conversation to, and why (PRODUCT.md §4). */
const nextStatus = (
  status: ConversationStatus,
  message: { readonly role: Role; readonly type: MessageType; readonly syncOnly: boolean }
): Option.Option<{ readonly to: ConversationStatus; readonly cause: string }> => {
  if (message.type !== "default" || message.syncOnly) return Option.none()
  if (message.role === "human" && status === "closed") return Option.some({ to: "open", cause: "customer_message" })
  if (message.role === "agent" && status === "open") return Option.some({ to: "escalated", cause: "agent_message" })
  return Option.none()
}

export class Conversations extends Effect.Service<Conversations>()("Parley/Conversations", {
  dependencies: [ConversationsRepo.Default, Customers.Default, JobQueue.Default],
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const repo = yield* ConversationsRepo
    const customers = yield* Customers
    const queue = yield* JobQueue
    const maxChars = yield* AppConfig.MaxMessageChars
    const maxAttachments = yield* AppConfig.MaxAttachments
    const debounce = yield* AppConfig.ReplyDebounce

    const respond = (message: MessageRow, conversation: ConversationRow) =>
      Effect.map(repo.firstUnreadMessageId(conversation.id), (firstUnread): MessageReceived => ({
        message: toMessage(message),
        conversation: toConversation(conversation, firstUnread)
      }))

    /** The stored message and its conversation, for a message id seen before. */
    const replay = (message: MessageRow) =>
      Effect.flatMap(repo.findById(message.conversationId), (conversation) =>
        respond(message, Option.getOrThrow(conversation)))

    const checkLimits = (incoming: Incoming, locPrefix: ReadonlyArray<string | number>) => {
      if ([...incoming.text].length > maxChars) {
        return invalid([...locPrefix, "text"], `String should have at most ${maxChars} characters`, "string_too_long")
      }
      if (incoming.attachments.length > maxAttachments) {
        return invalid([...locPrefix, "attachments"], `List should have at most ${maxAttachments} items`, "too_long")
      }
      return Effect.void
    }

    const ingest = Effect.fn("Conversations.ingest")(function*(
      integration: IntegrationRow,
      incoming: Incoming,
      options: { readonly locPrefix?: ReadonlyArray<string | number> } = {}
    ) {
      yield* checkLimits(incoming, options.locPrefix ?? ["body"])
      yield* Effect.annotateCurrentSpan({ "integration.id": integration.id, "workspace.id": integration.workspaceId })
      return yield* Effect.gen(function*() {
        const seen = yield* repo.findMessageByExternalId({
          integrationId: integration.id,
          externalId: incoming.externalMessageId
        })
        if (Option.isSome(seen)) return yield* replay(seen.value)

        const customerId = yield* customers.resolve(
          integration.workspaceId,
          incoming.customer._tag === "ParleyId" ? incoming.customer.id : incoming.customer.userId,
          incoming.customer._tag === "ParleyId"
            ? { external: integration.settings.supportedFeatures.externalCustomerId, loc: incoming.customer.loc }
            : { external: true, loc: [], ...(incoming.customer.facts ? { facts: incoming.customer.facts } : {}) }
        )
        let conversation = yield* repo.findOrCreate({
          workspaceId: integration.workspaceId,
          integrationId: integration.id,
          externalId: incoming.externalConversationId,
          customerId,
          channel: incoming.channel
        })
        const sentAt = yield* Option.match(incoming.sentAt, { onNone: () => DateTime.now, onSome: Effect.succeed })
        const inserted = yield* repo.insertMessage({
          conversationId: conversation.id,
          integrationId: integration.id,
          externalId: incoming.externalMessageId,
          role: incoming.role,
          type: incoming.type,
          text: incoming.text,
          attachments: incoming.attachments,
          sentAt,
          syncOnly: incoming.syncOnly,
          requestContext: Option.getOrNull(incoming.requestContext),
          isSuggestion: false,
          agentInfo: incoming.agentInfo
        })
        if (Option.isNone(inserted)) {
          // A concurrent request stored the same message id first: answer as for a repeat.
          const winner = yield* repo.findMessageByExternalId({
            integrationId: integration.id,
            externalId: incoming.externalMessageId
          })
          return yield* replay(Option.getOrThrow(winner))
        }
        const message = inserted.value

        const requested = Option.fromNullable(incoming.statusChange).pipe(
          Option.filter((change) => change.from === undefined || change.from === conversation.status)
        )
        for (const change of [nextStatus(conversation.status, incoming), requested]) {
          if (Option.isSome(change) && change.value.to !== conversation.status) {
            conversation = yield* repo.setStatus(conversation, change.value.to, change.value.cause, message.id)
          }
        }

        if (
          message.role === "human" && message.type === "default" && !message.syncOnly && conversation.status === "open"
        ) {
          yield* queue.enqueue(
            GenerateReply,
            { conversationId: conversation.id, messageId: message.id },
            { conversationId: conversation.id, delay: debounce }
          )
        }
        return yield* respond(message, conversation)
      }).pipe(sql.withTransaction, Effect.catchTags({ SqlError: Effect.die, ParseError: Effect.die, NoSuchElementException: Effect.die }))
    })

    return { ingest } as const
  })
}) {}
