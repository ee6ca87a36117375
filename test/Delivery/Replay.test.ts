/**
 * What happens when receivers fail for good: dead letters, replay (one and all since a time),
 * 410 Gone, Retry-After, and the SSRF guard of production mode.
 */
import { describe, expect, layer } from "@effect/vitest"
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as dns from "node:dns/promises"
import * as os from "node:os"
import * as Metric from "effect/Metric"
import * as Schema from "effect/Schema"
import { Replayed } from "../../src/Delivery/Api.js"
import { DeliveryDetail, DeliveryJson } from "../../src/Domain/Delivery.js"
import { IntegrationJson } from "../../src/Domain/Integration.js"
import { deliveryDeadOf } from "../../src/Observability/Metrics.js"
import { bodyAs, call, makeTenant, type Tenant, TestAppWithWorkers, ValidationBody } from "../support/App.js"
import { eventually } from "../support/Eventually.js"
import { makeReceiver, type Received } from "../support/Receiver.js"
import { expectSignedWebhook } from "../support/WebhookSignatures.js"

const customerId = "6f1c1f8e-1d7e-4c8e-9a0a-1b2c3d4e5f60"

const ask = (tenant: Tenant, id: string, conversationId: string) =>
  call("POST", `/v1/webhooks/${tenant.integrationId}/message-received`, {
    token: tenant.token,
    body: { id, role: "human", customerId, conversationId, text: "Where is my parcel?" }
  }).pipe(Effect.tap((reply) => Effect.sync(() => expect(reply.status).toBe(200))))

const deliveries = (tenant: Tenant, query = "") =>
  call("GET", `/v1/integration/${tenant.integrationId}/deliveries${query}`, { token: tenant.token }).pipe(
    Effect.tap((reply) => Effect.sync(() => expect(reply.status).toBe(200))),
    Effect.flatMap(bodyAs(Schema.Array(DeliveryJson))),
    Effect.map((reply) => reply.body)
  )

/** The deliveries list, once `predicate` holds of it. */
const until = (
  tenant: Tenant,
  predicate: (list: ReadonlyArray<typeof DeliveryJson.Encoded>) => boolean,
  timeoutMs = 15_000
) =>
  eventually(deliveries(tenant), predicate, timeoutMs)

describe("dead letters and replay", () => {
  // A 3-second retry window: events die quickly, after at least two attempts even when a loaded CI
  // machine delays the first (1.5 s let a late first attempt be the last); attempts time out after
  // half a second.
  layer(TestAppWithWorkers({ DELIVERY_MAX_AGE: "3 seconds", DELIVERY_TIMEOUT: "500 millis" }), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("an event whose receiver keeps failing goes dead; replay sends it again, signed afresh", () =>
      Effect.gen(function*() {
        const receiver = yield* makeReceiver(() => ({ status: 500 }))
        const tenant = yield* makeTenant({ webhookUrl: receiver.url, supportedFeatures: { escalation: false } })
        const deadCounter = deliveryDeadOf("send_messages")
        const deadBefore = (yield* Metric.value(deadCounter)).count
        yield* ask(tenant, "m-1", "c-1")
        const [dead] = yield* until(tenant, (list) => list.length === 1 && list[0].status === "dead")
        expect((yield* Metric.value(deadCounter)).count).toBe(deadBefore + 1)
        expect(dead.attempts).toBeGreaterThanOrEqual(2)
        expect(dead).toMatchObject({ event: "send_messages", lastStatusCode: 500, lastError: "HTTP 500" })
        expect(dead.deadAt).toMatch(/Z$/)
        expect(yield* deliveries(tenant, "?status=dead")).toHaveLength(1)
        expect(yield* deliveries(tenant, "?status=delivered")).toHaveLength(0)

        const before = receiver.received().length
        receiver.respondWith(() => ({ status: 200 }))
        const replay = yield* call("POST", `/v1/integration/${tenant.integrationId}/deliveries/${dead.id}/replay`, {
          token: tenant.token
        })
        expect(replay.status).toBe(200)
        expect(replay.body).toMatchObject({ id: dead.id, status: "pending" })
        const [delivered] = yield* until(tenant, (list) => list[0]?.status === "delivered")
        expect(delivered.attempts).toBe(dead.attempts + 1)
        const resent = receiver.received().slice(before)
        expect(resent).toHaveLength(1)
        expect(resent[0]!.body).toBe(receiver.received()[0]!.body)
        expectSignedWebhook(resent[0]!, tenant.webhookSecret)
        // Signed afresh: the event died DELIVERY_MAX_AGE (3 s) after its first attempt, so the replay's
        // timestamp is a later second than that attempt's, not its headers sent again.
        const timestampOf = (request: Received) => Number(request.headers["x-parley-webhook-timestamp"])
        expect(timestampOf(resent[0]!)).toBeGreaterThan(timestampOf(receiver.received()[0]!))
      }))

    it.effect("replay all since a time re-sends every dead event of the integration, oldest first", () =>
      Effect.gen(function*() {
        const receiver = yield* makeReceiver(() => ({ status: 503 }))
        const tenant = yield* makeTenant({ webhookUrl: receiver.url, supportedFeatures: { escalation: false } })
        yield* ask(tenant, "a-1", "conv-a")
        yield* ask(tenant, "b-1", "conv-b")
        const dead = yield* until(tenant, (list) => list.length === 2 && list.every((d) => d.status === "dead"))
        receiver.respondWith(() => ({ status: 204 }))
        const replay = yield* call(
          "POST",
          `/v1/integration/${tenant.integrationId}/deliveries/replay?since=2000-01-01T00:00:00Z`,
          { token: tenant.token }
        )
        expect(replay.status).toBe(200)
        const { body: replayed } = yield* bodyAs(Replayed)(replay)
        expect(replayed.replayed).toBe(2)
        expect([...replayed.deliveryIds].sort()).toEqual(dead.map((d) => d.id).sort())
        yield* until(tenant, (list) => list.every((d) => d.status === "delivered"))
        const future = yield* call(
          "POST",
          `/v1/integration/${tenant.integrationId}/deliveries/replay?since=2999-01-01T00:00:00Z`,
          { token: tenant.token }
        )
        expect(future.body).toEqual({ replayed: 0, deliveryIds: [] })
      }))

    it.effect("410 Gone kills the event and disables the webhook until its URL changes", () =>
      Effect.gen(function*() {
        const receiver = yield* makeReceiver(() => ({ status: 410 }))
        const tenant = yield* makeTenant({ webhookUrl: receiver.url, supportedFeatures: { escalation: false } })
        yield* ask(tenant, "g-1", "gone-1")
        yield* until(tenant, (list) => list[0]?.status === "dead")
        const integrations = yield* call("GET", "/v1/integration/list", { token: tenant.token })
        expect((yield* bodyAs(Schema.Array(IntegrationJson))(integrations)).body[0].settings.webhookEnabled).toBe(false)

        yield* ask(tenant, "g-2", "gone-2")
        const list = yield* until(tenant, (list) => list.length === 2 && list.every((d) => d.status === "dead"))
        expect(list[0].lastError).toContain("disabled")
        expect(receiver.received()).toHaveLength(1)

        const next = yield* makeReceiver()
        const update = yield* call("POST", `/v1/integration/${tenant.integrationId}/update-settings`, {
          token: tenant.token,
          body: { webhook: { url: next.url } }
        })
        expect((yield* bodyAs(IntegrationJson)(update)).body.settings.webhookEnabled).toBe(true)
        yield* call("POST", `/v1/integration/${tenant.integrationId}/deliveries/${list[0].id}/replay`, {
          token: tenant.token
        })
        yield* next.waitFor(1)
      }))

    it.effect("Retry-After is honoured when longer than the scheduled delay", () =>
      Effect.gen(function*() {
        const receiver = yield* makeReceiver((_, index) =>
          index === 0 ? { status: 503, headers: { "Retry-After": "1" } } : { status: 200 }
        )
        const tenant = yield* makeTenant({ webhookUrl: receiver.url, supportedFeatures: { escalation: false } })
        yield* ask(tenant, "ra-1", "retry-after")
        yield* receiver.waitFor(2)
        const [delivery] = yield* until(tenant, (list) => list[0]?.status === "delivered")
        const detail = yield* call("GET", `/v1/integration/${tenant.integrationId}/deliveries/${delivery.id}`, {
          token: tenant.token
        })
        const [first, second] = (yield* bodyAs(DeliveryDetail)(detail)).body.attemptLog
        expect([first?.statusCode, second?.statusCode]).toEqual([503, 200])
        // The retry was scheduled at least the Retry-After (1 s) after the first attempt, and did not
        // start before then. A null nextRetryAt parses to NaN and fails both comparisons.
        const retryAt = Date.parse(first?.nextRetryAt ?? "")
        expect(retryAt - Date.parse(first?.startedAt ?? "")).toBeGreaterThanOrEqual(1000)
        expect(Date.parse(second?.startedAt ?? "")).toBeGreaterThanOrEqual(retryAt)
      }))

    it.effect("custom headers are sent and never replace the signature headers; a time-out is a failed attempt", () =>
      Effect.gen(function*() {
        const receiver = yield* makeReceiver((_, index) => ({ status: 200, delayMs: index === 0 ? 1000 : 0 }))
        const tenant = yield* makeTenant({ webhookUrl: receiver.url, supportedFeatures: { escalation: false } })
        yield* call("POST", `/v1/integration/${tenant.integrationId}/update-settings`, {
          token: tenant.token,
          body: { webhook: { headers: { "X-Shop": "42", Authorization: "Bearer receiver-token" } } }
        })
        yield* ask(tenant, "h-1", "headers")
        const [delivery] = yield* until(tenant, (list) => list[0]?.status === "delivered")
        const last = receiver.received().at(-1)!
        expect(last.headers["x-shop"]).toBe("42")
        expect(last.headers["authorization"]).toBe("Bearer receiver-token")
        expect(last.headers["content-type"]).toBe("application/json")
        expectSignedWebhook(last, tenant.webhookSecret)
        const detail = yield* call("GET", `/v1/integration/${tenant.integrationId}/deliveries/${delivery.id}`, {
          token: tenant.token
        })
        expect((yield* bodyAs(DeliveryDetail)(detail)).body.attemptLog[0]).toMatchObject({ attempt: 1, statusCode: null, error: "Timed out" })
      }))

    it.effect("deliveries are the workspace's own: another workspace's answer 404; bad filters are 422", () =>
      Effect.gen(function*() {
        const receiver = yield* makeReceiver()
        const mine = yield* makeTenant({ webhookUrl: receiver.url, supportedFeatures: { escalation: false } })
        const theirs = yield* makeTenant()
        yield* ask(mine, "o-1", "own")
        const [delivery] = yield* until(mine, (list) => list[0]?.status === "delivered")
        const probe = yield* call("GET", `/v1/integration/${mine.integrationId}/deliveries/${delivery.id}`, {
          token: theirs.token
        })
        expect(probe.status).toBe(404)
        const cross = yield* call("GET", `/v1/integration/${theirs.integrationId}/deliveries/${delivery.id}`, {
          token: theirs.token
        })
        expect(cross).toMatchObject({ status: 404, body: { detail: "Delivery not found" } })
        const replay = yield* call("POST", `/v1/integration/${mine.integrationId}/deliveries/${delivery.id}/replay`, {
          token: theirs.token
        })
        expect(replay.status).toBe(404)
        const bad = yield* call("GET", `/v1/integration/${mine.integrationId}/deliveries?status=lost&since=yesterday`, {
          token: mine.token
        })
        expect(bad.status).toBe(422)
        expect((yield* bodyAs(ValidationBody)(bad)).body.detail[0]).toMatchObject({ loc: ["query", "status"], type: "literal_error" })
        const noSince = yield* call("POST", `/v1/integration/${mine.integrationId}/deliveries/replay`, {
          token: mine.token
        })
        expect(noSince.status).toBe(422)
        expect((yield* bodyAs(ValidationBody)(noSince)).body.detail[0]).toMatchObject({ loc: ["query", "since"], type: "missing" })
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql`SELECT id FROM events WHERE integration_id = ${theirs.integrationId}`
        expect(rows).toEqual([])
      }))
  })
})

/** A name of this machine that resolves to loopback (`/etc/hosts`), if it has one. */
const loopbackName = await dns.lookup(os.hostname()).then(
  ({ address }) => (address.startsWith("127.") || address === "::1" ? os.hostname() : undefined),
  () => undefined
)

describe("SSRF guard", () => {
  layer(TestAppWithWorkers({ PARLEY_MODE: "production" }), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("in production, a stored webhook URL with a loopback address is refused, the event dead at once", () =>
      Effect.gen(function*() {
        const receiver = yield* makeReceiver()
        const tenant = yield* makeTenant({ webhookUrl: "https://receiver.example/hook", supportedFeatures: { escalation: false } })
        // Saved before the rule (or in development mode): create and update now refuse it.
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE integrations SET settings = jsonb_set(settings, '{webhook,url}', to_jsonb(${receiver.url}::text))
                   WHERE id = ${tenant.integrationId}`
        yield* ask(tenant, "s-1", "ssrf")
        const [dead] = yield* until(tenant, (list) => list[0]?.status === "dead")
        expect(dead.lastError).toContain("SSRF guard")
        expect(dead.attempts).toBe(1)
        expect(receiver.received()).toEqual([])
      }))

    // The name resolves to loopback only when connecting: refused then, and dead at once, not retried for 28 h.
    it.effect.skipIf(loopbackName === undefined)("a host name that resolves to loopback is refused when connecting, dead at once", () =>
      Effect.gen(function*() {
        const receiver = yield* makeReceiver()
        const url = receiver.url.replace("127.0.0.1", loopbackName ?? "")
        const tenant = yield* makeTenant({ webhookUrl: url, supportedFeatures: { escalation: false } })
        yield* ask(tenant, "s-2", "ssrf-dns")
        const [dead] = yield* until(tenant, (list) => list[0]?.status === "dead")
        expect(dead.lastError).toContain("SSRF guard")
        expect(dead.attempts).toBe(1)
        expect(receiver.received()).toEqual([])
      }))
  })
})
