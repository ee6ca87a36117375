/**
 * An integration's conversations, one conversation's page (its thread with the AI's reply records,
 * status history, CSAT answer and deliveries), and that page's live updates: server-sent events polled
 * from the database, each a fragment of the same markup the page renders.
 */
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Sse from "effect/encoding/Sse"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import * as Stream from "effect/Stream"
import * as crypto from "node:crypto"
import { ConversationStatus } from "../Domain/Conversation.js"
import { NotFound } from "../Domain/Errors.js"
import { ConversationId, IntegrationId, type WorkspaceId } from "../Domain/Ids.js"
import type { Integration } from "../Domain/Integration.js"
import type { ReplyRecord } from "../Domain/Reply.js"
import { Integrations } from "../Integrations/Integrations.js"
import {
  badge,
  conversationPath,
  copyable,
  externalLink,
  integrationHeader,
  integrationPath,
  options,
  requestedIntegration,
  time,
  workspacePage,
  workspacePath
} from "./Components.js"
import {
  type ConversationDelivery,
  type ConversationDetail,
  type ConversationListRow,
  conversationDeliveries,
  conversationPage,
  type CsatAnswer,
  currentCsat,
  deliveriesVersion,
  deliverySignature,
  findConversation,
  type Probe,
  probe,
  silentHandovers,
  type StatusChange,
  statusChangesAfter,
  threadAfter,
  type ThreadEntry,
  type ThreadMessage
} from "./ConversationQueries.js"
import { type Html, html } from "./Html.js"
import { liveResponse, ticks } from "./Live.js"
import { type DashboardRoute, type DashboardServices, param, workspaceRoute, type WorkspaceRequest } from "./Page.js"

/** Conversations per page of an integration's list. */
export const PAGE_SIZE = 25

// -----------------------------------------------------------------------------
// Pieces
// -----------------------------------------------------------------------------

type Customer = Pick<ConversationDetail, "customerId" | "customerName" | "customerEmail" | "customerUserId">

/** Who the customer is, as far as Parley knows: name and email, else the integrator's id, else Parley's. */
const customer = (row: Customer): Html => {
  const known = [row.customerName, row.customerEmail].filter((part) => part !== null)
  if (known.length > 0) return html`${known.join(" · ")}`
  if (row.customerUserId !== null) return html`<span class="mono">${row.customerUserId}</span>`
  return html`<span class="mono" title="${row.customerId}">${row.customerId.slice(0, 8)}…</span>`
}

/** The conversation's status badge, an element the live updates replace. */
const statusBadge = (status: ConversationStatus): Html => html`<span id="conversation-status">${badge(status)}</span>`

// -----------------------------------------------------------------------------
// The thread
// -----------------------------------------------------------------------------

type MessageClass = "human" | "ai" | "agent" | "note" | "system"

const messageClass = (message: ThreadMessage): MessageClass => {
  if (message.type === "note") return "note"
  if (message.role === "system" || message.type === "event") return "system"
  return message.role
}

const ROLE_LABELS: Record<ThreadMessage["role"], string> = {
  human: "Customer",
  ai: "AI",
  agent: "Agent",
  system: "System"
}

/** Who wrote the message, in words (the class gives the colour; this says it). */
const author = (message: ThreadMessage): string => {
  const who = message.role === "agent" && message.agentInfo !== null
    ? `Agent ${message.agentInfo.name}`
    : ROLE_LABELS[message.role]
  if (message.type === "note") return `Internal note by ${who}`
  if (message.type === "event") return `${who} event`
  return who
}

const attachments = (message: ThreadMessage): Html | undefined => {
  const count = message.attachments.length
  if (count === 0) return undefined
  const names = message.attachments.map((attachment, i) =>
    html`${i > 0 ? ", " : ""}${externalLink(attachment.url, attachment.name)}`
  )
  return html`<p class="meta">${count} ${count === 1 ? "attachment" : "attachments"}: ${names}</p>`
}

/** The knowledge-base articles a reply used, once each (its passages may come from one article). */
const articlesUsed = (record: ReplyRecord): Html => {
  const articles = [...new Map(record.citations.map((passage) => [passage.articleId, passage])).values()]
  if (articles.length === 0) return html`<p>Knowledge used: none</p>`
  return html`<p>Knowledge used:</p><ul>${
    articles.map((passage) =>
      html`<li>${passage.url === null ? passage.title : externalLink(passage.url, passage.title)} <code>${passage.articleId}</code></li>`
    )
  }</ul>`
}

/** " · label value", or nothing without a value. */
const labelled = (label: string, value: string | null) => value === null ? "" : html` · ${label} ${value}`

/** What the AI recorded about a reply: what it did, what produced it, what it cost, what it read. */
const replyRecord = (record: ReplyRecord, heading: string): Html => {
  const what = html`${record.action}${labelled("reason", record.reason)}`
  const by = html`${record.provider}${labelled("model", record.model)}`
  const cost = `${record.inputTokens} tokens in / ${record.outputTokens} out · ${record.latencyMs} ms`
  return html`<div class="reply-meta"><p><strong>${heading}</strong>: ${what} · ${by} · ${cost}${
    labelled("error", record.error)
  }</p>${articlesUsed(record)}</div>`
}

/** The message's first line: who, when, and how it came (imported history, a suggestion). */
const messageMeta = (message: ThreadMessage): Html => {
  const flags = [message.syncOnly ? "imported" : "", message.isSuggestion ? "suggestion" : ""].filter((f) => f !== "")
  return html`<p class="meta"><strong>${author(message)}</strong> · ${time(message.sentAt)}${
    flags.length > 0 ? ` · ${flags.join(", ")}` : ""
  }</p>`
}

/**
 * One message of the thread: the page renders it, and the live updates send it. (Its text keeps its
 * line breaks and spaces: `.msg p` is `white-space: pre-wrap`, so the markup inside has none of its own.)
 */
const messageItem = (entry: ThreadEntry): Html =>
  html`<li class="msg ${messageClass(entry.message)}" id="msg-${entry.message.id}">${messageMeta(entry.message)}<p>${
    entry.message.text
  }</p>${attachments(entry.message)}${
    entry.reply === undefined ? "" : replyRecord(entry.reply, "AI reply record")
  }${entry.handover === undefined ? "" : replyRecord(entry.handover, "AI outcome, no reply sent")}</li>`

// -----------------------------------------------------------------------------
// The side column
// -----------------------------------------------------------------------------

/** The first line of the status history: every conversation starts open. */
const startedItem = (conversation: ConversationDetail): Html =>
  html`<li id="status-started">Started ${badge("open")} · ${time(conversation.createdAt)}</li>`

const statusChangeItem = (change: StatusChange): Html =>
  html`<li id="status-change-${change.id}">${change.fromStatus === null ? "" : html`${badge(change.fromStatus)} → `}${
    badge(change.toStatus)
  } · ${change.cause.replace(/_/g, " ")} · ${time(change.changedAt)}</li>`

const csatPanel = (answer: CsatAnswer | undefined): Html =>
  answer === undefined
    ? html`<div id="csat"><p>No rating yet.</p></div>`
    : html`<div id="csat"><dl class="facts">
  <dt>Score</dt><dd>${answer.score} of 5 (${answer.rating})</dd>
  <dt>Answer</dt><dd>${answer.ratingAnswer} <span class="hint">on a scale of ${answer.ratingStyle}</span></dd>
  <dt>Comment</dt><dd>${answer.csatComment ?? html`<span class="muted">—</span>`}</dd>
  <dt>Answered</dt><dd>${time(answer.createdAt)}</dd>
</dl></div>`

/** Where a delivery's own page is (the integration's deliveries). */
const deliveryPath = (workspaceId: WorkspaceId, conversation: ConversationDetail, eventId: string) =>
  `/dashboard/w/${workspaceId}/integrations/${conversation.integrationId}/deliveries/${eventId}`

/** How a delivery went so far, in words: its attempts and the last HTTP status its receiver answered. */
const attemptsSoFar = (delivery: ConversationDelivery): string => {
  const attempts = `${delivery.attempts} ${delivery.attempts === 1 ? "attempt" : "attempts"}`
  return delivery.lastStatusCode === null ? attempts : `${attempts} · last answer HTTP ${delivery.lastStatusCode}`
}

/**
 * One delivery: its kind (linked to its page) and when it was created; its status, attempts and last
 * answer. Two columns, to fit the side column on a phone.
 */
const deliveryRow = (workspaceId: WorkspaceId, conversation: ConversationDetail, delivery: ConversationDelivery): Html =>
  html`<tr id="delivery-${delivery.id}"><th scope="row"><a href="${
    deliveryPath(workspaceId, conversation, delivery.id)
  }">${delivery.kind}</a><span class="hint">${time(delivery.createdAt)}</span></th><td>${
    badge(delivery.status)
  }<span class="hint">${attemptsSoFar(delivery)}</span></td></tr>`

/** Stands in the deliveries table while it has none; the first delivery the live updates send replaces it. */
const NO_DELIVERIES_ID = "deliveries-empty"
const noDeliveriesRow = html`<tr id="${NO_DELIVERIES_ID}"><td colspan="2">No deliveries yet.</td></tr>`
const NO_DELIVERIES_VERSION = deliveriesVersion([])

// -----------------------------------------------------------------------------
// Live updates: cursors and fragments
// -----------------------------------------------------------------------------

/**
 * What a page (or a live stream) has shown of a conversation: the newest message's `seq`, the newest
 * status change's id, how many silent hand-overs, the current CSAT answer's id, and the version of its
 * deliveries. In the page's live URL, and as each batch's SSE `id` (a reconnect resumes from there).
 */
interface Cursors {
  readonly seq: number
  readonly change: number
  readonly handovers: number
  readonly csat: string
  readonly deliveries: string
}

const encodeCursors = (cursors: Cursors): string =>
  new URLSearchParams({
    afterSeq: String(cursors.seq),
    afterChange: String(cursors.change),
    handovers: String(cursors.handovers),
    csat: cursors.csat,
    deliveries: cursors.deliveries
  }).toString()

const Count = Schema.FiniteFromString.check(Schema.isInt(), Schema.isGreaterThanOrEqualTo(0))

/** Cursors as query parameters; absent ones start from nothing (everything is sent). */
const CursorParams = Schema.Struct({
  afterSeq: Schema.optionalKey(Count),
  afterChange: Schema.optionalKey(Count),
  handovers: Schema.optionalKey(Count),
  csat: Schema.optionalKey(Schema.String),
  deliveries: Schema.optionalKey(Schema.String)
})

const decodeCursors = (query: string): Option.Option<Cursors> =>
  Schema.decodeUnknownOption(CursorParams)(Object.fromEntries(new URLSearchParams(query))).pipe(
    Option.map((params) => ({
      seq: params.afterSeq ?? 0,
      change: params.afterChange ?? 0,
      handovers: params.handovers ?? 0,
      csat: params.csat ?? "",
      deliveries: params.deliveries ?? ""
    }))
  )

/** A piece of the page for the script to put in place: it replaces the element `id`, or joins `target`. */
interface Fragment {
  readonly target: string
  readonly id: string
  readonly html: Html
  /** A fragment that joins `target` goes at its top (else at its end). */
  readonly prepend?: boolean
  readonly announce?: string
}

/** One fragment as an SSE event (`id`: the cursors after it, when it ends a batch). */
const encodeFragment = (fragment: Fragment, id?: string | undefined): string =>
  Sse.encoder.write({ _tag: "Event", event: "fragment", id, data: JSON.stringify({ ...fragment, html: fragment.html.value }) })

/** A message for the thread: a new one is announced to screen readers, one sent again is not. */
const messageFragment = (entry: ThreadEntry, isNew: boolean): Fragment => ({
  target: "thread",
  id: `msg-${entry.message.id}`,
  html: messageItem(entry),
  ...(isNew ? { announce: `New message: ${author(entry.message)}` } : {})
})

/** One conversation as the live updates see it. */
interface LiveConversation {
  readonly workspaceId: WorkspaceId
  readonly conversation: ConversationDetail
}

interface LiveState {
  readonly cursors: Cursors
  /** Each delivery's signature as the page shows it; unknown until the stream's first look. */
  readonly deliveries: ReadonlyMap<string, string> | undefined
}

type Update = Effect.Effect<readonly [LiveState, ReadonlyArray<Fragment>], never, SqlClient.SqlClient>

const unchanged = (state: LiveState): Update => Effect.succeed([state, []])

const withCursors = (state: LiveState, cursors: Partial<Cursors>): LiveState => ({
  ...state,
  cursors: { ...state.cursors, ...cursors }
})

/**
 * Messages that arrived after the cursor. Every writer of a conversation's messages and status changes
 * holds the conversation's row lock (`ConversationsRepo.lock`/`findOrCreate`), so within a conversation
 * `seq` and the status change ids grow in commit order: a cursor never passes a row still to commit.
 */
const newMessages = (live: LiveConversation, now: Probe, state: LiveState): Update =>
  now.seq <= state.cursors.seq
    ? unchanged(state)
    : Effect.map(threadAfter(live.conversation.id, state.cursors.seq), (entries) => [
      withCursors(state, { seq: entries.at(-1)?.message.seq ?? state.cursors.seq }),
      entries.map((entry) => messageFragment(entry, true))
    ])

/** Customer messages the AI has since handed over without a reply: sent again with that record. */
const newHandovers = (live: LiveConversation, now: Probe, state: LiveState): Update =>
  now.handovers === state.cursors.handovers
    ? unchanged(state)
    : Effect.map(silentHandovers(live.conversation.id), (entries) => [
      withCursors(state, { handovers: entries.length }),
      entries.map((entry) => messageFragment(entry, false))
    ])

/** Status changes after the cursor, and the badge of the latest. */
const newStatusChanges = (live: LiveConversation, now: Probe, state: LiveState): Update =>
  now.change <= state.cursors.change
    ? unchanged(state)
    : Effect.map(statusChangesAfter(live.conversation.id, state.cursors.change), (changes) => {
      const latest = changes.at(-1)
      if (latest === undefined) return [state, []]
      return [
        withCursors(state, { change: latest.id }),
        [
          ...changes.map((change): Fragment => ({
            target: "status-history",
            id: `status-change-${change.id}`,
            html: statusChangeItem(change)
          })),
          {
            target: "conversation-status",
            id: "conversation-status",
            html: statusBadge(latest.toStatus),
            announce: `Status: ${latest.toStatus}`
          }
        ]
      ]
    })

const newCsat = (live: LiveConversation, now: Probe, state: LiveState): Update =>
  (now.csat ?? "") === state.cursors.csat
    ? unchanged(state)
    : Effect.map(currentCsat(live.conversation.id), (answer) => [
      withCursors(state, { csat: answer?.id ?? "" }),
      [{ target: "csat", id: "csat", html: csatPanel(answer), announce: "New rating" }]
    ])

/**
 * Deliveries whose status or attempts differ from what the page shows. The page's deliveries are known
 * by their version only: the first look reads them, and sends them all if that version is not the page's.
 */
const changedDeliveries = (live: LiveConversation, now: Probe, state: LiveState): Update =>
  state.deliveries !== undefined && now.deliveries === state.cursors.deliveries
    ? unchanged(state)
    : Effect.map(conversationDeliveries(live.workspaceId, live.conversation.id), (rows) => {
      const shown = state.deliveries
      const version = deliveriesVersion(rows)
      const changed = shown === undefined
        ? (version === state.cursors.deliveries ? [] : rows)
        : rows.filter((row) => shown.get(row.id) !== deliverySignature(row))
      const placeholderShown = state.cursors.deliveries === NO_DELIVERIES_VERSION
      return [
        {
          cursors: { ...state.cursors, deliveries: version },
          deliveries: new Map(rows.map((row) => [row.id, deliverySignature(row)]))
        },
        changed.map((row, i): Fragment => ({
          target: "deliveries-body",
          id: placeholderShown && i === 0 ? NO_DELIVERIES_ID : `delivery-${row.id}`,
          html: deliveryRow(live.workspaceId, live.conversation, row)
        }))
      ]
    })

const updates = [newMessages, newHandovers, newStatusChanges, newCsat, changedDeliveries]

/** One look at the database: the probe, then only what it says changed. */
const poll = (live: LiveConversation, state: LiveState) =>
  Effect.gen(function*() {
    const now = yield* probe(live.workspaceId, live.conversation.id)
    let next = state
    const fragments: Array<Fragment> = []
    for (const update of updates) {
      const [after, found] = yield* update(live, now, next)
      next = after
      fragments.push(...found)
    }
    return [next, fragments] as const
  })

/** A batch of fragments as SSE text; its last event carries the cursors after it. */
const encodeBatch = (fragments: ReadonlyArray<Fragment>, cursors: Cursors): ReadonlyArray<string> =>
  fragments.map((fragment, i) => encodeFragment(fragment, i === fragments.length - 1 ? encodeCursors(cursors) : undefined))

/**
 * The conversation's changes from `start` on, as SSE text: a poll every `POLL_INTERVAL` (each one
 * probe, more only when something changed), and heartbeats. It ends when the server shuts down;
 * otherwise the server interrupts it when the client goes, which stops both schedules.
 */
const liveEvents = (
  request: WorkspaceRequest,
  live: LiveConversation,
  start: Cursors
): Stream.Stream<string, never, SqlClient.SqlClient> =>
  ticks(request).pipe(
    Stream.mapAccumEffect(
      (): LiveState => ({ cursors: start, deliveries: undefined }),
      (state) => Effect.map(poll(live, state), ([next, fragments]) => [next, encodeBatch(fragments, next.cursors)] as const)
    )
  )

// -----------------------------------------------------------------------------
// Pages
// -----------------------------------------------------------------------------

const STATUS_CHOICES: ReadonlyArray<readonly [string, string]> = [
  ["", "All"],
  ["open", "Open"],
  ["escalated", "Escalated"],
  ["closed", "Closed"]
]

/** A query parameter decoded as `schema`; anything else is as if it were absent (a filter is ignored). */
const queryParam = <S extends Schema.Codec<unknown, string>>(request: WorkspaceRequest, name: string, schema: S) =>
  Option.getOrUndefined(Schema.decodeUnknownOption(schema)(request.url.searchParams.get(name) ?? undefined))

const conversationRow = (workspaceId: WorkspaceId, row: ConversationListRow): Html =>
  html`<tr id="conversation-${row.id}">
  <th scope="row"><a href="${conversationPath(workspaceId, row.id)}">${row.title ?? `Conversation ${row.id.slice(0, 8)}`}</a></th>
  <td><code>${row.externalId}</code></td>
  <td>${customer(row)}</td>
  <td>${row.channel}</td>
  <td>${badge(row.status)}</td>
  <td>${row.messages}</td>
  <td>${time(row.lastActivityAt)}</td>
</tr>`

const listPath = (request: WorkspaceRequest, integration: Integration, query: Record<string, string | undefined>) => {
  const params = new URLSearchParams()
  for (const [name, value] of Object.entries(query)) if (value !== undefined) params.set(name, value)
  const search = params.toString()
  return integrationPath(request, integration.integrationId, `/conversations${search === "" ? "" : `?${search}`}`)
}

/** "Newest" back to the first page (from any other), "Older" on to the next (when there is one). */
const pager = (
  request: WorkspaceRequest,
  integration: Integration,
  status: ConversationStatus | undefined,
  page: { readonly first: boolean; readonly older: string | undefined }
): Html => {
  if (page.first && page.older === undefined) return html``
  const newest = page.first ? "" : html`<a href="${listPath(request, integration, { status })}">Newest</a>`
  const older = page.older === undefined
    ? ""
    : html`<a href="${listPath(request, integration, { status, before: page.older })}">Older</a>`
  return html`<nav class="pager" aria-label="More conversations">${newest}${older}</nav>`
}

// -----------------------------------------------------------------------------
// The list's live updates: its first page, re-read and compared
// -----------------------------------------------------------------------------

/** Stands in the list while it has no row; the first conversation the live updates send replaces it. */
const NO_CONVERSATIONS_ID = "conversations-empty"

/** What the list shows of a conversation: a row is sent again when any of it changes. */
const rowSignature = (row: ConversationListRow): string =>
  [row.id, row.status, row.messages, row.title ?? "", DateTime.formatIso(row.lastActivityAt)].join(":")

/** A digest of the rows a page shows, for its live URL: the stream's first look compares with it. */
const rowsVersion = (rows: ReadonlyArray<ConversationListRow>): string =>
  crypto.createHash("md5").update(rows.map(rowSignature).join(",")).digest("hex")

/** The live URL of a page showing `rows`: their ids, and a digest the stream's first look compares with. */
const listEventsPath = (
  request: WorkspaceRequest,
  integration: Integration,
  status: ConversationStatus | undefined,
  rows: ReadonlyArray<ConversationListRow>
) => {
  const params = new URLSearchParams({ v: rowsVersion(rows), ids: rows.map((row) => row.id).join(",") })
  if (status !== undefined) params.set("status", status)
  return integrationPath(request, integration.integrationId, `/conversations/events?${params.toString()}`)
}

/** What the page the stream is for was rendered with. */
interface ListShown {
  readonly version: string
  readonly ids: ReadonlyArray<ConversationId>
}

const isConversationId = Schema.is(ConversationId)

/** `v` and `ids` of a live list's URL; ids that are not conversation ids are left out. */
const listShownOf = (request: WorkspaceRequest): ListShown => ({
  version: request.url.searchParams.get("v") ?? "",
  ids: (request.url.searchParams.get("ids") ?? "").split(",").filter(isConversationId).slice(0, PAGE_SIZE)
})

interface ListState {
  /** Each row the page shows, with its signature as shown (unknown, "", before the first look). */
  readonly shown: ReadonlyMap<string, string>
  readonly first: boolean
  /** Whether the page still shows its "No conversation yet" row. */
  readonly empty: boolean
}

type ListQuery = {
  readonly workspaceId: WorkspaceId
  readonly integrationId: IntegrationId
  readonly status: ConversationStatus | undefined
}

/**
 * The rows a live list shows now: its first page read again, and the rows it showed that have left it
 * (filtered out by a new status, or pushed down by newer conversations), read by id, so that the
 * page's copy of them is updated too.
 */
const currentRows = (query: ListQuery, shown: ReadonlyMap<string, string>) =>
  Effect.gen(function*() {
    const page = yield* conversationPage({ ...query, before: undefined, limit: PAGE_SIZE })
    const onPage = new Set<string>(page.rows.map((row) => row.id))
    const left = [...shown.keys()].filter((id) => !onPage.has(id))
    const others = left.length === 0
      ? []
      : (yield* conversationPage({ ...query, before: undefined, ids: left, limit: left.length })).rows
    return { page: page.rows, others }
  })

/**
 * The first page's changes from the page's rows on, as SSE text: every `POLL_INTERVAL` the first page
 * is read again (one query, `PAGE_SIZE` rows; one more for rows that left it) and each row that is new
 * or changed is sent, a new conversation at the top. The first look compares the first page with the
 * page's version only: when that differs (something changed between the page and the stream), every
 * row is sent.
 */
const liveList = (request: WorkspaceRequest, query: ListQuery, rendered: ListShown): Stream.Stream<string, never, SqlClient.SqlClient> =>
  ticks(request).pipe(
    Stream.mapAccumEffect(
      (): ListState => ({
        shown: new Map(rendered.ids.map((id) => [id, ""])),
        first: true,
        empty: rendered.ids.length === 0
      }),
      (state) =>
        Effect.map(currentRows(query, state.shown), ({ others, page }) => {
          const rows = [...page, ...others]
          const changed = state.first
            ? (rowsVersion(page) === rendered.version ? [] : rows)
            : rows.filter((row) => state.shown.get(row.id) !== rowSignature(row))
          // Oldest first, each at the top: the newest ends up first, as the page orders them (a row
          // the page has is replaced where it is).
          const fragments = [...changed].reverse().map((row, i): Fragment => ({
            target: "conversations-body",
            id: state.empty && i === 0 ? NO_CONVERSATIONS_ID : `conversation-${row.id}`,
            html: conversationRow(query.workspaceId, row),
            prepend: true,
            ...(!state.shown.has(row.id) ? { announce: "New conversation" } : {})
          }))
          const next: ListState = {
            shown: new Map(rows.map((row) => [row.id, rowSignature(row)])),
            first: false,
            empty: state.empty && fragments.length === 0
          }
          return [next, fragments.map((fragment) => encodeFragment(fragment))] as const
        })
    )
  )

const listEvents = workspaceRoute(
  "GET",
  "/dashboard/w/:workspaceId/integrations/:integrationId/conversations/events",
  (request) =>
    Effect.gen(function*() {
      const { integrationId } = yield* requestedIntegration(request)
      const status = queryParam(request, "status", ConversationStatus)
      return yield* liveResponse(
        request,
        liveList(request, { workspaceId: request.workspace.id, integrationId, status }, listShownOf(request))
      )
    })
)

const LIST_COLUMNS = ["Conversation", "External ID", "Customer", "Channel", "Status", "Messages", "Last activity"]

const list = workspaceRoute("GET", "/dashboard/w/:workspaceId/integrations/:integrationId/conversations", (request) =>
  Effect.gen(function*() {
    const integration = yield* requestedIntegration(request)
    const integrationId = integration.integrationId
    const status = queryParam(request, "status", ConversationStatus)
    const before = queryParam(request, "before", ConversationId)
    const page = yield* conversationPage({
      workspaceId: request.workspace.id,
      integrationId,
      status,
      before,
      limit: PAGE_SIZE
    })
    return workspacePage(request, {
      title: `Conversations · ${integration.settings.name}`,
      section: "integrations",
      body: html`
${integrationHeader(request, integration, "conversations")}
<h2>Conversations</h2>
<p class="hint">The most recently started first.</p>
<form method="get" action="${integrationPath(request, integrationId, "/conversations")}" class="row">
  <label for="conversation-status-filter">Status</label>
  <select id="conversation-status-filter" name="status">${options(STATUS_CHOICES, status ?? "")}</select>
  <button type="submit" class="secondary">Show</button>
</form>
${
        before === undefined
          ? html`<p class="hint">Updates: <span id="live-status" role="status">off (reload to see new conversations)</span></p>`
          : ""
      }
<div class="table-wrap" tabindex="0"${
        before === undefined
          ? html` data-live="${listEventsPath(request, integration, status, page.rows)}" data-live-status="live-status"`
          : ""
      }><table id="conversations">
  <thead><tr>${LIST_COLUMNS.map((column) => html`<th scope="col">${column}</th>`)}</tr></thead>
  <tbody id="conversations-body">${
        page.rows.length === 0
          ? html`<tr id="${NO_CONVERSATIONS_ID}"><td colspan="7">${before === undefined ? "No conversation yet." : "No older conversation."}</td></tr>`
          : page.rows.map((row) => conversationRow(request.workspace.id, row))
      }</tbody>
</table></div>
${pager(request, integration, status, { first: before === undefined, older: page.older })}`
    })
  }))

/** The workspace's conversation named in the path, or 404. */
const requestedConversation = (request: WorkspaceRequest) =>
  Effect.gen(function*() {
    const conversationId = yield* param(request, "conversationId", ConversationId)
    const conversation = yield* findConversation(request.workspace.id, conversationId)
    return conversation === undefined ? yield* new NotFound({ detail: "Unknown conversation" }) : conversation
  })

const facts = (request: WorkspaceRequest, integration: Integration, conversation: ConversationDetail): Html =>
  html`<dl class="facts">
  <dt>Integration</dt><dd><a href="${integrationPath(request, integration.integrationId)}">${integration.settings.name}</a></dd>
  <dt>Conversation ID</dt><dd>${copyable("conversation-id", conversation.id, "Copy ID")}</dd>
  <dt>External ID</dt><dd><code>${conversation.externalId}</code></dd>
  <dt>Channel</dt><dd>${conversation.channel}</dd>
  <dt>Customer</dt><dd>${customer(conversation)}</dd>
  <dt>Language</dt><dd>${conversation.language ?? html`<span class="muted">not detected yet</span>`}</dd>
  <dt>Started</dt><dd>${time(conversation.createdAt)}</dd>
</dl>`

/** What a conversation's page shows besides its facts. */
interface Shown {
  readonly thread: ReadonlyArray<ThreadEntry>
  readonly changes: ReadonlyArray<StatusChange>
  readonly csat: CsatAnswer | undefined
  readonly deliveries: ReadonlyArray<ConversationDelivery>
}

const readShown = (workspaceId: WorkspaceId, conversation: ConversationDetail) =>
  Effect.gen(function*() {
    const thread = yield* threadAfter(conversation.id, 0)
    const changes = yield* statusChangesAfter(conversation.id, 0)
    const csat = yield* currentCsat(conversation.id)
    const deliveries = yield* conversationDeliveries(workspaceId, conversation.id)
    return { thread, changes, csat, deliveries } satisfies Shown
  })

/** The cursors of what the page shows, taken from exactly what it renders: the stream goes on from there. */
const shownCursors = (shown: Shown): Cursors => ({
  seq: shown.thread.at(-1)?.message.seq ?? 0,
  change: shown.changes.at(-1)?.id ?? 0,
  handovers: shown.thread.filter((entry) => entry.handover !== undefined).length,
  csat: shown.csat?.id ?? "",
  deliveries: deliveriesVersion(shown.deliveries)
})

const DELIVERY_COLUMNS = ["Event", "Status"]

const deliveriesTable = (workspaceId: WorkspaceId, conversation: ConversationDetail, shown: Shown): Html =>
  html`<div class="table-wrap" tabindex="0"><table id="deliveries">
  <thead><tr>${DELIVERY_COLUMNS.map((column) => html`<th scope="col">${column}</th>`)}</tr></thead>
  <tbody id="deliveries-body">${
    shown.deliveries.length === 0
      ? noDeliveriesRow
      : shown.deliveries.map((row) => deliveryRow(workspaceId, conversation, row))
  }</tbody>
</table></div>`

/** The column beside the thread (on a phone, below it; its deliveries table scrolls within its width). */
const sideColumn = (workspaceId: WorkspaceId, conversation: ConversationDetail, shown: Shown): Html =>
  html`<div>
  <section class="panel" aria-labelledby="status-history-heading">
    <h2 id="status-history-heading">Status history</h2>
    <ol id="status-history">${startedItem(conversation)}${shown.changes.map(statusChangeItem)}</ol>
  </section>
  <section class="panel" aria-labelledby="csat-heading">
    <h2 id="csat-heading">Satisfaction (CSAT)</h2>
    ${csatPanel(shown.csat)}
  </section>
  <section class="panel" aria-labelledby="deliveries-heading">
    <h2 id="deliveries-heading">Deliveries</h2>
    ${deliveriesTable(workspaceId, conversation, shown)}
  </section>
</div>`

const detail = workspaceRoute("GET", "/dashboard/w/:workspaceId/conversations/:conversationId", (request) =>
  Effect.gen(function*() {
    const workspaceId = request.workspace.id
    const conversation = yield* requestedConversation(request)
    const integration = yield* Integrations.use((integrations) => integrations.find(workspaceId, conversation.integrationId))
    const shown = yield* readShown(workspaceId, conversation)
    // The history was read after the conversation: its last change is the newer status.
    const status = shown.changes.at(-1)?.toStatus ?? conversation.status
    const live = conversationPath(workspaceId, conversation.id, `/events?${encodeCursors(shownCursors(shown))}`)
    return workspacePage(request, {
      title: `Conversation ${conversation.externalId}`,
      section: "integrations",
      body: html`
<p><a href="${workspacePath(request, "/integrations")}">Integrations</a> › <a href="${
        integrationPath(request, integration.integrationId, "/conversations")
      }">${integration.settings.name}: conversations</a> ›</p>
<h1>Conversation <code>${conversation.externalId}</code></h1>
<p class="row"><span>Status</span> ${statusBadge(status)} <span class="hint">Updates: <span id="live-status" role="status">off (reload to see changes)</span></span></p>
${facts(request, integration, conversation)}
<section class="grid2" data-live="${live}" data-live-status="live-status" aria-label="Conversation">
  <section aria-labelledby="thread-heading">
    <h2 id="thread-heading">Messages</h2>
    <p class="hint">In the order Parley received them.</p>
    <ol class="thread" id="thread">${shown.thread.map(messageItem)}</ol>
  </section>
  ${sideColumn(workspaceId, conversation, shown)}
</section>`
    })
  }))

/** Where the stream starts: the browser's `Last-Event-ID` on a reconnect, else the page's cursors. */
const startingCursors = (request: WorkspaceRequest) =>
  Effect.gen(function*() {
    const resumed = Option.flatMap(Option.fromNullishOr(request.request.headers["last-event-id"]), decodeCursors)
    if (Option.isSome(resumed)) return resumed.value
    const fromUrl = decodeCursors(request.url.search)
    return Option.isSome(fromUrl) ? fromUrl.value : yield* new NotFound({ detail: "Malformed cursors" })
  })

const events = workspaceRoute("GET", "/dashboard/w/:workspaceId/conversations/:conversationId/events", (request) =>
  Effect.gen(function*() {
    const conversation = yield* requestedConversation(request)
    const start = yield* startingCursors(request)
    return yield* liveResponse(request, liveEvents(request, { workspaceId: request.workspace.id, conversation }, start))
  }))

export const ConversationRoutes: ReadonlyArray<DashboardRoute<DashboardServices>> = [list, listEvents, detail, events]
