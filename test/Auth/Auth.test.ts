import { describe, expect, it, layer } from "@effect/vitest"
import { HttpClient, HttpClientRequest } from "effect/http"
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as TestClock from "effect/testing/TestClock"
import { IntegrationJson } from "../../src/Domain/Integration.js"
import { Health } from "../../src/Health/Api.js"
import { bodyAs, call, type CallOptions, DetailBody, makeTenant, type Reply, type Tenant, TestApp } from "../support/App.js"

interface Endpoint {
  readonly name: string
  readonly method: "GET" | "POST"
  readonly path: (tenant: Tenant) => string
  readonly body?: (probe: string) => unknown
  /** What a valid token gets for `body`: proves the endpoint is reachable once authenticated. */
  readonly authenticatedStatus: number
}

const message = (id: string) => ({
  id,
  role: "human",
  sentAt: "2026-11-22T10:00:00Z",
  customerId: crypto.randomUUID(),
  text: "Where is my order?",
  conversationId: `conv-${id}`,
  syncOnly: true
})

/** The six /v1 endpoints every integrator calls. */
const endpoints: ReadonlyArray<Endpoint> = [
  { name: "get customer", method: "GET", path: () => "/v1/customer/external-id/x", authenticatedStatus: 200 },
  { name: "list integrations", method: "GET", path: () => "/v1/integration/list", authenticatedStatus: 200 },
  {
    name: "update settings",
    method: "POST",
    path: (t) => `/v1/integration/${t.integrationId}/update-settings`,
    body: () => ({ name: "Renamed by an intruder" }),
    authenticatedStatus: 200
  },
  {
    name: "message received",
    method: "POST",
    path: (t) => `/v1/webhooks/${t.integrationId}/message-received`,
    body: message,
    authenticatedStatus: 200
  },
  {
    name: "csat response received",
    method: "POST",
    path: (t) => `/v1/webhooks/${t.integrationId}/csat-response-received`,
    body: (probe) => ({ conversationId: `conv-${probe}`, ratingStyle: 5, ratingAnswer: "5" }),
    // No such conversation: authenticated, then not found.
    authenticatedStatus: 404
  },
  {
    name: "helpdesk event received",
    method: "POST",
    path: (t) => `/v1/webhooks/${t.integrationId}/helpdesk-event-received`,
    body: () => ({ event: "not_a_chatwoot_event" }),
    // An event type Parley does not handle: authenticated, then 422.
    authenticatedStatus: 422
  }
]

const send = (endpoint: Endpoint, tenant: Tenant, probe: string, options: Omit<CallOptions, "body">) =>
  call(endpoint.method, endpoint.path(tenant), {
    ...options,
    ...(endpoint.body === undefined ? {} : { body: endpoint.body(probe) })
  })

const expectUnauthorized = (reply: Reply, label: string) =>
  Effect.gen(function*() {
    expect(reply.status, label).toBe(401)
    expect(reply.body, label).toEqual({ detail: expect.any(String) })
    // Exactly {detail}: the decode allows no other key.
    yield* bodyAs(DetailBody)(reply)
    expect(reply.headers["www-authenticate"], label).toBe("Bearer")
  })

const storedMessages = (externalId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT id FROM messages WHERE external_id = ${externalId}`)

/**
 * The part of /openapi.json this file reads. The document is the OpenAPI generator's, not one of
 * Parley's response models: other keys are allowed (an index signature), the ones read are checked.
 */
const OpenApiDocument = Schema.StructWithRest(
  Schema.Struct({
    openapi: Schema.String,
    paths: Schema.Record(Schema.String, Schema.Record(Schema.String, Schema.Unknown))
  }),
  [Schema.Record(Schema.String, Schema.Unknown)]
)

/** A raw call whose body is not JSON (the docs page). */
const getText = (path: string) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const response = yield* client.execute(HttpClientRequest.get(path))
    return { status: response.status, headers: response.headers, text: yield* response.text }
  }).pipe(Effect.scoped, Effect.orDie)

describe("authentication of /v1", () => {
  it.layer(TestApp(), { timeout: 120_000 })((it) => {
    it.effect("every endpoint answers a valid bearer token (the control for the 401s below)", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        for (const endpoint of endpoints) {
          const reply = yield* send(endpoint, tenant, `ok-${crypto.randomUUID()}`, { token: tenant.token })
          expect(reply.status, endpoint.name).toBe(endpoint.authenticatedStatus)
        }
        // The scheme word is case-insensitive (RFC 7235).
        const lower = yield* call("GET", "/v1/integration/list", { headers: { authorization: `bearer ${tenant.token}` } })
        expect(lower.status).toBe(200)
      }))

    it.effect("no Authorization header: 401 {detail} with WWW-Authenticate: Bearer on all six endpoints", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        for (const endpoint of endpoints) {
          yield* expectUnauthorized(yield* send(endpoint, tenant, crypto.randomUUID(), {}), endpoint.name)
        }
      }))

    it.effect("a wrong bearer token: 401 on all six endpoints", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        for (const endpoint of endpoints) {
          const reply = yield* send(endpoint, tenant, crypto.randomUUID(), { headers: { authorization: "Bearer wrong" } })
          yield* expectUnauthorized(reply, endpoint.name)
        }
      }))

    it.effect("a valid token under another scheme (Basic, Token, none): 401 on all six endpoints", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        for (const scheme of ["Basic", "Token", ""]) {
          for (const endpoint of endpoints) {
            const authorization = scheme === "" ? tenant.token : `${scheme} ${tenant.token}`
            const reply = yield* send(endpoint, tenant, crypto.randomUUID(), { headers: { authorization } })
            yield* expectUnauthorized(reply, `${scheme || "no scheme"}: ${endpoint.name}`)
          }
        }
      }))

    it.effect("\"Bearer \" with an empty token, and a token glued to more text: 401 on all six endpoints", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        for (const authorization of ["Bearer ", "Bearer", `Bearer ${tenant.token}x`, `Bearer ${tenant.token} extra`]) {
          for (const endpoint of endpoints) {
            const reply = yield* send(endpoint, tenant, crypto.randomUUID(), { headers: { authorization } })
            yield* expectUnauthorized(reply, `${JSON.stringify(authorization)}: ${endpoint.name}`)
          }
        }
      }))

    it.effect("a valid token of another workspace cannot reach the integration: 404, not 401 or 403", () =>
      Effect.gen(function*() {
        const mine = yield* makeTenant()
        const theirs = yield* makeTenant()
        const reply = yield* call("POST", `/v1/integration/${mine.integrationId}/update-settings`, {
          token: theirs.token,
          body: { name: "Hijacked" }
        })
        expect(reply.status).toBe(404)
        expect(reply.body).toEqual({ detail: "Integration not found" })
      }))

    it.effect("a rejected message-received stores nothing, and settings are untouched by rejected updates", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const endpoint = endpoints.find((e) => e.name === "message received")!
        const attempts: ReadonlyArray<Record<string, string>> = [
          {},
          { authorization: "Bearer wrong" },
          { authorization: `Basic ${tenant.token}` },
          { authorization: `Token ${tenant.token}` },
          { authorization: "Bearer " }
        ]
        for (const [i, headers] of attempts.entries()) {
          const probe = `rejected-${i}-${crypto.randomUUID()}`
          yield* expectUnauthorized(yield* send(endpoint, tenant, probe, { headers }), probe)
          expect(yield* storedMessages(probe)).toEqual([])
        }
        const sql = yield* SqlClient.SqlClient
        const conversations = yield* sql`SELECT id FROM conversations WHERE integration_id = ${tenant.integrationId}`
        expect(conversations).toEqual([])

        const updateSettings = endpoints.find((e) => e.name === "update settings")!
        for (const headers of attempts) {
          yield* expectUnauthorized(yield* send(updateSettings, tenant, "", { headers }), "update settings")
        }
        const list = yield* call("GET", "/v1/integration/list", { token: tenant.token })
        const { body: integrations } = yield* bodyAs(Schema.Array(IntegrationJson))(list)
        expect(integrations[0].settings.name).toBe("Test integration")

        // The control: the same message with the token is stored.
        const probe = `accepted-${crypto.randomUUID()}`
        expect((yield* send(endpoint, tenant, probe, { token: tenant.token })).status).toBe(200)
        expect(yield* storedMessages(probe)).toHaveLength(1)
      }))

    it.effect("the helpdesk endpoint also takes the token as the access_token query parameter", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const path = `/v1/webhooks/${tenant.integrationId}/helpdesk-event-received`
        const body = { event: "not_a_chatwoot_event" }
        const ok = yield* call("POST", `${path}?access_token=${encodeURIComponent(tenant.token)}`, { body })
        expect(ok.status).toBe(422)
        const wrong = yield* call("POST", `${path}?access_token=wrong`, { body })
        yield* expectUnauthorized(wrong, "wrong access_token")
        const empty = yield* call("POST", `${path}?access_token=`, { body })
        yield* expectUnauthorized(empty, "empty access_token")
        // Only the helpdesk endpoint reads the query parameter.
        const elsewhere = yield* call("GET", `/v1/integration/list?access_token=${encodeURIComponent(tenant.token)}`)
        yield* expectUnauthorized(elsewhere, "access_token on another endpoint")
      }))

    it.effect("an unknown route answers 404 {detail: Not Found}", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        for (const path of ["/v1/nope", "/v2/integration/list", "/"]) {
          const reply = yield* call("GET", path, { token: tenant.token })
          expect(reply.status, path).toBe(404)
          expect(reply.body, path).toEqual({ detail: "Not Found" })
        }
        const anonymous = yield* call("POST", "/v1/does-not-exist")
        expect(anonymous.status).toBe(404)
        expect(anonymous.body).toEqual({ detail: "Not Found" })
      }))

    it.effect("/openapi.json is served without a token: OpenAPI 3.1.0 with the API's paths", () =>
      Effect.gen(function*() {
        const reply = yield* call("GET", "/openapi.json")
        expect(reply.status).toBe(200)
        const { body: doc } = yield* bodyAs(OpenApiDocument)(reply)
        expect(doc.openapi).toBe("3.1.0")
        expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining([
          "/v1/customer/external-id/{external_id}",
          "/v1/integration/list",
          "/v1/integration/{integration_id}/update-settings",
          "/v1/webhooks/{integration_id}/message-received",
          "/v1/webhooks/{integration_id}/csat-response-received",
          "/v1/webhooks/{integration_id}/helpdesk-event-received"
        ]))
        expect(doc.paths["/v1/webhooks/{integration_id}/message-received"].post).toBeDefined()
      }))

    it.effect("/docs answers 200 with the API's reference page, made on the first request and the same after", () =>
      Effect.gen(function*() {
        const first = yield* getText("/docs")
        expect(first.status).toBe(200)
        expect(first.headers["content-type"]).toMatch(/^text\/html/)
        expect(first.text.toLowerCase()).toContain("<html")
        // The OpenAPI document and Scalar's bundle, inlined.
        expect(first.text).toContain("message-received")
        expect(first.text).toContain("api-reference")
        const again = yield* getText("/docs")
        expect(again.text).toBe(first.text)
      }))

    it.effect("/health/live and /health/ready answer {status: ok} without a token", () =>
      Effect.gen(function*() {
        const live = yield* call("GET", "/health/live")
        expect(live.status).toBe(200)
        expect((yield* bodyAs(Health)(live)).body).toEqual({ status: "ok" })
        const ready = yield* call("GET", "/health/ready")
        expect(ready.status).toBe(200)
        expect((yield* bodyAs(Health)(ready)).body).toEqual({ status: "ok", database: "ok" })
      }))
  })
})

describe("rate limit per API token (PARLEY_RATE_LIMIT=3)", () => {
  // The standalone `layer`, not `it.layer`: the `it.layer` above replaces the shared `it`'s `layer` method
  // with one that nests into its own layer and memo map, and this block would then reuse the first
  // block's RateLimiter (limit 0) instead of building its own.
  layer(TestApp({ PARLEY_RATE_LIMIT: "3" }), { timeout: 120_000 })((it) => {
    it.effect("the 4th request within a minute with one token is a 429 with Retry-After; other tokens are unaffected", () =>
      Effect.gen(function*() {
        const limited = yield* makeTenant()
        const other = yield* makeTenant()
        for (let i = 1; i <= 3; i++) {
          const reply = yield* call("GET", "/v1/integration/list", { token: limited.token })
          expect(reply.status, `request ${i}`).toBe(200)
        }
        const fourth = yield* call("GET", "/v1/integration/list", { token: limited.token })
        expect(fourth.status).toBe(429)
        expect(fourth.body).toEqual({ detail: expect.any(String) })
        const retryAfter = fourth.headers["retry-after"]
        expect(retryAfter).toMatch(/^[1-9][0-9]*$/)
        expect(Number(retryAfter)).toBeLessThanOrEqual(60)

        // Every endpoint counts against the same token.
        const rejected = yield* call("POST", `/v1/webhooks/${limited.integrationId}/message-received`, {
          token: limited.token,
          body: message("limited")
        })
        expect(rejected.status).toBe(429)
        expect(yield* storedMessages("limited")).toEqual([])

        // Another workspace's token has its own budget.
        for (let i = 1; i <= 3; i++) {
          const reply = yield* call("GET", "/v1/integration/list", { token: other.token })
          expect(reply.status, `other token, request ${i}`).toBe(200)
        }
      }))

    it.effect("unauthenticated requests answer 401, not 429, and the admin API is not limited", () =>
      Effect.gen(function*() {
        for (let i = 0; i < 5; i++) {
          const reply = yield* call("GET", "/v1/integration/list", { headers: { authorization: "Bearer wrong" } })
          expect(reply.status).toBe(401)
        }
        // makeTenant drives the admin API several times; more tenants than the limit still work.
        for (let i = 0; i < 4; i++) yield* makeTenant()
      }))
  })
})

describe("token lookups are cached for PARLEY_TOKEN_CACHE_TTL", () => {
  layer(TestApp({ PARLEY_TOKEN_CACHE_TTL: "400 millis" }), { timeout: 120_000 })((it) => {
    it.effect("a token revoked behind this instance's back (another instance) works until the TTL ends, then 401", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const tenant = yield* makeTenant()
        const list = call("GET", "/v1/integration/list", { token: tenant.token })
        expect((yield* list).status).toBe(200)
        yield* sql`UPDATE api_tokens SET revoked_at = now() WHERE workspace_id = ${tenant.workspaceId}`
        // Served from the cache: the database was not asked.
        expect((yield* list).status).toBe(200)
        yield* TestClock.adjust("600 millis")
        expect((yield* list).status).toBe(401)
        // An unknown answer is not cached: the token stays rejected.
        expect((yield* list).status).toBe(401)
      }))
  })
})
