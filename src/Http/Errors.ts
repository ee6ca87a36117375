/**
 * Turns every failure into the wire shapes of PRODUCT.md §3, for the whole API:
 * - path and query decode failures (HttpApi's 400 `HttpApiDecodeError`) become 422 `detail[{loc,msg,type}]`,
 * - 401 gets `WWW-Authenticate: Bearer`, 429 gets `Retry-After`,
 * - a body over the limit is 413 before it is read, an unknown route 404 `{"detail":"Not Found"}`,
 * - a defect is logged and answers 500 `{"detail":"Internal error","traceId"}`, never a stack trace.
 * Typed domain errors (404, 409, 422 from bodies) are encoded by their own schemas after this.
 */
import {
  HttpApi,
  HttpApiBuilder,
  HttpApiError,
  HttpIncomingMessage,
  HttpServerError,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as AST from "effect/SchemaAST"
import * as crypto from "node:crypto"
import { Api } from "../Api.js"
import * as AppConfig from "../Config.js"
import { RateLimited, Unauthorized } from "../Domain/Errors.js"
import { ErrorType, type Location, type ValidationItem } from "../Domain/Validation.js"
import { httpDuration, httpRequests } from "../Observability/Metrics.js"

interface ParamInfo {
  readonly location: Location
  readonly type: string
  readonly msg: string
}

const findErrorType = (ast: AST.AST): { readonly type: string; readonly msg: string } | undefined => {
  const type = ast.annotations[ErrorType]
  if (typeof type === "string") {
    const message = AST.getMessageAnnotation(ast).pipe(Option.getOrUndefined)
    const text = message?.(new ParseResult.Type(ast, undefined))
    return { type, msg: typeof text === "string" ? text : "Input is not valid" }
  }
  if (AST.isRefinement(ast) || AST.isTransformation(ast)) return findErrorType(ast.from)
  return undefined
}

/**
 * Where each path and query parameter of the API lives and what its failure is called. HttpApi
 * decodes path and query itself and reports only the parameter's name; this index, read off the API
 * definition, supplies the rest. (Bodies are decoded by the handlers, see `Http/Request.ts`.)
 */
const paramIndex = (): ReadonlyMap<string, ParamInfo> => {
  const index = new Map<string, ParamInfo>()
  const add = (schema: Option.Option<{ readonly ast: AST.AST }>, location: Location) => {
    if (Option.isNone(schema)) return
    for (const property of AST.getPropertySignatures(schema.value.ast)) {
      const reading = findErrorType(property.type)
      index.set(String(property.name), {
        location,
        type: reading?.type ?? "value_error",
        msg: reading?.msg ?? "Input is not valid"
      })
    }
  }
  HttpApi.reflect(Api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => {
      add(endpoint.pathSchema, "path")
      add(endpoint.urlParamsSchema, "query")
    }
  })
  return index
}

/** The route template a request matched (bounded cardinality for metrics), from the API definition. */
const routeMatcher = () => {
  const routes: Array<{ readonly method: string; readonly template: string; readonly pattern: RegExp }> = []
  HttpApi.reflect(Api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => {
      const pattern = new RegExp(`^${endpoint.path.replace(/:[A-Za-z_]+/g, "[^/]+")}/?$`)
      routes.push({ method: endpoint.method, template: endpoint.path.replace(/:([A-Za-z_]+)/g, "{$1}"), pattern })
    }
  })
  return (method: string, url: string): string => {
    const path = url.split("?")[0] ?? url
    return routes.find((r) => r.method === method && r.pattern.test(path))?.template ?? "unmatched"
  }
}

const errorStatus: Record<string, number> = {
  NotFound: 404,
  Conflict: 409,
  PayloadTooLarge: 413,
  ValidationError: 422,
  NotReady: 503
}

const statusOf = (error: unknown): number =>
  typeof error === "object" && error !== null && "_tag" in error && typeof error._tag === "string"
    ? errorStatus[error._tag] ?? 500
    : 500

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  HttpServerResponse.unsafeJson(body, { status, headers })

const traceId = Effect.currentSpan.pipe(
  Effect.map((span) => span.traceId),
  Effect.orElseSucceed(() => crypto.randomBytes(16).toString("hex"))
)

export const ErrorsLive = HttpApiBuilder.middleware(
  Effect.gen(function*() {
    const limit = yield* AppConfig.BodyLimit
    const params = paramIndex()
    const routeOf = routeMatcher()

    const record = (request: HttpServerRequest.HttpServerRequest, started: number) =>
    (response: { readonly status: number }) =>
      Effect.gen(function*() {
        const route = routeOf(request.method, request.url)
        const elapsed = ((yield* Clock.currentTimeMillis) - started) / 1000
        const tagged = <M extends Metric.Metric<any, any, any>>(metric: M) =>
          metric.pipe(
            Metric.tagged("http.route", route),
            Metric.tagged("http.request.method", request.method),
            Metric.tagged("http.response.status_code", String(response.status))
          )
        yield* Metric.increment(tagged(httpRequests))
        yield* Metric.update(tagged(httpDuration), elapsed)
        yield* Effect.logDebug("request").pipe(
          Effect.annotateLogs({ route, method: request.method, status: response.status, seconds: elapsed })
        )
      })

    const decodeFailure = (error: HttpApiError.HttpApiDecodeError) =>
      json(422, {
        detail: error.issues.map((issue): ValidationItem => {
          const name = issue.path[0] === undefined ? undefined : String(issue.path[0])
          const info = name === undefined ? undefined : params.get(name)
          const loc = [info?.location ?? "path", ...issue.path.map((k) => typeof k === "number" ? k : String(k))]
          return issue._tag === "Missing"
            ? { loc, msg: "Field required", type: "missing" }
            : { loc, msg: info?.msg ?? issue.message, type: info?.type ?? "value_error" }
        })
      })

    const fromFailure = (error: unknown): Option.Option<HttpServerResponse.HttpServerResponse> => {
      if (error instanceof HttpApiError.HttpApiDecodeError) return Option.some(decodeFailure(error))
      if (error instanceof Unauthorized) {
        return Option.some(json(401, { detail: error.detail }, { "www-authenticate": "Bearer" }))
      }
      if (error instanceof RateLimited) {
        return Option.some(json(429, { detail: error.detail }, { "retry-after": String(error.retryAfterSeconds) }))
      }
      if (HttpServerError.isServerError(error)) {
        if (error._tag === "RouteNotFound") return Option.some(json(404, { detail: "Not Found" }))
        if (error._tag === "RequestError" && error.reason === "Decode") {
          return Option.some(json(422, { detail: [{ loc: ["body"], msg: "JSON decode error", type: "json_invalid" }] }))
        }
      }
      return Option.none()
    }

    const respond = (app: Parameters<HttpApiBuilder.MiddlewareFn<never>>[0]) =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const declared = Number(request.headers["content-length"] ?? "0")
        if (declared > limit) return json(413, { detail: "Request body too large" })
        return yield* app
      }).pipe(
        HttpIncomingMessage.withMaxBodySize(Option.some(limit)),
        Effect.catchAllCause((cause) => {
          const failure = Cause.failureOption(cause)
          if (Option.isSome(failure)) {
            return Option.match(fromFailure(failure.value), {
              onSome: Effect.succeed,
              onNone: () => Effect.failCause(cause)
            })
          }
          if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause)
          const defect = Cause.squash(cause)
          const mapped = fromFailure(defect)
          if (Option.isSome(mapped)) return Effect.succeed(mapped.value)
          return Effect.gen(function*() {
            const id = yield* traceId
            yield* Effect.logError("Unexpected failure answered 500", cause).pipe(Effect.annotateLogs("traceId", id))
            return json(500, { detail: "Internal error", traceId: id })
          })
        })
      )

    return (app) =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const started = yield* Clock.currentTimeMillis
        // Typed errors left for their schemas to encode still count, under the status they will get.
        return yield* respond(app).pipe(
          Effect.onExit((exit) =>
            Exit.isSuccess(exit)
              ? record(request, started)(exit.value)
              : record(request, started)({ status: statusOf(Cause.squash(exit.cause)) })
          )
        )
      })
  })
)
