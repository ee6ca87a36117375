/** The authentication contract of the HTTP API: who is calling, and the middleware that says so. */
import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSecurity from "@effect/platform/HttpApiSecurity"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Context from "effect/Context"
import * as Schema from "effect/Schema"
import { RateLimitedBody, UnauthorizedBody } from "../Domain/Errors.js"
import type { TokenId, WorkspaceId } from "../Domain/Ids.js"

export class CurrentWorkspace extends Context.Tag("Parley/CurrentWorkspace")<
  CurrentWorkspace,
  { readonly workspaceId: WorkspaceId; readonly tokenId: TokenId }
>() {}

const bearer = HttpApiSecurity.bearer.pipe(
  HttpApiSecurity.annotate(OpenApi.Description, "An API token of the workspace (`prl_...`), from `parley token create`.")
)

const AuthFailure = Schema.Union(UnauthorizedBody, RateLimitedBody)

/** Bearer API token of a workspace; every /v1 endpoint (docs/api.md). */
export class WorkspaceAuth extends HttpApiMiddleware.Tag<WorkspaceAuth>()("Parley/WorkspaceAuth", {
  failure: AuthFailure,
  provides: CurrentWorkspace,
  security: { bearer }
}) {}

/**
 * The helpdesk endpoint also takes the token as the RFC 6750 `access_token` query parameter, since
 * helpdesks often cannot set headers on their webhooks.
 */
export class HelpdeskAuth extends HttpApiMiddleware.Tag<HelpdeskAuth>()("Parley/HelpdeskAuth", {
  failure: AuthFailure,
  provides: CurrentWorkspace,
  security: {
    bearer,
    accessToken: HttpApiSecurity.apiKey({ key: "access_token", in: "query" }).pipe(
      HttpApiSecurity.annotate(OpenApi.Description, "The same API token as a query parameter (RFC 6750 §2.3).")
    )
  }
}) {}

/** The operator's admin token (`PARLEY_ADMIN_TOKEN`). */
export class AdminAuth extends HttpApiMiddleware.Tag<AdminAuth>()("Parley/AdminAuth", {
  failure: UnauthorizedBody,
  security: {
    adminBearer: HttpApiSecurity.bearer.pipe(
      HttpApiSecurity.annotate(OpenApi.Description, "The operator's admin token (PARLEY_ADMIN_TOKEN).")
    )
  }
}) {}
