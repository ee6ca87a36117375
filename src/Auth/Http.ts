/** The authentication middleware: API tokens for /v1, the admin token for /admin/v1. */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { Unauthorized } from "../Domain/Errors.js"
import { Workspaces } from "../Workspaces/Workspaces.js"
import { AdminAuth, HelpdeskAuth, WorkspaceAuth } from "./Api.js"
import { AdminToken } from "./AdminToken.js"
import { constantTimeEqual } from "./Crypto.js"
import { RateLimiter } from "./RateLimiter.js"

const missing = new Unauthorized({ detail: "Not authenticated: send Authorization: Bearer <API token>" })
const invalidToken = new Unauthorized({ detail: "Invalid or revoked token" })

/**
 * The bearer token of the Authorization header. `HttpApiSecurity.bearer` neither checks the scheme
 * word nor rejects an empty token, so the header is read here.
 */
const bearerToken = Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
  const match = /^Bearer[ ]+([^\s]+)\s*$/i.exec(request.headers["authorization"] ?? "")
  return Option.fromNullable(match?.[1])
})

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
  Effect.map(makeWorkspaceAuth, ({ fromHeader }) => WorkspaceAuth.of({ bearer: () => fromHeader }))
)

export const HelpdeskAuthLive = Layer.effect(
  HelpdeskAuth,
  Effect.map(makeWorkspaceAuth, ({ authenticate, fromHeader }) =>
    HelpdeskAuth.of({
      bearer: () => fromHeader,
      // Tried when the header is absent or rejected: a token in the query string (RFC 6750 §2.3).
      accessToken: (token) => {
        const value = Redacted.value(token)
        return value === "" ? fromHeader : authenticate(value)
      }
    }))
)

export const AdminAuthLive = Layer.effect(
  AdminAuth,
  Effect.gen(function*() {
    const adminToken = yield* AdminToken
    return AdminAuth.of({
      adminBearer: () =>
        Effect.flatMap(
          bearerToken,
          Option.match({
            onNone: () => Effect.fail(new Unauthorized({ detail: "Not authenticated: send the admin token" })),
            onSome: (token) =>
              constantTimeEqual(token, Redacted.value(adminToken))
                ? Effect.void
                : Effect.fail(new Unauthorized({ detail: "Invalid admin token" }))
          })
        )
    })
  })
)
