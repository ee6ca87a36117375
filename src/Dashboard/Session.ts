/**
 * Dashboard sign-in sessions: a signed cookie (HMAC-SHA256), HTTP-only, `SameSite=Strict`, scoped to
 * `/dashboard`, expiring after `PARLEY_DASHBOARD_SESSION_TTL`. It holds who signed in (the operator, or
 * an integrator and the workspace and API token they signed in with), when it expires, and the
 * session's CSRF token, never a credential. Its key is derived from the admin token, so changing the
 * admin token signs everyone out; an integrator's session ends when its API token is revoked or its
 * workspace deleted (checked on every request).
 */
import * as Context from "effect/Context"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as crypto from "node:crypto"
import { AdminToken } from "../Auth/AdminToken.js"
import { constantTimeEqual } from "../Auth/Crypto.js"
import * as AppConfig from "../Config.js"
import { TokenId, WorkspaceId } from "../Domain/Ids.js"
import { Workspaces } from "../Workspaces/Workspaces.js"

export const COOKIE = "parley_session"
export const COOKIE_PATH = "/dashboard"

const Operator = Schema.Struct({ role: Schema.Literal("operator"), csrf: Schema.String, expiresAt: Schema.Number })
const Integrator = Schema.Struct({
  role: Schema.Literal("integrator"),
  workspaceId: WorkspaceId,
  tokenId: TokenId,
  csrf: Schema.String,
  expiresAt: Schema.Number
})

/** Who is signed in. The operator reaches every workspace; an integrator only `workspaceId`. */
export const Session = Schema.Union([Operator, Integrator])
export type Session = typeof Session.Type

const decodeSession = Schema.decodeUnknownOption(Schema.fromJsonString(Session))

/** Whether `session` may see `workspaceId`. */
export const canSee = (session: Session, workspaceId: WorkspaceId): boolean =>
  session.role === "operator" || session.workspaceId === workspaceId

/** The `Secure` attribute, when the browser reached Parley over HTTPS (directly or through a proxy). */
const isHttps = (request: HttpServerRequest.HttpServerRequest): boolean =>
  (request.headers["x-forwarded-proto"] ?? "").split(",")[0]?.trim().toLowerCase() === "https" ||
  request.url.startsWith("https:")

export class DashboardSessions extends Context.Service<DashboardSessions>()("Parley/DashboardSessions", {
  make: Effect.gen(function*() {
    const adminToken = yield* AdminToken
    const workspaces = yield* Workspaces
    const ttl = yield* AppConfig.DashboardSessionTtl
    const key = Buffer.from(
      crypto.hkdfSync("sha256", Redacted.value(adminToken), "parley", "dashboard-session-v1", 32)
    )
    const sign = (payload: string) => crypto.createHmac("sha256", key).update(payload).digest("base64url")

    const cookie = (request: HttpServerRequest.HttpServerRequest, value: string, maxAgeSeconds: number) =>
      `${COOKIE}=${value}; Path=${COOKIE_PATH}; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Strict` +
      (isHttps(request) ? "; Secure" : "")

    /** A new session, and the `Set-Cookie` value that starts it. */
    const start = (
      request: HttpServerRequest.HttpServerRequest,
      who: { readonly role: "operator" } | {
        readonly role: "integrator"
        readonly workspaceId: WorkspaceId
        readonly tokenId: TokenId
      }
    ) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const session: Session = {
          ...who,
          csrf: crypto.randomBytes(24).toString("base64url"),
          expiresAt: now + Duration.toMillis(ttl)
        }
        const payload = Buffer.from(JSON.stringify(session)).toString("base64url")
        return {
          session,
          setCookie: cookie(request, `${payload}.${sign(payload)}`, Math.floor(Duration.toSeconds(ttl)))
        }
      })

    /** The `Set-Cookie` value that ends the session in the browser. */
    const end = (request: HttpServerRequest.HttpServerRequest) => cookie(request, "", 0)

    /**
     * The request's session: a cookie with a valid signature, not expired, and for an integrator an API
     * token still valid (not revoked, its workspace not deleted).
     */
    const read = (request: HttpServerRequest.HttpServerRequest) =>
      Effect.gen(function*() {
        const value = request.cookies[COOKIE]
        if (value === undefined) return Option.none<Session>()
        const [payload, signature, ...rest] = value.split(".")
        if (payload === undefined || signature === undefined || rest.length > 0) return Option.none<Session>()
        if (!constantTimeEqual(signature, sign(payload))) return Option.none<Session>()
        const session = decodeSession(Buffer.from(payload, "base64url").toString("utf8"))
        if (Option.isNone(session)) return session
        if (session.value.expiresAt <= (yield* Clock.currentTimeMillis)) return Option.none<Session>()
        if (session.value.role === "operator") return session
        const active = yield* workspaces.isTokenActive(session.value.workspaceId, session.value.tokenId)
        return active ? session : Option.none<Session>()
      })

    return { start, end, read } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
