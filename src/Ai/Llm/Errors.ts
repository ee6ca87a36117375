/**
 * How provider failures are read: which ones another attempt may fix (transient), which ones it
 * cannot (rejected), and the typed error a caller sees when the agent gives up.
 */
import * as AiError from "@effect/ai/AiError"
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
  kind: Schema.Literal("exhausted", "rejected"),
  /** The last failure, e.g. `HTTP 429: Rate limit reached`, `timed out after 30s`. */
  reason: Schema.String,
  /** The last failure's HTTP status, when it had one. */
  status: Schema.optionalWith(Schema.Number, { exact: true }),
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

const excerpt = (body: string | undefined): string => {
  if (body === undefined || body === "" || body === "undefined") return ""
  const flat = body.replace(/\s+/g, " ").trim()
  return `: ${flat.length > MAX_BODY_IN_REASON ? `${flat.slice(0, MAX_BODY_IN_REASON)}…` : flat}`
}

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

export const classify = (
  error: AiError.AiError | AttemptTimedOut,
  elapsedMs: number,
  now: number
): AttemptFailure => {
  switch (error._tag) {
    case "AttemptTimedOut":
      return { transient: true, reason: `timed out after ${error.afterMs} ms`, elapsedMs }
    case "HttpRequestError":
      // Transport = connection refused or reset, DNS, TLS: worth another try. Encode / InvalidUrl are ours.
      return {
        transient: error.reason === "Transport",
        reason: `${error.reason} error: ${error.description ?? causeMessage(error.cause)} (${error.request.method} ${error.request.url})`,
        elapsedMs
      }
    case "HttpResponseError": {
      const status = error.response.status
      const retryAfterMs = retryAfterMillis(error.response.headers, now)
      // A 2xx whose body could not be read is an unreadable answer: sample again.
      const transient = isTransientStatus(status) || (status >= 200 && status < 300)
      return {
        transient,
        reason: `HTTP ${status}${excerpt(error.body)}`,
        status,
        ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
        elapsedMs
      }
    }
    case "MalformedOutput":
      // The answer could not be read (not the provider's format, or a tool call whose arguments do not
      // fit the tool): another sample usually can be.
      return { transient: true, reason: `unreadable model output: ${error.description ?? "does not match the expected format"}`, elapsedMs }
    case "MalformedInput":
      return { transient: false, reason: `request rejected before sending: ${error.description ?? "malformed input"}`, elapsedMs }
    case "UnknownError":
      return { transient: false, reason: error.message, elapsedMs }
  }
}
