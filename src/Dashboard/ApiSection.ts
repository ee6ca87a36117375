/**
 * The API section (the spec's "configuration, API section"): what an integrator copies into their
 * system. The workspace's API tokens (create: the new token shown once, with a copy button; revoke),
 * its webhook secret (revealed on request; rotated, with the previous secret's grace period shown) and
 * its integration IDs.
 */
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import { Admin } from "../Admin/Admin.js"
import { decodeInput, NotFound } from "../Domain/Errors.js"
import { TokenId } from "../Domain/Ids.js"
import { NewToken } from "../Domain/Workspace.js"
import { Integrations } from "../Integrations/Integrations.js"
import { badge, copyable, doneNotice, fieldError, invalidIf, time, workspacePage, workspacePath } from "./Components.js"
import { type Html, html } from "./Html.js"
import { csrfField, field, param, seeOther, type WorkspaceRequest, workspaceRoute } from "./Page.js"

/** What a form just did, shown once on the page it answers with. */
type Outcome =
  | { readonly _tag: "None" }
  | { readonly _tag: "TokenCreated"; readonly token: string; readonly name: string | null }
  | { readonly _tag: "Invalid"; readonly field: "token-name"; readonly message: string }

const none: Outcome = { _tag: "None" }

const MAX_TOKEN_NAME = 200

const tokensSection = (request: WorkspaceRequest, outcome: Outcome) =>
  Effect.gen(function*() {
    const tokens = yield* Admin.use((admin) => admin.listTokens(request.workspace.id))
    const own = request.session.role === "integrator" ? request.session.tokenId : undefined
    const invalid = outcome._tag === "Invalid" ? outcome : undefined
    return html`
<section class="panel" aria-labelledby="tokens-heading">
  <h2 id="tokens-heading">API tokens</h2>
  <p>Send one as <code>Authorization: Bearer &lt;token&gt;</code> on every API call. Parley keeps only a hash: a token is shown once, when it is created.</p>
  ${
      outcome._tag === "TokenCreated"
        ? html`<div class="notice" role="status"><p>New API token${outcome.name === null ? "" : html` “${outcome.name}”`} — copy it now, it will not be shown again:</p>${
          copyable("new-token", outcome.token, "Copy token")
        }</div>`
        : ""
    }
  <div class="table-wrap" tabindex="0"><table>
    <thead><tr><th scope="col">Name</th><th scope="col">ID</th><th scope="col">Created</th><th scope="col">State</th><th scope="col"><span class="visually-hidden">Action</span></th></tr></thead>
    <tbody>${
      tokens.map((token) =>
        html`<tr id="token-${token.id}">
      <td>${token.name ?? html`<span class="hint">unnamed</span>`}${token.id === own ? html` <span class="hint">(you signed in with it)</span>` : ""}</td>
      <td><code>${token.id}</code></td>
      <td>${time(token.createdAt)}</td>
      <td>${token.revokedAt === null ? html`${badge("active")}` : html`${badge("revoked")} ${time(token.revokedAt)}`}</td>
      <td>${
          token.revokedAt === null
            ? html`<form method="post" action="${workspacePath(request, `/api/tokens/${token.id}/revoke`)}" class="inline"
          data-confirm="${token.id === own ? "Revoke the token you signed in with? You will be signed out." : "Revoke this token? Calls with it fail at once."}">
          ${csrfField(request.session)}<button type="submit" class="danger" aria-label="Revoke token ${token.name ?? token.id}">Revoke</button></form>`
            : ""
        }</td></tr>`
      )
    }</tbody>
  </table></div>
  <form method="post" action="${workspacePath(request, "/api/tokens")}">
    ${csrfField(request.session)}
    <label for="token-name">New token's name <span class="hint">Optional: where it will be used (“production”, “staging”)</span></label>
    <input id="token-name" name="name" type="text" maxlength="${MAX_TOKEN_NAME}"${invalidIf("token-name", invalid?.message)}>
    ${fieldError("token-name", invalid?.message)}
    <p><button type="submit">Create API token</button></p>
  </form>
</section>`
  })

const secretSection = (request: WorkspaceRequest) =>
  Effect.gen(function*() {
    const now = yield* DateTime.now
    const secret = request.url.searchParams.get("reveal") === "secret"
      ? Option.some((yield* Admin.use((admin) => admin.getWorkspace(request.workspace.id))).webhookSecret)
      : Option.none<string>()
    const previousUntil = Option.filter(
      Option.fromNullishOr(request.workspace.previousSecretExpiresAt),
      (until) => DateTime.isGreaterThan(until, now)
    )
    return html`
<section class="panel" aria-labelledby="secret-heading">
  <h2 id="secret-heading">Webhook secret</h2>
  <p>Parley signs every webhook with it (<code>X-Parley-Webhook-Signature</code> and Standard Webhooks' <code>webhook-signature</code>); verify each one with it.</p>
  ${
      Option.match(secret, {
        onNone: () =>
          html`<p><a class="button secondary" href="${workspacePath(request, "/api?reveal=secret")}#secret-heading">Reveal the webhook secret</a></p>`,
        onSome: (value) => copyable("webhook-secret", value, "Copy secret")
      })
    }
  ${
      Option.match(previousUntil, {
        onNone: () => "",
        onSome: (until) =>
          html`<p class="notice" role="status">The previous secret still signs webhooks too until ${time(until)} (the rotation's grace period): switch your receiver to the new one before then.</p>`
      })
    }
  <form method="post" action="${workspacePath(request, "/api/webhook-secret/rotate")}"
    data-confirm="Rotate the webhook secret? The previous one keeps signing only during the grace period.">
    ${csrfField(request.session)}
    <p><button type="submit" class="secondary">Rotate the webhook secret</button></p>
  </form>
</section>`
  })

const integrationIdsSection = (request: WorkspaceRequest) =>
  Effect.gen(function*() {
    const integrations = yield* Integrations.use((service) => service.list(request.workspace.id))
    return html`
<section class="panel" aria-labelledby="ids-heading">
  <h2 id="ids-heading">Integration IDs</h2>
  <p>The <code>{integration_id}</code> of every API path, for example <code>POST /v1/webhooks/{integration_id}/message-received</code>.</p>
  ${
      integrations.length === 0
        ? html`<p>No integration yet: <a href="${workspacePath(request, "/integrations")}">create one</a>.</p>`
        : html`<dl class="facts">${
          integrations.map((integration) =>
            html`<dt>${integration.settings.name}</dt><dd>${
              copyable(`integration-id-${integration.integrationId}`, integration.integrationId, "Copy ID")
            }</dd>`
          )
        }</dl>`
    }
</section>`
  })

const apiPage = (request: WorkspaceRequest, outcome: Outcome, status = 200) =>
  Effect.gen(function*() {
    const sections: ReadonlyArray<Html> = [
      yield* tokensSection(request, outcome),
      yield* secretSection(request),
      yield* integrationIdsSection(request)
    ]
    return workspacePage(request, {
      title: "API",
      section: "api",
      status,
      body: html`<h1>API</h1>
${
        doneNotice(request, {
          revoked: "Token revoked: calls with it now answer 401.",
          rotated: "Webhook secret rotated: the new one is shown below."
        })
      }
<dl class="facts"><dt>Workspace ID</dt><dd>${copyable("workspace-id", request.workspace.id)}</dd>
<dt>API base URL</dt><dd><code>${baseUrl(request)}</code> <a href="/docs">API reference</a></dd></dl>
${sections}`
    })
  })

/** Where this Parley is reached, as the browser reached it. */
const baseUrl = (request: WorkspaceRequest) => {
  const proto = (request.request.headers["x-forwarded-proto"] ?? "http").split(",")[0]?.trim() ?? "http"
  return `${proto}://${request.request.headers["host"] ?? "localhost"}`
}

const show = workspaceRoute("GET", "/dashboard/w/:workspaceId/api", (request) => apiPage(request, none))

const createToken = workspaceRoute("POST", "/dashboard/w/:workspaceId/api/tokens", (request) =>
  Effect.gen(function*() {
    const typed = field(request, "name") ?? ""
    // Checked by the admin API's own schema: the same problems, with the same messages.
    const decoded = yield* Effect.result(decodeInput(NewToken)({ name: typed === "" ? null : typed }))
    if (Result.isFailure(decoded)) {
      const message = decoded.failure.problems.map((problem) => problem.message).join("; ")
      return yield* apiPage(request, { _tag: "Invalid", field: "token-name", message }, 422)
    }
    const name = decoded.success.name
    const created = yield* Admin.use((admin) => admin.createToken(request.workspace.id, name))
    yield* Effect.logInfo("API token created from the dashboard").pipe(
      Effect.annotateLogs({
        "workspace.id": request.workspace.id,
        "auth.token_id": created.id,
        // Who made it: the operator, or the integrator's token (revoke both after a leak).
        "created_by": request.session.role === "operator" ? "operator" : request.session.tokenId
      })
    )
    // Shown on this answer only (not after a redirect): the token exists nowhere else.
    return yield* apiPage(request, { _tag: "TokenCreated", token: created.token, name }, 201)
  }))

const revokeToken = workspaceRoute("POST", "/dashboard/w/:workspaceId/api/tokens/:tokenId/revoke", (request) =>
  Effect.gen(function*() {
    const tokenId = yield* param(request, "tokenId", TokenId)
    // The admin service revokes any token by id: only one of this workspace's may be revoked here.
    const tokens = yield* Admin.use((admin) => admin.listTokens(request.workspace.id))
    if (!tokens.some((token) => token.id === tokenId)) return yield* new NotFound({ detail: "Unknown token" })
    yield* Admin.use((admin) => admin.revokeToken(tokenId)).pipe(Effect.catchTag("NotFound", () => Effect.void))
    yield* Effect.logInfo("API token revoked from the dashboard").pipe(
      Effect.annotateLogs({ "workspace.id": request.workspace.id, "auth.token_id": tokenId })
    )
    return seeOther(`${workspacePath(request, "/api")}?done=revoked`)
  }))

/**
 * Rotates, then shows the new secret after a redirect (303): reloading the page does not rotate again
 * (a second rotation would end the grace of the secret the receivers still use).
 */
const rotateSecret = workspaceRoute("POST", "/dashboard/w/:workspaceId/api/webhook-secret/rotate", (request) =>
  Effect.gen(function*() {
    yield* Admin.use((admin) => admin.rotateWebhookSecret(request.workspace.id))
    yield* Effect.logInfo("Webhook secret rotated from the dashboard").pipe(
      Effect.annotateLogs("workspace.id", request.workspace.id)
    )
    return seeOther(`${workspacePath(request, "/api")}?reveal=secret&done=rotated#secret-heading`)
  }))

export const ApiSectionRoutes = [show, createToken, revokeToken, rotateSecret]
