/**
 * The errors a client can see. On the wire they are FastAPI-shaped (`{"detail": ...}`, docs/api.md):
 * each class below is paired with a wire schema that drops the `_tag`, so the body is exactly the API's.
 */
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as Effect from "effect/Effect"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { formatIssue, type Location, ValidationItem } from "./Validation.js"

export const detailBody = <Self extends { readonly detail: string }, I>(
  cls: Schema.Schema<Self, I, never> & { new(props: { readonly detail: string }): Self },
  status: number,
  description: string
): Schema.Schema<Self, { readonly detail: string }> =>
  Schema.transform(Schema.Struct({ detail: Schema.String }), Schema.typeSchema(cls), {
    strict: true,
    decode: (body) => new cls({ detail: body.detail }),
    encode: (error) => ({ detail: error.detail })
  }).annotations({ ...HttpApiSchema.annotations({ status }), description, identifier: `${String(status)}Error` })

export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", {
  detail: Schema.String
}) {}
export const UnauthorizedBody = detailBody(Unauthorized, 401, "Missing, invalid or revoked bearer token")

export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", { detail: Schema.String }) {}
export const NotFoundBody = detailBody(NotFound, 404, "Not found in the caller's workspace")

export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()("PayloadTooLarge", {
  detail: Schema.String
}) {}
export const PayloadTooLargeBody = detailBody(PayloadTooLarge, 413, "Request body over the configured limit")

/**
 * The database cannot be reached (refused, reset, timed out, shutting down) or did not answer in time:
 * raised as a defect at a service's boundary (`orDieSql`), answered 503 with `Retry-After` at the edge.
 */
export class DatabaseUnavailable extends Schema.TaggedError<DatabaseUnavailable>()("DatabaseUnavailable", {
  detail: Schema.String
}) {}

export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", {
  detail: Schema.String,
  retryAfterSeconds: Schema.Number
}) {}
export const RateLimitedBody: Schema.Schema<RateLimited, { readonly detail: string }> = Schema.transform(
  Schema.Struct({ detail: Schema.String }),
  Schema.typeSchema(RateLimited),
  {
    strict: true,
    decode: (body) => new RateLimited({ detail: body.detail, retryAfterSeconds: 1 }),
    encode: (error) => ({ detail: error.detail })
  }
).annotations({
  ...HttpApiSchema.annotations({ status: 429 }),
  description: "Per-token rate limit exceeded; see the Retry-After header",
  identifier: "429Error"
})

export class ValidationError extends Schema.TaggedError<ValidationError>()("ValidationError", {
  detail: Schema.Array(ValidationItem)
}) {}
export const ValidationErrorBody: Schema.Schema<ValidationError, {
  readonly detail: ReadonlyArray<{ readonly loc: ReadonlyArray<string | number>; readonly msg: string; readonly type: string }>
}> = Schema.transform(
  Schema.Struct({ detail: Schema.Array(ValidationItem) }),
  Schema.typeSchema(ValidationError),
  {
    strict: true,
    decode: (body) => new ValidationError({ detail: body.detail }),
    encode: (error) => ({ detail: error.detail })
  }
).annotations({
  ...HttpApiSchema.annotations({ status: 422 }),
  description: "Validation error",
  identifier: "HTTPValidationError"
})

/** One problem of an input, located within it. */
const InputProblem = Schema.Struct({
  path: Schema.Array(Schema.Union(Schema.String, Schema.Number)),
  message: Schema.String,
  type: Schema.String
})

/**
 * Input a service finds invalid (a configured limit, a tone of another workspace, a helpdesk event that
 * does not decode): paths are within the input, which only the HTTP edge knows to be the body (`at`).
 */
export class InvalidInput extends Schema.TaggedError<InvalidInput>()("InvalidInput", {
  problems: Schema.Array(InputProblem)
}) {
  static one(path: ReadonlyArray<string | number>, message: string, type: string): InvalidInput {
    return new InvalidInput({ problems: [{ path, message, type }] })
  }
  /** The 422 of this input arriving at `location`. */
  at(location: Location): ValidationError {
    return new ValidationError({
      detail: this.problems.map((problem) => ({ loc: [location, ...problem.path], msg: problem.message, type: problem.type }))
    })
  }
}

/** Decodes an input; its problems are an `InvalidInput`, located within it. */
export const decodeInput = <A, I>(schema: Schema.Schema<A, I>) => (input: unknown) =>
  ParseResult.decodeUnknown(schema, { errors: "all", onExcessProperty: "ignore" })(input).pipe(
    Effect.mapError((issue) =>
      new InvalidInput({
        problems: formatIssue("body", issue).map((item) => ({ path: item.loc.slice(1), message: item.msg, type: item.type }))
      })
    )
  )

