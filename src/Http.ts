/**
 * The HTTP server: the API's handlers, auth, `/openapi.json`, the docs UI at `/docs`, and the
 * middleware that gives every failure the wire shapes of docs/api.md:
 * - a request that does not decode (HttpApi's `HttpApiSchemaError`, which says which part failed and
 *   why) answers 422 `detail[{loc,msg,type}]` with every problem located: the part HttpApi stopped at,
 *   and the parts it did not reach, decoded with the endpoint's own schemas (`RequestFailuresLive`); a
 *   response that fails its own schema is Parley's bug and answers 500;
 * - malformed JSON is 422 `json_invalid` (an empty body `missing`), a JSON body nested deeper than
 *   `MAX_JSON_DEPTH` too (JSON.parse would overflow the stack), a body over the limit 413;
 * - 401 gets `WWW-Authenticate: Bearer`, 429 `Retry-After`, an unknown route 404 `{"detail":"Not Found"}`;
 * - a client that goes away in the middle of its body gets nothing (it cannot read it): the request
 *   is recorded as 499, "client closed request" (as nginx logs it), not as a failure of Parley's;
 * - the database out of reach answers 503 `{"detail"}` with `Retry-After` (see `isDatabaseUnavailable`);
 * - a defect is logged and answers 500 `{"detail":"Internal error","traceId"}`, never a stack trace.
 * Typed domain errors (404, 409, 422) are encoded by their own schemas, by HttpApi.
 * `HttpLive` has no server of its own: `main` gives it Node's, tests a test server. What Node's parser
 * answers before a request reaches the app (`NodeServer.ts`) gets its record, metric and span here too
 * (`RejectionsLive`).
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as ByteSize from "effect/ByteSize"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberSet from "effect/FiberSet"
import * as Headers from "effect/http/Headers"
import * as HttpIncomingMessage from "effect/http/HttpIncomingMessage"
import * as HttpMiddleware from "effect/http/HttpMiddleware"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServer from "effect/http/HttpServer"
import * as HttpServerError from "effect/http/HttpServerError"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import type * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import { HttpApiPayloadTooLarge, HttpApiSchemaError } from "effect/http-api/HttpApiError"
import * as HttpApiScalar from "effect/http-api/HttpApiScalar"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import type * as Types from "effect/Types"
import * as crypto from "node:crypto"
import { AdminHttpLive } from "./Admin/Http.js"
import { RepliesHttpLive } from "./Ai/Http.js"
import { Api, RequestFailures } from "./Api.js"
import { AdminAuthLive, HelpdeskAuthLive, WorkspaceAuthLive } from "./Auth/Http.js"
import * as AppConfig from "./Config.js"
import { WebhooksHttpLive } from "./Conversations/Http.js"
import { CustomersHttpLive } from "./Customers/Http.js"
import { DashboardLive } from "./Dashboard/Http.js"
import { messagePage } from "./Dashboard/Page.js"
import { DeliveriesHttpLive } from "./Delivery/Http.js"
import { RateLimited, Unauthorized, ValidationError } from "./Domain/Errors.js"
import { decodeJsonText, jsonDepth, MAX_JSON_DEPTH } from "./Domain/Primitives.js"
import { formatIssue, type Location, type ValidationItem } from "./Domain/Validation.js"
import { HealthHttpLive } from "./Health/Http.js"
import { HelpdeskHttpLive } from "./Helpdesk/Http.js"
import { IntegrationsHttpLive } from "./Integrations/Http.js"
import { clientClosed, createServer, observeRejections, refusedBody, type Rejection } from "./NodeServer.js"
import { accessLog, writeAccessRecord } from "./Observability/AccessLog.js"
import { httpDurationOf, httpRequestsOf } from "./Observability/Metrics.js"
import { routeOf } from "./Routes.js"
import { isDatabaseUnavailable, isForeignKeyViolation } from "./Sql.js"

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  HttpServerResponse.jsonUnsafe(body, { status, headers })

const unprocessable = (detail: ReadonlyArray<ValidationItem>) => json(422, { detail })

const jsonInvalidItem = (msg: string): ValidationItem => ({ loc: ["body"], msg, type: "json_invalid" })

const jsonInvalid = (msg: string) => unprocessable([jsonInvalidItem(msg)])

const tooLarge = json(413, { detail: "Request body too large" })

/** A dashboard form over the limit: a page for the browser, not the API's JSON. */
const formTooLarge = messagePage(
  413,
  "Too large",
  "This form is larger than this Parley accepts (PARLEY_BODY_LIMIT): nothing was saved. Go back and shorten it.",
  Option.none()
)

const tooLargeFor = (request: HttpServerRequest.HttpServerRequest) => isDashboard(request) ? formTooLarge : tooLarge

/**
 * The client closed the connection before it sent the whole request: nginx's 499 "client closed
 * request". Nothing is written (the connection is gone); the status is for the access record, the
 * metric and the span, so that it is told apart from what Parley answered.
 */
const clientClosedRequest = HttpServerResponse.empty({ status: 499 })

/** The `http.route` label of a request no route matched (a 404, or one Node's parser refused). */
const UNMATCHED = "unmatched"

/** Seconds a client is told to wait while the database is unavailable. */
const DATABASE_RETRY_AFTER = 5

const databaseUnavailable = json(503, { detail: "Service temporarily unavailable: the database cannot be reached" }, {
  "retry-after": String(DATABASE_RETRY_AFTER)
})

const traceId = Effect.currentSpan.pipe(
  Effect.map((span) => span.traceId),
  Effect.orElseSucceed(() => crypto.randomBytes(16).toString("hex"))
)

/** A body over `PARLEY_BODY_LIMIT`, as the request's reader (or HttpApi's) reports it. */
const isTooLarge = (error: unknown): boolean =>
  HttpApiPayloadTooLarge.is(error) ||
  (HttpServerError.isHttpServerError(error) && error.reason._tag === "RequestParseError" &&
    error.reason.reason === "BodyTooLarge")

const isRouteNotFound = (error: unknown): boolean =>
  HttpServerError.isHttpServerError(error) && error.reason._tag === "RouteNotFound"

/**
 * JSON bodies whatever the Content-Type says (integrators' HTTP clients often send text/plain, or
 * `application/vnd.api+json`): HttpApi answers 415 to a Content-Type its endpoint does not declare, so
 * any other is replaced by `application/json`. It also keeps the body read once: the text this
 * middleware reads is the text HttpApi parses (the request caches it; another reader, such as for form
 * data, would wait for a consumed stream).
 */
const asJson = (request: HttpServerRequest.HttpServerRequest): HttpServerRequest.HttpServerRequest => {
  const type = request.headers["content-type"]
  return type === undefined || isDashboard(request) || (type.split(";")[0] ?? "").trim().toLowerCase() === "application/json"
    ? request
    : request.modify({ headers: Headers.set(request.headers, "content-type", "application/json") })
}

/** The dashboard's pages (`Dashboard/Http.ts`) take forms, not JSON. */
const isDashboard = (request: HttpServerRequest.HttpServerRequest) =>
  request.url === "/dashboard" || request.url.startsWith("/dashboard/") || request.url.startsWith("/dashboard?")

const hasBody = (request: HttpServerRequest.HttpServerRequest) =>
  request.method === "POST" || request.method === "PUT" || request.method === "PATCH"

// -----------------------------------------------------------------------------
// What every endpoint may answer (`RequestFailures`)
// -----------------------------------------------------------------------------

/** The parts of a request HttpApi decodes, in the order a 422 lists their problems. */
type Part = "Params" | "Query" | "Headers" | "Payload"
const PARTS: ReadonlyArray<Part> = ["Params", "Query", "Headers", "Payload"]
/** The order in which HttpApi decodes them: it stops at the first that fails. */
const DECODED: ReadonlyArray<Part> = ["Params", "Headers", "Query", "Payload"]

const locations: Record<Part, Location> = { Params: "path", Query: "query", Headers: "header", Payload: "body" }

const isPart = (kind: HttpApiSchemaError["kind"]): kind is Part =>
  kind === "Params" || kind === "Query" || kind === "Headers" || kind === "Payload"

/**
 * Parley's request schemas need no services to decode; the endpoint keeps them as `Schema.Top`, which
 * does not say so. (Every problem is reported: `errors: "all"`, as the API's `HttpApi.ParseOptions`.)
 */
const problemsOf = (location: Location, schema: Schema.Top, input: unknown) =>
  Schema.decodeUnknownEffect(Schema.make<Schema.Decoder<unknown>>(schema.ast), { errors: "all" })(input).pipe(
    Effect.match({ onFailure: (error) => formatIssue(location, error.issue), onSuccess: (): Array<ValidationItem> => [] })
  )

/**
 * The problems of the body: none sent (`missing`), not JSON (`json_invalid`), or those of the JSON it
 * holds (`ofJson`).
 */
const bodyProblems = (ofJson: (body: unknown) => Effect.Effect<Array<ValidationItem>>) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const text = yield* Effect.orElseSucceed(request.text, () => "")
    if (text.trim() === "") return [{ loc: ["body"], msg: "Field required", type: "missing" }]
    const parsed = decodeJsonText(text)
    if (Result.isFailure(parsed)) return [jsonInvalidItem(`JSON decode error: ${parsed.failure.message}`)]
    return yield* ofJson(parsed.success)
  })

/** The problems of one part of the request that HttpApi did not reach, decoded with the endpoint's schema. */
const partProblems = (part: Part, endpoint: HttpApiEndpoint.Top) =>
  Effect.gen(function*() {
    switch (part) {
      case "Params": {
        if (endpoint.params === undefined) return []
        const route = yield* HttpRouter.RouteContext
        return yield* problemsOf("path", endpoint.params, route.params)
      }
      case "Query": {
        if (endpoint.query === undefined) return []
        const query = yield* HttpServerRequest.ParsedSearchParams
        return yield* problemsOf("query", Schema.toCodecArrayFromSingle(endpoint.query), query)
      }
      case "Headers": {
        if (endpoint.headers === undefined) return []
        const request = yield* HttpServerRequest.HttpServerRequest
        return yield* problemsOf("header", endpoint.headers, request.headers)
      }
      case "Payload": {
        const schemas: Array<Schema.Top> = []
        for (const entry of endpoint.payload.values()) {
          if (entry.encoding._tag !== "Stream") schemas.push(...entry.schemas)
        }
        const [first, ...rest] = schemas
        if (first === undefined) return []
        const schema = rest.length === 0 ? first : Schema.Union(schemas)
        return yield* bodyProblems((body) => problemsOf("body", schema, body))
      }
    }
  })

/**
 * The 422 of a request HttpApi could not decode: the problems of the part it stopped at (its issue),
 * then those of the parts it did not reach, so that every problem of the request is listed.
 */
const invalidRequest = (part: Part, error: HttpApiSchemaError, endpoint: HttpApiEndpoint.Top) =>
  Effect.gen(function*() {
    const reached = DECODED.indexOf(part)
    const detail: Array<ValidationItem> = []
    for (const each of PARTS) {
      if (each === part) {
        detail.push(
          ...(part === "Payload"
            ? yield* bodyProblems(() => Effect.succeed(formatIssue("body", error.cause.issue)))
            : formatIssue(locations[part], error.cause.issue))
        )
      } else if (DECODED.indexOf(each) > reached) {
        detail.push(...yield* partProblems(each, endpoint))
      }
    }
    return yield* new ValidationError({ detail })
  })

/**
 * Every endpoint's `RequestFailures`: HttpApi's decoding failures become the 422 of `ValidationError`
 * (encoded by its schema, as the endpoint's own errors are), and auth failures are answered here, with
 * the header each needs.
 */
const RequestFailuresLive = Layer.succeed(RequestFailures)((httpEffect, { endpoint }) =>
  Effect.catch(httpEffect, (error): Effect.Effect<
    HttpServerResponse.HttpServerResponse,
    Types.unhandled | ValidationError,
    HttpRouter.Provided
  > => {
    if (HttpApiSchemaError.is(error) && isPart(error.kind)) return invalidRequest(error.kind, error, endpoint)
    if (error instanceof Unauthorized) {
      return Effect.succeed(json(401, { detail: error.detail }, { "www-authenticate": "Bearer" }))
    }
    if (error instanceof RateLimited) {
      return Effect.succeed(json(429, { detail: error.detail }, { "retry-after": String(error.retryAfterSeconds) }))
    }
    // The endpoint's own errors, for HttpApi to encode with their schemas; and a response that does not
    // match its own schema (`HttpApiSchemaError` of the body), which HttpApi makes a defect: 500.
    return Effect.fail(error)
  })
)

// -----------------------------------------------------------------------------
// The edge: every request, routed or not
// -----------------------------------------------------------------------------

/**
 * Around the router: the body's limit and depth, 404 for an unknown route, 503 for the database out
 * of reach, 500 for a defect, and the HTTP metrics of every request.
 */
const EdgeLive = HttpRouter.middleware(
  Effect.gen(function*() {
    const limit = yield* AppConfig.BodyLimit
    const maxBodySize = ByteSize.bytes(limit)

    const record = (request: HttpServerRequest.HttpServerRequest, started: number, status: number) =>
      Effect.gen(function*() {
        const route = Option.getOrElse(routeOf(request, yield* Effect.option(Effect.currentSpan)), () => UNMATCHED)
        const elapsed = ((yield* Clock.currentTimeMillis) - started) / 1000
        const code = String(status)
        yield* Metric.update(httpRequestsOf(route, request.method, code), 1)
        yield* Metric.update(httpDurationOf(route, request.method, code), elapsed)
      })

    const internal = (request: HttpServerRequest.HttpServerRequest, cause: Cause.Cause<unknown>) =>
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

    return (app) =>
      Effect.gen(function*() {
        const request = asJson(yield* HttpServerRequest.HttpServerRequest)
        const started = yield* Clock.currentTimeMillis

        const handle = Effect.gen(function*() {
          if (Number(request.headers["content-length"] ?? "0") > limit) return tooLargeFor(request)
          if (hasBody(request)) {
            const read = yield* Effect.result(request.text)
            if (Result.isFailure(read)) {
              if (isTooLarge(read.failure)) return tooLargeFor(request)
              // Node's parser refused the body (malformed chunks, the request timeout) and answered it
              // itself (`NodeServer.ts`): this is what it answered, for the records.
              const refused = refusedBody(request.source)
              if (refused !== undefined) {
                yield* Effect.annotateCurrentSpan("error.type", refused.code)
                return json(refused.status, { detail: refused.detail })
              }
              // The body stopped short because the client left: its connection is gone (its reset
              // error would otherwise read as a database connection failure, a 503).
              if (clientClosed(request.source)) return clientClosedRequest
              return yield* Effect.die(read.failure)
            }
            // A dashboard form is urlencoded: its JSON fields are checked where they are read.
            if (!isDashboard(request) && jsonDepth(read.success) > MAX_JSON_DEPTH) {
              return jsonInvalid(`JSON nested deeper than ${MAX_JSON_DEPTH} levels`)
            }
          }
          return yield* app
        })

        return yield* handle.pipe(
          Effect.provideService(HttpServerRequest.HttpServerRequest, request),
          Effect.provideService(HttpIncomingMessage.MaxBodySize, maxBodySize),
          Effect.catchCause((cause) => {
            if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause)
            const error = Option.getOrElse(Cause.findErrorOption(cause), () => Cause.squash(cause))
            if (isTooLarge(error)) return Effect.succeed(tooLargeFor(request))
            if (isRouteNotFound(error)) return Effect.succeed(json(404, { detail: "Not Found" }))
            // Typed errors are encoded by HttpApi before they get here: anything else is a defect.
            return internal(request, cause)
          }),
          // The status the server answers for this exit, as the access record and the span see it: a
          // client that left while the handler ran (an interruption) is 499, not a 500.
          Effect.onExit((exit) =>
            Exit.isSuccess(exit)
              ? record(request, started, exit.value.status)
              : Effect.flatMap(HttpServerError.causeResponse(exit.cause), ([response]) =>
                record(request, started, response.status))
          )
        )
      })
  }),
  { global: true }
)

const AuthLive = Layer.mergeAll(WorkspaceAuthLive, HelpdeskAuthLive, AdminAuthLive)

/** The API's handlers and auth, and `/openapi.json`; they need the services (see `App.ts`). */
const ApiLive = HttpApiBuilder.layer(Api, { openapiPath: "/openapi.json" }).pipe(
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
  Layer.provide([AuthLive, RequestFailuresLive])
)

/**
 * The docs UI at `/docs`, made on its first request: `HttpApiScalar` inlines Scalar's bundle (megabytes
 * of JavaScript) into the page it makes, which held memory in every idle instance whether or not
 * anyone opened `/docs` (docs/performance.md). Its layer loads the bundle when it is built, so it is built on the first request, on a
 * router of its own that serves the page `HttpApiScalar.layer` makes.
 */
const DocsLive = HttpRouter.use((router) =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const docs = yield* Effect.cached(
      HttpRouter.toHttpEffect(HttpApiScalar.layer(Api, { path: "/docs" })).pipe(Scope.provide(scope))
    )
    yield* router.add("GET", "/docs", Effect.flatten(docs))
  })
)

/** Each request's span is `http.server <METHOD>` (docs/observability.md), not Effect 4's default `<METHOD>`. */
const SpanNameLive = Layer.succeed(HttpMiddleware.SpanNameGenerator)((request) => `http.server ${request.method}`)

/** The methods a metric label or span name may carry; any other is OpenTelemetry's `_OTHER`. */
const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"])

/**
 * A request Node's parser refused (a malformed request line, headers over the limit) and
 * `NodeServer.ts` answered: the same metric sample, access record and server span as a request the app
 * answers, with the route `unmatched` (no route saw it) and the error code in `error.type`. It took
 * no time of the app's: its duration is 0.
 */
const recordRejection = (rejection: Rejection, logRequests: boolean) => {
  const method = rejection.method !== undefined && METHODS.has(rejection.method) ? rejection.method : "_OTHER"
  const status = String(rejection.status)
  const path = rejection.target === undefined ? undefined : (rejection.target.split("?")[0] ?? "").slice(0, 200)
  return Effect.gen(function*() {
    yield* Metric.update(httpRequestsOf(UNMATCHED, method, status), 1)
    yield* Metric.update(httpDurationOf(UNMATCHED, method, status), 0)
    if (logRequests) {
      yield* writeAccessRecord({
        method,
        route: Option.none(),
        url: rejection.target,
        status: rejection.status,
        durationMs: 0,
        workspaceId: Option.none(),
        requestId: rejection.requestId,
        errorType: rejection.code
      })
    }
  }).pipe(
    // OpenTelemetry names a span of an unknown method `HTTP`.
    Effect.withSpan(`http.server ${method === "_OTHER" ? "HTTP" : method}`, {
      kind: "server",
      attributes: {
        "http.request.method": method,
        "http.response.status_code": rejection.status,
        "error.type": rejection.code,
        "request.id": rejection.requestId,
        ...(path === undefined ? {} : { "url.path": path })
      }
    })
  )
}

/**
 * Records what Node's parser answered on the server this app is served on (`recordRejection`), when
 * that server is Parley's Node server (`createServer`); a test server of another kind has none.
 */
const RejectionsLive = Layer.effectDiscard(
  Effect.gen(function*() {
    const server = yield* HttpServer.HttpServer
    if (server.address._tag === "UnixPathAddress") return
    const logRequests = yield* AppConfig.LogRequests
    // Runs each record in this layer's context (logger, tracer, metrics), as the request handler does.
    const run = yield* FiberSet.makeRuntime<never>()
    const stop = observeRejections(server.address.port, (rejection) => {
      run(recordRejection(rejection, logRequests))
    })
    yield* Effect.addFinalizer(() => Effect.sync(stop))
  })
)

/**
 * Serves the API on whatever `HttpServer` is provided, with the access log (`LOG_REQUESTS`) and none
 * of Effect's own records (its request logger, its "Listening on" line), and records what Node's
 * parser answered on that server (`RejectionsLive`).
 */
export const HttpLive = Layer.unwrap(
  Effect.map(AppConfig.LogRequests, (enabled) =>
    HttpRouter.serve(Layer.mergeAll(ApiLive, DocsLive, DashboardLive, EdgeLive), {
      middleware: accessLog({ enabled }),
      disableLogger: true,
      disableListenLog: true
    }))
).pipe(Layer.merge(RejectionsLive), Layer.provide(SpanNameLive))

/**
 * Node's HTTP server on `HOST`:`PORT`. It opens the port as soon as it is built, so it is provided
 * innermost: built last, after the database, migrations and handlers are ready.
 */
export const NodeServerLive = Layer.unwrap(
  Effect.gen(function*() {
    const port = yield* AppConfig.Port
    const host = yield* AppConfig.Host
    return NodeHttpServer.layer(createServer, { port, host })
  })
)
