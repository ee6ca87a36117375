/**
 * The access log: one record per HTTP request, written when its response has been handed to Node,
 * with the request's trace and span ids (it runs inside the `http.server` span). @effect/platform's own
 * `HttpMiddleware.logger` is not installed (`HttpApiBuilder.serve` adds no logger unless given one), so
 * this is the only record a request writes besides the errors it causes.
 *
 * - The route is the template the router matched, as it wrote it on the request's span
 *   (`http.route`), in the `{param}` form of the `http_route` metric label. Requests the router never
 *   saw (a 413 or a malformed body answered at the edge) get the template of the API endpoint their
 *   path matches; paths of no endpoint (404s, `/openapi.json`, `/docs`) are logged as `url.path`, with
 *   id-like segments replaced by `{id}`. The query string is never logged (it may hold an
 *   `access_token`).
 * - `workspace.id` is the authenticated caller's workspace, as the auth middleware wrote it on the span.
 * - The request id is the caller's `X-Request-Id` when it is a sane token (1–128 characters of
 *   `A-Za-z0-9._:+/=-`), else a new UUID. It is answered as `X-Request-Id`, set on the span
 *   (`request.id`) and on every log record written while the request runs.
 *
 * `LOG_REQUESTS=false` turns the records off (the request id stays). `/health/*` logs at `debug`.
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as crypto from "node:crypto"
import { Api } from "../Api.js"
import * as AppConfig from "../Config.js"

const REQUEST_ID = /^[A-Za-z0-9._:+/=-]{1,128}$/

/** The caller's request id when it is one, else a new one. */
export const requestIdOf = (header: string | undefined): string =>
  header !== undefined && REQUEST_ID.test(header) ? header : crypto.randomUUID()

/** `/v1/customer/:id` → `/v1/customer/{id}`, as the `http_route` metric label has it. */
const braced = (path: string) => path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, "{$1}")

const ID_SEGMENT = /^(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\d+|(?=[^/]*\d)[A-Za-z0-9_.~%+=-]{16,})$/i

/** A path of no endpoint, with its id-like segments (UUIDs, numbers, long tokens) replaced. */
export const anonymizedPath = (url: string): string =>
  (url.split("?")[0] ?? "")
    .split("/")
    .map((segment) => (ID_SEGMENT.test(segment) ? "{id}" : segment))
    .join("/")
    .slice(0, 200)

/** The API's endpoints as patterns, for requests the router never matched. */
const endpointTemplates = (): ReadonlyArray<{ readonly method: string; readonly pattern: RegExp; readonly template: string }> => {
  const out: Array<{ method: string; pattern: RegExp; template: string }> = []
  HttpApi.reflect(Api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => {
      out.push({
        method: endpoint.method,
        pattern: new RegExp(`^${endpoint.path.replace(/:[A-Za-z_][A-Za-z0-9_]*/g, "[^/]+")}/?$`),
        template: braced(endpoint.path)
      })
    }
  })
  return out
}

/** The access-log middleware (see the module comment). */
export const accessLog = (options: { readonly enabled: boolean }) => {
  const endpoints = endpointTemplates()
  const templateOf = (method: string, url: string): Option.Option<string> => {
    const path = (url.split("?")[0] ?? url).replace(/\/{2,}/g, "/")
    return Option.fromNullable(endpoints.find((e) => e.method === method && e.pattern.test(path))?.template)
  }
  return <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R> =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const started = yield* Clock.currentTimeNanos
      const requestId = requestIdOf(request.headers["x-request-id"])
      const span = yield* Effect.option(Effect.currentSpan)
      if (Option.isSome(span)) span.value.attribute("request.id", requestId)
      yield* HttpApp.appendPreResponseHandler((_, response) =>
        Effect.succeed(HttpServerResponse.setHeader(response, "x-request-id", requestId))
      )
      const exit = yield* Effect.exit(Effect.annotateLogs(app, "request.id", requestId))
      if (!options.enabled) return yield* exit

      const status = HttpServerError.exitResponse(exit).status
      const attribute = (key: string) =>
        Option.flatMap(span, (span) => {
          const value = span.attributes.get(key)
          return typeof value === "string" ? Option.some(value) : Option.none()
        })
      const route = Option.orElse(Option.map(attribute("http.route"), braced), () => templateOf(request.method, request.url))
      const elapsedMs = Number((yield* Clock.currentTimeNanos) - started) / 1e6
      const path = (request.url.split("?")[0] ?? "")
      const log = path.startsWith("/health/") ? Effect.logDebug : Effect.logInfo
      yield* log("HTTP request").pipe(
        Effect.annotateLogs({
          "http.request.method": request.method,
          ...Option.match(route, {
            onSome: (template) => ({ "http.route": template }),
            onNone: () => ({ "url.path": anonymizedPath(request.url) })
          }),
          "http.response.status_code": status,
          duration_ms: Math.round(elapsedMs * 10) / 10,
          ...Option.match(attribute("workspace.id"), { onSome: (id) => ({ "workspace.id": id }), onNone: () => ({}) }),
          "request.id": requestId
        })
      )
      return yield* exit
    })
}

/** `HttpApiBuilder.serve` with the access log, on or off per `LOG_REQUESTS`. */
export const serveWithAccessLog = Layer.unwrapEffect(
  Effect.map(AppConfig.LogRequests, (enabled) => HttpApiBuilder.serve(accessLog({ enabled })))
)
