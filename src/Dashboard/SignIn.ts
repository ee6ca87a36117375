/**
 * Signing in and out. One field takes either credential: the admin token signs the operator in (every
 * workspace), a workspace's API token an integrator (that workspace only). A wrong token gets one clear
 * message and nothing else (which kind was tried is not told); attempts are rate-limited per client
 * address like the API's requests (`PARLEY_RATE_LIMIT` a minute).
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { AdminToken } from "../Auth/AdminToken.js"
import { constantTimeEqual } from "../Auth/Crypto.js"
import { RateLimiter } from "../Auth/RateLimiter.js"
import type { TokenId, WorkspaceId } from "../Domain/Ids.js"
import { Workspaces } from "../Workspaces/Workspaces.js"
import { html } from "./Html.js"
import { layout } from "./Layout.js"
import { field, htmlResponse, type PageRequest, publicRoute, seeOther, signedInRoute } from "./Page.js"
import { DashboardSessions, type Session } from "./Session.js"

/** Where a session starts: the operator's workspaces, an integrator's integrations. */
const homeOf = (session: Session) =>
  session.role === "operator" ? "/dashboard/workspaces" : `/dashboard/w/${session.workspaceId}/integrations`

/**
 * A page the sign-in form was asked from: only a path of the dashboard (never another site), in visible
 * ASCII (a browser sends a path percent-encoded; it becomes the `Location` header), and normalised as
 * the browser would resolve it (`/dashboard/../x` is not a dashboard path).
 */
const nextOf = (request: PageRequest): string | undefined => {
  const next = request.url.searchParams.get("next") ?? request.form.get("next")
  if (next === null || !/^\/(?![/\\])[\x21-\x7e]*$/.test(next) || next.includes("\\")) return undefined
  const url = new URL(next, "http://dashboard.invalid")
  if (url.host !== "dashboard.invalid" || url.pathname.includes("//")) return undefined
  return url.pathname === "/dashboard" || url.pathname.startsWith("/dashboard/") ? url.pathname + url.search : undefined
}

const signInPage = (options: { readonly error?: string; readonly next?: string | undefined }, status = 200) =>
  htmlResponse(
    layout({
      title: "Sign in",
      session: Option.none(),
      body: html`
<section class="panel sign-in">
  <h1>Sign in to Parley</h1>
  <p>Operators sign in with the admin token; integrators with one of their workspace's API tokens.</p>
  <form method="post" action="/dashboard/sign-in">
    ${options.next === undefined ? "" : html`<input type="hidden" name="next" value="${options.next}">`}
    <label for="token">Token <span class="hint">The admin token (PARLEY_ADMIN_TOKEN) or an API token (prl_…)</span></label>
    <input id="token" name="token" type="password" autocomplete="current-password" required
      ${options.error === undefined ? "" : html`aria-invalid="true" aria-describedby="token-error"`} autofocus>
    ${options.error === undefined ? "" : html`<p id="token-error" class="error" role="alert">${options.error}</p>`}
    <p><button type="submit">Sign in</button></p>
  </form>
</section>`
    }),
    status
  )

type Who = Parameters<DashboardSessions["Service"]["start"]>[1]
type Caller = { readonly workspaceId: WorkspaceId; readonly tokenId: TokenId }

const dashboardHome = publicRoute("GET", "/dashboard", (request) =>
  Effect.gen(function*() {
    const session = yield* DashboardSessions.use((sessions) => sessions.read(request.request))
    if (Option.isSome(session)) return seeOther(nextOf(request) ?? homeOf(session.value))
    return signInPage({ next: nextOf(request) })
  }))

const signIn = publicRoute("POST", "/dashboard/sign-in", (request) =>
  Effect.gen(function*() {
    const address = Option.getOrElse(request.request.remoteAddress, () => "unknown")
    const limited = yield* RateLimiter.use((limiter) => limiter.take(`dashboard-sign-in:${address}`)).pipe(
      Effect.as(Option.none<number>()),
      Effect.catchTag("RateLimited", (error) => Effect.succeed(Option.some(error.retryAfterSeconds)))
    )
    const next = nextOf(request)
    if (Option.isSome(limited)) {
      return htmlResponse(
        layoutError(`Too many sign-in attempts: try again in ${limited.value} seconds.`, next),
        429,
        { "retry-after": String(limited.value) }
      )
    }
    const token = field(request, "token") ?? ""
    const sessions = yield* DashboardSessions
    const adminToken = yield* AdminToken
    const who: Option.Option<Who> = token !== "" && constantTimeEqual(token, Redacted.value(adminToken))
      ? Option.some({ role: "operator" as const })
      : token === ""
      ? Option.none()
      : Option.map<Caller, Who>(
        yield* Workspaces.use((workspaces) => workspaces.authenticate(token)),
        (caller) => ({ role: "integrator" as const, workspaceId: caller.workspaceId, tokenId: caller.tokenId })
      )
    if (Option.isNone(who)) {
      yield* Effect.logInfo("Dashboard sign-in refused").pipe(Effect.annotateLogs("client.address", address))
      return signInPage({ next, error: "That token is not valid. Use the admin token or an API token that has not been revoked." }, 401)
    }
    const { session, setCookie } = yield* sessions.start(request.request, who.value)
    yield* Effect.logInfo("Dashboard sign-in").pipe(
      Effect.annotateLogs({ role: session.role, ...(session.role === "integrator" ? { "workspace.id": session.workspaceId } : {}) })
    )
    return seeOther(next ?? homeOf(session), { "set-cookie": setCookie })
  }))

const layoutError = (error: string, next: string | undefined) =>
  layout({
    title: "Sign in",
    session: Option.none(),
    body: html`<section class="panel"><h1>Sign in to Parley</h1><p class="error" role="alert">${error}</p>
      <p><a href="/dashboard${next === undefined ? "" : `?next=${encodeURIComponent(next)}`}">Back to the sign-in form</a></p></section>`
  })

const signOut = signedInRoute("POST", "/dashboard/sign-out", (request) =>
  DashboardSessions.use((sessions) =>
    Effect.succeed(seeOther("/dashboard", { "set-cookie": sessions.end(request.request) }))
  ))

export const SignInRoutes = [dashboardHome, signIn, signOut]
