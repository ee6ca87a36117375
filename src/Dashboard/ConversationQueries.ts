/**
 * What the dashboard's conversation pages read: a page of an integration's conversations (keyset,
 * newest first), one conversation with its thread, reply records, status history, CSAT answer and
 * deliveries, and the small "what changed" probe the live updates poll. Every statement is bounded by
 * the workspace (and the integration or conversation it checked), so another tenant's id reads nothing.
 */
import * as crypto from "node:crypto"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import { AgentInfo, ConversationStatus, MessageType, Role } from "../Domain/Conversation.js"
import { DeliveryStatus } from "../Domain/Delivery.js"
import { ConversationId, CsatId, CustomerId, EventId, IntegrationId, MessageId, type WorkspaceId } from "../Domain/Ids.js"
import { DbNumber } from "../Domain/Primitives.js"
import { ReplyRecord } from "../Domain/Reply.js"
import { orDieSql } from "../Sql.js"
import { type KeysetPage, keysetPage } from "./Paging.js"

// -----------------------------------------------------------------------------
// An integration's conversations
// -----------------------------------------------------------------------------

/** Who a conversation is with, as far as Parley knows them. */
const CustomerFields = {
  customerId: CustomerId,
  customerName: Schema.NullOr(Schema.String),
  customerEmail: Schema.NullOr(Schema.String),
  /** The integrator's own id for the customer, when they sent one. */
  customerUserId: Schema.NullOr(Schema.String)
}

/** One row of an integration's conversations. */
export const ConversationListRow = Schema.Struct({
  id: ConversationId,
  externalId: Schema.String,
  channel: Schema.String,
  status: ConversationStatus,
  createdAt: Schema.DateTimeUtcFromDate,
  ...CustomerFields,
  /** The latest title the AI gave the conversation, if any. */
  title: Schema.NullOr(Schema.String),
  messages: DbNumber,
  /** When its latest message arrived or its status last changed. */
  lastActivityAt: Schema.DateTimeUtcFromDate
})
export type ConversationListRow = typeof ConversationListRow.Type

export interface ConversationPageQuery {
  readonly workspaceId: WorkspaceId
  readonly integrationId: IntegrationId
  readonly status: ConversationStatus | undefined
  /** The id of the last conversation of the previous page: conversations started before it. */
  readonly before: ConversationId | undefined
  /** Only these conversations (whatever their status): rows a live list shows that left its first page. */
  readonly ids?: ReadonlyArray<string> | undefined
  readonly limit: number
}

/** A page of conversations; the cursor is a conversation's id. */
export type ConversationPage = KeysetPage<ConversationListRow, ConversationId>

const decodeListRows = Schema.decodeUnknownEffect(Schema.Array(ConversationListRow))

/**
 * A page of the integration's conversations, the most recently started first. The cursor is a
 * conversation id whose `created_at` is read back from its row (a timestamp in the URL would lose
 * PostgreSQL's microseconds). The counts and the last activity are computed for the page's rows only.
 */
export const conversationPage = Effect.fn("ConversationQueries.page")(function*(query: ConversationPageQuery) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`
    WITH page AS (
      SELECT c.* FROM conversations c
      WHERE c.workspace_id = ${query.workspaceId} AND c.integration_id = ${query.integrationId}
        AND ${
    query.ids !== undefined
      ? sql`c.id IN ${sql.in(query.ids)}`
      : query.status === undefined
      ? sql`true`
      : sql`c.status = ${query.status}`
  }
        AND ${
    query.before === undefined ? sql`true` : sql`(c.created_at, c.id) < (
          SELECT b.created_at, b.id FROM conversations b
          WHERE b.id = ${query.before} AND b.integration_id = ${query.integrationId})`
  }
      ORDER BY c.created_at DESC, c.id DESC
      LIMIT ${query.limit + 1})
    SELECT p.id, p.external_id, p.channel, p.status, p.created_at, p.customer_id,
           nullif(concat_ws(' ', cu.first_name, cu.last_name), '') AS customer_name,
           cu.email AS customer_email, cu.user_id AS customer_user_id,
           (SELECT r.title FROM reply_metadata r WHERE r.conversation_id = p.id AND r.title IS NOT NULL
            ORDER BY r.created_at DESC LIMIT 1) AS title,
           m.messages, greatest(m.last_message_at, p.updated_at) AS last_activity_at
    FROM page p
    LEFT JOIN customers cu ON cu.workspace_id = p.workspace_id AND cu.id = p.customer_id
    CROSS JOIN LATERAL (
      SELECT count(*)::int AS messages, max(created_at) AS last_message_at
      FROM messages WHERE conversation_id = p.id) m
    ORDER BY p.created_at DESC, p.id DESC`.pipe(Effect.flatMap(decodeListRows))
  return keysetPage(rows, query.limit, (row) => row.id) satisfies ConversationPage
}, orDieSql)

// -----------------------------------------------------------------------------
// One conversation
// -----------------------------------------------------------------------------

export const ConversationDetail = Schema.Struct({
  id: ConversationId,
  integrationId: IntegrationId,
  externalId: Schema.String,
  channel: Schema.String,
  status: ConversationStatus,
  language: Schema.NullOr(Schema.String),
  createdAt: Schema.DateTimeUtcFromDate,
  ...CustomerFields
})
export type ConversationDetail = typeof ConversationDetail.Type

const decodeDetails = Schema.decodeUnknownEffect(Schema.Array(ConversationDetail))

/** The conversation, if it is one of the workspace's. */
export const findConversation = Effect.fn("ConversationQueries.find")(function*(
  workspaceId: WorkspaceId,
  conversationId: ConversationId
) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`
    SELECT c.id, c.integration_id, c.external_id, c.channel, c.status, c.language, c.created_at, c.customer_id,
           nullif(concat_ws(' ', cu.first_name, cu.last_name), '') AS customer_name,
           cu.email AS customer_email, cu.user_id AS customer_user_id
    FROM conversations c
    LEFT JOIN customers cu ON cu.workspace_id = c.workspace_id AND cu.id = c.customer_id
    WHERE c.id = ${conversationId} AND c.workspace_id = ${workspaceId}`.pipe(Effect.flatMap(decodeDetails))
  return rows[0]
}, orDieSql)

/** An attachment as stored (checked when it arrived; read leniently here). */
const StoredAttachment = Schema.Struct({ name: Schema.String, url: Schema.String })

export const ThreadMessage = Schema.Struct({
  id: MessageId,
  /** Arrival order: the thread's order and the live updates' cursor. */
  seq: DbNumber,
  role: Role,
  type: MessageType,
  text: Schema.String,
  attachments: Schema.Array(StoredAttachment),
  sentAt: Schema.DateTimeUtcFromDate,
  syncOnly: Schema.Boolean,
  isSuggestion: Schema.Boolean,
  agentInfo: Schema.NullOr(AgentInfo)
})
export type ThreadMessage = typeof ThreadMessage.Type

/** A message with what the AI recorded about it. */
export interface ThreadEntry {
  readonly message: ThreadMessage
  /** For an AI reply: the record of what produced it. */
  readonly reply: ReplyRecord | undefined
  /** For a customer message the AI answered without a message (a silent hand-over): that record. */
  readonly handover: ReplyRecord | undefined
}

const decodeMessages = Schema.decodeUnknownEffect(Schema.Array(ThreadMessage))
const decodeRecords = Schema.decodeUnknownEffect(Schema.Array(ReplyRecord))

/** The records of `messages`: the reply each AI message is, and the silent hand-overs of the others. */
const withRecords = (conversationId: ConversationId, messages: ReadonlyArray<ThreadMessage>) =>
  Effect.gen(function*() {
    if (messages.length === 0) return []
    const sql = yield* SqlClient.SqlClient
    const ids = messages.map((message) => message.id)
    const records = yield* sql`
      SELECT * FROM reply_metadata
      WHERE conversation_id = ${conversationId}
        AND (message_id IN ${sql.in(ids)} OR (message_id IS NULL AND trigger_message_id IN ${sql.in(ids)}))`.pipe(
      Effect.flatMap(decodeRecords)
    )
    return messages.map((message): ThreadEntry => ({
      message,
      reply: records.find((record) => record.messageId === message.id),
      handover: records.find((record) => record.messageId === null && record.triggerMessageId === message.id)
    }))
  })

const MESSAGE_COLUMNS = "m.id, m.seq, m.role, m.type, m.text, m.attachments, m.sent_at, m.sync_only, m.is_suggestion, m.agent_info"

/** The conversation's messages that arrived after `afterSeq` (all of them from 0), in arrival order. */
export const threadAfter = Effect.fn("ConversationQueries.threadAfter")(function*(
  conversationId: ConversationId,
  afterSeq: number
) {
  const sql = yield* SqlClient.SqlClient
  const messages = yield* sql`
    SELECT ${sql.literal(MESSAGE_COLUMNS)} FROM messages m
    WHERE m.conversation_id = ${conversationId} AND m.seq > ${afterSeq}
    ORDER BY m.seq`.pipe(Effect.flatMap(decodeMessages))
  return yield* withRecords(conversationId, messages)
}, orDieSql)

/** The customer messages the AI handed over without answering (their record has no message). */
export const silentHandovers = Effect.fn("ConversationQueries.silentHandovers")(function*(
  conversationId: ConversationId
) {
  const sql = yield* SqlClient.SqlClient
  const messages = yield* sql`
    SELECT ${sql.literal(MESSAGE_COLUMNS)} FROM messages m
    JOIN reply_metadata r ON r.trigger_message_id = m.id AND r.message_id IS NULL
    WHERE m.conversation_id = ${conversationId}
    ORDER BY m.seq`.pipe(Effect.flatMap(decodeMessages))
  return yield* withRecords(conversationId, messages)
}, orDieSql)

export const StatusChange = Schema.Struct({
  id: DbNumber,
  fromStatus: Schema.NullOr(ConversationStatus),
  toStatus: ConversationStatus,
  cause: Schema.String,
  changedAt: Schema.DateTimeUtcFromDate
})
export type StatusChange = typeof StatusChange.Type

const decodeChanges = Schema.decodeUnknownEffect(Schema.Array(StatusChange))

/** The conversation's status changes after the one with id `afterId` (all of them from 0), oldest first. */
export const statusChangesAfter = Effect.fn("ConversationQueries.statusChangesAfter")(function*(
  conversationId: ConversationId,
  afterId: number
) {
  const sql = yield* SqlClient.SqlClient
  return yield* sql`
    SELECT id, from_status, to_status, cause, changed_at FROM conversation_status_changes
    WHERE conversation_id = ${conversationId} AND id > ${afterId}
    ORDER BY id`.pipe(Effect.flatMap(decodeChanges))
}, orDieSql)

export const CsatAnswer = Schema.Struct({
  id: CsatId,
  score: Schema.Int,
  rating: Schema.String,
  ratingStyle: Schema.Int,
  ratingAnswer: Schema.String,
  csatComment: Schema.NullOr(Schema.String),
  createdAt: Schema.DateTimeUtcFromDate
})
export type CsatAnswer = typeof CsatAnswer.Type

const decodeCsat = Schema.decodeUnknownEffect(Schema.Array(CsatAnswer))

/** The conversation's current CSAT answer, if it has one. */
export const currentCsat = Effect.fn("ConversationQueries.currentCsat")(function*(conversationId: ConversationId) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`
    SELECT id, score, rating, rating_style, rating_answer, csat_comment, created_at FROM csat_responses
    WHERE conversation_id = ${conversationId} AND is_current`.pipe(Effect.flatMap(decodeCsat))
  return rows[0]
}, orDieSql)

export const ConversationDelivery = Schema.Struct({
  id: EventId,
  kind: Schema.String,
  status: DeliveryStatus,
  attempts: Schema.Int,
  lastStatusCode: Schema.NullOr(Schema.Int),
  createdAt: Schema.DateTimeUtcFromDate
})
export type ConversationDelivery = typeof ConversationDelivery.Type

const decodeDeliveries = Schema.decodeUnknownEffect(Schema.Array(ConversationDelivery))

/** The events of the conversation and their delivery state, in the order they were created. */
export const conversationDeliveries = Effect.fn("ConversationQueries.deliveries")(function*(
  workspaceId: WorkspaceId,
  conversationId: ConversationId
) {
  const sql = yield* SqlClient.SqlClient
  return yield* sql`
    SELECT id, kind, status, attempts, last_status_code, created_at FROM events
    WHERE conversation_id = ${conversationId} AND workspace_id = ${workspaceId}
    ORDER BY seq`.pipe(Effect.flatMap(decodeDeliveries))
}, orDieSql)

/** What makes a delivery's row change: the live updates compare it. */
export const deliverySignature = (delivery: ConversationDelivery): string => `${delivery.status}:${delivery.attempts}`

/**
 * A digest of the state of every delivery of a conversation (`deliveries` in `seq` order), the same as
 * the probe's `deliveries` column computes in SQL: md5 of `id:status:attempts`, joined by commas.
 */
export const deliveriesVersion = (deliveries: ReadonlyArray<ConversationDelivery>): string =>
  crypto.createHash("md5").update(deliveries.map((d) => `${d.id}:${deliverySignature(d)}`).join(",")).digest("hex")

// -----------------------------------------------------------------------------
// The live updates' probe
// -----------------------------------------------------------------------------

/** Where a conversation is now, in one row: what the live updates compare with what the page has. */
export const Probe = Schema.Struct({
  /** The newest message's `seq` (0 without messages). */
  seq: DbNumber,
  /** The newest status change's id (0 without any). */
  change: DbNumber,
  /** The current CSAT answer's id. */
  csat: Schema.NullOr(CsatId),
  /** How many customer messages the AI handed over without a message. */
  handovers: DbNumber,
  /** `deliveriesVersion` of the conversation's deliveries. */
  deliveries: Schema.String
})
export type Probe = typeof Probe.Type

const decodeProbe = Schema.decodeUnknownEffect(Probe)

/**
 * The probe: one statement of five index lookups on the conversation's rows, which the live updates run
 * every second per open page, reading more only when something differs.
 */
export const probe = Effect.fn("ConversationQueries.probe")(function*(
  workspaceId: WorkspaceId,
  conversationId: ConversationId
) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`
    SELECT
      (SELECT coalesce(max(seq), 0) FROM messages WHERE conversation_id = ${conversationId}) AS seq,
      (SELECT coalesce(max(id), 0) FROM conversation_status_changes WHERE conversation_id = ${conversationId}) AS change,
      (SELECT id FROM csat_responses WHERE conversation_id = ${conversationId} AND is_current) AS csat,
      (SELECT count(*) FROM reply_metadata WHERE conversation_id = ${conversationId} AND message_id IS NULL) AS handovers,
      (SELECT md5(coalesce(string_agg(id::text || ':' || status || ':' || attempts::text, ',' ORDER BY seq), ''))
       FROM events WHERE conversation_id = ${conversationId} AND workspace_id = ${workspaceId}) AS deliveries`
  return yield* decodeProbe(rows[0])
}, orDieSql)
