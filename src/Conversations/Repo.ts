import * as SqlClient from "effect/sql/SqlClient"
import * as SqlSchema from "effect/sql/SqlSchema"
import * as DateTime from "effect/DateTime"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { Conversation, type ConversationStatus, Message } from "../Domain/Conversation.js"
import { ConversationId, type CustomerId, IntegrationId, MessageId, WorkspaceId } from "../Domain/Ids.js"
import type { Language } from "../Domain/Language.js"

const PastConversationRow = Schema.Struct({
  id: ConversationId,
  createdAt: Schema.DateTimeUtcFromDate,
  status: Schema.String,
  title: Schema.NullOr(Schema.String)
})

const PastMessageRow = Schema.Struct({ conversationId: ConversationId, role: Schema.String, text: Schema.String })

export class ConversationsRepo extends Context.Service<ConversationsRepo>()("Parley/ConversationsRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /**
     * Creates the conversation unless the integration already has one with that id, and locks it, in one
     * statement. The conflict branch's no-op update locks the existing row (even one committed after this
     * statement's snapshot) in a mode that conflicts with every other locker's `FOR UPDATE`, and returns
     * it; a new row is locked by being uncommitted. (Was an insert, then a `SELECT … FOR UPDATE`.)
     */
    const findOrCreate = SqlSchema.findOne({
      Request: Conversation.insert,
      Result: Conversation,
      execute: (row) =>
        sql`INSERT INTO conversations ${sql.insert(row)}
            ON CONFLICT (integration_id, external_id) DO UPDATE SET updated_at = conversations.updated_at
            RETURNING *`
    })

    const findById = SqlSchema.findOneOption({
      Request: ConversationId,
      Result: Conversation,
      execute: (id) => sql`SELECT * FROM conversations WHERE id = ${id}`
    })

    /** The conversation, locked for the rest of the transaction. */
    const lock = SqlSchema.findOneOption({
      Request: ConversationId,
      Result: Conversation,
      execute: (id) => sql`SELECT * FROM conversations WHERE id = ${id} FOR UPDATE`
    })

    /** By the integrator's id, or by Parley's UUID, within one integration of one workspace. */
    const findByAnyId = SqlSchema.findOneOption({
      Request: Schema.Struct({ workspaceId: WorkspaceId, integrationId: IntegrationId, id: Schema.String }),
      Result: Conversation,
      execute: ({ id, integrationId, workspaceId }) =>
        sql`SELECT * FROM conversations
            WHERE workspace_id = ${workspaceId} AND integration_id = ${integrationId}
              AND (external_id = ${id} OR id::text = ${id})
            ORDER BY (external_id = ${id}) DESC LIMIT 1`
    })

    /** Moves the conversation to `to`, and records the change with its cause. */
    const setStatus = (
      conversation: Conversation,
      to: ConversationStatus,
      cause: string,
      messageId: MessageId | null
    ) =>
      sql`UPDATE conversations SET status = ${to}, updated_at = now() WHERE id = ${conversation.id}`.pipe(
        Effect.andThen(sql`INSERT INTO conversation_status_changes
            (conversation_id, from_status, to_status, cause, message_id)
            VALUES (${conversation.id}, ${conversation.status}, ${to}, ${cause}, ${messageId})`),
        Effect.as(Conversation.make({ ...conversation, status: to }))
      )

    /** The cached summary of a conversation's earlier messages (those out of the model's context budget). */
    const contextSummary = (conversationId: ConversationId) =>
      sql<{ readonly summary: string; readonly messages: number }>`
        SELECT context_summary AS summary, context_summary_messages AS messages FROM conversations
        WHERE id = ${conversationId} AND context_summary IS NOT NULL`.pipe(Effect.map((rows) => Option.fromNullishOr(rows[0])))

    /** Caches the summary of the conversation's first `messages` messages. */
    const setContextSummary = (conversationId: ConversationId, summary: string, messages: number) =>
      Effect.asVoid(sql`UPDATE conversations SET context_summary = ${summary}, context_summary_messages = ${messages}
        WHERE id = ${conversationId}`)

    /** Stores the customer's language as a reply detected it. */
    const setLanguage = (conversationId: ConversationId, language: Language) =>
      Effect.asVoid(sql`UPDATE conversations SET language = ${language} WHERE id = ${conversationId}`)

    const findMessageByExternalId = SqlSchema.findOneOption({
      Request: Schema.Struct({ integrationId: IntegrationId, externalId: Schema.String }),
      Result: Message,
      execute: ({ externalId, integrationId }) =>
        sql`SELECT * FROM messages WHERE integration_id = ${integrationId} AND external_id = ${externalId}`
    })

    /** Stores the message; none when the integration already has a message with that external id. */
    const insertMessage = SqlSchema.findOneOption({
      Request: Message.insert,
      Result: Message,
      execute: (row) =>
        sql`INSERT INTO messages ${sql.insert(row)} ON CONFLICT (integration_id, external_id) DO NOTHING RETURNING *`
    })

    /** Stores an AI reply (its `replyTo` set); none when that message already has one. */
    const insertReply = SqlSchema.findOneOption({
      Request: Message.insert,
      Result: Message,
      execute: (row) =>
        sql`INSERT INTO messages ${sql.insert(row)}
            ON CONFLICT (reply_to) WHERE reply_to IS NOT NULL DO NOTHING RETURNING *`
    })

    /**
     * `insertReply` with the id the message was announced with (a streamed reply's `message_delta`
     * events carry it before the message exists).
     */
    const insertReplyAs = SqlSchema.findOneOption({
      Request: Schema.Struct({ ...Message.insert.fields, id: MessageId }),
      Result: Message,
      execute: (row) =>
        sql`INSERT INTO messages ${sql.insert(row)}
            ON CONFLICT DO NOTHING RETURNING *`
    })

    /**
     * The customer's earliest message that no AI or agent message has answered yet: the first human
     * message after the last answer. Two index probes on (conversation_id, sent_at, created_at), not an
     * anti-join that rescans the conversation for every message (which grew with the square of its length).
     */
    const firstUnreadMessageId = (conversationId: ConversationId) =>
      sql<{ readonly id: MessageId }>`
        WITH answered AS MATERIALIZED (
          SELECT r.sent_at, r.created_at FROM messages r
          WHERE r.conversation_id = ${conversationId} AND r.role IN ('ai', 'agent') AND r.type = 'default'
          ORDER BY r.sent_at DESC, r.created_at DESC LIMIT 1)
        SELECT m.id FROM messages m
        WHERE m.conversation_id = ${conversationId} AND m.role = 'human' AND m.type = 'default'
          AND (m.sent_at, m.created_at) > (
            coalesce((SELECT sent_at FROM answered), '-infinity'),
            coalesce((SELECT created_at FROM answered), '-infinity'))
        ORDER BY m.sent_at, m.created_at LIMIT 1`.pipe(Effect.map((rows) => rows[0]?.id ?? null))

    const listMessages = SqlSchema.findAll({
      Request: ConversationId,
      Result: Message,
      execute: (conversationId) => sql`SELECT * FROM messages WHERE conversation_id = ${conversationId} ORDER BY sent_at, seq`
    })

    /**
     * The customer's other conversations in the workspace, newest first, each with its last `messages`
     * customer, AI and agent messages (oldest first) and its latest AI-generated title.
     */
    const pastConversations = (input: {
      readonly workspaceId: WorkspaceId
      readonly customerId: CustomerId
      readonly exclude: ConversationId
      readonly conversations: number
      readonly messages: number
    }) =>
      Effect.gen(function*() {
        const found = yield* SqlSchema.findAll({
          Request: Schema.Void,
          Result: PastConversationRow,
          execute: () =>
            sql`SELECT c.id, c.created_at, c.status,
                  (SELECT r.title FROM reply_metadata r WHERE r.conversation_id = c.id AND r.title IS NOT NULL
                   ORDER BY r.created_at DESC LIMIT 1) AS title
                FROM conversations c
                WHERE c.workspace_id = ${input.workspaceId} AND c.customer_id = ${input.customerId}
                  AND c.id <> ${input.exclude}
                ORDER BY c.created_at DESC, c.id LIMIT ${input.conversations}`
        })(undefined)
        if (found.length === 0) return []
        const lines = yield* SqlSchema.findAll({
          Request: Schema.Void,
          Result: PastMessageRow,
          execute: () =>
            sql`SELECT conversation_id, role, text FROM (
                  SELECT m.conversation_id, m.role, m.text, m.seq,
                    row_number() OVER (PARTITION BY m.conversation_id ORDER BY m.seq DESC) AS newest
                  FROM messages m
                  WHERE m.conversation_id IN ${sql.in(found.map((c) => c.id))} AND m.type = 'default'
                    AND m.role IN ('human', 'ai', 'agent')) recent
                WHERE newest <= ${input.messages}
                ORDER BY seq`
        })(undefined)
        return found.map((c) => ({
          id: c.id,
          createdAt: DateTime.formatIso(c.createdAt),
          status: c.status,
          title: c.title,
          messages: lines.filter((m) => m.conversationId === c.id).map((m) => ({ role: m.role, text: m.text }))
        }))
      })

    return {
      pastConversations,
      findOrCreate,
      findById,
      lock,
      findByAnyId,
      setStatus,
      setLanguage,
      contextSummary,
      setContextSummary,
      findMessageByExternalId,
      insertMessage,
      insertReply,
      insertReplyAs,
      firstUnreadMessageId,
      listMessages
    } as const
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
  static readonly layer = this.layerWithoutDependencies
}
