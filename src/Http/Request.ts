/**
 * Reading requests ourselves where the spec's error shapes need it: bodies (json_invalid, 413,
 * snake/camel aliases, every problem located under `body`) and query strings (under `query`).
 */
import { HttpServerRequest } from "@effect/platform"
import * as Effect from "effect/Effect"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { isDeepStrictEqual } from "node:util"
import { PayloadTooLarge, ValidationError } from "../Domain/Errors.js"
import { formatIssue, type ValidationItem } from "../Domain/Validation.js"

const isTooLarge = (error: unknown): boolean =>
  typeof error === "object" && error !== null && "cause" in error && error.cause instanceof Error &&
  error.cause.message === "maxBytes exceeded"

export const tooLarge = new PayloadTooLarge({ detail: "Request body too large" })

/** The raw body text, within the configured size limit. */
export const rawBody = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => request.text).pipe(
  Effect.catchTag("RequestError", (error) => isTooLarge(error) ? Effect.fail(tooLarge) : Effect.die(error))
)

/** Where the first NUL character is, if any: PostgreSQL stores none in text or jsonb. */
const nulAt = (value: unknown, loc: Array<string | number>): Array<string | number> | undefined => {
  if (typeof value === "string") return value.includes("\u0000") ? loc : undefined
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const found = nulAt(item, [...loc, i])
      if (found) return found
    }
  } else if (typeof value === "object" && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      if (key.includes("\u0000")) return [...loc, key]
      const found = nulAt(item, [...loc, key])
      if (found) return found
    }
  }
  return undefined
}

/** Parses JSON text; malformed JSON is a 422 `json_invalid` (PRODUCT.md §3), an empty body `missing`. */
export const parseJson = (text: string): Effect.Effect<unknown, ValidationError> => {
  if (text.trim() === "") {
    return Effect.fail(new ValidationError({ detail: [{ loc: ["body"], msg: "Field required", type: "missing" }] }))
  }
  return Effect.try({
    try: () => JSON.parse(text) as unknown,
    catch: (error) =>
      new ValidationError({
        detail: [{
          loc: ["body"],
          msg: `JSON decode error: ${error instanceof Error ? error.message : "invalid JSON"}`,
          type: "json_invalid"
        }]
      })
  }).pipe(
    Effect.flatMap((value) => {
      const loc = nulAt(value, ["body"])
      return loc === undefined
        ? Effect.succeed(value)
        : Effect.fail(new ValidationError({ detail: [{ loc, msg: "Strings must not contain NUL (\\u0000)", type: "string_nul" }] }))
    })
  )
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * Renames alias spellings (`sent_at`) to their canonical field (`sentAt`). Both spellings with
 * different values is a conflict the client must resolve.
 */
export const normalizeAliases = (
  body: unknown,
  aliases: Readonly<Record<string, string>>
): Effect.Effect<unknown, ValidationError> => {
  if (!isRecord(body)) return Effect.succeed(body)
  const out: Record<string, unknown> = { ...body }
  const conflicts: Array<ValidationItem> = []
  for (const [alias, canonical] of Object.entries(aliases)) {
    if (!(alias in out)) continue
    if (canonical in out && !isDeepStrictEqual(out[canonical], out[alias])) {
      conflicts.push({
        loc: ["body", alias],
        msg: `Both ${canonical} and ${alias} were sent with different values; send one spelling`,
        type: "conflicting_alias"
      })
      continue
    }
    out[canonical] = out[alias]
    delete out[alias]
  }
  return conflicts.length > 0 ? Effect.fail(new ValidationError({ detail: conflicts })) : Effect.succeed(out)
}

const parseOptions = { errors: "all", onExcessProperty: "ignore" } as const

/** Decodes an already parsed value, every problem reported under `location`. */
export const decode = <A, I>(schema: Schema.Schema<A, I>, location: "body" | "query") => (input: unknown) =>
  ParseResult.decodeUnknown(schema, parseOptions)(input).pipe(
    Effect.mapError((issue) => new ValidationError({ detail: formatIssue(location, issue) }))
  )

/** Reads, parses and decodes the JSON body. */
export const decodeBody = <A, I>(
  schema: Schema.Schema<A, I>,
  options: { readonly aliases?: Readonly<Record<string, string>> } = {}
) =>
  rawBody.pipe(
    Effect.flatMap(parseJson),
    Effect.flatMap((body) => options.aliases ? normalizeAliases(body, options.aliases) : Effect.succeed(body)),
    Effect.flatMap(decode(schema, "body"))
  )

/** Decodes the query string. */
export const decodeQuery = <A, I>(schema: Schema.Schema<A, I>) =>
  Effect.flatMap(HttpServerRequest.ParsedSearchParams, decode(schema, "query"))
