/**
 * The errors a client can see. On the wire they are FastAPI-shaped (`{"detail": ...}`, docs/api.md):
 * each class below is paired with a wire schema that drops the `_tag`, so the body is exactly the API's
 * (here, or in `src/Auth/Api.ts` for the answers that carry headers: 401, 429, 503).
 */
import * as Effect from "effect/Effect"
import * as HttpApiSchema from "effect/http-api/HttpApiSchema"
import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"
import { formatIssue, type Location, ValidationItem } from "./Validation.js"

/**
 * `{"detail": "..."}` on the wire, decoded to (and encoded from) the error class `cls`, answered with
 * `status`. The identifier and the description are the wire side's, so the OpenAPI component is named
 * `identifier` and describes the body; the class side carries the description for the response's.
 */
export const detailBody = <Self extends { readonly detail: string }>(
  cls: Schema.Top & { new(props: { readonly detail: string }): Self },
  status: number,
  description: string,
  identifier = `${String(status)}Error`
) =>
  Schema.Struct({ detail: Schema.String }).annotate({ identifier, description }).pipe(
    Schema.decodeTo(
      Schema.instanceOf(cls),
      SchemaTransformation.transform({
        decode: (body) => new cls({ detail: body.detail }),
        encode: (error) => ({ detail: error.detail })
      })
    ),
    HttpApiSchema.status(status)
  ).annotate({ description })

export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", {
  detail: Schema.String
}) {}

export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", { detail: Schema.String }) {}
export const NotFoundBody = detailBody(NotFound, 404, "Not found: an unknown id, or another workspace's")

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
export class ValidationError extends Schema.TaggedError<ValidationError>()("ValidationError", {
  detail: Schema.Array(ValidationItem)
}) {}
export const ValidationErrorBody = Schema.Struct({ detail: Schema.Array(ValidationItem) })
  .annotate({ identifier: "HTTPValidationError", description: "Validation error" })
  .pipe(
    Schema.decodeTo(
      Schema.instanceOf(ValidationError),
      SchemaTransformation.transform({
        decode: (body) => new ValidationError({ detail: body.detail }),
        encode: (error) => ({ detail: error.detail })
      })
    ),
    HttpApiSchema.status(422)
  ).annotate({ description: "Validation error" })

/** One problem of an input, located within it. */
const InputProblem = Schema.Struct({
  path: Schema.Array(Schema.Union([Schema.String, Schema.Int])),
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
export const decodeInput = <S extends Schema.Top>(schema: S) => {
  const decode = Schema.decodeUnknownEffect(schema, { errors: "all", onExcessProperty: "ignore" })
  return (input: unknown) =>
    decode(input).pipe(
      Effect.mapError((error) =>
        new InvalidInput({
          problems: formatIssue("body", error.issue).map((item) => ({ path: item.loc.slice(1), message: item.msg, type: item.type }))
        })
      )
    )
}
