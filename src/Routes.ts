/**
 * The route table: every route Parley serves — the API's endpoints, reflected from the HttpApi, and
 * `/openapi.json` and `/docs` (`Http.ts`) — each with its template as the OpenAPI document writes it
 * (`/v1/webhooks/{integration_id}/message-received`). The access record, the request's span
 * (`http.route`) and the `http_route` metric label all name a route by it (`routeOf`).
 */
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpApi from "effect/http-api/HttpApi"
import * as Option from "effect/Option"
import type * as Tracer from "effect/Tracer"
import { Api } from "./Api.js"
import { dashboardRoutes } from "./Dashboard/Http.js"

export interface Route {
  readonly method: string
  /** The path as the router has it: `/v1/customer/external-id/:external_id`. */
  readonly path: string
  /** As the OpenAPI document has it: `/v1/customer/external-id/{external_id}`. */
  readonly template: string
}

/** The routes Parley serves besides the API's endpoints: `Http.ts`'s, and the dashboard's. */
const otherRoutes = (): ReadonlyArray<readonly [method: string, path: string]> => [
  ["GET", "/openapi.json"],
  ["GET", "/docs"],
  ...dashboardRoutes.map((route) => [route.method, route.path] as const)
]

/** A router path (`:name` parameters) as a template (`{name}`), as `OpenApi.fromApi` writes it. */
export const templateOf = (path: string): string => path.replace(/:(\w+)/g, "{$1}")

const PARAMETER = /^\{\w+\}$/

const escape = (text: string) => text.replace(/[.*+?^$()|[\]\\]/g, "\\$&")

interface Matcher extends Route {
  readonly pattern: RegExp
}

let table: ReadonlyArray<Matcher> | undefined

/** Every route Parley serves; reflected from the API once. */
export const routes = (): ReadonlyArray<Route> => matchers()

const matchers = (): ReadonlyArray<Matcher> => {
  if (table !== undefined) return table
  const found: Array<Route> = []
  HttpApi.reflect(Api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) =>
      found.push({ method: endpoint.method, path: endpoint.path, template: templateOf(endpoint.path) })
  })
  for (const [method, path] of otherRoutes()) found.push({ method, path, template: templateOf(path) })
  table = found.map((route) => ({
    ...route,
    // As the router matches: in any letter case, with or without a trailing slash.
    pattern: new RegExp(
      `^${
        route.template.replace(/\/\*$/, "").split("/").map((segment) => PARAMETER.test(segment) ? "[^/]+" : escape(segment))
          .join("/")
      }${route.template.endsWith("/*") ? "(/.*)?" : "/?"}$`,
      "i"
    )
  }))
  return table
}

/** The template of the route that `method` and `path` are for, if any. */
export const templateFor = (method: string, path: string): string | undefined =>
  matchers().find((route) => route.method === method && route.pattern.test(path))?.template

/**
 * The template of the route a request is for: the router's, from the span (written only when a
 * tracer is installed, in its `:name` form), else the one its method and path match, as the router
 * reads them (repeated slashes are one; `HEAD` is served by `GET`). None for a path of no route.
 */
export const routeOf = (
  request: HttpServerRequest.HttpServerRequest,
  span: Option.Option<Tracer.Span>
): Option.Option<string> => {
  const matched = Option.isSome(span) ? span.value.attributes.get("http.route") : undefined
  if (typeof matched === "string") return Option.some(templateOf(matched))
  const path = (request.url.split("?")[0] ?? request.url).replace(/\/{2,}/g, "/")
  return Option.fromNullishOr(
    templateFor(request.method, path) ?? (request.method === "HEAD" ? templateFor("GET", path) : undefined)
  )
}
