/**
 * An integration's deliveries (the events Parley sends to its webhook, docs/webhooks.md): the list with
 * its filters, pages and the last hour's charts, one delivery with its body and attempts, and sending
 * again (one, or every failed or dead one since a time). Every page first finds the integration in the
 * session's workspace: the `Deliveries` service takes only an integration id, so that check is what
 * keeps another workspace's deliveries out of reach (404).
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { Deliveries } from "../Delivery/Deliveries.js"
import { type DeliveryDetail, DeliveryStatus, EventKind, isBestEffort } from "../Domain/Delivery.js"
import { EventId } from "../Domain/Ids.js"
import type { Integration } from "../Domain/Integration.js"
import { decodeJsonText, parseTimestamp } from "../Domain/Primitives.js"
import { attemptsChart, chartWindow, latencyChart, minuteBuckets } from "./Charts.js"
import {
  badge,
  conversationPath,
  copyable,
  fieldError,
  integrationHeader,
  invalidIf,
  integrationPath,
  notice,
  options,
  requestedIntegration,
  time,
  workspacePage
} from "./Components.js"
import { attemptsPerMinute, conversationExternalId, type DeliveryPage, deliveryPage, type DeliveryRow } from "./DeliveryQueries.js"
import { type Html, html } from "./Html.js"
import {
  csrfField,
  type DashboardRoute,
  type DashboardServices,
  field,
  param,
  seeOther,
  type WorkspaceRequest,
  workspaceRoute
} from "./Page.js"

const PAGE_SIZE = 50

const BASE = "/dashboard/w/:workspaceId/integrations/:integrationId/deliveries"

const listPath = (request: WorkspaceRequest, integration: Integration, query = "") =>
  integrationPath(request, integration.integrationId, `/deliveries${query}`)

const deliveryPath = (request: WorkspaceRequest, integration: Integration, deliveryId: string, rest = "") =>
  listPath(request, integration, `/${deliveryId}${rest}`)

const none = html`<span class="muted">—</span>`

const shorten = (text: string, max: number) => text.length <= max ? text : `${text.slice(0, max - 1)}…`

// -----------------------------------------------------------------------------
// Filters
// -----------------------------------------------------------------------------

export interface Filters {
  readonly status: DeliveryStatus | undefined
  readonly kind: EventKind | undefined
  /** The keyset cursor (`seq` of the previous page's last row). */
  readonly before: number | undefined
}

export interface FilterErrors {
  readonly status?: string
  readonly kind?: string
}

const isStatus = Schema.is(DeliveryStatus)
const isKind = Schema.is(EventKind)

/**
 * The list's filters from its query string. An unknown status or kind is an error shown next to its
 * field (the page answers 422 rather than silently listing everything); an empty one means any. A
 * cursor that is not a whole number is ignored (the first page).
 */
export const readFilters = (url: URL): { readonly filters: Filters; readonly errors: FilterErrors } => {
  const status = url.searchParams.get("status") ?? ""
  const kind = url.searchParams.get("kind") ?? ""
  const before = url.searchParams.get("before") ?? ""
  const cursor = /^\d{1,15}$/.test(before) ? Number(before) : undefined
  return {
    filters: {
      status: isStatus(status) ? status : undefined,
      kind: isKind(kind) ? kind : undefined,
      before: cursor
    },
    errors: {
      ...(status === "" || isStatus(status) ? {} : { status: `Unknown status “${shorten(status, 40)}”: choose one from the list.` }),
      ...(kind === "" || isKind(kind) ? {} : { kind: `Unknown event kind “${shorten(kind, 40)}”: choose one from the list.` })
    }
  }
}

/** The query string of a list page with `filters` (an empty value is left out). */
const filterQuery = (filters: Filters): string => {
  const query = new URLSearchParams()
  if (filters.status !== undefined) query.set("status", filters.status)
  if (filters.kind !== undefined) query.set("kind", filters.kind)
  if (filters.before !== undefined) query.set("before", String(filters.before))
  const text = query.toString()
  return text === "" ? "" : `?${text}`
}

// -----------------------------------------------------------------------------
// The list
// -----------------------------------------------------------------------------

interface ReplayAllForm {
  readonly value: string
  readonly error: string | undefined
}

interface ListView {
  readonly integration: Integration
  readonly filters: Filters
  readonly errors: FilterErrors
  /** Absent when a filter is invalid. */
  readonly page: DeliveryPage | undefined
  readonly charts: Html
  readonly replayAll: ReplayAllForm
  readonly done: string | undefined
}

/** A `<select>` of the filter form, with its label and its error. */
const filterSelect = (
  name: "status" | "kind",
  label: string,
  choices: ReadonlyArray<string>,
  selected: string | undefined,
  error: string | undefined
) =>
  html`<div>
  <label for="filter-${name}">${label}</label>
  <select id="filter-${name}" name="${name}"${invalidIf(`filter-${name}`, error)}>
    <option value="">Any</option>
    ${options(choices.map((choice) => [choice, choice] as const), selected)}
  </select>
  ${fieldError(`filter-${name}`, error)}
</div>`

const filterForm = (request: WorkspaceRequest, view: ListView) =>
  html`<form method="get" action="${listPath(request, view.integration)}" class="row" aria-label="Filter deliveries">
  ${filterSelect("status", "Status", DeliveryStatus.literals, view.filters.status, view.errors.status)}
  ${filterSelect("kind", "Event kind", EventKind.literals, view.filters.kind, view.errors.kind)}
  <div><button type="submit">Filter</button></div>
</form>`

const finished = (row: DeliveryRow) =>
  row.deliveredAt !== null
    ? html`delivered ${time(row.deliveredAt)}`
    : row.deadAt !== null
    ? html`dead ${time(row.deadAt)}`
    : none

const deliveryRow = (request: WorkspaceRequest, integration: Integration, row: DeliveryRow) =>
  html`<tr>
  <td><a href="${deliveryPath(request, integration, row.id)}"><code>${row.id}</code></a></td>
  <td>${row.kind}</td>
  <td>${
    row.conversationId === null
      ? none
      : html`<a href="${conversationPath(request.workspace.id, row.conversationId)}">${row.conversationExternalId ?? row.conversationId}</a>`
  }</td>
  <td>${badge(row.status)}</td>
  <td>${row.attempts}</td>
  <td>${row.lastStatusCode ?? none}</td>
  <td>${row.lastError === null ? none : html`<span title="${row.lastError}">${shorten(row.lastError, 80)}</span>`}</td>
  <td>${time(row.createdAt)}</td>
  <td>${finished(row)}</td>
</tr>`

const deliveriesTable = (request: WorkspaceRequest, view: ListView, page: DeliveryPage) =>
  html`<div class="table-wrap" tabindex="0"><table>
  <caption class="visually-hidden">Deliveries, newest first</caption>
  <thead><tr>
    <th scope="col">Delivery</th><th scope="col">Kind</th><th scope="col">Conversation</th><th scope="col">Status</th>
    <th scope="col">Attempts</th><th scope="col">Last status code</th><th scope="col">Last error</th>
    <th scope="col">Created</th><th scope="col">Delivered / dead</th>
  </tr></thead>
  <tbody>${
    page.rows.length === 0
      ? html`<tr><td colspan="9">No deliveries${view.filters.before === undefined ? "" : " on this page"}${
        view.filters.status !== undefined || view.filters.kind !== undefined ? " match these filters" : " yet"
      }.</td></tr>`
      : page.rows.map((row) => deliveryRow(request, view.integration, row))
  }</tbody>
</table></div>
${pager(request, view, page)}`

const pager = (request: WorkspaceRequest, view: ListView, page: DeliveryPage) => {
  const newest = view.filters.before === undefined
    ? ""
    : html`<a href="${listPath(request, view.integration, filterQuery({ ...view.filters, before: undefined }))}">Newest</a>`
  const older = page.older === undefined
    ? ""
    : html`<a href="${listPath(request, view.integration, filterQuery({ ...view.filters, before: page.older }))}" rel="next">Older deliveries</a>`
  return newest === "" && older === "" ? "" : html`<nav class="pager" aria-label="Pages of deliveries">${newest}${older}</nav>`
}

const replayAllForm = (request: WorkspaceRequest, view: ListView) => {
  const { error, value } = view.replayAll
  return html`<section class="panel" aria-labelledby="replay-all-heading">
  <h2 id="replay-all-heading">Replay all failed since</h2>
  <form method="post" action="${listPath(request, view.integration, "/replay-all")}" data-confirm="Send every failed or dead delivery created since this time again?">
    ${csrfField(request.session)}
    <label for="replay-since">Failed or dead deliveries created since
      <span class="hint">A date and time in UTC, not your local time. Streamed message_delta events are skipped: replay one from its own page.</span>
    </label>
    <input id="replay-since" name="since" type="datetime-local" step="1" required value="${value}"${invalidIf("replay-since", error)}>
    ${fieldError("replay-since", error)}
    <p><button type="submit">Replay failed deliveries</button></p>
  </form>
</section>`
}

const listBody = (request: WorkspaceRequest, view: ListView) =>
  html`${integrationHeader(request, view.integration, "deliveries")}
${notice(view.done)}
<section class="panel" aria-labelledby="activity-heading">
  <h2 id="activity-heading">Last hour</h2>
  ${view.charts}
</section>
<section class="panel" aria-labelledby="deliveries-heading">
  <h2 id="deliveries-heading">Deliveries</h2>
  ${filterForm(request, view)}
  ${
    view.page === undefined
      ? html`<p class="error" role="alert">The filter is not valid: fix it to see the deliveries.</p>`
      : deliveriesTable(request, view, view.page)
  }
</section>
${replayAllForm(request, view)}`

/** The last hour's charts of the integration's attempts. */
const lastHourCharts = (request: WorkspaceRequest, integration: Integration) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const window = chartWindow(now)
    const summaries = yield* attemptsPerMinute({
      workspaceId: request.workspace.id,
      integrationId: integration.integrationId,
      from: window.from,
      to: window.to
    })
    const buckets = minuteBuckets(now, summaries)
    return html`${attemptsChart(buckets)}${latencyChart(buckets)}`
  })

/** `?done=<count>` after replaying all: how many were queued again (any other value shows nothing). */
const replayedAllNotice = (url: URL): string | undefined => {
  const done = url.searchParams.get("done") ?? ""
  if (!/^\d{1,6}$/.test(done)) return undefined
  const count = Number(done)
  return count === 0
    ? "Replayed 0 deliveries: none failed or dead since that time."
    : `Replayed ${count} failed or dead ${count === 1 ? "delivery" : "deliveries"}: queued to be sent again now.`
}

/** The list page; `replayAll` and `status` when the replay-all form is shown again with its error. */
const listResponse = (
  request: WorkspaceRequest,
  integration: Integration,
  form: { readonly filters: Filters; readonly errors: FilterErrors; readonly replayAll: ReplayAllForm; readonly status: number }
) =>
  Effect.gen(function*() {
    const valid = form.errors.status === undefined && form.errors.kind === undefined
    const page = valid
      ? yield* deliveryPage({
        workspaceId: request.workspace.id,
        integrationId: integration.integrationId,
        ...form.filters,
        limit: PAGE_SIZE
      })
      : undefined
    const charts = yield* lastHourCharts(request, integration)
    return workspacePage(request, {
      title: `Deliveries · ${integration.settings.name}`,
      section: "integrations",
      status: valid ? form.status : 422,
      body: listBody(request, {
        integration,
        filters: form.filters,
        errors: form.errors,
        page,
        charts,
        replayAll: form.replayAll,
        done: replayedAllNotice(request.url)
      })
    })
  })

const list = workspaceRoute("GET", BASE, (request) =>
  Effect.gen(function*() {
    const integration = yield* requestedIntegration(request)
    const { errors, filters } = readFilters(request.url)
    return yield* listResponse(request, integration, {
      filters,
      errors,
      replayAll: { value: "", error: undefined },
      status: 200
    })
  }))

const noFilters: Filters = { status: undefined, kind: undefined, before: undefined }

/** Replays every failed or dead delivery since a time (a `datetime-local` value, read as UTC). */
const replayAll = workspaceRoute("POST", `${BASE}/replay-all`, (request) =>
  Effect.gen(function*() {
    const integration = yield* requestedIntegration(request)
    const value = field(request, "since") ?? ""
    const since = value === "" ? Option.none() : parseTimestamp(value)
    if (Option.isNone(since)) {
      const error = value === ""
        ? "Enter the date and time (UTC) to replay from."
        : "Enter a valid date and time (UTC), such as 2026-11-22T09:30."
      return yield* listResponse(request, integration, {
        filters: noFilters,
        errors: {},
        replayAll: { value, error },
        status: 422
      })
    }
    const { replayed } = yield* Deliveries.use((deliveries) => deliveries.replayAll(integration.integrationId, since.value))
    return seeOther(listPath(request, integration, `?done=${replayed}`))
  }))

// -----------------------------------------------------------------------------
// One delivery
// -----------------------------------------------------------------------------

/** The body as indented JSON when it is JSON (it always is), else as stored. */
const prettyBody = (body: string): string =>
  Result.match(decodeJsonText(body), { onFailure: () => body, onSuccess: (parsed) => JSON.stringify(parsed, null, 2) })

type Attempt = DeliveryDetail["attemptLog"][number]

const attemptRow = (attempt: Attempt) =>
  html`<tr>
  <th scope="row">${attempt.attempt}</th>
  <td>${time(attempt.startedAt)}</td>
  <td>${attempt.statusCode ?? html`<span class="muted">none</span>`}</td>
  <td>${attempt.latencyMs}</td>
  <td>${attempt.error ?? none}</td>
  <td>${attempt.responseSnippet === null || attempt.responseSnippet === "" ? none : html`<code>${attempt.responseSnippet}</code>`}</td>
  <td>${time(attempt.nextRetryAt)}</td>
</tr>`

const attemptsTable = (delivery: DeliveryDetail) =>
  html`<div class="table-wrap" tabindex="0"><table>
  <caption class="visually-hidden">Attempts, oldest first</caption>
  <thead><tr>
    <th scope="col">Attempt</th><th scope="col">Started</th><th scope="col">Status code</th><th scope="col">Latency (ms)</th>
    <th scope="col">Error</th><th scope="col">Response (start)</th><th scope="col">Next retry</th>
  </tr></thead>
  <tbody>${
    delivery.attemptLog.length === 0
      ? html`<tr><td colspan="7">Not attempted yet.</td></tr>`
      : delivery.attemptLog.map(attemptRow)
  }</tbody>
</table></div>`

const facts = (request: WorkspaceRequest, delivery: DeliveryDetail, conversation: string | undefined) =>
  html`<dl class="facts">
  <dt>Delivery ID</dt><dd>${copyable(`delivery-id-${delivery.id}`, delivery.id, "Copy ID")}</dd>
  <dt>Event kind</dt><dd><code>${delivery.event}</code></dd>
  <dt>Status</dt><dd>${badge(delivery.status)}</dd>
  <dt>Conversation</dt><dd>${
    delivery.conversationId === null
      ? none
      : html`<a href="${conversationPath(request.workspace.id, delivery.conversationId)}">${conversation ?? delivery.conversationId}</a>`
  }</dd>
  <dt>Attempts</dt><dd>${delivery.attempts}</dd>
  <dt>Last status code</dt><dd>${delivery.lastStatusCode ?? none}</dd>
  <dt>Last error</dt><dd>${delivery.lastError ?? none}</dd>
  <dt>Created</dt><dd>${time(delivery.createdAt)}</dd>
  <dt>Next attempt</dt><dd>${time(delivery.nextAttemptAt)}</dd>
  <dt>Delivered</dt><dd>${time(delivery.deliveredAt)}</dd>
  <dt>Dead</dt><dd>${time(delivery.deadAt)}</dd>
</dl>`

const replayForm = (request: WorkspaceRequest, integration: Integration, delivery: DeliveryDetail) =>
  html`<form method="post" action="${deliveryPath(request, integration, delivery.id, "/replay")}">
  ${csrfField(request.session)}
  <p class="hint">${
    isBestEffort(delivery.event)
      ? "A message_delta is sent at most once, and its text may be stale: the final send_messages supersedes it."
      : "Sends the same body again now, signed afresh, in a new retry window."
  }</p>
  <p><button type="submit">Replay</button></p>
</form>`

/** `?done=replayed` after the Replay button. */
const replayedNotice = (url: URL): string | undefined =>
  url.searchParams.get("done") === "replayed" ? "Replayed: the delivery is queued to be sent again now." : undefined

const detail = workspaceRoute("GET", `${BASE}/:deliveryId`, (request) =>
  Effect.gen(function*() {
    const integration = yield* requestedIntegration(request)
    const deliveryId = yield* param(request, "deliveryId", EventId)
    const delivery = yield* Deliveries.use((deliveries) => deliveries.get(integration.integrationId, deliveryId))
    const conversation = delivery.conversationId === null
      ? undefined
      : yield* conversationExternalId(request.workspace.id, delivery.conversationId)
    return workspacePage(request, {
      title: `Delivery ${delivery.id} · ${integration.settings.name}`,
      section: "integrations",
      body: html`${integrationHeader(request, integration, "deliveries")}
${notice(replayedNotice(request.url))}
<p><a href="${listPath(request, integration)}">All deliveries</a></p>
<section class="panel" aria-labelledby="delivery-heading">
  <h2 id="delivery-heading">Delivery <code>${delivery.event}</code> ${badge(delivery.status)}</h2>
  ${facts(request, delivery, conversation)}
  ${replayForm(request, integration, delivery)}
</section>
<section class="panel" aria-labelledby="body-heading">
  <h2 id="body-heading">Event body</h2>
  <div class="table-wrap" role="region" aria-labelledby="body-heading" tabindex="0"><pre><code>${prettyBody(delivery.body)}</code></pre></div>
</section>
<section class="panel" aria-labelledby="attempts-heading">
  <h2 id="attempts-heading">Attempts</h2>
  ${attemptsTable(delivery)}
</section>`
    })
  }))

/** The Replay button: sends the delivery again now (the service refuses another integration's: 404). */
const replay = workspaceRoute("POST", `${BASE}/:deliveryId/replay`, (request) =>
  Effect.gen(function*() {
    const integration = yield* requestedIntegration(request)
    const deliveryId = yield* param(request, "deliveryId", EventId)
    yield* Deliveries.use((deliveries) => deliveries.replay(integration.integrationId, deliveryId))
    return seeOther(deliveryPath(request, integration, deliveryId, "?done=replayed"))
  }))

export const DeliveryRoutes: ReadonlyArray<DashboardRoute<DashboardServices>> = [list, replayAll, detail, replay]
