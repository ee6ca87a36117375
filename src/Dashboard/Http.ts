/**
 * The dashboard at `/dashboard`: server-rendered pages on the same services as the API (no second
 * backend), with a stylesheet and a small progressive script of its own (`Assets.ts`). Its routes are
 * outside the OpenAPI document (they answer HTML and a form's redirect, for a browser), listed in
 * docs/dashboard.md. Each page module exports its routes; this registers them all.
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { ApiSectionRoutes } from "./ApiSection.js"
import { ASSETS_VERSION, SCRIPT, STYLESHEET } from "./Assets.js"
import { AiRoutes } from "./Ai.js"
import { ConversationRoutes } from "./Conversations.js"
import { DeliveryRoutes } from "./Deliveries.js"
import { IntegrationRoutes } from "./Integrations.js"
import { isDatabaseUnavailable } from "../Sql.js"
import { type Html, html } from "./Html.js"
import { layout } from "./Layout.js"
import {
  type DashboardRoute,
  type DashboardServices,
  htmlResponse,
  notFoundPage,
  type PageRequest,
  publicRoute
} from "./Page.js"
import { LiveStreams } from "./Live.js"
import { DashboardSessions } from "./Session.js"
import { DashboardSettings } from "./Settings.js"
import { SignInRoutes } from "./SignIn.js"
import { WorkspaceRoutes } from "./Workspaces.js"

const asset = (body: string, contentType: string) =>
  publicRoute("GET", `/dashboard/assets/${contentType === "text/css" ? "dashboard.css" : "dashboard.js"}`, (request) =>
    Effect.succeed(
      HttpServerResponse.text(body, {
        contentType: `${contentType}; charset=utf-8`,
        headers: {
          "x-content-type-options": "nosniff",
          // Named by their hash in every page: keep the current version for good, revalidate any other.
          "cache-control": request.url.searchParams.get("v") === ASSETS_VERSION
            ? "public, max-age=31536000, immutable"
            : "no-cache"
        }
      })
    ))

const AssetRoutes = [asset(STYLESHEET, "text/css"), asset(SCRIPT, "text/javascript")]

/** Any other path under /dashboard: the dashboard's own 404 page, not the API's JSON. */
const NotFoundRoutes = [
  // The router also matches `/dashboard/:page` itself (as it does every path ending in `/*`).
  publicRoute("GET", "/dashboard/:page/*", () => Effect.succeed(notFoundPage(Option.none()))),
  publicRoute("POST", "/dashboard/:page/*", () => Effect.succeed(notFoundPage(Option.none())))
]

const errorPage = (status: number, title: string, text: Html, headers: Record<string, string> = {}) =>
  htmlResponse(
    layout({ title, session: Option.none(), body: html`<section class="panel"><h1>${title}</h1>${text}<p><a href="/dashboard">Back to the dashboard</a></p></section>` }),
    status,
    headers
  )

/**
 * A page's failure as a page, not the API's JSON: the database out of reach is a 503 to retry; any
 * other is Parley's own failure (a defect), logged with the trace id the page shows.
 */
const failurePage = (cause: Cause.Cause<unknown>) =>
  Effect.gen(function*() {
    if (Cause.hasInterruptsOnly(cause)) return yield* Effect.failCause(cause)
    if (isDatabaseUnavailable(cause)) {
      yield* Effect.logWarning("Database unavailable; dashboard answered 503")
      return errorPage(503, "Temporarily unavailable", html`<p>The database cannot be reached. Nothing was changed; try again in a few seconds.</p>`, {
        "retry-after": "5"
      })
    }
    const traceId = yield* Effect.currentSpan.pipe(Effect.map((span) => span.traceId), Effect.orElseSucceed(() => "none"))
    yield* Effect.logError("Dashboard page failed; answered 500", cause).pipe(Effect.annotateLogs("traceId", traceId))
    return errorPage(500, "Something went wrong", html`<p>Parley failed to answer this page. If it happens again, quote this trace id when reporting it: <code>${traceId}</code>.</p>`)
  })

/** Every dashboard route, in the order they are matched. */
export const dashboardRoutes: ReadonlyArray<DashboardRoute<DashboardServices>> = [
  ...AssetRoutes,
  ...SignInRoutes,
  ...WorkspaceRoutes,
  ...ApiSectionRoutes,
  ...IntegrationRoutes,
  ...ConversationRoutes,
  ...DeliveryRoutes,
  ...AiRoutes,
  ...NotFoundRoutes
]

/** The request as a page reads it: its URL, path parameters and (for a POST) its urlencoded form. */
const pageRequest = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const params = yield* HttpRouter.params
  const form = request.method === "POST"
    ? new URLSearchParams(yield* Effect.orElseSucceed(request.text, () => ""))
    : new URLSearchParams()
  return { request, params, form, url: new URL(request.url, "http://dashboard.invalid") } satisfies PageRequest
})

/** Serves the dashboard on the app's router; needs the services (`App.ts`). */
export const DashboardLive = HttpRouter.use((router) =>
  Effect.gen(function*() {
    const context = yield* Effect.context<DashboardServices>()
    for (const route of dashboardRoutes) {
      yield* router.add(
        route.method,
        route.path,
        Effect.flatMap(pageRequest, route.handle).pipe(Effect.catchCause(failurePage), Effect.provideContext(context))
      )
    }
  })
).pipe(Layer.provide([DashboardSessions.layer, DashboardSettings.layer, LiveStreams.layer]))
