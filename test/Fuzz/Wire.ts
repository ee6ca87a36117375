/**
 * The error shapes of docs/api.md as schemas, for tests that check what any endpoint answers:
 * `{"detail": string}` for 401/404/409/413/429/5xx, `{"detail":[{loc,msg,type}]}` for 422 with `loc`
 * starting with body, path, query or header.
 */
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type { Reply } from "../support/App.js"

export const Location = Schema.Literals(["body", "path", "query", "header"])

export const ValidationItem = Schema.Struct({
  loc: Schema.TupleWithRest(Schema.Tuple([Location]), [Schema.Union([Schema.String, Schema.Number])]),
  msg: Schema.String,
  type: Schema.String.check(Schema.isPattern(/^[a-z][a-z0-9_]*$/))
})
export type ValidationItem = typeof ValidationItem.Type

export const ValidationBody = Schema.Struct({ detail: Schema.NonEmptyArray(ValidationItem) })
export const DetailBody = Schema.Struct({ detail: Schema.String })

const strict = { onExcessProperty: "error" } as const

/** The 422 items of a reply (fails the test when the body is not in the API's 422 shape). */
export const validationDetail = (reply: Reply): ReadonlyArray<ValidationItem> =>
  Schema.decodeUnknownSync(ValidationBody, strict)(reply.body).detail

/**
 * What is wrong with a reply's status and body, or undefined when it is one the API allows: any 2xx,
 * 400/401/404/409/413/429/431 with `{"detail": string}`, 422 with located items. 5xx is always wrong here:
 * these tests send only client mistakes.
 */
export const shapeProblem = (reply: Reply): string | undefined => {
  const { body, status } = reply
  if (status >= 200 && status < 300) return undefined
  const check = (schema: Schema.Decoder<unknown>) => {
    const result = Schema.decodeUnknownResult(schema, strict)(body)
    return Result.isFailure(result)
      ? `${status} body ${JSON.stringify(body)?.slice(0, 300)}: ${result.failure.message}`
      : undefined
  }
  if (status === 422) return check(ValidationBody)
  // 400 and 431 are Node's own answers (malformed requests, oversized heads): the same shape once they
  // carry a body (known defect 9).
  if ([400, 401, 404, 409, 413, 429, 431].includes(status)) {
    const problem = check(DetailBody)
    if (problem !== undefined) return problem
    if (status === 401 && reply.headers["www-authenticate"] !== "Bearer") return "401 without WWW-Authenticate: Bearer"
    if (status === 429 && reply.headers["retry-after"] === undefined) return "429 without Retry-After"
    return undefined
  }
  return `unexpected status ${status}: ${JSON.stringify(body)?.slice(0, 300)}`
}
