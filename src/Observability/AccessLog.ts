/**
 * The access log: one record per HTTP request, written when its response has been handed to Node,
 * with the request's trace and span ids (it runs inside the `http.server` span). Effect's own
 * `HttpMiddleware.logger` is not installed (`Http.ts` serves with `disableLogger`), so this is the only
 * record a request writes besides the errors it causes.
 *
 * - The route is the template the router matched, as it wrote it on the request's span
 *   (`http.route`), in the `{param}` form the OpenAPI document (and OpenTelemetry's convention) has,
 *   which the `http_route` metric label has too. The router writes it only when a tracer is installed
 *   (OpenTelemetry), and in its own `:param` form: the span's attribute is rewritten here, so that the
 *   span, this record and the metric name a route alike. Without a tracer, and for requests the router
 *   never saw (a 413 or a malformed body answered at the edge, a client gone mid-body), it is the
 *   template of the route the path matches (`routeOf`, `Routes.ts`), set on the span as well; paths of no
 *   route (404s) are logged as `url.path`, with id-like segments replaced by `{id}`. The query string
 *   is never logged (it may hold an `access_token`).
 * - `workspace.id` is the authenticated caller's workspace, as the auth middleware wrote it on the span.
 * - The request id is the caller's `X-Request-Id` when it is a sane token (1–128 characters of
 *   `A-Za-z0-9._:+/=-`), else a new UUID. It is answered as `X-Request-Id`, set on the span
 *   (`request.id`) and on every log record written while the request runs.
 *
 * `LOG_REQUESTS=false` turns the records off (the request id stays). `/health/*` logs at `debug`.
 * Requests Node's parser refused before the app saw them are recorded with the same record
 * (`writeAccessRecord`, from `Http.ts`).
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as HttpEffect from "effect/http/HttpEffect"
import * as HttpServerError from "effect/http/HttpServerError"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Option from "effect/Option"
import * as crypto from "node:crypto"
import { routeOf } from "../Routes.js"

const REQUEST_ID = /^[A-Za-z0-9._:+/=-]{1,128}$/

/** The caller's request id when it is one, else a new one. */
export const requestIdOf = (header: string | undefined): string =>
  header !== undefined && REQUEST_ID.test(header) ? header : crypto.randomUUID()

const ID_SEGMENT = /^(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\d+|(?=[^/]*\d)[A-Za-z0-9_.~%+=-]{16,})$/i

/** A path of no endpoint, with its id-like segments (UUIDs, numbers, long tokens) replaced. */
export const anonymizedPath = (url: string): string =>
  (url.split("?")[0] ?? "")
    .split("/")
    .map((segment) => (ID_SEGMENT.test(segment) ? "{id}" : segment))
    .join("/")
    .slice(0, 200)

/** One access record's content (see the module comment). */
export interface AccessRecord {
  readonly method: string
  /** The route's template; none for a path of no route, logged as `url.path` instead. */
  readonly route: Option.Option<string>
  /** The request target (path and query) as received; undefined when it could not be read. */
  readonly url: string | undefined
  readonly status: number
  readonly durationMs: number
  readonly workspaceId: Option.Option<string>
  readonly requestId: string
  /** Why the request failed before it reached the app (Node's parser error code). */
  readonly errorType?: string
}

/**
 * Writes the `HTTP request` record: at `info`, the app's answers on `/health/*` at `debug` (probes
 * every few seconds). A request Node's parser refused is no probe, whatever its path.
 */
export const writeAccessRecord = (record: AccessRecord): Effect.Effect<void> => {
  const path = record.url === undefined ? undefined : (record.url.split("?")[0] ?? "")
  const probe = record.errorType === undefined && path?.startsWith("/health/") === true
  const log = probe ? Effect.logDebug : Effect.logInfo
  return log("HTTP request").pipe(
    Effect.annotateLogs({
      "http.request.method": record.method,
      ...Option.match(record.route, {
        onSome: (template) => ({ "http.route": template }),
        onNone: () => record.url === undefined ? {} : { "url.path": anonymizedPath(record.url) }
      }),
      "http.response.status_code": record.status,
      duration_ms: Math.round(record.durationMs * 10) / 10,
      ...Option.match(record.workspaceId, { onSome: (id) => ({ "workspace.id": id }), onNone: () => ({}) }),
      ...(record.errorType === undefined ? {} : { "error.type": record.errorType }),
      "request.id": record.requestId
    })
  )
}

/** The access-log middleware (see the module comment), for `HttpRouter.serve`. */
export const accessLog = (options: { readonly enabled: boolean }) =>
<E, R>(
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest> =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const started = yield* Clock.currentTimeNanos
    const requestId = requestIdOf(request.headers["x-request-id"])
    const span = yield* Effect.option(Effect.currentSpan)
    if (Option.isSome(span)) span.value.attribute("request.id", requestId)
    yield* HttpEffect.appendPreResponseHandler((_, response) =>
      Effect.succeed(HttpServerResponse.setHeader(response, "x-request-id", requestId))
    )
    const exit = yield* Effect.exit(Effect.annotateLogs(app, "request.id", requestId))
    const route = routeOf(request, span)
    // The span ends after this middleware: its route is the template, as in the record and the metric.
    if (Option.isSome(span) && Option.isSome(route)) span.value.attribute("http.route", route.value)
    if (!options.enabled) return yield* exit

    const attribute = (key: string) =>
      Option.flatMap(span, (span) => {
        const value = span.attributes.get(key)
        return typeof value === "string" ? Option.some(value) : Option.none()
      })
    yield* writeAccessRecord({
      method: request.method,
      route,
      url: request.url,
      status: HttpServerError.exitResponse(exit).status,
      durationMs: Number((yield* Clock.currentTimeNanos) - started) / 1e6,
      workspaceId: attribute("workspace.id"),
      requestId,
      // A body Node's parser refused (`Http.ts` sets its code on the span).
      ...Option.match(attribute("error.type"), { onSome: (errorType) => ({ errorType }), onNone: () => ({}) })
    })
    return yield* exit
  })
