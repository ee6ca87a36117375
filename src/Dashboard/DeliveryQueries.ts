/**
 * What the dashboard's delivery pages read that the `Deliveries` service does not offer: a page of an
 * integration's deliveries filtered by status and kind (keyset, newest first), the per-minute summary
 * of its delivery attempts, and a conversation's own id. Every statement is bounded by the workspace and
 * the integration, so an id of another tenant reads nothing.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import { DeliveryStatus, type EventKind } from "../Domain/Delivery.js"
import { ConversationId, EventId, type IntegrationId, type WorkspaceId } from "../Domain/Ids.js"
import { DbNumber } from "../Domain/Primitives.js"
import { orDieSql } from "../Sql.js"
import { type KeysetPage, keysetPage } from "./Paging.js"

/** One row of the deliveries table. */
export const DeliveryRow = Schema.Struct({
  id: EventId,
  /** The keyset cursor: the order events were created in. */
  seq: DbNumber,
  kind: Schema.String,
  conversationId: Schema.NullOr(ConversationId),
  /** The integrator's id for the conversation. */
  conversationExternalId: Schema.NullOr(Schema.String),
  status: DeliveryStatus,
  attempts: Schema.Int,
  lastStatusCode: Schema.NullOr(Schema.Int),
  lastError: Schema.NullOr(Schema.String),
  createdAt: Schema.DateTimeUtcFromDate,
  deliveredAt: Schema.NullOr(Schema.DateTimeUtcFromDate),
  deadAt: Schema.NullOr(Schema.DateTimeUtcFromDate)
})
export type DeliveryRow = typeof DeliveryRow.Type

export interface DeliveryPageQuery {
  readonly workspaceId: WorkspaceId
  readonly integrationId: IntegrationId
  readonly status: DeliveryStatus | undefined
  readonly kind: EventKind | undefined
  /** The `seq` of the last row of the previous page: rows older than it. */
  readonly before: number | undefined
  readonly limit: number
}

/** A page of deliveries; the cursor is a row's `seq`. */
export type DeliveryPage = KeysetPage<DeliveryRow, number>

const decodeRows = Schema.decodeUnknownEffect(Schema.Array(DeliveryRow))

/**
 * A page of the integration's deliveries, newest first (in the order the API lists them). The cursor is
 * the last row's `seq` and its `created_at` is read back from the row itself: a timestamp carried in
 * the URL would lose PostgreSQL's microseconds and skip or repeat rows.
 */
export const deliveryPage = Effect.fn("DeliveryQueries.page")(function*(query: DeliveryPageQuery) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`
    SELECT e.id, e.seq, e.kind, e.conversation_id, c.external_id AS conversation_external_id, e.status,
           e.attempts, e.last_status_code, e.last_error, e.created_at, e.delivered_at, e.dead_at
    FROM events e
    LEFT JOIN conversations c ON c.id = e.conversation_id AND c.workspace_id = e.workspace_id
    WHERE e.workspace_id = ${query.workspaceId} AND e.integration_id = ${query.integrationId}
      AND ${query.status === undefined ? sql`true` : sql`e.status = ${query.status}`}
      AND ${query.kind === undefined ? sql`true` : sql`e.kind = ${query.kind}`}
      AND ${
    query.before === undefined ? sql`true` : sql`(e.created_at, e.seq) < (
        SELECT b.created_at, b.seq FROM events b
        WHERE b.seq = ${query.before} AND b.integration_id = ${query.integrationId})`
  }
    ORDER BY e.created_at DESC, e.seq DESC
    LIMIT ${query.limit + 1}`.pipe(Effect.flatMap(decodeRows))
  return keysetPage(rows, query.limit, (row) => row.seq)
}, orDieSql)

/** One minute of an integration's delivery attempts, summed up by the database. */
export const MinuteSummary = Schema.Struct({
  /** Whole minutes since the Unix epoch (UTC). */
  minute: DbNumber,
  /** Attempts answered 2xx. */
  succeeded: DbNumber,
  /** Attempts answered anything else, or not at all (time-out, connection error, not sent). */
  failed: DbNumber,
  /** Latency percentiles (ms) of the minute's attempts. */
  p50: Schema.NullOr(DbNumber),
  p99: Schema.NullOr(DbNumber)
})
export type MinuteSummary = typeof MinuteSummary.Type

const decodeSummaries = Schema.decodeUnknownEffect(Schema.Array(MinuteSummary))

/**
 * The integration's delivery attempts started in `[from, to)`, summed up per minute (only the minutes
 * that have any). A minute is counted from the epoch, not truncated in the session's time zone.
 */
export const attemptsPerMinute = Effect.fn("DeliveryQueries.attemptsPerMinute")(function*(query: {
  readonly workspaceId: WorkspaceId
  readonly integrationId: IntegrationId
  readonly from: Date
  readonly to: Date
}) {
  const sql = yield* SqlClient.SqlClient
  return yield* sql`
    SELECT floor(extract(epoch FROM a.started_at) / 60)::bigint AS minute,
           count(*) FILTER (WHERE a.status_code BETWEEN 200 AND 299)::int AS succeeded,
           count(*) FILTER (WHERE a.status_code IS NULL OR a.status_code NOT BETWEEN 200 AND 299)::int AS failed,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY a.latency_ms) AS p50,
           percentile_cont(0.99) WITHIN GROUP (ORDER BY a.latency_ms) AS p99
    FROM delivery_attempts a
    JOIN events e ON e.id = a.event_id
    WHERE e.workspace_id = ${query.workspaceId} AND e.integration_id = ${query.integrationId}
      AND a.started_at >= ${query.from} AND a.started_at < ${query.to}
    GROUP BY 1
    ORDER BY 1`.pipe(Effect.flatMap(decodeSummaries))
}, orDieSql)

const ConversationRow = Schema.Struct({ externalId: Schema.String })
const decodeConversation = Schema.decodeUnknownEffect(Schema.Array(ConversationRow))

/** The integrator's id of one of the workspace's conversations, if it is one of them. */
export const conversationExternalId = Effect.fn("DeliveryQueries.conversationExternalId")(function*(
  workspaceId: WorkspaceId,
  conversationId: ConversationId
) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`
    SELECT external_id FROM conversations WHERE id = ${conversationId} AND workspace_id = ${workspaceId}`.pipe(
    Effect.flatMap(decodeConversation)
  )
  return rows[0]?.externalId
}, orDieSql)
