import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { AgentInfo, Attachment, ConversationStatus, MessageType, Role } from "../Domain/Conversation.js"
import { ConversationId, CustomerId, IntegrationId, MessageId, WorkspaceId } from "../Domain/Ids.js"
import { JsonObject } from "../Domain/Primitives.js"

export const ConversationRow = Schema.Struct({
  id: ConversationId,
  workspaceId: WorkspaceId,
  integrationId: IntegrationId,
  externalId: Schema.String,
  customerId: CustomerId,
  channel: Schema.String,
  status: ConversationStatus,
  createdAt: Schema.DateTimeUtcFromDate
})
export type ConversationRow = typeof ConversationRow.Type

export const MessageRow = Schema.Struct({
  id: MessageId,
  conversationId: ConversationId,
  integrationId: IntegrationId,
  externalId: Schema.NullOr(Schema.String),
  role: Role,
  type: MessageType,
  text: Schema.String,
  attachments: Schema.Array(Attachment),
  sentAt: Schema.DateTimeUtcFromDate,
  syncOnly: Schema.Boolean,
  requestContext: Schema.NullOr(JsonObject),
  isSuggestion: Schema.Boolean,
  agentInfo: Schema.NullOr(AgentInfo),
  replyTo: Schema.optionalWith(Schema.NullOr(MessageId), { default: () => null }),
  /** Arrival order within the database. */
  seq: Schema.optionalWith(Schema.NumberFromString, { default: () => 0 }),
  createdAt: Schema.DateTimeUtcFromDate
})
export type MessageRow = typeof MessageRow.Type

const NewMessage = Schema.Struct({
  conversationId: ConversationId,
  integrationId: IntegrationId,
  externalId: Schema.NullOr(Schema.String),
  role: Role,
  type: MessageType,
  text: Schema.String,
  attachments: Schema.parseJson(Schema.Array(Attachment)),
  sentAt: Schema.DateTimeUtcFromDate,
  syncOnly: Schema.Boolean,
  requestContext: Schema.NullOr(Schema.parseJson(JsonObject)),
  isSuggestion: Schema.Boolean,
  agentInfo: Schema.NullOr(Schema.parseJson(AgentInfo))
})
export type NewMessage = typeof NewMessage.Type

const conversationColumns = "id, workspace_id, integration_id, external_id, customer_id, channel, status, created_at"

export class ConversationsRepo extends Effect.Service<ConversationsRepo>()("Parley/ConversationsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const columns = sql.literal(conversationColumns)

    /** Creates the conversation unless the integration already has one with that id; then locks it. */
    const findOrCreate = SqlSchema.single({
      Request: Schema.Struct({
        workspaceId: WorkspaceId,
        integrationId: IntegrationId,
        externalId: Schema.String,
        customerId: CustomerId,
        channel: Schema.String
      }),
      Result: ConversationRow,
      execute: (row) =>
        sql`INSERT INTO conversations ${sql.insert({ ...row, status: "open" })}
            ON CONFLICT (integration_id, external_id) DO NOTHING`.pipe(
          Effect.zipRight(sql`SELECT ${columns} FROM conversations
              WHERE integration_id = ${row.integrationId} AND external_id = ${row.externalId} FOR UPDATE`)
        )
    })

    const findById = SqlSchema.findOne({
      Request: ConversationId,
      Result: ConversationRow,
      execute: (id) => sql`SELECT ${columns} FROM conversations WHERE id = ${id}`
    })

    /** By the integrator's id, or by Parley's UUID, within one workspace. */
    const findByAnyId = SqlSchema.findOne({
      Request: Schema.Struct({ workspaceId: WorkspaceId, integrationId: IntegrationId, id: Schema.String }),
      Result: ConversationRow,
      execute: ({ id, integrationId, workspaceId }) =>
        sql`SELECT ${columns} FROM conversations
            WHERE workspace_id = ${workspaceId} AND integration_id = ${integrationId}
              AND (external_id = ${id} OR id::text = ${id})
            ORDER BY (external_id = ${id}) DESC LIMIT 1`
    })

    const setStatus = (
      conversation: ConversationRow,
      to: ConversationStatus,
      cause: string,
      messageId: MessageId | null
    ) =>
      sql`UPDATE conversations SET status = ${to}, updated_at = now() WHERE id = ${conversation.id}`.pipe(
        Effect.zipRight(sql`INSERT INTO conversation_status_changes
            (conversation_id, from_status, to_status, cause, message_id)
            VALUES (${conversation.id}, ${conversation.status}, ${to}, ${cause}, ${messageId})`),
        Effect.as({ ...conversation, status: to })
      )

    const findMessageByExternalId = SqlSchema.findOne({
      Request: Schema.Struct({ integrationId: IntegrationId, externalId: Schema.String }),
      Result: MessageRow,
      execute: ({ externalId, integrationId }) =>
        sql`SELECT * FROM messages WHERE integration_id = ${integrationId} AND external_id = ${externalId}`
    })

    /** Stores the message; none when the integration already has a message with that external id. */
    const insertMessage = SqlSchema.findOne({
      Request: NewMessage,
      Result: MessageRow,
      execute: (row) =>
        sql`INSERT INTO messages (conversation_id, integration_id, external_id, role, type, text, attachments,
                                  sent_at, sync_only, request_context, is_suggestion, agent_info)
            VALUES (${row.conversationId}, ${row.integrationId}, ${row.externalId}, ${row.role}, ${row.type},
                    ${row.text}, ${row.attachments}::jsonb, ${row.sentAt}, ${row.syncOnly},
                    ${row.requestContext}::jsonb, ${row.isSuggestion}, ${row.agentInfo}::jsonb)
            ON CONFLICT (integration_id, external_id) DO NOTHING
            RETURNING *`
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
      Result: MessageRow,
      execute: (conversationId) =>
        sql`SELECT * FROM messages WHERE conversation_id = ${conversationId} ORDER BY sent_at, seq`
    })

    /** The conversation, locked for the rest of the transaction. */
    const lock = SqlSchema.findOne({
      Request: ConversationId,
      Result: ConversationRow,
      execute: (id) => sql`SELECT ${columns} FROM conversations WHERE id = ${id} FOR UPDATE`
    })

    /** Stores an AI reply to `replyTo`; none when that message already has one. */
    const insertReply = SqlSchema.findOne({
      Request: Schema.Struct({
        conversationId: ConversationId,
        integrationId: IntegrationId,
        text: Schema.String,
        sentAt: Schema.DateTimeUtcFromDate,
        replyTo: MessageId
      }),
      Result: MessageRow,
      execute: (row) =>
        sql`INSERT INTO messages (conversation_id, integration_id, role, type, text, sent_at, reply_to)
            VALUES (${row.conversationId}, ${row.integrationId}, 'ai', 'default', ${row.text}, ${row.sentAt},
                    ${row.replyTo})
            ON CONFLICT (reply_to) WHERE reply_to IS NOT NULL DO NOTHING
            RETURNING *`
    })

    return {
      lock,
      insertReply,
      findOrCreate,
      findById,
      findByAnyId,
      setStatus,
      findMessageByExternalId,
      insertMessage,
      firstUnreadMessageId,
      listMessages
    } as const
  })
}) {}
