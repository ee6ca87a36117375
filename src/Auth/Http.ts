/** The authentication middleware: API tokens for /v1, the admin token for /admin/v1. */
import * as Effect from "effect/Effect"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import type * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { type RateLimited, Unauthorized } from "../Domain/Errors.js"
import { Workspaces } from "../Workspaces/Workspaces.js"
import { AdminAuth, CurrentWorkspace, HelpdeskAuth, WorkspaceAuth } from "./Api.js"
import { AdminToken } from "./AdminToken.js"
import { constantTimeEqual } from "./Crypto.js"
import { RateLimiter } from "./RateLimiter.js"

const missing = new Unauthorized({ detail: "Not authenticated: send Authorization: Bearer <API token>" })
const invalidToken = new Unauthorized({ detail: "Invalid or revoked token" })

/**
 * The bearer token of the Authorization header. `HttpApiSecurity.bearer`'s credential is the header
 * after the scheme word, however it ends (trailing blanks, a second word), so the header is read here.
 */
const bearerToken = Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
  const match = /^Bearer[ ]+([^\s]+)\s*$/i.exec(request.headers["authorization"] ?? "")
  return Option.fromNullishOr(match?.[1])
})

type Caller = CurrentWorkspace["Service"]

/** The handler, run with its authenticated caller as `CurrentWorkspace`. */
const runAs = <R>(
  caller: Effect.Effect<Caller, Unauthorized | RateLimited, R>
) =>
<E2, R2>(httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, E2, R2>) =>
  Effect.flatMap(caller, (workspace) => Effect.provideService(httpEffect, CurrentWorkspace, workspace))

const makeWorkspaceAuth = Effect.gen(function*() {
  const workspaces = yield* Workspaces
  const limiter = yield* RateLimiter
  const authenticate = (token: string) =>
    workspaces.authenticate(token).pipe(
      Effect.flatMap(Option.match({ onNone: () => Effect.fail(invalidToken), onSome: Effect.succeed })),
      Effect.tap((caller) => limiter.take(caller.tokenId)),
      Effect.tap((caller) =>
        Effect.annotateCurrentSpan({ "workspace.id": caller.workspaceId, "auth.token_id": caller.tokenId })
      )
    )
  const fromHeader = Effect.flatMap(
    bearerToken,
    Option.match({ onNone: () => Effect.fail(missing), onSome: authenticate })
  )
  return { authenticate, fromHeader } as const
})

export const WorkspaceAuthLive = Layer.effect(
  WorkspaceAuth,
  Effect.map(makeWorkspaceAuth, ({ fromHeader }) => WorkspaceAuth.of({ bearer: runAs(fromHeader) }))
)

export const HelpdeskAuthLive = Layer.effect(
  HelpdeskAuth,
  Effect.map(makeWorkspaceAuth, ({ authenticate, fromHeader }) =>
    HelpdeskAuth.of({
      bearer: runAs(fromHeader),
      // Tried when the header is absent or rejected: a token in the query string (RFC 6750 §2.3).
      accessToken: (httpEffect, { credential }) => {
        const value = Redacted.value(credential)
        return runAs(value === "" ? fromHeader : authenticate(value))(httpEffect)
      }
    }))
)

export const AdminAuthLive = Layer.effect(
  AdminAuth,
  Effect.gen(function*() {
    const adminToken = yield* AdminToken
    return AdminAuth.of({
      adminBearer: (httpEffect) =>
        Effect.flatMap(bearerToken, (token): Effect.Effect<void, Unauthorized> =>
          Option.isNone(token)
            ? Effect.fail(new Unauthorized({ detail: "Not authenticated: send the admin token" }))
            : constantTimeEqual(token.value, Redacted.value(adminToken))
            ? Effect.void
            : Effect.fail(new Unauthorized({ detail: "Invalid admin token" }))).pipe(Effect.andThen(httpEffect))
    })
  })
)
