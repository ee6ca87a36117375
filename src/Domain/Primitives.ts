import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as SchemaGetter from "effect/SchemaGetter"
import * as SchemaIssue from "effect/SchemaIssue"
import * as SchemaTransformation from "effect/SchemaTransformation"
import { isRealCalendarDate, isStorableMillis } from "./StorableTime.js"

const LONE_SURROGATE = /\p{Cs}/u
const hasNul = (text: string) => text.includes("\u0000")
const hasLoneSurrogate = (text: string) => LONE_SURROGATE.test(text)

const NUL_MESSAGE = "Strings must not contain NUL (\\u0000)"
const UNICODE_MESSAGE = "Strings must be valid Unicode (no lone surrogate such as \\ud800)"

/**
 * Text PostgreSQL can store: no NUL character (it stores none in text or jsonb) and no lone UTF-16
 * surrogate (invalid Unicode: jsonb rejects it, and text would store U+FFFD instead, so that two
 * different ids could collide). Every string a client sends is one of these.
 */
export const Text = Schema.String.check(
  Schema.makeFilter((value: string) => !hasNul(value), { errorType: "string_nul", message: NUL_MESSAGE }),
  Schema.makeFilter((value: string) => !hasLoneSurrogate(value), { errorType: "string_unicode", message: UNICODE_MESSAGE })
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
export const nonEmptyString = (max: number) =>
  Text.check(
    Schema.isMinLength(1, { errorType: "string_too_short", message: "String should have at least 1 character" }),
    Schema.isMaxLength(max, { errorType: "string_too_long", message: `String should have at most ${max} characters` })
  )

/** An integrator's own identifier (message id, conversation id, user id): non-empty, at most 255 chars. */
export const ExternalId = nonEmptyString(255)

const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|z|[+-]\d{2}(:?\d{2})?)?$/

const TIMESTAMP_MESSAGE = "Input should be a valid ISO 8601 date-time"

/** An instant from ISO 8601 text, when it is one Parley can store; any offset (none means UTC). */
export const parseTimestamp = (input: string): Option.Option<DateTime.Utc> => {
  // No offset means UTC; "+05" (hours only) is valid ISO 8601 but not for Date, so it becomes "+05:00".
  const withOffset = /[Zz]|[+-]\d{2}(:?\d{2})?$/.test(input.slice(10)) ? input : `${input}Z`
  const normalized = withOffset.replace(/([+-]\d{2})$/, "$1:00").replace(/([+-]\d{2})(\d{2})$/, "$1:$2")
  // A date that does not exist (2026-02-30) would be read as another day; outside PostgreSQL's range
  // (not reachable with four-digit years, but kept with the rule) the database would fail with a 500.
  return ISO_8601.test(input) && isRealCalendarDate(input)
    ? Option.map(
      Option.filter(DateTime.make(normalized), (dt) => isStorableMillis(dt.epochMilliseconds)),
      DateTime.toUtc
    )
    : Option.none()
}

/**
 * ISO 8601 date-time. Any offset is accepted (none means UTC); responses are always UTC with `Z`.
 * `Date.parse` alone would also take "Nov 22 2026", hence the pattern.
 */
export const Timestamp = Schema.String.annotate({ format: "date-time", identifier: "Timestamp" }).pipe(
  Schema.decodeTo(Schema.DateTimeUtc, {
    decode: SchemaGetter.transformEffect((input: string) =>
      Option.match(parseTimestamp(input), {
        onNone: () => Effect.fail(new SchemaIssue.InvalidValue({ message: TIMESTAMP_MESSAGE, errorType: "datetime_parsing" })),
        onSome: Effect.succeed
      })
    ),
    encode: SchemaGetter.transform((dt: DateTime.Utc) => DateTime.formatIso(dt))
  })
).annotate({ errorType: "datetime_parsing", message: TIMESTAMP_MESSAGE })

const isHttpUrl = (value: string): boolean => {
  try {
    const url = new URL(value)
    return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== ""
  } catch {
    return false
  }
}

/** An absolute http(s) URL. The check aborts, so checks added after it only see URLs. */
export const HttpUrl = Text.check(
  Schema.makeFilter(isHttpUrl, {
    errorType: "url_parsing",
    message: "Input should be a valid absolute http(s) URL",
    toJsonSchema: () => ({ format: "uri" }),
    // Generated values (tests' `Arbitrary.schema`) are URLs: random text almost never is one.
    arbitraryConstraint: { patterns: [{ source: "^https?://[a-z][a-z0-9]{0,15}\\.example/[a-z0-9/]{0,20}$", flags: "" }] }
  }).abort()
).annotate({ identifier: "HttpUrl" })

/** A JSON object of `Value`s, every string in it `Text`. */
const jsonObjectOf = <Value extends Schema.Top>(value: Value) =>
  Schema.Record(Schema.String, value).check(
    Schema.makeFilter((object: { readonly [x: string]: unknown }) => {
      const path = findString(object, hasNul)
      return path === undefined ? undefined : { path, issue: NUL_MESSAGE }
    }, { errorType: "string_nul" }),
    Schema.makeFilter((object: { readonly [x: string]: unknown }) => {
      const path = findString(object, hasLoneSurrogate)
      return path === undefined ? undefined : { path, issue: UNICODE_MESSAGE }
    }, { errorType: "string_unicode" })
  )

/** A free-form JSON object, every string in it `Text`; a number too large for a double (`1e400`) is refused. */
export const JsonObject = jsonObjectOf(Schema.Unknown)
export type JsonObject = typeof JsonObject.Type

/**
 * A JSON object as another system sends it, taken as it is (`1e400` reads as Infinity): its reader
 * checks each field it uses and names the one that is wrong.
 */
export const ForeignJsonObject = jsonObjectOf(Schema.Any)

/** An optional field that may also be sent as `null`; absent stays absent. */
export const optionalNullable = <S extends Schema.Top>(schema: S) => Schema.optionalKey(Schema.NullOr(schema))

/**
 * A number as PostgreSQL's driver sends it: `bigint` (int8, e.g. a sequence), text (`numeric`, e.g. a
 * `sum`) or a number. Sequences and sums of tokens stay far below 2^53.
 */
export const DbNumber = Schema.Union([Schema.BigInt, Schema.String, Schema.Number]).pipe(
  Schema.decodeTo(
    Schema.Number,
    SchemaTransformation.transform<number, bigint | string | number>({ decode: (value) => Number(value), encode: (n) => n })
  )
)

/** Deepest JSON nesting a body may have (objects and arrays). */
export const MAX_JSON_DEPTH = 64

/** The deepest nesting of objects and arrays in JSON text, counted without parsing it. */
export const jsonDepth = (text: string): number => {
  let depth = 0
  let deepest = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 92) i++ // backslash: skip the escaped character
      else if (c === 34) inString = false
    } else if (c === 34) inString = true
    else if (c === 123 || c === 91) deepest = Math.max(deepest, ++depth)
    else if (c === 125 || c === 93) depth--
  }
  return deepest
}

/** JSON text parsed, without a type for what it holds: a failure for text that is not JSON. */
export const decodeJsonText = Schema.decodeUnknownResult(Schema.fromJsonString(Schema.Unknown))
