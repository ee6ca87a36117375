import * as Model from "effect/schema/Model"
import * as Schema from "effect/Schema"
import { CreatedAt, Internal } from "./Fields.js"
import { ConversationId, CsatId } from "./Ids.js"
import { ExternalId, Text } from "./Primitives.js"

/** docs/api.md: the size of the scale. */
export const RatingStyle = Schema.Literals([2, 3, 5, 10, 11]).annotate({
  errorType: "literal_error",
  message: "ratingStyle should be the size of the scale: 2, 3, 5, 10 or 11"
})
export type RatingStyle = typeof RatingStyle.Type

export const Rating = Schema.Literals(["good", "bad"])

/** docs/api.md, the request. `conversationId` is the integrator's id (Parley's UUID is accepted too). */
export const CsatResponse = Schema.Struct({
  conversationId: ExternalId,
  ratingStyle: RatingStyle,
  ratingAnswer: Schema.Union([Text, Schema.Finite]),
  csatComment: Schema.optionalKey(Schema.NullOr(Text))
}).annotate({ identifier: "CsatResponse", parseOptions: { errors: "all" } })
export type CsatResponse = typeof CsatResponse.Type

/**
 * A stored CSAT answer: the raw answer as sent, and its reading (a 1–5 score, good/bad). One per
 * conversation is current; earlier ones stay as history.
 */
export class CsatRecord extends Model.Class<CsatRecord>("CsatRecord")({
  id: Model.GeneratedByDb(CsatId),
  conversationId: ConversationId,
  ratingStyle: RatingStyle,
  ratingAnswer: Schema.String,
  csatComment: Schema.NullOr(Schema.String),
  score: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 5 })),
  rating: Rating,
  isCurrent: Internal(Schema.Boolean),
  createdAt: CreatedAt
}) {}

/** The 200 body of csat-response-received: the record, with the integrator's conversation id. */
export const CsatRecordView = Schema.Struct({
  ...CsatRecord.json.fields,
  externalConversationId: Schema.String
}).annotate({ identifier: "CsatRecord", description: "The stored CSAT answer and its reading: a 1-5 score, good or bad" })
export type CsatRecordView = typeof CsatRecordView.Type
