/**
 * The HTTP client that posts webhooks: undici's `request` on an agent of its own, redirects not
 * followed, the SSRF guard in production (a DNS lookup hook on the agent), the whole exchange bounded by
 * the request's time-out. The current span goes along as `traceparent` and `b3` headers, as Effect's
 * `HttpClient` sends them (`effect/http/HttpTraceContext`).
 *
 * Not Effect's `HttpClient` (measured with @effect/platform's, its Effect 3 predecessor): through it a
 * POST cost much more CPU than through undici alone (a span with a captured stack trace, header
 * objects, a scope, an `AbortController` aborted at its close, a stream for the body), a large share
 * of a delivery's CPU once its statements were batched (the figures: docs/performance.md).
 */
import * as HttpTraceContext from "effect/http/HttpTraceContext"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Agent, type Dispatcher, request } from "undici"
import * as AppConfig from "../Config.js"
import { guardedLookup } from "./Ssrf.js"

/** A body announced no longer than this is read whole; any other only up to what is kept. */
const SMALL_BODY = 64 * 1024

export interface WebhookRequest {
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  /** JSON. */
  readonly body: string
  /** How many characters of the answer's body to keep: a receiver streaming megabytes is not read to the end. */
  readonly keep: number
  /** The whole exchange, connecting to the last byte kept: past it the request is aborted (`WebhookTimeout`). */
  readonly timeout: Duration.Duration
}

export interface WebhookAnswer {
  readonly status: number
  readonly retryAfter: string | undefined
  /** The first `keep` characters of the body ("" when it could not be read). */
  readonly body: string
}

/** The POST did not get an answer: the connection, the SSRF guard (in `cause`), the receiver hanging up. */
export class WebhookTransportError extends Data.TaggedError("WebhookTransportError")<{
  readonly message: string
  readonly cause: unknown
}> {}

/** The exchange took longer than the request's `timeout`: the connection was closed. */
export class WebhookTimeout extends Data.TaggedError("WebhookTimeout")<{
  readonly message: string
}> {}

export class WebhookClient extends Context.Service<WebhookClient, {
  readonly post: (request: WebhookRequest) => Effect.Effect<WebhookAnswer, WebhookTransportError | WebhookTimeout>
}>()("Parley/WebhookClient") {}

/**
 * The first `keep` characters of the answer. Reading a stream chunk by chunk costs more than reading a
 * body at once, so a body whose `Content-Length` says it is small is read at once; one of unknown or
 * large size is read only until `keep` characters arrived (leaving the loop destroys the stream).
 */
const start = async (response: Dispatcher.ResponseData, keep: number): Promise<string> => {
  const length = Number(response.headers["content-length"])
  if (Number.isInteger(length) && length >= 0 && length <= SMALL_BODY) return (await response.body.text()).slice(0, keep)
  const decoder = new TextDecoder()
  let text = ""
  for await (const chunk of response.body) {
    text += decoder.decode(chunk, { stream: true })
    if (text.length >= keep) break
  }
  return text.slice(0, keep)
}

const lowerCased = (headers: Readonly<Record<string, string>>) =>
  Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]))

/** The abort reason of a time-out, told apart from an interruption's by identity. */
const TIMED_OUT = new Error("Webhook time-out")

const header = (value: string | Array<string> | undefined) => Array.isArray(value) ? value[0] : value

export const WebhookClientLive = Layer.effect(
  WebhookClient,
  Effect.gen(function*() {
    const mode = yield* AppConfig.Mode
    const agent = yield* Effect.acquireRelease(
      Effect.sync(() =>
        new Agent({
          keepAliveTimeout: 10_000,
          ...(mode === "production" ? { connect: { lookup: guardedLookup } } : {})
        })
      ),
      (agent) => Effect.promise(() => agent.close())
    )
    /**
     * The time-out is a timer on the request's own abort signal, not an `Effect.timeout` around it: that
     * forks a fiber and a sleep per POST, a measurable share of a delivery's CPU (docs/performance.md).
     * Interrupting the effect aborts the request too.
     */
    const post = ({ body, headers, keep, timeout, url }: WebhookRequest) =>
      Effect.flatMap(Effect.option(Effect.currentSpan), (span) =>
        Effect.tryPromise({
          try: async (interrupted) => {
            const controller = new AbortController()
            const abort = () => controller.abort(interrupted.reason)
            interrupted.addEventListener("abort", abort, { once: true })
            const timer = setTimeout(() => controller.abort(TIMED_OUT), Duration.toMillis(timeout))
            try {
              const response = await request(url, {
                method: "POST",
                // By lower-cased name, later ones winning: a custom header never doubles one of these.
                headers: {
                  ...lowerCased(headers),
                  ...(Option.isSome(span) ? HttpTraceContext.toHeaders(span.value) : {}),
                  "content-type": "application/json"
                },
                body,
                dispatcher: agent,
                signal: controller.signal
              })
              const text = await start(response, keep).catch(() => "")
              // A body cut short by the time-out is still an answer: its status arrived in time.
              return { status: response.statusCode, retryAfter: header(response.headers["retry-after"]), body: text }
            } finally {
              clearTimeout(timer)
              interrupted.removeEventListener("abort", abort)
            }
          },
          catch: (cause) =>
            // undici rejects with the signal's reason itself.
            cause === TIMED_OUT
              ? new WebhookTimeout({ message: `Timed out after ${Duration.format(timeout)} (POST ${url})` })
              : new WebhookTransportError({ message: `Transport error (POST ${url})`, cause })
        }))
    return { post }
  })
)
