/**
 * How provider failures are read: which ones another attempt may fix (transient), which ones it
 * cannot (rejected), and the typed error a caller sees when the agent gives up.
 */
import type * as AiError from "effect/ai/AiError"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { Provider, Usage } from "./Contract.js"

/**
 * The model could not be reached or would not answer: after the retry budget was spent on
 * transient failures (`exhausted`: 429s, 5xx, time-outs, connection errors, unreadable output), or
 * at once when the provider refused the request in a way a retry cannot fix (`rejected`: a bad key,
 * an unknown model, a malformed request). The caller must not leave the customer silent.
 */
export class AiUnavailable extends Schema.TaggedError<AiUnavailable>()("AiUnavailable", {
  provider: Provider,
  model: Schema.String,
  kind: Schema.Literals(["exhausted", "rejected"]),
  /** The last failure, e.g. `HTTP 429: Rate limit reached`, `timed out after 30s`. */
  reason: Schema.String,
  /** The last failure's HTTP status, when it had one. */
  status: Schema.optionalKey(Schema.Number),
  /** Attempts of the model call that failed last (the first included). */
  attempts: Schema.Int,
  /** Tokens the earlier, successful turns of the same reply used (billed all the same). */
  usage: Usage
}) {
  override get message(): string {
    return `${this.provider} model ${this.model} unavailable (${this.kind} after ${this.attempts} attempt(s)): ${this.reason}`
  }
}

/** One failed attempt of one model call, as the retry schedule sees it. */
export interface AttemptFailure {
  readonly transient: boolean
  readonly reason: string
  readonly status?: number
  /** What the provider asked for (`Retry-After`, `retry-after-ms`). */
  readonly retryAfterMs?: number
  /** How long the failed attempt took: it counts against the retry budget. */
  readonly elapsedMs: number
}

/** A model call that did not answer within `AI_TIMEOUT`. */
export class AttemptTimedOut extends Schema.TaggedError<AttemptTimedOut>()("AttemptTimedOut", {
  afterMs: Schema.Number
}) {}

/** 408 Request Timeout, 409 Conflict (OpenAI: "try again"), 425 Too Early, 429, and every 5xx (529 = Anthropic overloaded). */
const isTransientStatus = (status: number): boolean =>
  status === 408 || status === 409 || status === 425 || status === 429 || status >= 500

const MAX_BODY_IN_REASON = 300

const JsonText = Schema.fromJsonString(Schema.Unknown)

/** `Retry-After` is seconds or an HTTP date; OpenAI also sends `retry-after-ms`. */
export const retryAfterMillis = (headers: Readonly<Record<string, string>>, now: number): number | undefined => {
  const ms = headers["retry-after-ms"]
  if (ms !== undefined && /^\d+(\.\d+)?$/.test(ms.trim())) return Math.ceil(Number(ms))
  const value = headers["retry-after"]?.trim()
  if (value === undefined || value === "") return undefined
  if (/^\d+(\.\d+)?$/.test(value)) return Math.ceil(Number(value) * 1000)
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}

/** On one line, at most `MAX_BODY_IN_REASON` characters. */
const flatten = (text: string): string => {
  const flat = text.replace(/\s+/g, " ").trim()
  return flat.length > MAX_BODY_IN_REASON ? `${flat.slice(0, MAX_BODY_IN_REASON)}…` : flat
}

const excerpt = (body: string | undefined): string =>
  body === undefined || body === "" || body === "undefined" ? "" : `: ${flatten(body)}`

/** A 2xx answer that could not be read as the provider's format or as a call of a known tool. */
const unreadable = (description: string, elapsedMs: number): AttemptFailure => ({
  transient: true,
  reason: `unreadable model output: ${flatten(description)}`,
  elapsedMs
})

/** The innermost message of a request error's cause chain (`ECONNREFUSED …`, `fetch failed`). */
const causeMessage = (cause: unknown): string => {
  let current = cause
  let message = "request failed"
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    message = current.message || message
    current = current.cause
  }
  return message
}

/** `Transport error`, `Encode error`, `InvalidUrl error`: the wording of Parley's reasons since Effect 3. */
const networkReasonName = (reason: AiError.NetworkError["reason"]): string => reason.replace(/Error$/, "")

/**
 * The body as the reason shows it: a JSON body re-indented (then flattened by `excerpt`), a text body
 * quoted, another kind left out.
 */
const bodyForReason = (headers: Readonly<Record<string, string>>, body: string | undefined): string | undefined => {
  if (body === undefined) return undefined
  const contentType = headers["content-type"] ?? ""
  if (contentType.includes("application/json")) {
    return Option.match(Schema.decodeUnknownOption(JsonText)(body), {
      onNone: () => body,
      onSome: (json) => JSON.stringify(json, null, 2)
    })
  }
  if (contentType.includes("text/") || contentType.includes("urlencoded")) return JSON.stringify(body)
  return undefined
}

const stringHeaders = (headers: Readonly<Record<string, string | Redacted.Redacted<string>>>): Record<string, string> => {
  const plain: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) {
    if (typeof value === "string") plain[name] = value
  }
  return plain
}

/** An answer with an HTTP status (what `Wire.postJson` keeps of every non-2xx and unreadable 2xx answer). */
const fromHttp = (http: typeof AiError.HttpContext.Type, elapsedMs: number, now: number): AttemptFailure | undefined => {
  if (http.response === undefined) return undefined
  const status = http.response.status
  const headers = stringHeaders(http.response.headers)
  const retryAfterMs = retryAfterMillis(headers, now)
  // A 2xx whose body could not be read is an unreadable answer: sample again.
  const transient = isTransientStatus(status) || (status >= 200 && status < 300)
  return {
    transient,
    reason: `HTTP ${status}${excerpt(bodyForReason(headers, http.body))}`,
    status,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    elapsedMs
  }
}

export const classify = (
  error: AiError.AiError | AttemptTimedOut,
  elapsedMs: number,
  now: number
): AttemptFailure => {
  if (error._tag === "AttemptTimedOut") {
    return { transient: true, reason: `timed out after ${error.afterMs} ms`, elapsedMs }
  }
  const reason = error.reason
  switch (reason._tag) {
    case "NetworkError":
      // Transport = connection refused or reset, DNS, TLS: worth another try. Encode / InvalidUrl are ours.
      return {
        transient: reason.reason === "TransportError",
        reason: `${networkReasonName(reason.reason)} error: ${reason.description ?? causeMessage(reason.cause)} ` +
          `(${reason.method} ${reason.url})`,
        elapsedMs
      }
    case "RateLimitError":
    case "QuotaExhaustedError":
    case "AuthenticationError":
    case "ContentPolicyError":
    case "InvalidRequestError":
    case "InternalProviderError":
    case "InvalidResponseError":
    case "UnknownError": {
      const answered = reason.http === undefined ? undefined : fromHttp(reason.http, elapsedMs, now)
      if (answered !== undefined) return answered
      return { transient: reason.isRetryable, reason: reason.message, elapsedMs }
    }
    // The answer could not be read (not the provider's format, a tool the toolkit does not have, or a
    // tool call whose arguments do not fit the tool): another sample usually can be.
    case "InvalidOutputError":
    case "StructuredOutputError":
      return unreadable(reason.description, elapsedMs)
    case "ToolNotFoundError":
    case "ToolParameterValidationError":
      // Their messages name the tool.
      return unreadable(reason.message, elapsedMs)
    case "InvalidUserInputError":
      return { transient: false, reason: `request rejected before sending: ${reason.description}`, elapsedMs }
    case "UnsupportedSchemaError":
    case "InvalidToolResultError":
    case "ToolResultEncodingError":
    case "ToolConfigurationError":
    case "ToolkitRequiredError":
      // Parley's own mistakes (a tool's result or schema): another attempt would make them again.
      return { transient: false, reason: reason.message, elapsedMs }
  }
}
