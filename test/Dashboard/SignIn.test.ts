/**
 * The dashboard's front door, at the HTTP level as a browser without JavaScript sees it: the sign-in
 * form, the session cookie, signing out, what ends a session (tampering, a revoked token, its TTL), the
 * CSRF and origin checks, the rate limit, the pages' headers and assets, the operator's workspaces page,
 * and tenancy (an integrator reaches only their own workspace, and changes nothing elsewhere).
 */
import { describe, expect, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as TestClock from "effect/testing/TestClock"
import { IntegrationJson } from "../../src/Domain/Integration.js"
import { CreatedWorkspace, TokenSummary, WorkspaceDetail, WorkspaceSummary } from "../../src/Domain/Workspace.js"
import { ADMIN_TOKEN, bodyAs, call, makeTenant, type Tenant, TestApp } from "../support/App.js"
import { dashboard, type DashboardSession, type Page, signIn, visibleText } from "../support/Dashboard.js"

const admin = (method: "GET" | "POST" | "DELETE", path: string, body?: unknown) =>
  call(method, `/admin/v1${path}`, body === undefined ? { token: ADMIN_TOKEN } : { token: ADMIN_TOKEN, body })

const createWorkspace = (name: string) =>
  Effect.gen(function*() {
    const reply = yield* admin("POST", "/workspaces", { name })
    expect(reply.status).toBe(201)
    return (yield* bodyAs(CreatedWorkspace)(reply)).body
  })

const tokensOf = (workspaceId: string) =>
  admin("GET", `/workspaces/${workspaceId}/tokens`).pipe(
    Effect.flatMap(bodyAs(Schema.Array(TokenSummary))),
    Effect.map((reply) => reply.body)
  )

const workspaceDetail = (workspaceId: string) =>
  admin("GET", `/workspaces/${workspaceId}`).pipe(Effect.flatMap(bodyAs(WorkspaceDetail)), Effect.map((reply) => reply.body))

const integrationsOf = (workspaceId: string) =>
  admin("GET", `/workspaces/${workspaceId}/integrations`).pipe(
    Effect.flatMap(bodyAs(Schema.Array(IntegrationJson))),
    Effect.map((reply) => reply.body)
  )

/** The `Set-Cookie` attributes of an answer, by lower-case name (the cookie itself under `parley_session`). */
const cookieAttributes = (page: Page): Record<string, string> => {
  const header = page.headers["set-cookie"]
  if (header === undefined) return {}
  return Object.fromEntries(header.split(";").map((part) => {
    const [name = "", ...value] = part.trim().split("=")
    return [name.toLowerCase(), value.join("=")]
  }))
}

/** The session cookie's value with one character of `part` (the payload or the signature) changed. */
const tamper = (session: DashboardSession, part: "payload" | "signature"): DashboardSession => {
  const value = session.cookie.slice("parley_session=".length)
  const [payload = "", signature = ""] = value.split(".")
  const flip = (text: string) => {
    const i = Math.floor(text.length / 2)
    return text.slice(0, i) + (text[i] === "A" ? "B" : "A") + text.slice(i + 1)
  }
  const changed = part === "payload" ? `${flip(payload)}.${signature}` : `${payload}.${flip(signature)}`
  return { cookie: `parley_session=${changed}`, csrf: session.csrf }
}

const signInPath = (path: string) => `/dashboard?next=${encodeURIComponent(path)}`

/** Signed out: a page sends the browser to the sign-in form (and back to `path` after it), clearing the cookie. */
const expectSignedOut = (page: Page, path: string) => {
  expect(page.status).toBe(303)
  expect(page.headers["location"]).toBe(signInPath(path))
  expect(cookieAttributes(page)["max-age"]).toBe("0")
}

const expectNotFound = (page: Page) => {
  expect(page.status).toBe(404)
  expect(page.headers["content-type"]).toMatch(/^text\/html/)
  expect(visibleText(page)).toContain("There is nothing here, or it is not yours to see.")
}

describe("dashboard sign-in", () => {
  layer(TestApp(), { timeout: 120_000 })((it) => {
    it.effect("GET /dashboard shows the sign-in form: one labelled token field posting to /dashboard/sign-in", () =>
      Effect.gen(function*() {
        const page = yield* dashboard("GET", "/dashboard")
        expect(page.status).toBe(200)
        expect(page.headers["content-type"]).toBe("text/html; charset=utf-8")
        expect(page.text).toContain(`<form method="post" action="/dashboard/sign-in">`)
        expect(page.text).toMatch(/<label for="token">Token\b/)
        expect(page.text).toMatch(/<input id="token" name="token" type="password"[^>]*required/)
        expect(visibleText(page)).toContain("Sign in to Parley")
        // Signed out: no navigation and no sign-out form.
        expect(page.text).not.toContain("/dashboard/sign-out")
        expect(page.headers["set-cookie"]).toBeUndefined()
      }))

    it.effect("the admin token: 303 to /dashboard/workspaces with an HttpOnly, SameSite=Strict session cookie on /dashboard", () =>
      Effect.gen(function*() {
        const answer = yield* dashboard("POST", "/dashboard/sign-in", { form: { token: ADMIN_TOKEN } })
        expect(answer.status).toBe(303)
        expect(answer.headers["location"]).toBe("/dashboard/workspaces")
        const attributes = cookieAttributes(answer)
        expect(attributes["parley_session"]).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/)
        expect(attributes).toHaveProperty("httponly")
        expect(attributes["samesite"]).toBe("Strict")
        expect(attributes["path"]).toBe("/dashboard")
        // The default TTL: 8 hours.
        expect(attributes["max-age"]).toBe(String(8 * 3600))
        // Plain HTTP here: no Secure attribute (the browser would drop the cookie).
        expect(attributes).not.toHaveProperty("secure")
        // The cookie holds no credential.
        const payload = Buffer.from(attributes["parley_session"]!.split(".")[0]!, "base64url").toString("utf8")
        expect(payload).not.toContain(ADMIN_TOKEN)
        expect(JSON.parse(payload)).toMatchObject({ role: "operator" })

        const cookie = `parley_session=${attributes["parley_session"]}`
        const home = yield* dashboard("GET", "/dashboard/workspaces", { session: { cookie, csrf: "" } })
        expect(home.status).toBe(200)
        expect(visibleText(home)).toContain("Operator")
        expect(home.text).toContain(`action="/dashboard/sign-out"`)
      }))

    it.effect("behind an HTTPS proxy (X-Forwarded-Proto: https) the cookie is Secure", () =>
      Effect.gen(function*() {
        const answer = yield* dashboard("POST", "/dashboard/sign-in", {
          form: { token: ADMIN_TOKEN },
          headers: { "x-forwarded-proto": "https" }
        })
        expect(answer.status).toBe(303)
        expect(cookieAttributes(answer)).toHaveProperty("secure")
      }))

    it.effect("a workspace's API token: 303 to that workspace's integrations, signed in as an integrator", () =>
      Effect.gen(function*() {
        const workspace = yield* createWorkspace("Integrator's")
        const answer = yield* dashboard("POST", "/dashboard/sign-in", { form: { token: workspace.apiToken } })
        expect(answer.status).toBe(303)
        expect(answer.headers["location"]).toBe(`/dashboard/w/${workspace.id}/integrations`)
        const attributes = cookieAttributes(answer)
        expect(attributes).toHaveProperty("httponly")
        const payload = Buffer.from(attributes["parley_session"]!.split(".")[0]!, "base64url").toString("utf8")
        expect(payload).not.toContain(workspace.apiToken)

        const session = yield* signIn(workspace.apiToken)
        const page = yield* dashboard("GET", `/dashboard/w/${workspace.id}/integrations`, { session })
        expect(page.status).toBe(200)
        expect(visibleText(page)).toContain("Integrator")
        expect(visibleText(page)).toContain("Integrator's")
        // An integrator has no list of workspaces in the navigation.
        expect(page.text).not.toContain(`href="/dashboard/workspaces"`)
      }))

    it.effect("a wrong, empty or revoked token: 401 with one message, the form again, and no cookie", () =>
      Effect.gen(function*() {
        const workspace = yield* createWorkspace("Revoked")
        const [token] = yield* tokensOf(workspace.id)
        expect((yield* admin("DELETE", `/tokens/${token!.id}`)).status).toBe(204)
        for (const wrong of ["padm_wrong", "", `${ADMIN_TOKEN}x`, workspace.apiToken]) {
          const answer = yield* dashboard("POST", "/dashboard/sign-in", { form: { token: wrong } })
          expect(answer.status, `token ${JSON.stringify(wrong)}`).toBe(401)
          expect(answer.headers["set-cookie"]).toBeUndefined()
          expect(visibleText(answer)).toContain(
            "That token is not valid. Use the admin token or an API token that has not been revoked."
          )
          expect(answer.text).toContain(`aria-describedby="token-error"`)
          expect(answer.text).toContain(`<form method="post" action="/dashboard/sign-in">`)
        }
      }))

    it.effect("next= is honoured only for a /dashboard path: another site or //host is ignored", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const target = `/dashboard/w/${tenant.workspaceId}/api?reveal=secret`
        // The form carries it on to the sign-in.
        const form = yield* dashboard("GET", signInPath(target))
        expect(form.status).toBe(200)
        expect(form.text).toContain(`<input type="hidden" name="next" value="${target.replace("&", "&amp;")}">`)
        const back = yield* dashboard("POST", "/dashboard/sign-in", { form: { token: tenant.token, next: target } })
        expect(back.status).toBe(303)
        expect(back.headers["location"]).toBe(target)

        for (
          const next of [
            "https://evil.example/dashboard",
            "//evil.example/dashboard",
            "/\\evil.example",
            "/dashboard//evil.example",
            "/dashboard/\\evil.example",
            "/dashboardevil",
            "/dashboard/../\\evil.example",
            "/dashboard/../evil",
            "javascript:alert(1)"
          ]
        ) {
          const shown = yield* dashboard("GET", signInPath(next))
          expect(shown.text, next).not.toContain(`name="next"`)
          const answer = yield* dashboard("POST", "/dashboard/sign-in", { form: { token: ADMIN_TOKEN, next } })
          expect(answer.status, next).toBe(303)
          expect(answer.headers["location"], next).toBe("/dashboard/workspaces")
          // In the query string of the sign-in post too.
          const viaQuery = yield* dashboard("POST", `/dashboard/sign-in?next=${encodeURIComponent(next)}`, {
            form: { token: ADMIN_TOKEN }
          })
          expect(viaQuery.headers["location"], next).toBe("/dashboard/workspaces")
        }

        // Already signed in, /dashboard sends the browser on (to next, or home).
        const session = yield* signIn()
        expect((yield* dashboard("GET", "/dashboard", { session })).headers["location"]).toBe("/dashboard/workspaces")
        expect((yield* dashboard("GET", signInPath(target), { session })).headers["location"]).toBe(target)
        expect((yield* dashboard("GET", signInPath("//evil.example"), { session })).headers["location"]).toBe(
          "/dashboard/workspaces"
        )
      }))

    // BUG (src/Dashboard/SignIn.ts, nextOf): a `next` with a control character (or any character above
    // U+00FF) passes the /dashboard check and is put as is into the Location header; Node refuses the
    // header and the sign-in answers 500 with an empty body (the session is lost). No header is split.
    it.effect("a next= with a line break or a non-Latin-1 character is ignored: the sign-in still succeeds", () =>
      Effect.gen(function*() {
        const session = yield* signIn()
        for (const next of ["/dashboard/x\r\nSet-Cookie: planted=1", "/dashboard/\nx", "/dashboard?\r\nx", "/dashboard/\u2713"]) {
          const answer = yield* dashboard("POST", "/dashboard/sign-in", { form: { token: ADMIN_TOKEN, next } })
          expect(answer.status, JSON.stringify(next)).toBe(303)
          expect(answer.headers["location"], JSON.stringify(next)).toBe("/dashboard/workspaces")
          expect(answer.headers["set-cookie"]).toBeDefined()
          // Signed in already, /dashboard?next= sends the browser home.
          const home = yield* dashboard("GET", signInPath(next), { session })
          expect(home.status, JSON.stringify(next)).toBe(303)
          expect(home.headers["location"], JSON.stringify(next)).toBe("/dashboard/workspaces")
        }
      }))

    it.effect("signing out (a POST with the CSRF token) clears the cookie and returns to the sign-in form", () =>
      Effect.gen(function*() {
        const session = yield* signIn()
        // Without the CSRF token, nothing happens.
        const refused = yield* dashboard("POST", "/dashboard/sign-out", { session, csrf: false })
        expect(refused.status).toBe(403)
        expect(refused.headers["set-cookie"]).toBeUndefined()

        const answer = yield* dashboard("POST", "/dashboard/sign-out", { session })
        expect(answer.status).toBe(303)
        expect(answer.headers["location"]).toBe("/dashboard")
        const attributes = cookieAttributes(answer)
        expect(attributes["parley_session"]).toBe("")
        expect(attributes["max-age"]).toBe("0")
        expect(attributes["path"]).toBe("/dashboard")

        // The browser now has no cookie: pages send it to the sign-in form.
        expectSignedOut(yield* dashboard("GET", "/dashboard/workspaces"), "/dashboard/workspaces")
        const form = yield* dashboard("GET", "/dashboard")
        expect(form.status).toBe(200)
        expect(visibleText(form)).toContain("Sign in to Parley")
      }))

    it.effect("a tampered cookie (one character of the payload or the signature) is no session", () =>
      Effect.gen(function*() {
        const session = yield* signIn()
        expect((yield* dashboard("GET", "/dashboard/workspaces", { session })).status).toBe(200)
        for (const part of ["payload", "signature"] as const) {
          const tampered = tamper(session, part)
          expectSignedOut(yield* dashboard("GET", "/dashboard/workspaces", { session: tampered }), "/dashboard/workspaces")
          // A POST with it is refused as signed out, and creates nothing.
          const post = yield* dashboard("POST", "/dashboard/workspaces", { session: tampered, form: { name: "Forged" } })
          expect(post.status).toBe(401)
        }
        // An integrator's payload turned into the operator's, signature kept: refused.
        const tenant = yield* makeTenant()
        const integrator = yield* signIn(tenant.token)
        const [payload = "", signature = ""] = integrator.cookie.slice("parley_session=".length).split(".")
        const claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as Record<string, unknown>
        const forged = Buffer.from(JSON.stringify({ role: "operator", csrf: claims["csrf"], expiresAt: claims["expiresAt"] }))
          .toString("base64url")
        expectSignedOut(
          yield* dashboard("GET", "/dashboard/workspaces", { session: { cookie: `parley_session=${forged}.${signature}`, csrf: "" } }),
          "/dashboard/workspaces"
        )
        // Garbage.
        for (const cookie of ["parley_session=", "parley_session=abc", "parley_session=a.b.c", "parley_session=..."]) {
          expectSignedOut(yield* dashboard("GET", "/dashboard/workspaces", { session: { cookie, csrf: "" } }), "/dashboard/workspaces")
        }
        expect((yield* dashboard("GET", "/dashboard/workspaces", { session })).status).toBe(200)
      }))

    it.effect("an integrator is signed out when the API token they signed in with is revoked", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const session = yield* signIn(tenant.token)
        const path = `/dashboard/w/${tenant.workspaceId}/integrations`
        expect((yield* dashboard("GET", path, { session })).status).toBe(200)
        const [token] = yield* tokensOf(tenant.workspaceId)
        expect((yield* admin("DELETE", `/tokens/${token!.id}`)).status).toBe(204)
        expectSignedOut(yield* dashboard("GET", path, { session }), path)
        const post = yield* dashboard("POST", `/dashboard/w/${tenant.workspaceId}/api/tokens`, { session, form: { name: "x" } })
        expect(post.status).toBe(401)
        expect((yield* tokensOf(tenant.workspaceId)).length).toBe(1)
      }))

    it.effect("an integrator is signed out when their workspace is deleted", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const session = yield* signIn(tenant.token)
        const path = `/dashboard/w/${tenant.workspaceId}/api`
        expect((yield* dashboard("GET", path, { session })).status).toBe(200)
        expect((yield* admin("DELETE", `/workspaces/${tenant.workspaceId}`)).status).toBe(204)
        expectSignedOut(yield* dashboard("GET", path, { session }), path)
        // The operator sees it as not found.
        expectNotFound(yield* dashboard("GET", path, { session: yield* signIn() }))
      }))

    it.effect("CSRF: a POST without _csrf or with another session's token is refused (403) and creates nothing", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const session = yield* signIn(tenant.token)
        const other = yield* signIn(tenant.token)
        expect(other.csrf).not.toBe(session.csrf)
        const path = `/dashboard/w/${tenant.workspaceId}/api/tokens`
        for (
          const attempt of [
            { session, form: { name: "no csrf" }, csrf: false },
            { session, form: { name: "wrong csrf", _csrf: "wrong" } },
            { session, form: { name: "empty csrf", _csrf: "" } },
            { session, form: { name: "other session's", _csrf: other.csrf } }
          ]
        ) {
          const answer = yield* dashboard("POST", path, attempt)
          expect(answer.status, attempt.form.name).toBe(403)
          expect(visibleText(answer)).toContain("This form was not sent from this dashboard page")
        }
        const operator = yield* signIn()
        expect((yield* dashboard("POST", "/dashboard/workspaces", { session: operator, csrf: false, form: { name: "CSRF" } })).status)
          .toBe(403)
        expect((yield* admin("GET", "/workspaces")).body).not.toContainEqual(expect.objectContaining({ name: "CSRF" }))
        expect((yield* tokensOf(tenant.workspaceId)).length).toBe(1)

        // The header works as well as the field (for the script's requests).
        const viaHeader = yield* dashboard("POST", path, {
          session,
          csrf: false,
          form: { name: "via header" },
          headers: { "x-csrf-token": session.csrf }
        })
        expect(viaHeader.status).toBe(201)
        expect((yield* tokensOf(tenant.workspaceId)).map((token) => token.name)).toEqual(["default", "via header"])
      }))

    it.effect("a POST from another origin (Origin header) is refused (403), even with the CSRF token", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const session = yield* signIn(tenant.token)
        const path = `/dashboard/w/${tenant.workspaceId}/api/tokens`
        for (const origin of ["https://evil.example", "null", "http://127.0.0.1.evil.example"]) {
          const answer = yield* dashboard("POST", path, { session, form: { name: origin }, headers: { origin } })
          expect(answer.status, origin).toBe(403)
          // The sign-in form too.
          const signInAnswer = yield* dashboard("POST", "/dashboard/sign-in", { form: { token: ADMIN_TOKEN }, headers: { origin } })
          expect(signInAnswer.status, origin).toBe(403)
          expect(signInAnswer.headers["set-cookie"]).toBeUndefined()
        }
        expect((yield* tokensOf(tenant.workspaceId)).length).toBe(1)
        // The page's own origin is accepted.
        const own = yield* dashboard("GET", `/dashboard/w/${tenant.workspaceId}/api`, { session })
        const host = /<code>http:\/\/([^<]+)<\/code>/.exec(own.text)?.[1]
        expect(host).toBeDefined()
        const accepted = yield* dashboard("POST", path, { session, form: { name: "same origin" }, headers: { origin: `http://${host}` } })
        expect(accepted.status).toBe(201)
      }))

    it.effect("pages are never cached and allow no inline script (CSP), framing or sniffing", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const session = yield* signIn(tenant.token)
        const pages = [
          yield* dashboard("GET", "/dashboard"),
          yield* dashboard("GET", `/dashboard/w/${tenant.workspaceId}/integrations`, { session }),
          yield* dashboard("GET", `/dashboard/w/${tenant.workspaceId}/api`, { session }),
          yield* dashboard("GET", "/dashboard/nowhere"),
          yield* dashboard("POST", "/dashboard/sign-in", { form: { token: "wrong" } })
        ]
        for (const page of pages) {
          expect(page.headers["cache-control"]).toBe("no-store")
          const csp = page.headers["content-security-policy"] ?? ""
          const scriptSrc = /script-src ([^;]+)/.exec(csp)?.[1] ?? /default-src ([^;]+)/.exec(csp)?.[1]
          expect(scriptSrc).toBe("'self'")
          expect(csp).not.toContain("unsafe-inline")
          expect(csp).not.toContain("unsafe-eval")
          expect(csp).toContain("frame-ancestors 'none'")
          expect(page.headers["x-content-type-options"]).toBe("nosniff")
          expect(page.headers["x-frame-options"]).toBe("DENY")
          // No inline script and no style attribute in the markup itself.
          expect(page.text).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/)
          expect(page.text).not.toMatch(/\sstyle="/)
        }
      }))

    it.effect("the stylesheet and script are served; their ?v= URL is cached for good, any other revalidated", () =>
      Effect.gen(function*() {
        const form = yield* dashboard("GET", "/dashboard")
        const css = /<link rel="stylesheet" href="(\/dashboard\/assets\/dashboard\.css\?v=[^"]+)">/.exec(form.text)?.[1]
        const js = /<script src="(\/dashboard\/assets\/dashboard\.js\?v=[^"]+)" defer><\/script>/.exec(form.text)?.[1]
        expect(css).toBeDefined()
        expect(js).toBeDefined()
        for (const [path, type] of [[css!, "text/css"], [js!, "text/javascript"]] as const) {
          const versioned = yield* dashboard("GET", path)
          expect(versioned.status).toBe(200)
          expect(versioned.headers["content-type"]).toBe(`${type}; charset=utf-8`)
          expect(versioned.headers["cache-control"]).toBe("public, max-age=31536000, immutable")
          expect(versioned.headers["x-content-type-options"]).toBe("nosniff")
          expect(versioned.text.length).toBeGreaterThan(100)
          const bare = yield* dashboard("GET", path.split("?")[0]!)
          expect(bare.status).toBe(200)
          expect(bare.text).toBe(versioned.text)
          expect(bare.headers["cache-control"]).toBe("no-cache")
          const stale = yield* dashboard("GET", `${path.split("?")[0]!}?v=old`)
          expect(stale.headers["cache-control"]).toBe("no-cache")
        }
      }))

    it.effect("an unknown /dashboard path answers the dashboard's HTML 404", () =>
      Effect.gen(function*() {
        const session = yield* signIn()
        for (const path of ["/dashboard/nowhere", "/dashboard/assets/other.css", "/dashboard/w", "/dashboard/a/b/c"]) {
          expectNotFound(yield* dashboard("GET", path))
          expectNotFound(yield* dashboard("GET", path, { session }))
        }
        // An id that does not exist, or is not an id, within a workspace's pages.
        const unknown = "00000000-0000-4000-8000-000000000000"
        for (
          const path of [
            `/dashboard/w/${unknown}/integrations`,
            `/dashboard/w/${unknown}`,
            "/dashboard/w/not-a-uuid/api",
            `/dashboard/w/${unknown}/nowhere`
          ]
        ) {
          expectNotFound(yield* dashboard("GET", path, { session }))
        }
      }))

    it.effect("without a session a workspace page sends the browser to /dashboard?next=<that page>, and back after", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const path = `/dashboard/w/${tenant.workspaceId}/integrations/${tenant.integrationId}?done=x`
        const answer = yield* dashboard("GET", path)
        expectSignedOut(answer, path)
        const form = yield* dashboard("GET", answer.headers["location"]!)
        expect(form.text).toContain(`name="next" value="${path}"`)
        const back = yield* dashboard("POST", "/dashboard/sign-in", { form: { token: tenant.token, next: path } })
        expect(back.headers["location"]).toBe(path)
        // A POST without a session answers 401 (and changes nothing).
        const post = yield* dashboard("POST", `/dashboard/w/${tenant.workspaceId}/api/tokens`, { form: { name: "x" } })
        expect(post.status).toBe(401)
        expect((yield* tokensOf(tenant.workspaceId)).length).toBe(1)
      }))
  })

  layer(TestApp({ PARLEY_DASHBOARD_SESSION_TTL: "5 minutes" }), { timeout: 120_000 })((it) => {
    it.effect("a session ends after PARLEY_DASHBOARD_SESSION_TTL (the server runs on the TestClock)", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const answer = yield* dashboard("POST", "/dashboard/sign-in", { form: { token: ADMIN_TOKEN } })
        expect(cookieAttributes(answer)["max-age"]).toBe("300")
        const operator = yield* signIn()
        const integrator = yield* signIn(tenant.token)
        const path = `/dashboard/w/${tenant.workspaceId}/api`
        yield* TestClock.adjust("299 seconds")
        expect((yield* dashboard("GET", path, { session: operator })).status).toBe(200)
        expect((yield* dashboard("GET", path, { session: integrator })).status).toBe(200)
        yield* TestClock.adjust("1 second")
        expectSignedOut(yield* dashboard("GET", path, { session: operator }), path)
        expectSignedOut(yield* dashboard("GET", path, { session: integrator }), path)
        // A new sign-in works again.
        expect((yield* dashboard("GET", path, { session: yield* signIn() })).status).toBe(200)
      }))
  })

  layer(TestApp({ PARLEY_RATE_LIMIT: "2" }), { timeout: 120_000 })((it) => {
    it.effect("sign-in attempts are rate-limited: the third in a minute answers 429 with Retry-After", () =>
      Effect.gen(function*() {
        expect((yield* dashboard("POST", "/dashboard/sign-in", { form: { token: "wrong-1" } })).status).toBe(401)
        expect((yield* dashboard("POST", "/dashboard/sign-in", { form: { token: "wrong-2" } })).status).toBe(401)
        // Even the right token: the attempt is refused before it is checked.
        const limited = yield* dashboard("POST", "/dashboard/sign-in", { form: { token: ADMIN_TOKEN } })
        expect(limited.status).toBe(429)
        const retryAfter = Number(limited.headers["retry-after"])
        expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60).toBe(true)
        expect(limited.headers["set-cookie"]).toBeUndefined()
        expect(visibleText(limited)).toContain(`Too many sign-in attempts: try again in ${retryAfter} seconds.`)
        expect(limited.headers["cache-control"]).toBe("no-store")
        // The bucket refills (at 2 a minute, one attempt every 30 seconds).
        yield* TestClock.adjust("30 seconds")
        expect((yield* dashboard("POST", "/dashboard/sign-in", { form: { token: ADMIN_TOKEN } })).status).toBe(303)
      }))
  })
})

describe("the operator's workspaces page", () => {
  layer(TestApp(), { timeout: 120_000 })((it) => {
    it.effect("lists every workspace (name linking to it, ID) and creates one, its API token shown once", () =>
      Effect.gen(function*() {
        const existing = yield* createWorkspace("Existing <one>")
        const session = yield* signIn()
        const page = yield* dashboard("GET", "/dashboard/workspaces", { session })
        expect(page.status).toBe(200)
        expect(page.text).toContain(`<a href="/dashboard/w/${existing.id}/integrations">Existing &lt;one&gt;</a>`)
        expect(page.text).toContain(`<code>${existing.id}</code>`)
        expect(page.text).toMatch(/<label for="workspace-name">Name<\/label>\s*<input id="workspace-name" name="name"/)

        const created = yield* dashboard("POST", "/dashboard/workspaces", { session, form: { name: "From the dashboard" } })
        expect(created.status).toBe(201)
        const token = /<code id="new-token" class="secret">([^<]+)<\/code>/.exec(created.text)?.[1]
        const id = /<code id="workspace-id" class="secret">([^<]+)<\/code>/.exec(created.text)?.[1]
        expect(token).toMatch(/^prl_/)
        expect((yield* call("GET", "/v1/integration/list", { token: token! })).status).toBe(200)
        const summaries = (yield* admin("GET", "/workspaces").pipe(Effect.flatMap(bodyAs(Schema.Array(WorkspaceSummary))))).body
        expect(summaries.find((workspace) => workspace.id === id)?.name).toBe("From the dashboard")
        // Shown once: not on the list afterwards.
        const after = yield* dashboard("GET", "/dashboard/workspaces", { session })
        expect(after.text).toContain("From the dashboard")
        expect(after.text).not.toContain(token!)

        for (const [name, problem] of [["", "at least 1 character"], ["   ", "at least 1 character"], ["x".repeat(201), "at most 200 characters"]]) {
          const count = (yield* admin("GET", "/workspaces").pipe(Effect.flatMap(bodyAs(Schema.Array(WorkspaceSummary))))).body.length
          const refused = yield* dashboard("POST", "/dashboard/workspaces", { session, form: { name } })
          expect(refused.status).toBe(422)
          expect(visibleText(refused)).toContain(`Nothing was created: String should have ${problem}`)
          expect((yield* admin("GET", "/workspaces").pipe(Effect.flatMap(bodyAs(Schema.Array(WorkspaceSummary))))).body.length)
            .toBe(count)
        }
      }))

    // BUG (src/Dashboard/Workspaces.ts, create, lines 42-43): the name is only checked for its length,
    // not decoded with the API's schema (`NewWorkspace`: no NUL character), so a name with U+0000
    // reaches PostgreSQL, which refuses it: 500 (the API's JSON "Internal error") where the admin API
    it.effect("a workspace name with a NUL character: 422, nothing created", () =>
      Effect.gen(function*() {
        const session = yield* signIn()
        const count = (yield* admin("GET", "/workspaces").pipe(Effect.flatMap(bodyAs(Schema.Array(WorkspaceSummary))))).body.length
        const refused = yield* dashboard("POST", "/dashboard/workspaces", { session, form: { name: "a\u0000b" } })
        expect((yield* admin("GET", "/workspaces").pipe(Effect.flatMap(bodyAs(Schema.Array(WorkspaceSummary))))).body.length)
          .toBe(count)
        expect(refused.status).toBe(422)
        expect(refused.headers["content-type"]).toMatch(/^text\/html/)
      }))

    it.effect("an integrator cannot see or use it (404), nor create a workspace", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const session = yield* signIn(tenant.token)
        expectNotFound(yield* dashboard("GET", "/dashboard/workspaces", { session }))
        const before = (yield* admin("GET", "/workspaces").pipe(Effect.flatMap(bodyAs(Schema.Array(WorkspaceSummary))))).body.length
        expectNotFound(yield* dashboard("POST", "/dashboard/workspaces", { session, form: { name: "Intruder's" } }))
        expect((yield* admin("GET", "/workspaces").pipe(Effect.flatMap(bodyAs(Schema.Array(WorkspaceSummary))))).body.length)
          .toBe(before)
      }))
  })
})

describe("tenancy: an integrator of workspace B reaches nothing of workspace A", () => {
  layer(TestApp(), { timeout: 120_000 })((it) => {
    /** What the admin API says about `tenant`'s workspace: tokens, secret, integrations. */
    const snapshot = (tenant: Tenant) =>
      Effect.gen(function*() {
        return {
          tokens: yield* tokensOf(tenant.workspaceId),
          secret: (yield* workspaceDetail(tenant.workspaceId)).webhookSecret,
          integrations: yield* integrationsOf(tenant.workspaceId)
        }
      })

    it.effect("every page and form of A answers 404 to B's integrator, and nothing of A changes", () =>
      Effect.gen(function*() {
        const a = yield* makeTenant()
        const b = yield* makeTenant()
        const session = yield* signIn(b.token)
        const before = yield* snapshot(a)
        const aToken = before.tokens[0]!.id
        const A = `/dashboard/w/${a.workspaceId}`

        for (
          const path of [
            A,
            `${A}/integrations`,
            `${A}/integrations/${a.integrationId}`,
            `${A}/integrations/${a.integrationId}/conversations`,
            `${A}/integrations/${a.integrationId}/deliveries`,
            `${A}/api`,
            `${A}/api?reveal=secret`,
            `${A}/ai`
          ]
        ) {
          const page = yield* dashboard("GET", path, { session })
          expectNotFound(page)
          expect(page.text, path).not.toContain(a.webhookSecret)
          expect(page.text, path).not.toContain(a.integrationId)
          expect(page.text, path).not.toContain(a.workspaceId)
        }

        const posts: ReadonlyArray<readonly [string, Record<string, string>]> = [
          [`${A}/api/tokens`, { name: "intruder" }],
          [`${A}/api/tokens/${aToken}/revoke`, {}],
          [`${A}/api/webhook-secret/rotate`, {}],
          [`${A}/integrations`, { name: "Intruder", kind: "api", url: "https://evil.example/hook" }],
          [`${A}/integrations/${a.integrationId}`, { name: "Renamed by B", url: "https://evil.example/hook" }]
        ]
        for (const [path, form] of posts) {
          const answer = yield* dashboard("POST", path, { session, form })
          expectNotFound(answer)
          expect(answer.text, path).not.toContain("prl_")
          expect(answer.text, path).not.toContain("whsec_")
        }

        expect(yield* snapshot(a)).toEqual(before)
        // A's token still works.
        expect((yield* call("GET", "/v1/integration/list", { token: a.token })).status).toBe(200)
        // B's own pages work with the same session.
        expect((yield* dashboard("GET", `/dashboard/w/${b.workspaceId}/api`, { session })).status).toBe(200)
      }))

    it.effect("A's integration id under B's path answers 404, and A's integration is unchanged", () =>
      Effect.gen(function*() {
        const a = yield* makeTenant()
        const b = yield* makeTenant()
        const session = yield* signIn(b.token)
        const before = yield* snapshot(a)
        const B = `/dashboard/w/${b.workspaceId}`
        expectNotFound(yield* dashboard("GET", `${B}/integrations/${a.integrationId}`, { session }))
        expectNotFound(
          yield* dashboard("POST", `${B}/integrations/${a.integrationId}`, {
            session,
            form: { name: "Renamed through B", url: "https://evil.example/hook", "feature.csat": "on" }
          })
        )
        // The operator too: an id is looked up in the workspace of the path.
        const operator = yield* signIn()
        expectNotFound(yield* dashboard("GET", `${B}/integrations/${a.integrationId}`, { session: operator }))
        expect(yield* snapshot(a)).toEqual(before)
      }))

    it.effect("A's token revoked through B's path answers 404, and A's token still works", () =>
      Effect.gen(function*() {
        const a = yield* makeTenant()
        const b = yield* makeTenant()
        const aToken = (yield* tokensOf(a.workspaceId))[0]!.id
        for (const session of [yield* signIn(b.token), yield* signIn()]) {
          expectNotFound(
            yield* dashboard("POST", `/dashboard/w/${b.workspaceId}/api/tokens/${aToken}/revoke`, { session })
          )
        }
        expect((yield* tokensOf(a.workspaceId))[0]!.revokedAt).toBeNull()
        expect((yield* call("GET", "/v1/integration/list", { token: a.token })).status).toBe(200)
      }))

    it.effect("the operator reaches every workspace", () =>
      Effect.gen(function*() {
        const a = yield* makeTenant()
        const b = yield* makeTenant()
        const session = yield* signIn()
        for (const tenant of [a, b]) {
          const page = yield* dashboard("GET", `/dashboard/w/${tenant.workspaceId}/integrations`, { session })
          expect(page.status).toBe(200)
          expect(page.text).toContain(tenant.integrationId)
          const home = yield* dashboard("GET", `/dashboard/w/${tenant.workspaceId}`, { session })
          expect(home.status).toBe(303)
          expect(home.headers["location"]).toBe(`/dashboard/w/${tenant.workspaceId}/integrations`)
        }
      }))
  })
})
