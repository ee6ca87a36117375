import * as DateTime from "effect/DateTime"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { isRealCalendarDate, isStorableMillis } from "./StorableTime.js"
import { ErrorType } from "./Validation.js"

const LONE_SURROGATE = /\p{Cs}/u
const hasNul = (text: string) => text.includes("\u0000")
const hasLoneSurrogate = (text: string) => LONE_SURROGATE.test(text)

/**
 * Text PostgreSQL can store: no NUL character (it stores none in text or jsonb) and no lone UTF-16
 * surrogate (invalid Unicode: jsonb rejects it, and text would store U+FFFD instead, so that two
 * different ids could collide). Every string a client sends is one of these.
 */
export const Text = Schema.String.pipe(
  Schema.filter((value) => !hasNul(value), {
    [ErrorType]: "string_nul",
    message: () => "Strings must not contain NUL (\\u0000)"
  }),
  Schema.filter((value) => !hasLoneSurrogate(value), {
    [ErrorType]: "string_unicode",
    message: () => "Strings must be valid Unicode (no lone surrogate such as \\ud800)"
  })
)

/** Where in a JSON value the first string (a value or a key) is that `bad` says is bad. */
const findString = (
  value: unknown,
  bad: (text: string) => boolean,
  path: ReadonlyArray<PropertyKey> = []
): ReadonlyArray<PropertyKey> | undefined => {
  if (typeof value === "string") return bad(value) ? path : undefined
  if (typeof value !== "object" || value === null) return undefined
  for (const [key, item] of Array.isArray(value) ? value.entries() : Object.entries(value)) {
    if (typeof key === "string" && bad(key)) return [...path, key]
    const found = findString(item, bad, [...path, key])
    if (found !== undefined) return found
  }
  return undefined
}

/** A string of 1 to `max` characters, with the 422 types `string_too_short` / `string_too_long`. */
export const nonEmptyString = (max: number, base: Schema.Schema<string> = Text) =>
  base.pipe(
    Schema.minLength(1, { [ErrorType]: "string_too_short", message: () => "String should have at least 1 character" }),
    Schema.maxLength(max, { [ErrorType]: "string_too_long", message: () => `String should have at most ${max} characters` })
  )

/** An integrator's own identifier (message id, conversation id, user id): non-empty, at most 255 chars. */
export const ExternalId = nonEmptyString(255, Text)

const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|z|[+-]\d{2}(:?\d{2})?)?$/

/**
 * ISO 8601 date-time. Any offset is accepted (none means UTC); responses are always UTC with `Z`.
 * `Date.parse` alone would also take "Nov 22 2026", hence the pattern.
 */
export const Timestamp = Schema.transformOrFail(Schema.String, Schema.DateTimeUtcFromSelf, {
  strict: true,
  decode: (input, _, ast) => {
    // No offset means UTC; "+05" (hours only) is valid ISO 8601 but not for Date, so it becomes "+05:00".
    const withOffset = /[Zz]|[+-]\d{2}(:?\d{2})?$/.test(input.slice(10)) ? input : `${input}Z`
    const normalized = withOffset.replace(/([+-]\d{2})$/, "$1:00").replace(/([+-]\d{2})(\d{2})$/, "$1:$2")
    // A date that does not exist (2026-02-30) would be read as another day; outside PostgreSQL's range
    // (not reachable with four-digit years, but kept with the rule) the database would fail with a 500.
    const parsed = ISO_8601.test(input) && isRealCalendarDate(input)
      ? Option.filter(DateTime.make(normalized), (dt) => isStorableMillis(dt.epochMillis))
      : Option.none()
    return Option.match(parsed, {
      onNone: () => ParseResult.fail(new ParseResult.Type(ast, input, "Input should be a valid ISO 8601 date-time")),
      onSome: (dt) => ParseResult.succeed(DateTime.toUtc(dt))
    })
  },
  encode: (dt) => ParseResult.succeed(DateTime.formatIso(dt))
}).annotations({
  [ErrorType]: "datetime_parsing",
  message: () => "Input should be a valid ISO 8601 date-time",
  jsonSchema: { type: "string", format: "date-time" },
  identifier: "Timestamp"
})

const isHttpUrl = (value: string): boolean => {
  try {
    const url = new URL(value)
    return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== ""
  } catch {
    return false
  }
}

/** An absolute http(s) URL. */
export const HttpUrl = Text.pipe(
  Schema.filter(isHttpUrl, {
    [ErrorType]: "url_parsing",
    message: () => "Input should be a valid absolute http(s) URL",
    jsonSchema: { format: "uri" },
    identifier: "HttpUrl",
    // Random text is almost never a URL: property tests draw URLs, not text that the filter would refuse.
    arbitrary: () => (fc) => fc.webUrl({ validSchemes: ["http", "https"] })
  })
)

/** A free-form JSON object, every string in it `Text`. */
export const JsonObject = Schema.Record({ key: Schema.String, value: Schema.Unknown }).pipe(
  Schema.filter((value) => {
    const path = findString(value, hasNul)
    return path === undefined || { path, message: "Strings must not contain NUL (\\u0000)" }
  }, { [ErrorType]: "string_nul" }),
  Schema.filter((value) => {
    const path = findString(value, hasLoneSurrogate)
    return path === undefined || { path, message: "Strings must be valid Unicode (no lone surrogate such as \\ud800)" }
  }, { [ErrorType]: "string_unicode" })
)
export type JsonObject = typeof JsonObject.Type

/** An optional field that may also be sent as `null`; absent stays absent. */
export const optionalNullable = <S extends Schema.Schema.Any>(schema: S) =>
  Schema.optionalWith(Schema.NullOr(schema), { exact: true })
