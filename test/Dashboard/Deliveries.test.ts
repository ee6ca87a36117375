/**
 * The dashboard's delivery pages: a real delivery failing against a receiver, shown with its attempts,
 * replayed with the Replay button once the receiver recovers; filters and pages; replay-all; the last
 * hour's charts (and their bucket function, pure); tenancy and CSRF.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import { chartWindow, minuteBuckets, niceCeiling } from "../../src/Dashboard/Charts.js"
import { readFilters } from "../../src/Dashboard/Deliveries.js"
import { DeliveryJson } from "../../src/Domain/Delivery.js"
import { ADMIN_TOKEN, bodyAs, call, makeTenant, type Tenant, TestAppWithWorkers } from "../support/App.js"
import { csrfOf, dashboard, type DashboardSession, type Page, visibleText } from "../support/Dashboard.js"
import { eventually } from "../support/Eventually.js"
import { makeReceiver } from "../support/Receiver.js"

const customerId = "6f1c1f8e-1d7e-4c8e-9a0a-1b2c3d4e5f60"

const ask = (tenant: Tenant, id: string, conversationId: string) =>
  call("POST", `/v1/webhooks/${tenant.integrationId}/message-received`, {
    token: tenant.token,
    body: { id, role: "human", customerId, conversationId, text: "Where is my parcel?" }
  }).pipe(Effect.tap((reply) => Effect.sync(() => expect(reply.status).toBe(200))))

/** The integration's deliveries as the API lists them. */
const apiDeliveries = (tenant: Tenant) =>
  call("GET", `/v1/integration/${tenant.integrationId}/deliveries`, { token: tenant.token }).pipe(
    Effect.flatMap(bodyAs(Schema.Array(DeliveryJson))),
    Effect.map((reply) => reply.body)
  )

const until = (tenant: Tenant, predicate: (list: ReadonlyArray<typeof DeliveryJson.Encoded>) => boolean) =>
  eventually(apiDeliveries(tenant), predicate, 30_000)

const listPath = (tenant: Tenant, query = "") =>
  `/dashboard/w/${tenant.workspaceId}/integrations/${tenant.integrationId}/deliveries${query}`

const deliveryPath = (tenant: Tenant, deliveryId: string, rest = "") => listPath(tenant, `/${deliveryId}${rest}`)

/** Signs in with `token` straight onto `path` (a page the token may see), reading its CSRF token there. */
const signInAt = (token: string, path: string) =>
  Effect.gen(function*() {
    const answer = yield* dashboard("POST", "/dashboard/sign-in", { form: { token, next: path } })
    expect(answer.status).toBe(303)
    expect(answer.headers["location"]).toBe(path)
    const cookie = (answer.headers["set-cookie"] ?? "").split(";")[0] ?? ""
    const page = yield* dashboard("GET", path, { session: { cookie, csrf: "" } })
    expect(page.status).toBe(200)
    return { cookie, csrf: csrfOf(page) } satisfies DashboardSession
  })

const get = (session: DashboardSession, path: string) => dashboard("GET", path, { session })

/** The rows of the deliveries table: the delivery ids linked, in order. */
const listedIds = (page: Page, tenant: Tenant): ReadonlyArray<string> =>
  [...page.text.matchAll(new RegExp(`href="${listPath(tenant)}/([0-9a-f-]{36})"`, "g"))].map((match) => match[1] ?? "")

/** The body rows of a table whose caption is `caption` (cells' text). */
const tableRows = (page: Page, caption: string): ReadonlyArray<ReadonlyArray<string>> => {
  const start = page.text.indexOf(`<caption class="visually-hidden">${caption}</caption>`)
  expect(start).toBeGreaterThan(-1)
  const table = page.text.slice(start, page.text.indexOf("</table>", start))
  const body = table.slice(table.indexOf("<tbody>"))
  return [...body.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].map((row) =>
    [...(row[1] ?? "").matchAll(/<t[hd][^>]*>([\s\S]*?)<\/t[hd]>/g)].map((cell) =>
      (cell[1] ?? "").replace(/<[^>]+>/g, "").trim()
    )
  )
}

describe("chart buckets", () => {
  const minute = 60_000
  // 2026-11-22 10:30:20 UTC: the window is 09:31 to 10:30.
  const now = Date.UTC(2026, 10, 22, 10, 30, 20)
  const epochMinute = (hours: number, minutes: number) => Date.UTC(2026, 10, 22, hours, minutes) / minute

  it("the window is the 60 whole minutes ending with the current one", () => {
    expect(chartWindow(now)).toEqual({
      from: new Date(Date.UTC(2026, 10, 22, 9, 31)),
      to: new Date(Date.UTC(2026, 10, 22, 10, 31))
    })
  })

  it("places each minute's counts by outcome and its p50/p99; empty minutes are zero with no latency", () => {
    const buckets = minuteBuckets(now, [
      { minute: epochMinute(9, 31), succeeded: 4, failed: 1, p50: 120, p99: 480.5 },
      { minute: epochMinute(10, 0), succeeded: 0, failed: 3, p50: 2000, p99: 2000 },
      { minute: epochMinute(10, 30), succeeded: 7, failed: 0, p50: 35, p99: 90 },
      // Outside the window: left out.
      { minute: epochMinute(9, 30), succeeded: 9, failed: 9, p50: 1, p99: 1 },
      { minute: epochMinute(10, 31), succeeded: 9, failed: 9, p50: 1, p99: 1 }
    ])
    expect(buckets).toHaveLength(60)
    expect(buckets[0]).toEqual({ start: new Date(Date.UTC(2026, 10, 22, 9, 31)), succeeded: 4, failed: 1, p50: 120, p99: 480.5 })
    expect(buckets[29]).toEqual({ start: new Date(Date.UTC(2026, 10, 22, 10, 0)), succeeded: 0, failed: 3, p50: 2000, p99: 2000 })
    expect(buckets[59]).toEqual({ start: new Date(Date.UTC(2026, 10, 22, 10, 30)), succeeded: 7, failed: 0, p50: 35, p99: 90 })
    expect(buckets[1]).toEqual({ start: new Date(Date.UTC(2026, 10, 22, 9, 32)), succeeded: 0, failed: 0, p50: null, p99: null })
    expect(buckets.reduce((sum, bucket) => sum + bucket.succeeded, 0)).toBe(11)
    expect(buckets.reduce((sum, bucket) => sum + bucket.failed, 0)).toBe(4)
    expect(buckets.filter((bucket) => bucket.p50 === null)).toHaveLength(57)
  })

  it("scales to a round maximum", () => {
    expect([0, 1, 3, 7, 10, 11, 480.5, 2000, 2001].map(niceCeiling)).toEqual([1, 1, 5, 10, 10, 20, 500, 2000, 5000])
  })

  it("reads the filters; unknown values are errors, an empty one means any, a bad cursor is ignored", () => {
    const read = (query: string) => readFilters(new URL(`http://dashboard.invalid/x${query}`))
    expect(read("?status=dead&kind=escalate&before=42")).toEqual({
      filters: { status: "dead", kind: "escalate", before: 42 },
      errors: {}
    })
    expect(read("?status=&kind=&before=x")).toEqual({
      filters: { status: undefined, kind: undefined, before: undefined },
      errors: {}
    })
    const bad = read("?status=lost&kind=shout")
    expect(bad.filters).toEqual({ status: undefined, kind: undefined, before: undefined })
    expect(bad.errors.status).toContain("lost")
    expect(bad.errors.kind).toContain("shout")
  })
})

describe("dashboard deliveries", () => {
  // A 2-second retry window: a failing delivery is dead after a few attempts.
  layer(TestAppWithWorkers({ DELIVERY_MAX_AGE: "2 seconds", DELIVERY_TIMEOUT: "500 millis" }), {
    excludeTestServices: true,
    timeout: 120_000
  })((it) => {
    it.effect("a failing delivery is shown dead with its attempts; the Replay button sends it again, delivered", () =>
      Effect.gen(function*() {
        const receiver = yield* makeReceiver(() => ({ status: 500 }))
        const tenant = yield* makeTenant({ webhookUrl: receiver.url, supportedFeatures: { escalation: false } })
        yield* ask(tenant, "m-1", "order-1")
        const [dead] = yield* until(tenant, (list) => list.length === 1 && list[0]?.status === "dead")
        expect(dead!.attempts).toBeGreaterThanOrEqual(2)
        const session = yield* signInAt(tenant.token, listPath(tenant))

        const list = yield* get(session, listPath(tenant))
        expect(list.status).toBe(200)
        expect(listedIds(list, tenant)).toEqual([dead!.id])
        const [row] = tableRows(list, "Deliveries, newest first")
        expect(row).toEqual([
          dead!.id,
          "send_messages",
          "order-1",
          "dead",
          String(dead!.attempts),
          "500",
          "HTTP 500",
          expect.stringMatching(/UTC$/),
          expect.stringMatching(/^dead .* UTC$/)
        ])
        expect(list.text).toContain(`href="/dashboard/w/${tenant.workspaceId}/conversations/${dead!.conversationId}">order-1</a>`)
        // Every attempt is in the last hour's chart, failed.
        expect(visibleText(list)).toContain(`In the last hour: 0 attempts succeeded, ${dead!.attempts} failed.`)

        const detail = yield* get(session, deliveryPath(tenant, dead!.id))
        expect(detail.status).toBe(200)
        const text = visibleText(detail)
        expect(text).toContain("Event kind send_messages")
        expect(text).toContain("Status dead")
        expect(text).toContain(`"event": "send_messages"`)
        expect(text).toContain(`"eventId": "${dead!.id}"`)
        const attempts = tableRows(detail, "Attempts, oldest first")
        expect(attempts).toHaveLength(dead!.attempts)
        expect(attempts[0]).toEqual([
          "1",
          expect.stringMatching(/UTC$/),
          "500",
          expect.stringMatching(/^\d+$/),
          "HTTP 500",
          "{&quot;index&quot;:0}",
          expect.stringMatching(/UTC$/)
        ])
        expect(detail.text).toContain(`action="${deliveryPath(tenant, dead!.id, "/replay")}"`)

        receiver.respondWith(() => ({ status: 200 }))
        const replay = yield* dashboard("POST", deliveryPath(tenant, dead!.id, "/replay"), { session })
        expect(replay.status).toBe(303)
        expect(replay.headers["location"]).toBe(deliveryPath(tenant, dead!.id, "?done=replayed"))
        const [delivered] = yield* until(tenant, (list) => list[0]?.status === "delivered")
        expect(delivered!.attempts).toBe(dead!.attempts + 1)

        const after = yield* get(session, replay.headers["location"] ?? "")
        expect(visibleText(after)).toContain("Replayed: the delivery is queued to be sent again now.")
        expect(visibleText(after)).toContain("Status delivered")
        expect(tableRows(after, "Attempts, oldest first").at(-1)?.slice(2, 3)).toEqual(["200"])
      }))

    it.effect("filters by status and kind, 50 a page with a link to older ones; an unknown filter value is 422", () =>
      Effect.gen(function*() {
        const receiver = yield* makeReceiver()
        const tenant = yield* makeTenant({
          webhookUrl: receiver.url,
          supportedFeatures: { escalation: false, conversationTitle: true }
        })
        yield* ask(tenant, "f-1", "filters")
        const delivered = yield* until(tenant, (list) => list.length >= 2 && list.every((d) => d.status === "delivered"))
        const kinds = new Set(delivered.map((d) => d.event))
        expect(kinds).toEqual(new Set(["conversation_title", "send_messages"]))
        const session = yield* signInAt(tenant.token, listPath(tenant))

        const byKind = yield* get(session, listPath(tenant, "?kind=conversation_title"))
        expect(listedIds(byKind, tenant)).toEqual(delivered.filter((d) => d.event === "conversation_title").map((d) => d.id))
        expect(byKind.text).toMatch(/<option value="conversation_title" selected>/)
        const byStatus = yield* get(session, listPath(tenant, "?status=delivered"))
        expect(listedIds(byStatus, tenant)).toEqual(delivered.map((d) => d.id))
        const none = yield* get(session, listPath(tenant, "?status=dead&kind="))
        expect(listedIds(none, tenant)).toEqual([])
        expect(visibleText(none)).toContain("No deliveries match these filters.")

        const bad = yield* get(session, listPath(tenant, "?status=lost&kind=send_messages"))
        expect(bad.status).toBe(422)
        expect(bad.text).toMatch(/<p id="filter-status-error" class="field-error" role="alert">Unknown status “lost”/)
        expect(listedIds(bad, tenant)).toEqual([])

        // 55 more (written directly, already delivered: no job sends them): pages of 50, newest first.
        const sql = yield* SqlClient.SqlClient
        yield* sql`
          INSERT INTO events (workspace_id, integration_id, kind, body, status, delivered_at)
          SELECT ${tenant.workspaceId}, ${tenant.integrationId}, 'send_csat', '{}', 'delivered', now()
          FROM generate_series(1, 55)`
        const first = yield* get(session, listPath(tenant))
        const firstIds = listedIds(first, tenant)
        expect(firstIds).toHaveLength(50)
        const older = /<a href="([^"]+)" rel="next">Older deliveries<\/a>/.exec(first.text)?.[1]?.replace(/&amp;/g, "&")
        expect(older).toMatch(/\?before=\d+$/)
        const second = yield* get(session, older ?? "")
        const secondIds = listedIds(second, tenant)
        expect(secondIds).toHaveLength(55 + delivered.length - 50)
        expect(new Set([...firstIds, ...secondIds]).size).toBe(55 + delivered.length)
        // The oldest are the pipeline's, on the last page; it links back to the newest and to nothing older.
        expect(secondIds.slice(-delivered.length)).toEqual(delivered.map((d) => d.id))
        expect(second.text).not.toContain("Older deliveries")
        expect(second.text).toContain(`href="${listPath(tenant)}">Newest</a>`)
      }))

    it.effect("replay all failed since a time: how many were replayed; a missing or invalid time is 422, nothing replayed", () =>
      Effect.gen(function*() {
        const receiver = yield* makeReceiver(() => ({ status: 503 }))
        const tenant = yield* makeTenant({ webhookUrl: receiver.url, supportedFeatures: { escalation: false } })
        yield* ask(tenant, "a-1", "conv-a")
        yield* ask(tenant, "b-1", "conv-b")
        const dead = yield* until(tenant, (list) => list.length === 2 && list.every((d) => d.status === "dead"))
        const session = yield* signInAt(tenant.token, listPath(tenant))
        const page = yield* get(session, listPath(tenant))
        expect(page.text).toMatch(/<label for="replay-since">[\s\S]*UTC[\s\S]*<\/label>/)
        expect(page.text).toContain(`<input id="replay-since" name="since" type="datetime-local"`)

        for (const since of ["yesterday", "", "2026-02-30T10:00"]) {
          const refused = yield* dashboard("POST", listPath(tenant, "/replay-all"), { session, form: { since } })
          expect(refused.status).toBe(422)
          expect(refused.text).toMatch(/<p id="replay-since-error" class="field-error" role="alert">Enter/)
          expect(refused.text).toContain(`aria-describedby="replay-since-error"`)
          expect((yield* apiDeliveries(tenant)).map((d) => d.status)).toEqual(["dead", "dead"])
        }

        // A dead streamed delta (written directly): replay-all skips it, its own Replay button sends it.
        const sql = yield* SqlClient.SqlClient
        const [delta] = yield* sql<{ readonly id: string }>`
          INSERT INTO events (workspace_id, integration_id, kind, body, status, attempts, dead_at)
          VALUES (${tenant.workspaceId}, ${tenant.integrationId}, 'message_delta', '{"sequence":1}', 'dead', 1, now())
          RETURNING id`

        receiver.respondWith(() => ({ status: 204 }))
        const replayed = yield* dashboard("POST", listPath(tenant, "/replay-all"), {
          session,
          form: { since: "2000-01-01T00:00" }
        })
        expect(replayed.status).toBe(303)
        expect(replayed.headers["location"]).toBe(listPath(tenant, "?done=2"))
        const after = yield* get(session, replayed.headers["location"] ?? "")
        expect(visibleText(after)).toContain("Replayed 2 failed or dead deliveries")
        const deadIds = dead.map((d) => d.id)
        yield* until(tenant, (list) => list.every((d) => d.status === (deadIds.includes(d.id) ? "delivered" : "dead")))

        const deltaPage = yield* get(session, deliveryPath(tenant, delta!.id))
        expect(visibleText(deltaPage)).toContain("A message_delta is sent at most once")
        const deltaReplay = yield* dashboard("POST", deliveryPath(tenant, delta!.id, "/replay"), { session })
        expect(deltaReplay.status).toBe(303)
        const delivered = yield* until(tenant, (list) => list.every((d) => d.status === "delivered"))
        expect(delivered).toHaveLength(3)

        const future = yield* dashboard("POST", listPath(tenant, "/replay-all"), { session, form: { since: "2999-01-01T00:00:00" } })
        expect(future.headers["location"]).toBe(listPath(tenant, "?done=0"))
      }))

    it.effect("the charts sum up the last hour's attempts per minute: outcomes, p50 and p99", () =>
      Effect.gen(function*() {
        const receiver = yield* makeReceiver()
        const tenant = yield* makeTenant({ webhookUrl: receiver.url, supportedFeatures: { escalation: false } })
        yield* ask(tenant, "c-1", "charts")
        const [delivery] = yield* until(tenant, (list) => list[0]?.status === "delivered")
        // Four more attempts five minutes ago, at known latencies (one answered 500, one not at all),
        // and one two hours ago, outside the charts.
        const minute = Math.floor(Date.now() / 60_000) * 60_000 - 5 * 60_000
        const at = new Date(minute + 10_000)
        const sql = yield* SqlClient.SqlClient
        yield* sql`
          INSERT INTO delivery_attempts (event_id, attempt, started_at, latency_ms, status_code, error)
          VALUES (${delivery!.id}, 101, ${at}, 100, 200, NULL), (${delivery!.id}, 102, ${at}, 200, 204, NULL),
                 (${delivery!.id}, 103, ${at}, 300, 500, 'HTTP 500'), (${delivery!.id}, 104, ${at}, 400, NULL, 'Timed out'),
                 (${delivery!.id}, 105, ${new Date(minute - 7_200_000)}, 9000, 500, 'HTTP 500')`
        const session = yield* signInAt(tenant.token, listPath(tenant))
        const page = yield* get(session, listPath(tenant))
        expect(page.text).toMatch(
          /<svg class="chart" [^>]*role="img" aria-label="Delivery attempts per minute in the last hour, succeeded and failed"/
        )
        expect(page.text).toMatch(/<svg class="chart" [^>]*role="img" aria-label="Delivery latency per minute in the last hour, p50 and p99"/)
        expect(page.text).toContain(`<title>Delivery attempts per minute in the last hour, succeeded and failed</title>`)
        expect(page.text).toContain(`<span class="sw sw-ok" aria-hidden="true"></span>Succeeded (2xx)`)
        expect(page.text).toContain(`<span class="sw sw-p99" aria-hidden="true"></span>p99`)
        expect(page.text).toContain(`fill="#cf222e"`)
        expect(page.text).toContain(`stroke="#0b57d0"`)

        const label = at.toISOString().slice(11, 16)
        const attempts = tableRows(page, "Attempts per minute")
        expect(attempts).toHaveLength(60)
        expect(attempts.find((row) => row[0] === label)).toEqual([label, "2", "2"])
        expect(attempts.reduce((sum, row) => sum + Number(row[1]), 0)).toBe(3)
        expect(attempts.reduce((sum, row) => sum + Number(row[2]), 0)).toBe(2)
        const latency = tableRows(page, "Latency per minute")
        // percentile_cont over 100, 200, 300, 400: 250 and 397.
        expect(latency.find((row) => row[0] === label)).toEqual([label, "250", "397"])
        expect(latency.filter((row) => row[1] === "—").length).toBeGreaterThanOrEqual(57)
      }))

    it.effect("another workspace's integrator gets 404 for the list, a delivery and replays, and nothing is replayed", () =>
      Effect.gen(function*() {
        const receiver = yield* makeReceiver(() => ({ status: 500 }))
        const mine = yield* makeTenant({ webhookUrl: receiver.url, supportedFeatures: { escalation: false } })
        const theirs = yield* makeTenant()
        yield* ask(mine, "t-1", "tenancy")
        const [dead] = yield* until(mine, (list) => list[0]?.status === "dead")
        const sent = receiver.received().length
        const intruder = yield* signInAt(theirs.token, listPath(theirs))

        const probes: ReadonlyArray<readonly ["GET" | "POST", string]> = [
          ["GET", listPath(mine)],
          ["GET", deliveryPath(mine, dead!.id)],
          ["POST", deliveryPath(mine, dead!.id, "/replay")],
          ["POST", listPath(mine, "/replay-all")],
          // Their own workspace, with my integration or my delivery in the path.
          ["GET", `/dashboard/w/${theirs.workspaceId}/integrations/${mine.integrationId}/deliveries`],
          ["GET", `/dashboard/w/${theirs.workspaceId}/integrations/${mine.integrationId}/deliveries/${dead!.id}`],
          ["POST", `/dashboard/w/${theirs.workspaceId}/integrations/${mine.integrationId}/deliveries/${dead!.id}/replay`],
          ["POST", `/dashboard/w/${theirs.workspaceId}/integrations/${mine.integrationId}/deliveries/replay-all`],
          ["GET", deliveryPath(theirs, dead!.id)],
          ["POST", deliveryPath(theirs, dead!.id, "/replay")],
          // Not an id at all.
          ["GET", deliveryPath(theirs, "not-a-uuid")]
        ]
        for (const [method, path] of probes) {
          const answer = yield* dashboard(method, path, { session: intruder, form: { since: "2000-01-01T00:00" } })
          expect([path, answer.status]).toEqual([path, 404])
          expect(answer.text).not.toContain(dead!.id)
        }
        const [still] = yield* apiDeliveries(mine)
        expect(still).toMatchObject({ id: dead!.id, status: "dead", attempts: dead!.attempts })
        expect(receiver.received()).toHaveLength(sent)

        // The operator sees it.
        const operator = yield* signInAt(ADMIN_TOKEN, deliveryPath(mine, dead!.id))
        expect((yield* get(operator, deliveryPath(mine, dead!.id))).status).toBe(200)

        // A replay without the CSRF token is refused, by the owner too.
        const owner = yield* signInAt(mine.token, listPath(mine))
        const forged = yield* dashboard("POST", deliveryPath(mine, dead!.id, "/replay"), { session: owner, csrf: false })
        expect(forged.status).toBe(403)
        const forgedAll = yield* dashboard("POST", listPath(mine, "/replay-all"), {
          session: owner,
          csrf: false,
          form: { since: "2000-01-01T00:00" }
        })
        expect(forgedAll.status).toBe(403)
        expect((yield* apiDeliveries(mine))[0]).toMatchObject({ status: "dead", attempts: dead!.attempts })
      }))
  })
})
