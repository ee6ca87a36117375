/**
 * What an integration's custom webhook headers may be: only headers that can actually be sent on every
 * delivery. A header that could never be sent (a hop-by-hop or framing header the HTTP client owns, a
 * value with CR/LF or other control characters, one too big for common receivers) would otherwise be
 * saved and then fail every attempt for the whole retry window, holding back its conversations.
 *
 * Field names are RFC 9110 tokens (§5.1). Values are RFC 9110 field values (§5.5) restricted to what
 * §5.5 advises new fields to use: visible US-ASCII, space and horizontal tab, with no whitespace at
 * either end (receivers strip it, so it could not arrive as saved). Non-ASCII text is refused rather
 * than sent as ISO-8859-1 bytes the receiver would misread; encode it (e.g. percent-encoding) first.
 */
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaGetter from "effect/SchemaGetter"
import * as SchemaIssue from "effect/SchemaIssue"
import * as SchemaParser from "effect/SchemaParser"

/** Longest header name, in characters. */
export const HEADER_NAME_MAX = 256
/** Longest header value, in bytes (= characters: values are ASCII). */
export const HEADER_VALUE_MAX = 4096
/**
 * All custom headers together, counted as on the wire (`name: value\r\n`). Parley adds about 1 KiB of
 * its own; Node's default limit for a whole request head is 16 KiB and Apache's for one line 8 KiB.
 */
export const HEADERS_TOTAL_MAX = 8192

/**
 * Connection-level (hop-by-hop) and message-framing headers: the HTTP client sets them itself, and
 * undici refuses to send several of them (`Connection`, `Keep-Alive`, `Transfer-Encoding`, `Upgrade`,
 * `Expect`), so every delivery would fail. `Content-Encoding` would make receivers decode a body that is
 * not encoded.
 */
export const forbiddenHeaderNames = [
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "te",
  "trailer",
  "upgrade",
  "expect",
  "host",
  "content-length",
  "content-encoding",
  "proxy-authorization",
  "proxy-authenticate",
  "http2-settings"
] as const

const forbidden: ReadonlySet<string> = new Set(forbiddenHeaderNames)

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
/** Visible ASCII, space and tab only. */
const FIELD_VALUE = /^[\t\x20-\x7e]*$/

export const isHeaderName = (name: string): boolean => TOKEN.test(name)

export interface HeaderProblem {
  /** The header the problem is about; undefined for the whole set (its total size). */
  readonly name: string | undefined
  readonly type: string
  readonly msg: string
}

export interface HeaderRules {
  /** Lower-case names the application sets itself. */
  readonly reserved: ReadonlyArray<string>
  /** Lower-case name prefixes the application keeps for itself. */
  readonly reservedPrefixes: ReadonlyArray<string>
}

const valueProblem = (value: string): Pick<HeaderProblem, "type" | "msg"> | undefined => {
  if (!FIELD_VALUE.test(value)) {
    return {
      type: "header_value",
      msg: "Header values may contain only visible ASCII characters, spaces and tabs (no CR, LF, NUL, other " +
        "control characters or non-ASCII text)"
    }
  }
  if (/^[\t ]|[\t ]$/.test(value)) {
    return { type: "header_value", msg: "Header values must not begin or end with whitespace" }
  }
  if (value.length > HEADER_VALUE_MAX) {
    return { type: "header_too_long", msg: `Header values have at most ${HEADER_VALUE_MAX} characters` }
  }
  return undefined
}

const nameProblem = (name: string, rules: HeaderRules): Pick<HeaderProblem, "type" | "msg"> | undefined => {
  if (!isHeaderName(name)) {
    return { type: "header_name", msg: "Header names must be HTTP tokens (letters, digits and !#$%&'*+-.^_`|~)" }
  }
  if (name.length > HEADER_NAME_MAX) {
    return { type: "header_too_long", msg: `Header names have at most ${HEADER_NAME_MAX} characters` }
  }
  const lower = name.toLowerCase()
  if (rules.reserved.includes(lower) || rules.reservedPrefixes.some((prefix) => lower.startsWith(prefix))) {
    return {
      type: "reserved_header",
      msg: `${name} is set by Parley and cannot be replaced (reserved: ${
        [...rules.reserved, ...rules.reservedPrefixes.map((prefix) => `${prefix}*`)].join(", ")
      })`
    }
  }
  if (forbidden.has(lower)) {
    return {
      type: "forbidden_header",
      msg: `${name} is a hop-by-hop or framing header that the HTTP client controls; it cannot be set (refused: ${
        forbiddenHeaderNames.join(", ")
      })`
    }
  }
  return undefined
}

/** Every reason the headers could not be sent as they are; empty when they can. */
export const headerProblems = (headers: Readonly<Record<string, string>>, rules: HeaderRules): Array<HeaderProblem> => {
  const problems: Array<HeaderProblem> = []
  const seen = new Set<string>()
  let total = 0
  for (const [name, value] of Object.entries(headers)) {
    total += name.length + value.length + 4
    const problem = nameProblem(name, rules) ?? valueProblem(value)
    if (problem !== undefined) {
      problems.push({ name, ...problem })
    } else if (seen.has(name.toLowerCase())) {
      problems.push({
        name,
        type: "duplicate_header",
        msg: "Header names are case-insensitive: this header is already set under another spelling"
      })
    }
    seen.add(name.toLowerCase())
  }
  if (problems.length === 0 && total > HEADERS_TOTAL_MAX) {
    problems.push({
      name: undefined,
      type: "headers_too_large",
      msg: `All custom headers together take at most ${HEADERS_TOTAL_MAX} bytes (name, value and 4 bytes each)`
    })
  }
  return problems
}

const StringRecord = Schema.Record(Schema.String, Schema.String)

/**
 * A record of custom headers that can be sent as they are. Each problem is located at its header
 * (`["body","webhook","headers","X-Name"]`), with the types `header_name`, `reserved_header`,
 * `forbidden_header`, `header_value`, `header_too_long`, `duplicate_header`, or at the record itself
 * with `headers_too_large`.
 *
 * Every problem is reported at once: a value that is not a string (`string_type`) as well as the
 * problems of the headers that are strings. A filter on the record of strings alone would not do: it
 * runs only once every value decoded, so it is checked while the values are still `unknown`.
 */
export const sendableHeaders = (rules: HeaderRules) => {
  const problemsOf = (headers: { readonly [x: string]: string }): Array<SchemaIssue.Issue> =>
    headerProblems(headers, rules).map((problem) => {
      const issue = new SchemaIssue.InvalidValue({ message: problem.msg, errorType: problem.type })
      return problem.name === undefined ? issue : new SchemaIssue.Pointer([problem.name], issue)
    })
  const Headers = Schema.Record(Schema.String, Schema.Unknown).check(
    Schema.makeFilter((input: { readonly [x: string]: unknown }, _ast, options) => {
      const decoded = SchemaParser.decodeUnknownResult(StringRecord)(input, options)
      // Values of the wrong type are reported by the record's own decoding; the strings are checked here.
      const strings = Result.isSuccess(decoded) ? decoded.success : Object.fromEntries(
        Object.entries(input).filter((entry): entry is [string, string] => typeof entry[1] === "string")
      )
      const issues = [...(Result.isFailure(decoded) ? [decoded.failure] : []), ...problemsOf(strings)]
      return issues.length === 0 ? undefined : options.errors === "all" ? issues : issues.slice(0, 1)
    }, {
      toJsonSchema: () => ({
        additionalProperties: { type: "string", maxLength: HEADER_VALUE_MAX, pattern: "^([!-~]([\\t -~]*[!-~])?)?$" },
        propertyNames: { pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$", maxLength: HEADER_NAME_MAX }
      })
    })
  ).annotate({
    identifier: "WebhookHeaders",
    description: `Custom headers sent with every webhook: RFC 9110 token names, visible-ASCII values of at most ${
      HEADER_VALUE_MAX
    } characters without surrounding whitespace, at most ${HEADERS_TOTAL_MAX} bytes in all; hop-by-hop, framing ` +
      "and Parley's own headers are refused."
  })
  // The check lets only strings through. It and the annotations are on the encoded side, which is what
  // the OpenAPI document describes.
  return Headers.pipe(
    Schema.decodeTo(StringRecord, { decode: SchemaGetter.passthrough({ strict: false }), encode: SchemaGetter.passthrough() })
  )
}
