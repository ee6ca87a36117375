/**
 * The dashboard's conversation pages: an integration's list (status filter, keyset pages), one
 * conversation's thread (classes, escaping, reply records with the knowledge used), its status history,
 * CSAT answer and deliveries, the live updates (server-sent events read as they arrive), tenancy, and
 * what a signed-out browser gets.
 */
import { describe, expect, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Sse from "effect/encoding/Sse"
import { HttpClient, HttpClientRequest } from "effect/http"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/testing/TestClock"
import { Conversations } from "../../src/Conversations/Conversations.js"
import { conversationDeliveries, deliveriesVersion, probe } from "../../src/Dashboard/ConversationQueries.js"
import { PAGE_SIZE } from "../../src/Dashboard/Conversations.js"
import { HEARTBEAT, withHeartbeats } from "../../src/Dashboard/Live.js"
import { MessageReceived } from "../../src/Domain/Conversation.js"
import { ConversationId, IntegrationId, WorkspaceId } from "../../src/Domain/Ids.js"
import { ArticleJson } from "../../src/Domain/Knowledge.js"
import { Integrations } from "../../src/Integrations/Integrations.js"
import { ADMIN_TOKEN, bodyAs, call, makeTenant, type Tenant, TestApp, TestAppWithWorkers } from "../support/App.js"
import { dashboard, type DashboardSession, type Page, signIn, visibleText } from "../support/Dashboard.js"
import { eventually, jobsSettled } from "../support/Eventually.js"
import { incoming } from "../support/Incoming.js"
import { makeReceiver } from "../support/Receiver.js"

const customerId = "6f1c1f8e-1d7e-4c8e-9a0a-1b2c3d4e5f60"

interface Said {
  readonly id: string
  readonly conversationId: string
  readonly text: string
  readonly role?: "human" | "agent" | "system"
  readonly syncOnly?: boolean
  readonly customerId?: string
}

/** A message through message-received; answers the stored message and its conversation. */
const say = (tenant: Tenant, message: Said) =>
  call("POST", `/v1/webhooks/${tenant.integrationId}/message-received`, {
    token: tenant.token,
    body: { role: "human", customerId, ...message }
  }).pipe(
    Effect.tap((reply) => Effect.sync(() => expect(reply.status).toBe(200))),
    Effect.flatMap(bodyAs(MessageReceived)),
    Effect.map((reply) => reply.body)
  )

const rate = (tenant: Tenant, conversationId: string, answer: number, comment: string) =>
  call("POST", `/v1/webhooks/${tenant.integrationId}/csat-response-received`, {
    token: tenant.token,
    body: { conversationId, ratingStyle: 5, ratingAnswer: answer, csatComment: comment }
  }).pipe(Effect.tap((reply) => Effect.sync(() => expect(reply.status).toBe(200))))

const listPath = (tenant: Tenant, query = "") =>
  `/dashboard/w/${tenant.workspaceId}/integrations/${tenant.integrationId}/conversations${query}`

const conversationPath = (workspaceId: string, conversationId: string, rest = "") =>
  `/dashboard/w/${workspaceId}/conversations/${conversationId}${rest}`

const get = (session: DashboardSession, path: string) => dashboard("GET", path, { session })

const unescape = (text: string) => text.replace(/&amp;/g, "&")

/** The external ids of the conversations listed, in order. */
const listedExternalIds = (page: Page): ReadonlyArray<string> => {
  const body = /<table id="conversations">[\s\S]*?<tbody[^>]*>([\s\S]*?)<\/tbody>/.exec(page.text)?.[1] ?? ""
  return [...body.matchAll(/<td><code>([^<]*)<\/code><\/td>/g)].map((match) => match[1] ?? "")
}

/** The href of the pager link labelled `label`. */
const pagerLink = (page: Page, label: string): string | undefined => {
  const pager = /<nav class="pager"[^>]*>([\s\S]*?)<\/nav>/.exec(page.text)?.[1] ?? ""
  const href = new RegExp(`<a href="([^"]+)">${label}</a>`).exec(pager)?.[1]
  return href === undefined ? undefined : unescape(href)
}

/** The `<li>` of message `messageId` in a page or fragment. */
const messageElement = (text: string, messageId: string): string =>
  new RegExp(`<li class="msg [a-z]+" id="msg-${messageId}">[\\s\\S]*?</li>`).exec(text)?.[0] ?? ""

const liveUrl = (page: Page): string => {
  const url = /data-live="([^"]+)"/.exec(page.text)?.[1]
  if (url === undefined) throw new Error("The page has no live region")
  return unescape(url)
}

const Fragment = Schema.Struct({
  target: Schema.String,
  id: Schema.String,
  html: Schema.String,
  prepend: Schema.optionalKey(Schema.Boolean),
  announce: Schema.optionalKey(Schema.String)
})
type Fragment = typeof Fragment.Type
const decodeFragment = Schema.decodeUnknownSync(Schema.fromJsonString(Fragment))

/**
 * Opens the live stream at `url` (in the test's scope) and reads it as it arrives, in the background:
 * the headers, and every event so far.
 */
const openLive = (session: DashboardSession, url: string, headers: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const response = yield* client.execute(
      HttpClientRequest.get(url).pipe(HttpClientRequest.setHeaders({ ...headers, cookie: session.cookie }))
    )
    const events: Array<Sse.Event> = []
    yield* response.stream.pipe(
      Stream.decodeText,
      Stream.pipeThroughChannel(Sse.decode()),
      Stream.runForEach((event) => Effect.sync(() => events.push(event))),
      Effect.ignore,
      Effect.forkScoped
    )
    const fragments = () => events.filter((event) => event.event === "fragment").map((event) => decodeFragment(event.data))
    const waitFor = (predicate: (fragment: Fragment) => boolean) =>
      eventually(Effect.sync(fragments), (list) => list.some(predicate), 20_000).pipe(
        Effect.map((list) => list.find(predicate)!)
      )
    return { status: response.status, headers: response.headers, events: () => [...events], fragments, waitFor }
  })

/** The workspace's integration as the services see it (to store what the API cannot send, e.g. a note). */
const integrationOf = (tenant: Tenant) =>
  Integrations.use((integrations) =>
    integrations.find(WorkspaceId.make(tenant.workspaceId), IntegrationId.make(tenant.integrationId))
  ).pipe(Effect.orDie)

/** Records that the AI handed `trigger` over without sending a message (what a silent hand-over stores). */
const silentHandover = (tenant: Tenant, conversationId: string, trigger: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`INSERT INTO reply_metadata (trigger_message_id, conversation_id, workspace_id, message_id, action, reason,
          provider, latency_ms)
        VALUES (${trigger}, ${conversationId}, ${tenant.workspaceId}, NULL, 'escalate', 'handover', 'embedded', 5)`)

describe("dashboard conversations", () => {
  layer(TestApp(), { timeout: 120_000 })((it) => {
    it.effect("lists an integration's conversations newest first, filtered by status, in keyset pages", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const count = PAGE_SIZE + 1
        for (let i = 0; i < count; i++) {
          const n = String(i).padStart(2, "0")
          yield* say(tenant, { id: `m-${n}`, conversationId: `conv-${n}`, text: `Question ${n}`, customerId: crypto.randomUUID() })
        }
        // conv-03 is handed over to an agent; conv-05's customer is known by name and email.
        yield* say(tenant, { id: "m-03-agent", conversationId: "conv-03", text: "Agent here", role: "agent" })
        const known = yield* say(tenant, { id: "m-05-again", conversationId: "conv-05", text: "Hello again" })
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE customers SET first_name = 'Ada', last_name = 'Lovelace', email = 'ada@example.com'
                   WHERE id = ${known.conversation.customerId} AND workspace_id = ${tenant.workspaceId}`

        const session = yield* signIn()
        const first = yield* get(session, listPath(tenant))
        expect(first.status).toBe(200)
        const newest = Array.from({ length: PAGE_SIZE }, (_, i) => `conv-${String(count - 1 - i).padStart(2, "0")}`)
        expect(listedExternalIds(first)).toEqual(newest)
        expect(first.text).toContain(`<label for="conversation-status-filter">Status</label>`)
        expect(first.text).toContain(`href="${listPath(tenant)}" aria-current="page">Conversations</a>`)
        const row = first.text.split("</tr>").find((tr) => tr.includes("<code>conv-05</code>")) ?? ""
        expect(visibleText({ ...first, text: row })).toMatch(/^Conversation [0-9a-f]{8} conv-05 Ada Lovelace · ada@example.com api open 2 \d{4}-/)
        expect(row).toContain(`href="${conversationPath(tenant.workspaceId, known.conversation.id)}"`)
        expect(pagerLink(first, "Newest")).toBeUndefined()

        const older = pagerLink(first, "Older")
        expect(older).toBeDefined()
        const second = yield* get(session, older!)
        expect(listedExternalIds(second)).toEqual(["conv-00"])
        expect(pagerLink(second, "Older")).toBeUndefined()
        expect(pagerLink(second, "Newest")).toBe(listPath(tenant))

        const escalated = yield* get(session, listPath(tenant, "?status=escalated"))
        expect(listedExternalIds(escalated)).toEqual(["conv-03"])
        expect(escalated.text).toContain(`<option value="escalated" selected>`)
        expect(escalated.text).toContain(`<span class="badge s-escalated">escalated</span>`)
        expect(listedExternalIds(yield* get(session, listPath(tenant, "?status=closed")))).toEqual([])

        // An unknown status (or a malformed cursor) is ignored: the first page of every conversation.
        expect(listedExternalIds(yield* get(session, listPath(tenant, "?status=bogus")))).toEqual(newest)
        expect(listedExternalIds(yield* get(session, listPath(tenant, "?before=not-an-id")))).toEqual(newest)
      }))

    it.effect("shows a conversation's thread by role, escaped with its whitespace, its status history and CSAT", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const customerText = "Hello <b>there</b>\n  second line & more"
        const first = yield* say(tenant, { id: "t-1", conversationId: "thread-1", text: customerText })
        const conversationId = first.conversation.id
        const agent = yield* say(tenant, { id: "t-2", conversationId: "thread-1", text: "An agent here", role: "agent" })
        const system = yield* say(tenant, { id: "t-3", conversationId: "thread-1", text: "Customer left the chat", role: "system" })
        const integration = yield* integrationOf(tenant)
        const note = yield* Conversations.use((conversations) =>
          conversations.ingest(integration, { ...incoming("thread-1", "t-4", "Refund approved"), role: "agent", type: "note" })
        ).pipe(Effect.orDie)
        yield* rate(tenant, "thread-1", 4, "Quick & kind")
        yield* silentHandover(tenant, conversationId, first.message.id)

        const session = yield* signIn()
        const page = yield* get(session, conversationPath(tenant.workspaceId, conversationId))
        expect(page.status).toBe(200)
        expect(page.text).toContain(`<ol class="thread" id="thread">`)

        const customer = messageElement(page.text, first.message.id)
        expect(customer).toContain(`class="msg human"`)
        expect(customer).toContain("<strong>Customer</strong>")
        expect(customer).toContain("<p>Hello &lt;b&gt;there&lt;/b&gt;\n  second line &amp; more</p>")
        expect(visibleText({ ...page, text: customer })).toContain(
          "AI outcome, no reply sent : escalate · reason handover · embedded · 0 tokens in / 0 out · 5 ms Knowledge used: none"
        )
        expect(messageElement(page.text, agent.message.id)).toContain(`class="msg agent"`)
        expect(messageElement(page.text, agent.message.id)).toContain("<strong>Agent</strong>")
        expect(messageElement(page.text, system.message.id)).toContain(`class="msg system"`)
        expect(messageElement(page.text, system.message.id)).toContain("<strong>System</strong>")
        expect(messageElement(page.text, note.message.id)).toContain(`class="msg note"`)
        expect(messageElement(page.text, note.message.id)).toContain("<strong>Internal note by Agent</strong>")
        // Thread order is arrival order.
        const order = [first, agent, system, note].map((m) => page.text.indexOf(`id="msg-${m.message.id}"`))
        expect([...order].sort((a, b) => a - b)).toEqual(order)

        const text = visibleText(page)
        expect(text).toContain("Status escalated")
        expect(page.text).toContain(`<span id="conversation-status"><span class="badge s-escalated">escalated</span></span>`)
        expect(text).toMatch(/Started open · [\d-]+ [\d:]+ UTC open → escalated · agent message ·/)
        expect(text).toContain("Score 4 of 5 (good) Answer 4 on a scale of 5 Comment Quick & kind")
        expect(text).toContain(`External ID thread-1 Channel api`)
        expect(text).toContain("No deliveries yet.")
        expect(page.text).toContain(`<tbody id="deliveries-body"><tr id="deliveries-empty">`)
        expect(page.text).toContain(`data-live-status="live-status"`)
        const live = new URL(liveUrl(page), "http://x")
        expect(live.pathname).toBe(conversationPath(tenant.workspaceId, conversationId, "/events"))
        expect(live.searchParams.get("afterChange")).toMatch(/^[1-9]\d*$/)
        expect(Number(live.searchParams.get("afterSeq"))).toBeGreaterThan(0)
      }))

    it.effect("another workspace's conversation, its events and its integration's list are 404, whatever the path", () =>
      Effect.gen(function*() {
        const a = yield* makeTenant()
        const b = yield* makeTenant()
        const { conversation } = yield* say(a, { id: "secret-1", conversationId: "secret", text: "Private" })
        yield* say(b, { id: "mine-1", conversationId: "mine", text: "Mine" })
        const integrator = yield* signIn(b.token)

        const foreign = [
          conversationPath(a.workspaceId, conversation.id),
          conversationPath(a.workspaceId, conversation.id, "/events"),
          conversationPath(b.workspaceId, conversation.id),
          conversationPath(b.workspaceId, conversation.id, "/events"),
          listPath(a),
          listPath(a, "/events?v=x"),
          `/dashboard/w/${b.workspaceId}/integrations/${a.integrationId}/conversations`,
          `/dashboard/w/${b.workspaceId}/integrations/${a.integrationId}/conversations/events?v=x`
        ]
        for (const path of foreign) {
          const page = yield* get(integrator, path)
          expect(page.status, path).toBe(404)
          expect(page.text).not.toContain("Private")
        }
        const own = yield* get(integrator, listPath(b))
        expect(own.status).toBe(200)
        expect(listedExternalIds(own)).toEqual(["mine"])

        const operator = yield* signIn()
        expect((yield* get(operator, conversationPath(a.workspaceId, conversation.id))).status).toBe(200)
        expect((yield* get(operator, conversationPath(a.workspaceId, "not-a-uuid"))).status).toBe(404)
        expect((yield* get(operator, conversationPath(a.workspaceId, crypto.randomUUID()))).status).toBe(404)
        expect((yield* get(operator, conversationPath(a.workspaceId, conversation.id, "/events?afterSeq=x"))).status)
          .toBe(404)
      }))

    it.effect("an idle live stream sends a heartbeat comment every 15 seconds", () =>
      Effect.gen(function*() {
        const received: Array<string> = []
        yield* withHeartbeats(Stream.never).pipe(
          Stream.runForEach((text) => Effect.sync(() => received.push(text))),
          Effect.forkScoped
        )
        yield* TestClock.adjust("14 seconds")
        expect(received).toEqual([])
        yield* TestClock.adjust("1 second")
        expect(received).toEqual([HEARTBEAT])
        yield* TestClock.adjust("15 seconds")
        expect(received).toEqual([HEARTBEAT, HEARTBEAT])
      }).pipe(Effect.scoped))

    it.effect("signed out, the page sends the browser to sign in and the events answer 401", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const { conversation } = yield* say(tenant, { id: "out-1", conversationId: "out", text: "Hi" })
        const path = conversationPath(tenant.workspaceId, conversation.id)
        const page = yield* dashboard("GET", path)
        expect(page.status).toBe(303)
        expect(page.headers["location"]).toBe(`/dashboard?next=${encodeURIComponent(path)}`)
        const list = yield* dashboard("GET", listPath(tenant))
        expect(list.status).toBe(303)
        const events = yield* dashboard("GET", `${path}/events?afterSeq=0`)
        expect(events.status).toBe(401)
      }))
  })

  layer(TestAppWithWorkers(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    /** A tenant delivering to a receiver that accepts everything, with a shipping article. */
    const shippingTenant = Effect.gen(function*() {
      const receiver = yield* makeReceiver()
      const tenant = yield* makeTenant({ webhookUrl: receiver.url })
      const article = yield* call("POST", `/admin/v1/workspaces/${tenant.workspaceId}/articles`, {
        token: ADMIN_TOKEN,
        body: {
          title: "Shipping times",
          url: "https://help.example.com/shipping",
          body: "Standard shipping to Canada takes 3 to 5 business days. Express shipping takes 1 to 2 business days."
        }
      }).pipe(Effect.flatMap(bodyAs(ArticleJson)))
      return { tenant, articleId: article.body.id }
    })

    const question = "How long does shipping to Canada take?"

    it.effect("shows an AI reply with its record (knowledge used, tokens, latency, provider) and its delivery", () =>
      Effect.gen(function*() {
        const { articleId, tenant } = yield* shippingTenant
        const asked = yield* say(tenant, { id: "q-1", conversationId: "ship-1", text: question })
        yield* jobsSettled(tenant)
        const session = yield* signIn()
        const page = yield* get(session, conversationPath(tenant.workspaceId, asked.conversation.id))
        expect(page.status).toBe(200)

        const ai = /<li class="msg ai" id="msg-[0-9a-f-]{36}">[\s\S]*?<\/li>/.exec(page.text)?.[0] ?? ""
        expect(ai).toContain("<strong>AI</strong>")
        expect(ai).toContain("3 to 5 business days")
        const record = visibleText({ ...page, text: ai })
        expect(record).toMatch(/AI reply record ?: answer · embedded · 0 tokens in \/ 0 out · \d+ ms/)
        expect(record).toContain(`Knowledge used: Shipping times ${articleId}`)
        expect(ai).toContain(`<a href="https://help.example.com/shipping" rel="noopener noreferrer nofollow">Shipping times</a>`)

        const sql = yield* SqlClient.SqlClient
        const [event] = yield* sql<{ readonly id: string }>`
          SELECT id FROM events WHERE conversation_id = ${asked.conversation.id} AND kind = 'send_messages'`
        const row = new RegExp(`<tr id="delivery-${event!.id}">[\\s\\S]*?</tr>`).exec(page.text)?.[0] ?? ""
        expect(row).toContain(
          `href="/dashboard/w/${tenant.workspaceId}/integrations/${tenant.integrationId}/deliveries/${event!.id}"`
        )
        expect(visibleText({ ...page, text: row })).toMatch(/^send_messages [\d-]+ [\d:]+ UTC delivered 1 attempt · last answer HTTP 200$/)

        // The probe's digest of the deliveries (SQL) is the page's (TypeScript): the stream compares them.
        const workspaceId = WorkspaceId.make(tenant.workspaceId)
        const id = ConversationId.make(asked.conversation.id)
        const now = yield* probe(workspaceId, id)
        expect(now.deliveries).toBe(deliveriesVersion(yield* conversationDeliveries(workspaceId, id)))
      }))

    it.effect("streams, as fragments, what happens after the page was rendered, and nothing it already shows", () =>
      Effect.gen(function*() {
        const { tenant } = yield* shippingTenant
        const history = yield* say(tenant, { id: "h-1", conversationId: "live-1", text: "Old message", syncOnly: true })
        const session = yield* signIn()
        const page = yield* get(session, conversationPath(tenant.workspaceId, history.conversation.id))
        const live = yield* openLive(session, liveUrl(page))
        expect(live.status).toBe(200)
        expect(live.headers["content-type"]).toMatch(/^text\/event-stream/)
        expect(live.headers["cache-control"]).toBe("no-store")
        expect(live.headers["x-accel-buffering"]).toBe("no")

        // A customer message after the stream opened: it, the AI's reply with its record, and the delivery.
        const asked = yield* say(tenant, { id: "q-2", conversationId: "live-1", text: question })
        const customer = yield* live.waitFor((f) => f.id === `msg-${asked.message.id}`)
        expect(customer.target).toBe("thread")
        expect(customer.html).toMatch(new RegExp(`^<li class="msg human" id="msg-${asked.message.id}">`))
        expect(customer.html).toContain(question)
        const reply = yield* live.waitFor((f) => f.html.startsWith(`<li class="msg ai"`))
        expect(reply.html).toContain("AI reply record")
        expect(reply.html).toContain("Shipping times")
        // The first delivery takes the place of the "No deliveries yet" row; then it is updated by its id.
        const firstDelivery = yield* live.waitFor((f) => f.target === "deliveries-body")
        expect(firstDelivery.id).toBe("deliveries-empty")
        const deliveryId = /^<tr id="(delivery-[0-9a-f-]{36})">/.exec(firstDelivery.html)?.[1]
        expect(deliveryId).toBeDefined()
        yield* live.waitFor((f) =>
          (f.id === deliveryId || f.id === "deliveries-empty") && f.html.includes(`<span class="badge s-delivered">`)
        )

        // An agent takes over: the message, the status change and the badge.
        yield* jobsSettled(tenant)
        const agent = yield* say(tenant, { id: "a-1", conversationId: "live-1", text: "Agent here", role: "agent" })
        yield* live.waitFor((f) => f.id === `msg-${agent.message.id}`)
        const change = yield* live.waitFor((f) => f.target === "status-history")
        expect(change.html).toContain("agent message")
        const badge = yield* live.waitFor((f) => f.id === "conversation-status")
        expect(badge.html).toBe(`<span id="conversation-status"><span class="badge s-escalated">escalated</span></span>`)

        yield* rate(tenant, "live-1", 2, "Slow")
        const csat = yield* live.waitFor((f) => f.id === "csat")
        expect(csat.html).toContain("2 of 5 (bad)")

        // Nothing the page already had was sent again, and nothing twice.
        const messageIds = live.fragments().filter((f) => f.target === "thread").map((f) => f.id)
        expect(messageIds).not.toContain(`msg-${history.message.id}`)
        expect(new Set(messageIds).size).toBe(messageIds.length)
        // Each batch ends with the cursors after it: a reconnect resumes from there.
        const last = live.events().at(-1)
        expect(new URLSearchParams(last?.id ?? "").get("csat")).toMatch(/^[0-9a-f-]{36}$/)
      }).pipe(Effect.scoped))

    it.effect("a silent hand-over recorded after the page was rendered sends its customer message again", () =>
      Effect.gen(function*() {
        const { tenant } = yield* shippingTenant
        const asked = yield* say(tenant, { id: "s-1", conversationId: "silent", text: "Hello?", syncOnly: true })
        const session = yield* signIn()
        const page = yield* get(session, conversationPath(tenant.workspaceId, asked.conversation.id))
        const live = yield* openLive(session, liveUrl(page))
        yield* silentHandover(tenant, asked.conversation.id, asked.message.id)
        const again = yield* live.waitFor((f) => f.id === `msg-${asked.message.id}`)
        expect(again.html).toContain("AI outcome, no reply sent")
      }).pipe(Effect.scoped))

    it.effect("a reconnect resumes from its Last-Event-ID rather than from the page's cursors", () =>
      Effect.gen(function*() {
        const { tenant } = yield* shippingTenant
        const first = yield* say(tenant, { id: "r-1", conversationId: "resume", text: "One", syncOnly: true })
        const session = yield* signIn()
        const path = conversationPath(tenant.workspaceId, first.conversation.id)
        const before = liveUrl(yield* get(session, path))
        const second = yield* say(tenant, { id: "r-2", conversationId: "resume", text: "Two", syncOnly: true })
        const after = new URL(liveUrl(yield* get(session, path)), "http://x")

        const live = yield* openLive(session, before, { "last-event-id": after.search.slice(1) })
        const third = yield* say(tenant, { id: "r-3", conversationId: "resume", text: "Three", syncOnly: true })
        yield* live.waitFor((f) => f.id === `msg-${third.message.id}`)
        expect(live.fragments().map((f) => f.id)).not.toContain(`msg-${second.message.id}`)
      }).pipe(Effect.scoped))

    it.effect("the list's first page is live: a new conversation comes at the top, a changed one is sent again", () =>
      Effect.gen(function*() {
        const { tenant } = yield* shippingTenant
        const session = yield* signIn()
        const empty = yield* get(session, listPath(tenant))
        expect(empty.text).toContain(`<tr id="conversations-empty">`)
        const live = yield* openLive(session, liveUrl(empty))
        expect(live.headers["content-type"]).toMatch(/^text\/event-stream/)

        // The first conversation takes the place of the "No conversation yet" row.
        const first = yield* say(tenant, { id: "l-1", conversationId: "live-list-1", text: "First", syncOnly: true })
        const placed = yield* live.waitFor((f) => f.id === "conversations-empty")
        expect(placed).toMatchObject({ target: "conversations-body", prepend: true })
        expect(placed.html).toContain(`<tr id="conversation-${first.conversation.id}">`)
        expect(placed.html).toContain("<code>live-list-1</code>")

        // A second one goes at the top, announced; the first, changed, is sent again with its new count.
        const second = yield* say(tenant, { id: "l-2", conversationId: "live-list-2", text: "Second", syncOnly: true })
        const added = yield* live.waitFor((f) => f.id === `conversation-${second.conversation.id}`)
        expect(added).toMatchObject({ target: "conversations-body", prepend: true, announce: "New conversation" })
        yield* say(tenant, { id: "l-3", conversationId: "live-list-1", text: "Again", syncOnly: true })
        const changed = yield* live.waitFor((f) => f.id === `conversation-${first.conversation.id}` && f.html.includes("<td>2</td>"))
        expect(changed.announce).toBeUndefined()

        // A page rendered now shows them all: its stream sends nothing at first.
        const now = yield* get(session, listPath(tenant))
        const quiet = yield* openLive(session, liveUrl(now))
        yield* Effect.sleep("2500 millis")
        expect(quiet.fragments()).toEqual([])

        // Filtered to open ones: a listed conversation that closes leaves the filter, and its row still
        // follows (it shows closed until the page is reloaded).
        const open = yield* get(session, listPath(tenant, "?status=open"))
        const filtered = yield* openLive(session, liveUrl(open))
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE conversations SET status = 'closed', updated_at = now() WHERE id = ${first.conversation.id}`
        const closed = yield* filtered.waitFor((f) => f.id === `conversation-${first.conversation.id}`)
        expect(closed.html).toContain("s-closed")
      }).pipe(Effect.scoped))
  })
})
