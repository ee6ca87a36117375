import * as Schema from "effect/Schema"
import { ConversationId, CsatId } from "./Ids.js"
import { ExternalId, Timestamp } from "./Primitives.js"
import { ErrorType } from "./Validation.js"

/** PRODUCT.md §4: the size of the scale. */
export const RatingStyle = Schema.Literal(2, 3, 5, 10, 11).annotations({
  [ErrorType]: "literal_error",
  message: () => "ratingStyle should be the size of the scale: 2, 3, 5, 10 or 11"
})
export type RatingStyle = typeof RatingStyle.Type

/** Spec 2.9. `conversationId` is the integrator's id (Parley's UUID is accepted too). */
export const CsatResponse = Schema.Struct({
  conversationId: ExternalId,
  ratingStyle: RatingStyle,
  ratingAnswer: Schema.Union(Schema.String, Schema.Number.pipe(Schema.finite())),
  csatComment: Schema.optionalWith(Schema.NullOr(Schema.String), { exact: true })
}).annotations({ identifier: "CsatResponse" })
export type CsatResponse = typeof CsatResponse.Type

export const CsatRecord = Schema.Struct({
  id: CsatId,
  conversationId: ConversationId,
  externalConversationId: Schema.String,
  ratingStyle: RatingStyle,
  ratingAnswer: Schema.String,
  csatComment: Schema.NullOr(Schema.String),
  score: Schema.Int.pipe(Schema.between(1, 5)),
  rating: Schema.Literal("good", "bad"),
  createdAt: Timestamp
}).annotations({ identifier: "CsatRecord" })
export type CsatRecord = typeof CsatRecord.Type
