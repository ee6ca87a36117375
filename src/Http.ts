/**
 * The HTTP server: the API's handlers, auth, `/openapi.json`, the docs UI at `/docs`, and the one
 * middleware that gives every failure the wire shapes of docs/api.md:
 * - a request that does not decode (HttpApi's 400 `HttpApiDecodeError`) is decoded again, part by part
 *   (path, query, body), to answer 422 `detail[{loc,msg,type}]` with every problem located; a response
 *   that fails its own schema is Parley's bug and answers 500;
 * - malformed JSON is 422 `json_invalid` (an empty body `missing`), a JSON body nested deeper than
 *   `MAX_JSON_DEPTH` too (JSON.parse would overflow the stack), a body over the limit 413;
 * - 401 gets `WWW-Authenticate: Bearer`, 429 `Retry-After`, an unknown route 404 `{"detail":"Not Found"}`;
 * - the database out of reach answers 503 `{"detail"}` with `Retry-After` (see `isDatabaseUnavailable`);
 * - a defect is logged and answers 500 `{"detail":"Internal error","traceId"}`, never a stack trace.
 * Typed domain errors (404, 409, 422) are encoded by their own schemas after this.
 * `HttpLive` has no server of its own: `main` gives it Node's, tests a test server.
 */
import * as Headers from "@effect/platform/Headers"
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApiError from "@effect/platform/HttpApiError"
import * as HttpIncomingMessage from "@effect/platform/HttpIncomingMessage"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as AST from "effect/SchemaAST"
import type * as Tracer from "effect/Tracer"
import * as crypto from "node:crypto"
import { AdminHttpLive } from "./Admin/Http.js"
import { RepliesHttpLive } from "./Ai/Http.js"
import { Api } from "./Api.js"
import { AdminAuthLive, HelpdeskAuthLive, WorkspaceAuthLive } from "./Auth/Http.js"
import * as AppConfig from "./Config.js"
import { WebhooksHttpLive } from "./Conversations/Http.js"
import { CustomersHttpLive } from "./Customers/Http.js"
import { DeliveriesHttpLive } from "./Delivery/Http.js"
import { RateLimited, Unauthorized } from "./Domain/Errors.js"
import { formatIssue, type Location, type ValidationItem } from "./Domain/Validation.js"
import { HealthHttpLive } from "./Health/Http.js"
import { HelpdeskHttpLive } from "./Helpdesk/Http.js"
import { IntegrationsHttpLive } from "./Integrations/Http.js"
import { createServer } from "./NodeServer.js"
import { serveWithAccessLog } from "./Observability/AccessLog.js"
import { httpDurationOf, httpRequestsOf } from "./Observability/Metrics.js"
import { isDatabaseUnavailable, isForeignKeyViolation } from "./Sql.js"

/** Deepest JSON nesting a body may have (objects and arrays). */
const MAX_JSON_DEPTH = 64

/** The deepest nesting of objects and arrays in JSON text, counted without parsing it. */
const jsonDepth = (text: string): number => {
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

interface Route {
  readonly method: string
  readonly template: string
  readonly pattern: RegExp
  readonly path: Option.Option<AST.AST>
  readonly query: Option.Option<AST.AST>
  readonly body: Option.Option<AST.AST>
}

/** Every endpoint of the API with a pattern that matches its paths (path parameters as named groups). */
const routes = (): ReadonlyArray<Route> => {
  const out: Array<Route> = []
  HttpApi.reflect(Api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => {
      out.push({
        method: endpoint.method,
        template: endpoint.path.replace(/:([A-Za-z_]+)/g, "{$1}"),
        pattern: new RegExp(`^${endpoint.path.replace(/:([A-Za-z_]+)/g, "(?<$1>[^/]+)")}/?$`),
        path: Option.map(endpoint.pathSchema, (schema) => schema.ast),
        query: Option.map(endpoint.urlParamsSchema, (schema) => schema.ast),
        body: Option.map(endpoint.payloadSchema, (schema) => schema.ast)
      })
    }
  })
  return out
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  HttpServerResponse.unsafeJson(body, { status, headers })

const unprocessable = (detail: ReadonlyArray<ValidationItem>) => json(422, { detail })

const jsonInvalid = (msg: string) => unprocessable([{ loc: ["body"], msg, type: "json_invalid" }])

const tooLarge = json(413, { detail: "Request body too large" })

/** Seconds a client is told to wait while the database is unavailable. */
const DATABASE_RETRY_AFTER = 5

const databaseUnavailable = json(503, { detail: "Service temporarily unavailable: the database cannot be reached" }, {
  "retry-after": String(DATABASE_RETRY_AFTER)
})

const errorStatus: Record<string, number> = {
  NotFound: 404,
  PayloadTooLarge: 413,
  ValidationError: 422,
  NotReady: 503
}

const statusOf = (error: unknown): number =>
  typeof error === "object" && error !== null && "_tag" in error && typeof error._tag === "string"
    ? errorStatus[error._tag] ?? 500
    : 500

const traceId = Effect.currentSpan.pipe(
  Effect.map((span) => span.traceId),
  Effect.orElseSucceed(() => crypto.randomBytes(16).toString("hex"))
)

const isTooLarge = (error: unknown): boolean =>
  error instanceof HttpServerError.RequestError && error.cause instanceof Error &&
  error.cause.message === "maxBytes exceeded"

const decodeJsonText = Schema.decodeUnknownEither(Schema.parseJson())

/**
 * JSON bodies whatever the Content-Type says (integrators' HTTP clients often send text/plain, or
 * `application/vnd.api+json`). It also keeps the body read once: the text this middleware reads is
 * the text HttpApi parses (another reader, such as for form data, would wait for a consumed stream).
 */
const asJson = (request: HttpServerRequest.HttpServerRequest): HttpServerRequest.HttpServerRequest => {
  const type = request.headers["content-type"]
  return type === undefined || type.toLowerCase().includes("application/json")
    ? request
    : request.modify({ headers: Headers.set(request.headers, "content-type", "application/json") })
}

const hasBody = (request: HttpServerRequest.HttpServerRequest) =>
  request.method === "POST" || request.method === "PUT" || request.method === "PATCH"

const EdgeLive = HttpApiBuilder.middleware(
  Effect.gen(function*() {
    const limit = yield* AppConfig.BodyLimit
    const table = routes()
    const names = (ast: Option.Option<AST.AST>) =>
      Option.match(ast, { onNone: () => [], onSome: (ast) => AST.getPropertySignatures(ast).map((p) => String(p.name)) })
    const pathParams = new Set(table.flatMap((route) => names(route.path)))
    const queryParams = new Set(table.flatMap((route) => names(route.query)))
    const routeOf = (method: string, url: string) => {
      // As the router reads it: repeated slashes are one.
      const path = (url.split("?")[0] ?? url).replace(/\/{2,}/g, "/")
      for (const route of table) {
        const match = route.method === method ? route.pattern.exec(path) : null
        if (match !== null) return Option.some({ route, params: match.groups ?? {} })
      }
      return Option.none()
    }

    /** The route the router matched, as it wrote it on the request's span; else the table's (a 413, a 422 of the edge). */
    const routeTemplate = (request: HttpServerRequest.HttpServerRequest, span: Option.Option<Tracer.Span>) => {
      const matched = Option.isSome(span) ? span.value.attributes.get("http.route") : undefined
      return typeof matched === "string"
        ? matched.replace(/:([A-Za-z_]+)/g, "{$1}")
        : Option.match(routeOf(request.method, request.url), { onNone: () => "unmatched", onSome: ({ route }) => route.template })
    }

    const record = (request: HttpServerRequest.HttpServerRequest, started: number) =>
    (response: { readonly status: number }) =>
      Effect.gen(function*() {
        const route = routeTemplate(request, yield* Effect.option(Effect.currentSpan))
        const elapsed = ((yield* Clock.currentTimeMillis) - started) / 1000
        const status = String(response.status)
        yield* Metric.increment(httpRequestsOf(route, request.method, status))
        yield* Metric.update(httpDurationOf(route, request.method, status), elapsed)
      })

    /**
     * Why a request did not decode: path, query and body decoded again, every problem located. Empty
     * when the request is fine, i.e. the failure was a response that did not match its own schema.
     */
    const problems = (request: HttpServerRequest.HttpServerRequest, body: Option.Option<unknown>) =>
      Option.match(routeOf(request.method, request.url), {
        onNone: () => [],
        onSome: ({ params, route }): Array<ValidationItem> => {
          const check = (location: Location, ast: Option.Option<AST.AST>, input: unknown) =>
            Option.match(ast, {
              onNone: () => [],
              onSome: (ast) =>
                Either.match(ParseResult.decodeUnknownEither(Schema.make(ast), { errors: "all" })(input), {
                  onLeft: (issue) => formatIssue(location, issue),
                  onRight: () => []
                })
            })
          const query = HttpServerRequest.searchParamsFromURL(new URL(request.url, "http://localhost"))
          return [
            ...check("path", route.path, params),
            ...check("query", route.query, query),
            ...Option.match(body, { onNone: () => [], onSome: (body) => check("body", route.body, body) })
          ]
        }
      })

    return (app) =>
      Effect.gen(function*() {
        const original = yield* HttpServerRequest.HttpServerRequest
        const request = asJson(original)
        const started = yield* Clock.currentTimeMillis
        // The body's text; parsed again here only to locate a 422's problems (HttpApi parses it for the handler).
        let bodyText = Option.none<string>()

        const handle = Effect.gen(function*() {
          if (Number(request.headers["content-length"] ?? "0") > limit) return tooLarge
          if (hasBody(request)) {
            const read = yield* Effect.either(request.text)
            if (Either.isLeft(read)) return isTooLarge(read.left) ? tooLarge : yield* Effect.die(read.left)
            const text = read.right
            if (text.trim() !== "") {
              if (jsonDepth(text) > MAX_JSON_DEPTH) {
                return jsonInvalid(`JSON nested deeper than ${MAX_JSON_DEPTH} levels`)
              }
              bodyText = Option.some(text)
            }
          }
          return yield* app
        }).pipe(Effect.provideService(HttpServerRequest.HttpServerRequest, request))

        const failed = (error: unknown) =>
          Effect.gen(function*() {
            if (error instanceof HttpApiError.HttpApiDecodeError) {
              const found = problems(request, Option.flatMap(bodyText, (text) => Either.getRight(decodeJsonText(text))))
              if (found.length > 0) return Option.some(unprocessable(found))
              // The router matched a route this table did not (an odd path): its own issues, located by name.
              return Option.some(unprocessable(error.issues.map((issue): ValidationItem => {
                const name = issue.path[0]
                const location: Location = typeof name === "string" && pathParams.has(name)
                  ? "path"
                  : typeof name === "string" && queryParams.has(name)
                  ? "query"
                  : "body"
                const loc = [location, ...issue.path.map((k) => typeof k === "number" ? k : String(k))]
                return issue._tag === "Missing"
                  ? { loc, msg: "Field required", type: "missing" }
                  : { loc, msg: issue.message, type: "value_error" }
              })))
            }
            if (error instanceof Unauthorized) {
              return Option.some(json(401, { detail: error.detail }, { "www-authenticate": "Bearer" }))
            }
            if (error instanceof RateLimited) {
              return Option.some(json(429, { detail: error.detail }, { "retry-after": String(error.retryAfterSeconds) }))
            }
            if (isTooLarge(error)) return Option.some(tooLarge)
            if (HttpServerError.isServerError(error)) {
              if (error._tag === "RouteNotFound") return Option.some(json(404, { detail: "Not Found" }))
              if (error._tag === "RequestError" && error.reason === "Decode") {
                const text = yield* Effect.orElseSucceed(request.text, () => "")
                return Option.some(
                  text.trim() === ""
                    ? unprocessable([{ loc: ["body"], msg: "Field required", type: "missing" }])
                    : jsonInvalid(`JSON decode error: ${
                      Either.match(decodeJsonText(text), { onLeft: (e) => e.message, onRight: () => "invalid JSON" })
                    }`)
                )
              }
            }
            return Option.none()
          })

        const internal = (cause: Cause.Cause<unknown>) =>
          Effect.gen(function*() {
            const id = yield* traceId
            if (isForeignKeyViolation(cause)) {
              // Parley deletes rows only with their workspace: what this request wrote into is gone, and
              // so is its caller's workspace (authenticated a moment before, from a cache).
              yield* Effect.logInfo("Request raced its workspace's deletion").pipe(Effect.annotateLogs("traceId", id))
              return request.url.startsWith("/admin/")
                ? json(404, { detail: "Workspace not found" })
                : json(401, { detail: "Invalid or revoked token" }, { "www-authenticate": "Bearer" })
            }
            if (isDatabaseUnavailable(cause)) {
              const reason = Cause.squash(cause)
              yield* Effect.logWarning("Database unavailable; answered 503").pipe(
                Effect.annotateLogs({ traceId: id, error: reason instanceof Error ? reason.message : String(reason) })
              )
              return databaseUnavailable
            }
            yield* Effect.logError("Unexpected failure answered 500", cause).pipe(Effect.annotateLogs("traceId", id))
            return json(500, { detail: "Internal error", traceId: id })
          })

        return yield* handle.pipe(
          HttpIncomingMessage.withMaxBodySize(Option.some(limit)),
          Effect.catchAllCause((cause) => {
            if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause)
            const error = Option.getOrElse(Cause.failureOption(cause), () => Cause.squash(cause))
            return Effect.flatMap(failed(error), Option.match({
              // Typed errors are their schemas' to encode; anything else is a defect.
              onNone: () => Cause.isFailType(cause) && statusOf(error) !== 500 ? Effect.failCause(cause) : internal(cause),
              onSome: Effect.succeed
            }))
          }),
          // Typed errors left for their schemas to encode still count, under the status they will get.
          Effect.onExit((exit) =>
            record(request, started)(Exit.isSuccess(exit) ? exit.value : { status: statusOf(Cause.squash(exit.cause)) })
          )
        )
      })
  })
)

const AuthLive = Layer.mergeAll(WorkspaceAuthLive, HelpdeskAuthLive, AdminAuthLive)

/** The API's handlers and auth; they need the services (see `App.ts`). */
const ApiLive = HttpApiBuilder.api(Api).pipe(
  Layer.provide([
    CustomersHttpLive,
    IntegrationsHttpLive,
    WebhooksHttpLive,
    HelpdeskHttpLive,
    AdminHttpLive,
    HealthHttpLive,
    DeliveriesHttpLive,
    RepliesHttpLive
  ]),
  Layer.provide(AuthLive)
)

/**
 * The docs UI at `/docs`, made on its first request: `HttpApiScalar` inlines Scalar's bundle (3.4 MB of
 * JavaScript) into the page it makes when its layer is built, which held 15–30 MiB of an idle instance's
 * memory whether or not anyone opened `/docs` (measured: idle RSS 230–232 MiB with it built at start,
 * 198–225 without). The page is `HttpApiScalar.layer`'s own, served by a router of its own.
 */
const DocsLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const api = yield* HttpApi.Api
    const docs = yield* Effect.cached(
      Effect.promise(() => import("@effect/platform/HttpApiScalar")).pipe(
        Effect.flatMap((Scalar) =>
          HttpApiBuilder.Router.router.pipe(
            Effect.provide(Scalar.layer({ path: "/docs" }).pipe(Layer.provideMerge(HttpApiBuilder.Router.Live))),
            Effect.provideService(HttpApi.Api, api)
          )
        )
      )
    )
    yield* router.get("/docs", Effect.flatten(docs))
  })
)

/** Serves the API on whatever `HttpServer` is provided. */
export const HttpLive = serveWithAccessLog.pipe(
  Layer.provide(HttpApiBuilder.middlewareOpenApi({ path: "/openapi.json" })),
  Layer.provide(DocsLive),
  Layer.provide(EdgeLive),
  Layer.provide(ApiLive)
)

/**
 * Node's HTTP server on `HOST`:`PORT`. It opens the port as soon as it is built, so it is provided
 * innermost: built last, after the database, migrations and handlers are ready.
 */
export const NodeServerLive = Layer.unwrapEffect(
  Effect.gen(function*() {
    const port = yield* AppConfig.Port
    const host = yield* AppConfig.Host
    return NodeHttpServer.layer(createServer, { port, host })
  })
)
