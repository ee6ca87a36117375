/**
 * The dashboard as a browser without JavaScript sees it, for HTTP-level tests: a session (its cookie
 * and CSRF token, read from a page's form) and calls that send them. Use it inside a test that has
 * `TestApp`/`TestAppWithWorkers` (the `HttpClient` aimed at the server).
 */
import * as Effect from "effect/Effect"
import { HttpClient, HttpClientRequest } from "effect/http"
import { ADMIN_TOKEN } from "./App.js"

export interface Page {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly text: string
}

export interface DashboardSession {
  readonly cookie: string
  readonly csrf: string
}

/** One call; `session` sends its cookie, `form` posts urlencoded fields (the CSRF token added unless `csrf: false`). */
export const dashboard = (
  method: "GET" | "POST",
  path: string,
  options: {
    readonly session?: DashboardSession | undefined
    readonly form?: Record<string, string> | undefined
    readonly csrf?: boolean | undefined
    readonly headers?: Record<string, string> | undefined
  } = {}
) =>
  Effect.gen(function*() {
    const client = (yield* HttpClient.HttpClient).pipe(HttpClient.followRedirects(0))
    let request = HttpClientRequest.make(method)(path).pipe(HttpClientRequest.setHeaders(options.headers ?? {}))
    if (options.session !== undefined) request = HttpClientRequest.setHeader(request, "cookie", options.session.cookie)
    if (method === "POST") {
      const fields = { ...(options.form ?? {}) }
      if (options.session !== undefined && options.csrf !== false && fields["_csrf"] === undefined) {
        fields["_csrf"] = options.session.csrf
      }
      request = HttpClientRequest.bodyText(request, new URLSearchParams(fields).toString(), "application/x-www-form-urlencoded")
    }
    const response = yield* client.execute(request)
    return { status: response.status, headers: response.headers, text: yield* response.text } satisfies Page
  }).pipe(Effect.scoped, Effect.orDie)

/** The CSRF token of a signed-in page (its sign-out form carries it). */
export const csrfOf = (page: Page): string => {
  const match = /name="_csrf" value="([^"]+)"/.exec(page.text)
  if (match?.[1] === undefined) throw new Error(`No CSRF token on the page (status ${page.status}):\n${page.text.slice(0, 500)}`)
  return match[1]
}

/** Signs in with `token` (the admin token by default) and returns the session. */
export const signIn = (token: string = ADMIN_TOKEN) =>
  Effect.gen(function*() {
    const answer = yield* dashboard("POST", "/dashboard/sign-in", { form: { token } })
    const setCookie = answer.headers["set-cookie"] ?? ""
    const cookie = setCookie.split(";")[0] ?? ""
    if (answer.status !== 303 || !cookie.startsWith("parley_session=")) {
      return yield* Effect.die(new Error(`Sign-in refused: ${answer.status}\n${answer.text.slice(0, 500)}`))
    }
    const home = yield* dashboard("GET", answer.headers["location"] ?? "/dashboard", { session: { cookie, csrf: "" } })
    return { cookie, csrf: csrfOf(home) } satisfies DashboardSession
  })

/** The text of a page without its tags (for assertions about what a reader sees). */
export const visibleText = (page: Page): string =>
  page.text.replace(/<script[\s\S]*?<\/script>/g, "").replace(/<[^>]+>/g, " ").replace(/&amp;/g, "&").replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">").replace(/&quot;/g, "\"").replace(/&#39;/g, "'").replace(/\s+/g, " ").trim()
