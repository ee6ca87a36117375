/** Pieces the dashboard's pages share: the page frame of a workspace, times, badges, copy buttons, tabs. */
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { IntegrationId } from "../Domain/Ids.js"
import type { Integration } from "../Domain/Integration.js"
import { Integrations } from "../Integrations/Integrations.js"
import { type Html, html, type Interpolated } from "./Html.js"
import { layout, type Section } from "./Layout.js"
import { htmlResponse, type PageRequest, param, type SignedInRequest, type WorkspaceRequest } from "./Page.js"

/** A whole page of a workspace: its frame, navigation and `body`. */
export const workspacePage = (
  request: WorkspaceRequest,
  options: { readonly title: string; readonly section: Section; readonly body: Html; readonly status?: number }
) =>
  htmlResponse(
    layout({
      title: options.title,
      session: Option.some(request.session),
      workspace: { id: request.workspace.id, name: request.workspace.name },
      section: options.section,
      body: options.body
    }),
    options.status ?? 200
  )

/** A whole page outside any workspace (the operator's list of workspaces). */
export const plainPage = (
  request: SignedInRequest,
  options: { readonly title: string; readonly section?: Section; readonly body: Html; readonly status?: number }
) =>
  htmlResponse(
    layout({ title: options.title, session: Option.some(request.session), section: options.section, body: options.body }),
    options.status ?? 200
  )

/** A time as UTC, machine-readable in `datetime`. */
export const time = (at: DateTime.DateTime | Date | string | null | undefined): Html => {
  if (at === null || at === undefined) return html`<span class="muted">—</span>`
  const date = typeof at === "string" ? new Date(at) : at instanceof Date ? at : DateTime.toDateUtc(at)
  if (Number.isNaN(date.getTime())) return html`${String(at)}`
  const iso = date.toISOString()
  return html`<time datetime="${iso}">${iso.slice(0, 19).replace("T", " ")} UTC</time>`
}

/** A status word, coloured by its class and readable without colour. */
export const badge = (status: string): Html => html`<span class="badge s-${status}">${status}</span>`

/** A value with a button that copies it (the button works with the script; the value is selectable anyway). */
export const copyable = (id: string, value: string, label = "Copy"): Html =>
  html`<span class="row"><code id="${id}" class="secret">${value}</code><button type="button" class="secondary" data-copy="${id}" aria-label="${label}: ${id}">${label}</button></span>`

/** The path of a workspace's page. */
export const workspacePath = (request: WorkspaceRequest, rest = "") => `/dashboard/w/${request.workspace.id}${rest}`

/** The path of one of an integration's pages. */
export const integrationPath = (request: WorkspaceRequest, integrationId: string, rest = "") =>
  workspacePath(request, `/integrations/${integrationId}${rest}`)

export type IntegrationTab = "settings" | "conversations" | "deliveries"

/** An integration's name and its pages' tabs. */
export const integrationHeader = (request: WorkspaceRequest, integration: Integration, active: IntegrationTab): Html => {
  const tab = (name: IntegrationTab, label: string, rest: string) =>
    html`<a href="${integrationPath(request, integration.integrationId, rest)}"${
      active === name ? html` aria-current="page"` : ""
    }>${label}</a>`
  return html`
<p><a href="${workspacePath(request, "/integrations")}">Integrations</a> ›</p>
<h1>${integration.settings.name}</h1>
<p class="row"><span>Integration ID</span> ${copyable(`integration-id-${integration.integrationId}`, integration.integrationId, "Copy ID")}</p>
<nav class="tabs" aria-label="Integration">
  ${tab("settings", "Settings", "")}
  ${tab("conversations", "Conversations", "/conversations")}
  ${tab("deliveries", "Deliveries", "/deliveries")}
</nav>`
}

/** A `<select>`'s options, `selected` marked. */
export const options = (
  choices: ReadonlyArray<readonly [value: string, label: string]>,
  selected: string | undefined
): Interpolated => choices.map(([value, label]) => html`<option value="${value}"${value === selected ? html` selected` : ""}>${label}</option>`)

/**
 * The notice of what a form did, after its redirect: `?done=<code>` names one of the page's own
 * `messages` (a link cannot put text of its own on the page); other codes show nothing.
 */
export const doneNotice = (request: PageRequest, messages: Readonly<Record<string, string>>): Html => {
  const code = request.url.searchParams.get("done")
  return notice(code !== null && Object.hasOwn(messages, code) ? messages[code] : undefined)
}

/** A notice after a form, announced to screen readers. */
export const notice = (text: string | undefined): Html =>
  text === undefined || text === "" ? html`` : html`<p class="notice" role="status">${text}</p>`

/** The attributes that tie an input `id` to its problem (the element `<id>-error`), when it has one. */
export const invalidIf = (id: string, error: string | undefined): Html =>
  error === undefined ? html`` : html` aria-invalid="true" aria-describedby="${id}-error"`

/** A field's problem, under it (announced when the page comes back with it). */
export const fieldError = (id: string, error: string | undefined): Html =>
  error === undefined ? html`` : html`<p id="${id}-error" class="field-error" role="alert">${error}</p>`

/** The integration `:integrationId` of the path, if it is the workspace's (else 404). */
export const requestedIntegration = (request: WorkspaceRequest) =>
  Effect.gen(function*() {
    const integrationId = yield* param(request, "integrationId", IntegrationId)
    return yield* Integrations.use((integrations) => integrations.find(request.workspace.id, integrationId))
  })

/** The page of one of the workspace's conversations. */
export const conversationPath = (workspaceId: string, conversationId: string, rest = "") =>
  `/dashboard/w/${workspaceId}/conversations/${conversationId}${rest}`

/**
 * A link to `url` when it is a web address (http or https; never `javascript:` or another scheme a
 * customer or integrator may have sent), else `label` as text. It opens nothing of Parley's to the target.
 */
export const externalLink = (url: string, label: Interpolated = url): Html =>
  /^https?:\/\//i.test(url) ? html`<a href="${url}" rel="noopener noreferrer nofollow">${label}</a>` : html`${label}`
