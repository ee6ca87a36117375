/**
 * What a dashboard page is: a route (method and path under `/dashboard`) whose handler gets the request
 * as `PageRequest` (its URL, path parameters and form), checked for access before it runs:
 * - `publicRoute`: anyone (the sign-in form, the assets);
 * - `signedInRoute`: any session; `operatorRoute`: the operator's;
 * - `workspaceRoute`: a path with `:workspaceId` that the session may see (the operator any workspace,
 *   an integrator their own); any other answers 404, exactly as an unknown id does.
 * A state-changing request (POST) must carry the session's CSRF token (`_csrf` field or `X-CSRF-Token`)
 * and, when the browser sends `Origin`, come from this origin; anything else is refused (403) before
 * the handler runs. Without a session a page redirects to the sign-in form (303), and a data endpoint
 * answers 401.
 */
import * as Effect from "effect/Effect"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { constantTimeEqual } from "../Auth/Crypto.js"
import { NotFound } from "../Domain/Errors.js"
import { WorkspaceId } from "../Domain/Ids.js"
import type { Workspace } from "../Domain/Workspace.js"
import type * as SqlClient from "effect/sql/SqlClient"
import type { Admin } from "../Admin/Admin.js"
import type { Knowledge } from "../Ai/Knowledge.js"
import type { ReplyHistory } from "../Ai/ReplyHistory.js"
import type { WorkspaceAiSettings } from "../Ai/Settings.js"
import type { AdminToken } from "../Auth/AdminToken.js"
import type { RateLimiter } from "../Auth/RateLimiter.js"
import type { Conversations } from "../Conversations/Conversations.js"
import type { Csat } from "../Csat/Csat.js"
import type { Deliveries } from "../Delivery/Deliveries.js"
import type { Integrations } from "../Integrations/Integrations.js"
import { Workspaces } from "../Workspaces/Workspaces.js"
import { type Html, html } from "./Html.js"
import { layout } from "./Layout.js"
import type { LiveStreams } from "./Live.js"
import { canSee, DashboardSessions, type Session } from "./Session.js"
import type { DashboardSettings } from "./Settings.js"

/** What the dashboard's handlers may use: the app's services (`App.ts`) and the sessions. */
export type DashboardServices =
  | Admin
  | AdminToken
  | Conversations
  | Csat
  | Deliveries
  | Integrations
  | Knowledge
  | RateLimiter
  | ReplyHistory
  | SqlClient.SqlClient
  | WorkspaceAiSettings
  | Workspaces
  | DashboardSessions
  | DashboardSettings
  | LiveStreams

export interface PageRequest {
  readonly request: HttpServerRequest.HttpServerRequest
  readonly url: URL
  readonly params: Readonly<Record<string, string | undefined>>
  /** A POST's urlencoded form (empty for a GET). */
  readonly form: URLSearchParams
}

export interface SignedInRequest extends PageRequest {
  readonly session: Session
}

export interface WorkspaceRequest extends SignedInRequest {
  readonly workspace: Workspace
}

/** What a handler may fail with besides defects: an unknown or unreachable id (answered 404). */
export type PageFailure = NotFound

export interface DashboardRoute<R> {
  readonly method: "GET" | "POST"
  readonly path: `/dashboard${string}`
  readonly handle: (request: PageRequest) => Effect.Effect<HttpServerResponse.HttpServerResponse, never, R>
}

// -----------------------------------------------------------------------------
// Responses
// -----------------------------------------------------------------------------

/**
 * Every page's headers: never cached (pages show credentials and live data), no framing, scripts and
 * styles only from Parley itself (no CDN; no inline script can run).
 */
const PAGE_HEADERS = {
  "cache-control": "no-store",
  "content-security-policy":
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; " +
    "frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "same-origin"
}

/** An HTML document (a whole page, or a fragment for the live updates). */
export const htmlResponse = (body: Html, status = 200, headers: Record<string, string> = {}) =>
  HttpServerResponse.text(`${body.value}`, {
    status,
    contentType: "text/html; charset=utf-8",
    headers: { ...PAGE_HEADERS, ...headers }
  })

/** After a form: see the result at `location` (303, so that a reload does not post again). */
export const seeOther = (location: string, headers: Record<string, string> = {}) =>
  HttpServerResponse.empty({ status: 303, headers: { ...PAGE_HEADERS, location, ...headers } })

export const messagePage = (status: number, title: string, text: string, session: Option.Option<Session>) =>
  htmlResponse(
    layout({
      title,
      session,
      body: html`<section class="panel"><h1>${title}</h1><p>${text}</p><p><a href="/dashboard">Back to the dashboard</a></p></section>`
    }),
    status
  )

export const notFoundPage = (session: Option.Option<Session>) =>
  messagePage(404, "Not found", "There is nothing here, or it is not yours to see.", session)

/** A form sent, or a stream asked for, after the session ended: nothing was done. */
const signedOut = (clearCookie: string) =>
  htmlResponse(
    layout({
      title: "Signed out",
      session: Option.none(),
      body: html`<section class="panel"><h1>Signed out</h1>
<p>Your session has ended (it expired, you signed out, or the token you signed in with was revoked): nothing was done.</p>
<p><a class="button" href="/dashboard">Sign in again</a></p></section>`
    }),
    401,
    { "set-cookie": clearCookie }
  )

const forbidden = messagePage(
  403,
  "Refused",
  "This form was not sent from this dashboard page, or the page is out of date: reload it and try again.",
  Option.none()
)

// -----------------------------------------------------------------------------
// Reading the request
// -----------------------------------------------------------------------------

/** A path parameter decoded as `schema` (an id), or 404: a mistyped or tampered URL is not found. */
export const param = <A>(request: PageRequest, name: string, schema: Schema.Codec<A, string>): Effect.Effect<A, NotFound> =>
  Schema.decodeUnknownEffect(schema)(request.params[name]).pipe(
    Effect.mapError(() => new NotFound({ detail: `Unknown ${name}` }))
  )

/** A form field, trimmed; `undefined` when absent. */
export const field = (request: PageRequest, name: string): string | undefined => {
  const value = request.form.get(name)
  return value === null ? undefined : value.trim()
}

/**
 * Whether a browser's request comes from a page of this site: its `Origin` (when sent) names the host
 * the browser reached, as `Host` says, or as a reverse proxy that rewrites `Host` forwards it
 * (`X-Forwarded-Host`).
 */
const sameOrigin = (request: HttpServerRequest.HttpServerRequest): boolean => {
  const origin = request.headers["origin"]
  if (origin === undefined || origin === "") return true
  const hosts = [request.headers["host"], request.headers["x-forwarded-host"]?.split(",")[0]?.trim()]
  try {
    const host = new URL(origin).host
    return hosts.some((each) => each !== undefined && each !== "" && each === host)
  } catch {
    return false
  }
}

const validCsrf = (request: PageRequest, session: Session): boolean => {
  const token = request.form.get("_csrf") ?? request.request.headers["x-csrf-token"] ?? ""
  return constantTimeEqual(token, session.csrf)
}

// -----------------------------------------------------------------------------
// Routes
// -----------------------------------------------------------------------------

type Handler<In, R> = (request: In) => Effect.Effect<HttpServerResponse.HttpServerResponse, PageFailure, R>

const answerFailures = <R>(
  effect: Effect.Effect<HttpServerResponse.HttpServerResponse, PageFailure, R>,
  session: Option.Option<Session>
) => Effect.catchTag(effect, "NotFound", () => Effect.succeed(notFoundPage(session)))

/** A route anyone may call; a POST must come from this origin. */
export const publicRoute = <R>(
  method: "GET" | "POST",
  path: `/dashboard${string}`,
  handle: Handler<PageRequest, R>
): DashboardRoute<R> => ({
  method,
  path,
  handle: (request) =>
    method === "POST" && !sameOrigin(request.request)
      ? Effect.succeed(forbidden)
      : answerFailures(handle(request), Option.none())
})

const signedIn = <R>(
  method: "GET" | "POST",
  path: `/dashboard${string}`,
  allow: (session: Session) => boolean,
  handle: Handler<SignedInRequest, R>
): DashboardRoute<R | DashboardSessions> => ({
  method,
  path,
  handle: (request) =>
    Effect.gen(function*() {
      const sessions = yield* DashboardSessions
      const session = yield* sessions.read(request.request)
      if (Option.isNone(session)) {
        // A page sends the browser to the sign-in form (and back here after it); data gets a 401.
        const back = method === "GET" && !path.endsWith("/events")
          ? `/dashboard?next=${encodeURIComponent(request.url.pathname + request.url.search)}`
          : undefined
        return back === undefined
          ? signedOut(sessions.end(request.request))
          : seeOther(back, { "set-cookie": sessions.end(request.request) })
      }
      if (!allow(session.value)) return notFoundPage(session)
      if (method === "POST" && (!sameOrigin(request.request) || !validCsrf(request, session.value))) return forbidden
      return yield* answerFailures(handle({ ...request, session: session.value }), session)
    })
})

/** A route for any signed-in user. */
export const signedInRoute = <R>(method: "GET" | "POST", path: `/dashboard${string}`, handle: Handler<SignedInRequest, R>) =>
  signedIn(method, path, () => true, handle)

/** A route only the operator (signed in with the admin token) may call; anyone else gets 404. */
export const operatorRoute = <R>(method: "GET" | "POST", path: `/dashboard${string}`, handle: Handler<SignedInRequest, R>) =>
  signedIn(method, path, (session) => session.role === "operator", handle)

/**
 * A route within one workspace (`:workspaceId` in its path): 404 unless the session may see it and it
 * exists (not deleted).
 */
export const workspaceRoute = <R>(
  method: "GET" | "POST",
  path: `/dashboard/w/:workspaceId${string}`,
  handle: Handler<WorkspaceRequest, R>
): DashboardRoute<R | DashboardSessions | Workspaces> =>
  signedIn(method, path, () => true, (request) =>
    Effect.gen(function*() {
      const workspaceId = yield* param(request, "workspaceId", WorkspaceId)
      if (!canSee(request.session, workspaceId)) return yield* new NotFound({ detail: "Unknown workspace" })
      const workspace = yield* Workspaces.use((workspaces) => workspaces.get(workspaceId))
      return yield* handle({ ...request, workspace })
    }))

/** The hidden field every form of a signed-in page carries. */
export const csrfField = (session: Session) => html`<input type="hidden" name="_csrf" value="${session.csrf}">`
