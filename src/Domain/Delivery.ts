import * as Schema from "effect/Schema"
import { ConversationId, EventId, IntegrationId } from "./Ids.js"
import { Timestamp } from "./Primitives.js"

/** Outbound event kinds (PRODUCT.md §5). */
export const EventKind = Schema.Literal(
  "send_messages",
  "typing",
  "escalate",
  "close_conversation",
  "conversation_summary",
  "conversation_title",
  "send_csat"
)
export type EventKind = typeof EventKind.Type

/**
 * `pending`: not yet attempted (or replayed); `failed`: attempted, retrying; `delivered`: a 2xx;
 * `dead`: given up (retry window over, 410 Gone, or refused).
 */
export const DeliveryStatus = Schema.Literal("pending", "failed", "delivered", "dead")
export type DeliveryStatus = typeof DeliveryStatus.Type

export const DeliveryAttempt = Schema.Struct({
  attempt: Schema.Number,
  startedAt: Timestamp,
  latencyMs: Schema.Number,
  statusCode: Schema.NullOr(Schema.Number),
  error: Schema.NullOr(Schema.String),
  responseSnippet: Schema.NullOr(Schema.String),
  nextRetryAt: Schema.NullOr(Timestamp)
}).annotations({ identifier: "DeliveryAttempt" })
export type DeliveryAttempt = typeof DeliveryAttempt.Type

export const Delivery = Schema.Struct({
  id: EventId,
  event: Schema.String,
  integrationId: IntegrationId,
  conversationId: Schema.NullOr(ConversationId),
  status: DeliveryStatus,
  attempts: Schema.Number,
  lastStatusCode: Schema.NullOr(Schema.Number),
  lastError: Schema.NullOr(Schema.String),
  nextAttemptAt: Schema.NullOr(Timestamp),
  createdAt: Timestamp,
  deliveredAt: Schema.NullOr(Timestamp),
  deadAt: Schema.NullOr(Timestamp)
}).annotations({ identifier: "Delivery", description: "An outbound event and its delivery state; id is the eventId." })
export type Delivery = typeof Delivery.Type

export const DeliveryDetail = Schema.Struct({
  ...Delivery.fields,
  body: Schema.String,
  attemptLog: Schema.Array(DeliveryAttempt)
}).annotations({ identifier: "DeliveryDetail" })
export type DeliveryDetail = typeof DeliveryDetail.Type
