import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Conversation, type ConversationStatus, Message } from "../Domain/Conversation.js"
import { ConversationId, IntegrationId, type MessageId, WorkspaceId } from "../Domain/Ids.js"

export class ConversationsRepo extends Effect.Service<ConversationsRepo>()("Parley/ConversationsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** Creates the conversation unless the integration already has one with that id; then locks it. */
    const findOrCreate = SqlSchema.single({
      Request: Conversation.insert,
      Result: Conversation,
      execute: (row) =>
        sql`INSERT INTO conversations ${sql.insert(row)} ON CONFLICT (integration_id, external_id) DO NOTHING`.pipe(
          Effect.zipRight(sql`SELECT * FROM conversations
              WHERE integration_id = ${row.integrationId} AND external_id = ${row.externalId} FOR UPDATE`)
        )
    })

    const findById = SqlSchema.findOne({
      Request: ConversationId,
      Result: Conversation,
      execute: (id) => sql`SELECT * FROM conversations WHERE id = ${id}`
    })

    /** The conversation, locked for the rest of the transaction. */
    const lock = SqlSchema.findOne({
      Request: ConversationId,
      Result: Conversation,
      execute: (id) => sql`SELECT * FROM conversations WHERE id = ${id} FOR UPDATE`
    })

    /** By the integrator's id, or by Parley's UUID, within one integration of one workspace. */
    const findByAnyId = SqlSchema.findOne({
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
        Effect.zipRight(sql`INSERT INTO conversation_status_changes
            (conversation_id, from_status, to_status, cause, message_id)
            VALUES (${conversation.id}, ${conversation.status}, ${to}, ${cause}, ${messageId})`),
        Effect.as(Conversation.make({ ...conversation, status: to }))
      )

    const findMessageByExternalId = SqlSchema.findOne({
      Request: Schema.Struct({ integrationId: IntegrationId, externalId: Schema.String }),
      Result: Message,
      execute: ({ externalId, integrationId }) =>
        sql`SELECT * FROM messages WHERE integration_id = ${integrationId} AND external_id = ${externalId}`
    })

    /** Stores the message; none when the integration already has a message with that external id. */
    const insertMessage = SqlSchema.findOne({
      Request: Message.insert,
      Result: Message,
      execute: (row) =>
        sql`INSERT INTO messages ${sql.insert(row)} ON CONFLICT (integration_id, external_id) DO NOTHING RETURNING *`
    })

    /** Stores an AI reply (its `replyTo` set); none when that message already has one. */
    const insertReply = SqlSchema.findOne({
      Request: Message.insert,
      Result: Message,
      execute: (row) =>
        sql`INSERT INTO messages ${sql.insert(row)}
            ON CONFLICT (reply_to) WHERE reply_to IS NOT NULL DO NOTHING RETURNING *`
    })

    /** The customer's earliest message that no AI or agent message has answered yet. */
    const firstUnreadMessageId = (conversationId: ConversationId) =>
      sql<{ readonly id: MessageId }>`
        SELECT m.id FROM messages m
        WHERE m.conversation_id = ${conversationId} AND m.role = 'human' AND m.type = 'default'
          AND NOT EXISTS (
            SELECT 1 FROM messages r
            WHERE r.conversation_id = m.conversation_id AND r.role IN ('ai', 'agent') AND r.type = 'default'
              AND (r.sent_at, r.created_at) >= (m.sent_at, m.created_at))
        ORDER BY m.sent_at, m.created_at LIMIT 1`.pipe(Effect.map((rows) => rows[0]?.id ?? null))

    const listMessages = SqlSchema.findAll({
      Request: ConversationId,
      Result: Message,
      execute: (conversationId) => sql`SELECT * FROM messages WHERE conversation_id = ${conversationId} ORDER BY sent_at, seq`
    })

    return {
      findOrCreate,
      findById,
      lock,
      findByAnyId,
      setStatus,
      findMessageByExternalId,
      insertMessage,
      insertReply,
      firstUnreadMessageId,
      listMessages
    } as const
  })
}) {}
