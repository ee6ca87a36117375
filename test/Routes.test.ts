/**
 * The route table: the same routes, in the same form, as the OpenAPI document Parley serves (plus
 * `/openapi.json` and `/docs`); and a request's route as the router would pick it.
 */
import { describe, expect, it } from "@effect/vitest"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as OpenApi from "effect/http-api/OpenApi"
import * as Option from "effect/Option"
import { Api } from "../src/Api.js"
import { dashboardRoutes } from "../src/Dashboard/Http.js"
import { routeOf, routes, templateFor, templateOf } from "../src/Routes.js"

const request = (method: "GET" | "POST" | "HEAD", url: string) =>
  HttpServerRequest.fromWeb(new Request(`http://localhost${url}`, { method }))

describe("the route table", () => {
  it("has every operation of the OpenAPI document, by its path there, /openapi.json and /docs, and the dashboard's pages", () => {
    const documented = Object.entries(OpenApi.fromApi(Api).paths).flatMap(([path, item]) =>
      Object.keys(item).filter((key) => key !== "parameters").map((method) => `${method.toUpperCase()} ${path}`)
    )
    const table = routes().map((route) => `${route.method} ${route.template}`)
    const dashboard = dashboardRoutes.map((route) => `${route.method} ${templateOf(route.path)}`)
    expect(dashboard).toContain("GET /dashboard")
    expect([...table].sort()).toEqual([...documented, "GET /openapi.json", "GET /docs", ...dashboard].sort())
    expect(table).toContain("POST /v1/webhooks/{integration_id}/message-received")
    expect(new Set(table).size).toBe(table.length)
  })

  it("each template is its router path with {name} for :name", () => {
    for (const route of routes()) expect(route.template).toBe(route.path.replace(/:(\w+)/g, "{$1}"))
    expect(templateOf("/dashboard/:page/*")).toBe("/dashboard/{page}/*")
    expect(templateOf("/v1/integration/:integration_id/deliveries/:delivery_id"))
      .toBe("/v1/integration/{integration_id}/deliveries/{delivery_id}")
  })
})

describe("templateFor", () => {
  it("matches a path to its route's template, parameters being one segment", () => {
    expect(templateFor("POST", "/v1/webhooks/3f0c/message-received")).toBe("/v1/webhooks/{integration_id}/message-received")
    expect(templateFor("GET", "/v1/integration/abc/deliveries/def")).toBe("/v1/integration/{integration_id}/deliveries/{delivery_id}")
    expect(templateFor("GET", "/v1/integration/abc/deliveries/def/extra")).toBeUndefined()
    expect(templateFor("GET", "/v1/webhooks/3f0c/message-received")).toBeUndefined()
  })

  it("names a dashboard page by its template, and any other path under /dashboard by the catch-all", () => {
    expect(templateFor("GET", "/dashboard/workspaces")).toBe("/dashboard/workspaces")
    expect(templateFor("GET", "/dashboard/w/3f0c")).toBe("/dashboard/w/{workspaceId}")
    expect(templateFor("GET", "/dashboard/no/such/page")).toBe("/dashboard/{page}/*")
    expect(templateFor("GET", "/dashboard/nothing")).toBe("/dashboard/{page}/*")
    expect(templateFor("POST", "/dashboard/no/such/page")).toBe("/dashboard/{page}/*")
    expect(templateFor("PUT", "/dashboard/no/such/page")).toBeUndefined()
  })

  it("takes a trailing slash and any letter case; a dot is a dot", () => {
    expect(templateFor("GET", "/health/ready/")).toBe("/health/ready")
    expect(templateFor("GET", "/HEALTH/Ready")).toBe("/health/ready")
    expect(templateFor("GET", "/openapi.json")).toBe("/openapi.json")
    expect(templateFor("GET", "/openapi-json")).toBeUndefined()
  })
})

describe("routeOf", () => {
  it("reads the path (repeated slashes as one, no query), HEAD as GET; none for a path of no route", () => {
    expect(routeOf(request("GET", "/v1/customer/external-id/x?access_token=t"), Option.none()))
      .toEqual(Option.some("/v1/customer/external-id/{external_id}"))
    expect(routeOf(request("GET", "//health//ready"), Option.none())).toEqual(Option.some("/health/ready"))
    expect(routeOf(request("HEAD", "/health/live"), Option.none())).toEqual(Option.some("/health/live"))
    expect(routeOf(request("GET", "/nowhere/1"), Option.none())).toEqual(Option.none())
  })
})
