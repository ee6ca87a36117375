/** The authentication contract of the HTTP API: who is calling, and the middleware that says so. */
import * as Context from "effect/Context"
import * as HttpApiMiddleware from "effect/http-api/HttpApiMiddleware"
import * as HttpApiSchema from "effect/http-api/HttpApiSchema"
import * as HttpApiSecurity from "effect/http-api/HttpApiSecurity"
import * as OpenApi from "effect/http-api/OpenApi"
import * as Schema from "effect/Schema"
import { DatabaseUnavailable, RateLimited, Unauthorized } from "../Domain/Errors.js"
import type { TokenId, WorkspaceId } from "../Domain/Ids.js"

export class CurrentWorkspace extends Context.Service<
  CurrentWorkspace,
  { readonly workspaceId: WorkspaceId; readonly tokenId: TokenId }
>()("Parley/CurrentWorkspace") {}

const bearer = HttpApiSecurity.bearer.pipe(
  HttpApiSecurity.annotate(OpenApi.Description, "An API token of the workspace (`prl_...`), from `parley token create`.")
)

/**
 * `{"detail": "..."}` answered with `status`: the body of the answers below. The description is the
 * component's; the response's is set on the error schema (Effect would otherwise name it after the class).
 */
const detail = (status: number, identifier: string, description: string) =>
  Schema.Struct({ detail: Schema.String }).annotate({ identifier, description }).pipe(HttpApiSchema.status(status))

const UNAUTHORIZED = "Missing, malformed, invalid or revoked token (a helpdesk event: also a missing or wrong signature)"
const RATE_LIMITED = "Over the API token's rate limit; retry after the seconds in Retry-After"
const DATABASE_UNAVAILABLE = "The database cannot be reached; nothing was stored, retry after the seconds in Retry-After"

/** Whole seconds, as `Retry-After` carries them (RFC 9110 §10.2.3). */
const RetryAfter = Schema.String.check(Schema.isPattern(/^[0-9]+$/u))

/**
 * 401 with the `WWW-Authenticate: Bearer` challenge (RFC 6750 §3): the same for a missing, a malformed,
 * an invalid or a revoked token, and for the admin token. The headers are part of the schema, so that
 * the OpenAPI document shows them and the typed client reads them.
 */
export const UnauthorizedResponse = Unauthorized.pipe(
  HttpApiSchema.encodeToWithHeaders({
    body: detail(401, "401Error", UNAUTHORIZED),
    headers: { "www-authenticate": Schema.Literal("Bearer").annotate({ description: "The scheme to authenticate with." }) }
  }, {
    decode: ({ body }) => new Unauthorized({ detail: body.detail }),
    encode: (error) => ({ body: { detail: error.detail }, headers: { "www-authenticate": "Bearer" as const } })
  })
).annotate({ description: UNAUTHORIZED })

/** 429 with `Retry-After`: the token's requests are over `PARLEY_RATE_LIMIT` per minute (on this instance). */
const RateLimitedResponse = RateLimited.pipe(
  HttpApiSchema.encodeToWithHeaders({
    body: detail(429, "429Error", RATE_LIMITED),
    headers: {
      "retry-after": RetryAfter.annotate({ description: "Seconds until the token may send its next request." })
    }
  }, {
    decode: ({ body, headers }) => new RateLimited({ detail: body.detail, retryAfterSeconds: Number(headers["retry-after"]) }),
    encode: (error) => ({ body: { detail: error.detail }, headers: { "retry-after": String(error.retryAfterSeconds) } })
  })
).annotate({ description: RATE_LIMITED })

/**
 * 503 with `Retry-After`: the database cannot be reached (refused, reset, no answer in time, shutting
 * down); nothing was stored, and the same request may be sent again. Declared with the authentication
 * because every authenticated operation reads or writes the database (the health checks, which are not
 * authenticated, answer without it or with their own 503); the server answers it from its edge.
 */
const DatabaseUnavailableResponse = DatabaseUnavailable.pipe(
  HttpApiSchema.encodeToWithHeaders({
    body: detail(503, "DatabaseUnavailable", DATABASE_UNAVAILABLE),
    headers: { "retry-after": RetryAfter.annotate({ description: "Seconds to wait before retrying (5)." }) }
  }, {
    decode: ({ body }) => new DatabaseUnavailable({ detail: body.detail }),
    // Never used by the server, whose edge answers this defect itself (with the same 5 seconds).
    encode: (error) => ({ body: { detail: error.detail }, headers: { "retry-after": "5" } })
  })
).annotate({ description: DATABASE_UNAVAILABLE })

const AuthFailure = [UnauthorizedResponse, RateLimitedResponse, DatabaseUnavailableResponse] as const

/** Bearer API token of a workspace; every /v1 endpoint (docs/api.md). */
export class WorkspaceAuth extends HttpApiMiddleware.Service<WorkspaceAuth, {
  provides: CurrentWorkspace
}>()("Parley/WorkspaceAuth", {
  error: AuthFailure,
  security: { bearer }
}) {}

/**
 * The helpdesk endpoint also takes the token as the RFC 6750 `access_token` query parameter, since
 * helpdesks often cannot set headers on their webhooks.
 */
export class HelpdeskAuth extends HttpApiMiddleware.Service<HelpdeskAuth, {
  provides: CurrentWorkspace
}>()("Parley/HelpdeskAuth", {
  error: AuthFailure,
  security: {
    bearer,
    accessToken: HttpApiSecurity.apiKey({ key: "access_token", in: "query" }).pipe(
      HttpApiSecurity.annotate(OpenApi.Description, "The same API token as a query parameter (RFC 6750 §2.3).")
    )
  }
}) {}

/** The operator's admin token (`PARLEY_ADMIN_TOKEN`). */
export class AdminAuth extends HttpApiMiddleware.Service<AdminAuth>()("Parley/AdminAuth", {
  error: [UnauthorizedResponse, DatabaseUnavailableResponse],
  security: {
    adminBearer: HttpApiSecurity.bearer.pipe(
      HttpApiSecurity.annotate(OpenApi.Description, "The operator's admin token (PARLEY_ADMIN_TOKEN).")
    )
  }
}) {}
