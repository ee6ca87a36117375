import * as Model from "effect/schema/Model"
import * as Schema from "effect/Schema"
import * as Struct from "effect/Struct"
import { At, Internal, NullableAt } from "./Fields.js"
import { ConversationId, EventId, IntegrationId, WorkspaceId } from "./Ids.js"
import { DbNumber, Timestamp } from "./Primitives.js"

/** Outbound event kinds (docs/webhooks.md). */
export const EventKind = Schema.Literals([
  "send_messages",
  "typing",
  "escalate",
  "close_conversation",
  "conversation_summary",
  "conversation_title",
  "send_csat",
  "message_delta"
])
export type EventKind = typeof EventKind.Type

/**
 * Kinds delivered at most once: a failed attempt is not retried (the event is dead at once), so that it
 * never holds its conversation's later events back. A `message_delta` is superseded by the next one and
 * by the final `send_messages` anyway.
 */
export const bestEffortKinds: ReadonlySet<string> = new Set<EventKind>(["message_delta"])

/** Whether events of `kind` (as stored) are delivered at most once. */
export const isBestEffort = (kind: string): boolean => bestEffortKinds.has(kind)

/**
 * `pending`: not yet attempted (or replayed); `failed`: attempted, retrying; `delivered`: a 2xx;
 * `dead`: given up (retry window over, 410 Gone, or refused).
 */
export const DeliveryStatus = Schema.Literals(["pending", "failed", "delivered", "dead"])
export type DeliveryStatus = typeof DeliveryStatus.Type

/**
 * An outbound event and its delivery state (a row of `events`); on the wire its id is the `eventId`
 * and its kind is `event`. The body is stored once, byte for byte what every attempt signs and sends.
 */
export class Delivery extends Model.Class<Delivery>("Delivery")({
  id: EventId,
  workspaceId: Internal(WorkspaceId),
  /** The column `kind` (the repository reads it `AS event`). */
  event: Schema.String,
  integrationId: IntegrationId,
  conversationId: Schema.NullOr(ConversationId),
  body: Internal(Schema.String),
  status: DeliveryStatus,
  attempts: Schema.Int,
  lastStatusCode: Schema.NullOr(Schema.Int),
  lastError: Schema.NullOr(Schema.String),
  /**
   * When the next attempt is due: its job's `run_at`, read with the event and never written to it (the
   * job owns the retry schedule: `Delivery/Jobs.ts`); null before the first attempt (unless replayed)
   * and once delivered or dead.
   */
  nextAttemptAt: Model.Field({ select: Schema.NullOr(Schema.DateTimeUtcFromDate), json: Schema.NullOr(Timestamp) }),
  createdAt: At,
  deliveredAt: NullableAt,
  deadAt: NullableAt,
  /** A replay restarts the retry window (DELIVERY_MAX_AGE) from here. */
  replayedAt: Internal(Schema.NullOr(Schema.DateTimeUtcFromDate)),
  /** When what caused the event happened (the customer's message): end-to-end latency starts here. */
  originAt: Internal(Schema.NullOr(Schema.DateTimeUtcFromDate)),
  /** Bumped by every replay: an attempt in flight during a replay does not settle the event. */
  generation: Internal(Schema.Number)
}) {}

export const DeliveryJson = Delivery.json.annotate({
  identifier: "Delivery",
  description: "An outbound event and its delivery state; id is the eventId."
})

/** One attempt at delivering an event. */
export class DeliveryAttempt extends Model.Class<DeliveryAttempt>("DeliveryAttempt")({
  id: Model.GeneratedByDb(DbNumber),
  eventId: Internal(EventId),
  attempt: Schema.Int,
  startedAt: At,
  latencyMs: Schema.Finite,
  statusCode: Schema.NullOr(Schema.Int),
  error: Schema.NullOr(Schema.String),
  responseSnippet: Schema.NullOr(Schema.String),
  nextRetryAt: NullableAt
}) {}

export const DeliveryAttemptJson = Schema.Struct(DeliveryAttempt.json.fields).mapFields(Struct.omit(["id"])).annotate({
  identifier: "DeliveryAttempt"
})

export const DeliveryDetail = Schema.Struct({
  ...Delivery.json.fields,
  body: Schema.String,
  attemptLog: Schema.Array(DeliveryAttemptJson)
}).annotate({ identifier: "DeliveryDetail", description: "One delivery with the body sent and every attempt" })
export type DeliveryDetail = typeof DeliveryDetail.Type

