/**
 * What an on-call engineer reads: the records the real app writes through the real logger
 * (`LoggingLive`, JSON), captured where it writes them (the console's `log`, i.e. stdout). A request,
 * a 500, a failing delivery, a dead letter and a failing job each leave the records
 * docs/observability.md lists, with the trace ids that lead to their traces, and never a token,
 * a secret or message text.
 */
import * as SqlClient from "effect/sql/SqlClient"
import { describe, expect, layer } from "@effect/vitest"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { readFileSync } from "node:fs"
import { LoggingLive } from "../../src/Observability/Logging.js"
import { usingPostgres } from "../support/Database.js"
import {
  ADMIN_TOKEN,
  bodyAs,
  call,
  InternalBody,
  makeTenant,
  type Tenant,
  TestApp,
  TestAppWithWorkers,
  TestConfig
} from "../support/App.js"
import { eventually } from "../support/Eventually.js"
import { makeReceiver } from "../support/Receiver.js"

const LogRecord = Schema.Struct({
  message: Schema.String,
  logLevel: Schema.String,
  timestamp: Schema.String,
  cause: Schema.optional(Schema.String),
  annotations: Schema.Record(Schema.String, Schema.Unknown)
})
type LogRecord = typeof LogRecord.Type
const decodeRecord = Schema.decodeUnknownSync(Schema.fromJsonString(LogRecord))
const parseRecord = (line: string) => decodeRecord(line)

/** The real logging layer, its stdout captured in `lines`; every other console method untouched. */
const capturing = (lines: Array<string>, config: Record<string, string> = {}) => {
  const captured: Console.Console = Object.assign(Object.create(console), {
    log: (...args: ReadonlyArray<unknown>) => void lines.push(args.map(String).join(" "))
  })
  // The logger writes to the fiber's `Console` (a reference in v4): the app's fibers must see this one.
  return Layer.provideMerge(LoggingLive, Layer.succeed(Console.Console, captured)).pipe(
    Layer.provide(TestConfig(config))
  )
}

const SECRET_TEXT = "my card number is 4111 1111 1111 1111"
const customerId = "6f1c1f8e-1d7e-4c8e-9a0a-1b2c3d4e5f60"
const version = Schema.decodeUnknownSync(Schema.fromJsonString(Schema.Struct({ version: Schema.String })))(
  readFileSync(new URL("../../package.json", import.meta.url), "utf8")
).version

const ask = (tenant: Tenant, id: string, conversationId: string, headers: Record<string, string> = {}) =>
  call("POST", `/v1/webhooks/${tenant.integrationId}/message-received`, {
    token: tenant.token,
    headers,
    body: { id, role: "human", customerId, conversationId, text: SECRET_TEXT }
  }).pipe(Effect.tap((reply) => Effect.sync(() => expect(reply.status).toBe(200))))

const HEX32 = /^[0-9a-f]{32}$/
const HEX16 = /^[0-9a-f]{16}$/

describe("logs", () => {
  const lines: Array<string> = []
  const records = () => lines.map(parseRecord)
  /** Waits for the records that `select` picks, until there are `count` of them. */
  const waitFor = (select: (record: LogRecord) => boolean, count = 1) =>
    eventually(Effect.sync(() => records().filter(select)), (found) => found.length >= count, 20_000)
  const named = (message: string, extra: (record: LogRecord) => boolean = () => true) => (record: LogRecord) =>
    record.message === message && extra(record)
  const about = (eventOrIntegration: string) => (record: LogRecord) =>
    record.annotations["integration.id"] === eventOrIntegration

  layer(
    TestAppWithWorkers({ DELIVERY_MAX_AGE: "1500 millis", LOG_REQUESTS: "true" }).pipe(Layer.provide(capturing(lines, { LOG_LEVEL: "Debug" }))),
    { excludeTestServices: true, timeout: 120_000 }
  )((it) => {
    it.effect("every line on stdout is one JSON record; start-up says what runs", () =>
      Effect.gen(function*() {
        expect(lines.length).toBeGreaterThan(0)
        for (const line of lines) expect(() => parseRecord(line)).not.toThrow()
        const [started] = records().filter(named("Parley started"))
        expect(started).toBeDefined()
        expect(started!.logLevel).toBe("INFO")
        expect(started!.annotations).toMatchObject({
          "service.version": version,
          "parley.mode": "development",
          "database.kind": usingPostgres ? "postgresql" : "embedded",
          "worker.concurrency": 2,
          "delivery.concurrency": 256,
          "metrics.port": null
        })
        expect(started!.annotations["server.port"]).toEqual(expect.any(Number))
      }))

    it.effect("a request: one access record with route template, status, workspace, request id and trace", () =>
      Effect.gen(function*() {
        const receiver = yield* makeReceiver()
        const tenant = yield* makeTenant({ webhookUrl: receiver.url, supportedFeatures: { escalation: false } })
        const reply = yield* ask(tenant, "m-1", "logged", { "X-Request-Id": "req-from-caller-1" })
        expect(reply.headers["x-request-id"]).toBe("req-from-caller-1")
        const access = yield* waitFor(named("HTTP request", (r) => r.annotations["request.id"] === "req-from-caller-1"))
        expect(access).toHaveLength(1)
        expect(access[0]!.logLevel).toBe("INFO")
        expect(access[0]!.annotations).toMatchObject({
          "http.request.method": "POST",
          "http.route": "/v1/webhooks/{integration_id}/message-received",
          "http.response.status_code": 200,
          "workspace.id": tenant.workspaceId,
          "request.id": "req-from-caller-1"
        })
        expect(access[0]!.annotations["duration_ms"]).toEqual(expect.any(Number))
        expect(access[0]!.annotations["trace_id"]).toMatch(HEX32)
        expect(access[0]!.annotations["span_id"]).toMatch(HEX16)
        // The reply and its delivery are logged in the same trace as the request.
        yield* receiver.waitFor(1)

        // No id, or one that is not a sane token: a new one, answered and logged.
        for (const header of [{}, { "X-Request-Id": "has spaces and \"quotes\"" }, { "X-Request-Id": "x".repeat(200) }]) {
          const other = yield* call("GET", "/v1/customer/external-id/nobody", { token: tenant.token, headers: header })
          expect(other.status).toBe(200)
          const id = other.headers["x-request-id"] ?? ""
          expect(id).toMatch(/^[0-9a-f-]{36}$/)
          const [record] = yield* waitFor(named("HTTP request", (r) => r.annotations["request.id"] === id))
          expect(record!.annotations["http.route"]).toBe("/v1/customer/external-id/{external_id}")
        }

        // Unauthenticated, unknown route, health: no workspace; a path of no route has its ids replaced
        // and its query string dropped; health at debug.
        const denied = yield* call("GET", "/v1/customer/external-id/nobody", { headers: { "X-Request-Id": "req-401" } })
        expect(denied.status).toBe(401)
        const [unauthorized] = yield* waitFor(named("HTTP request", (r) => r.annotations["request.id"] === "req-401"))
        expect(unauthorized!.annotations).toMatchObject({ "http.response.status_code": 401 })
        expect(unauthorized!.annotations["workspace.id"]).toBeUndefined()
        yield* call("GET", `/v1/nothing/${tenant.integrationId}/12345?access_token=${tenant.token}`, {
          headers: { "X-Request-Id": "req-404" }
        })
        const [notFound] = yield* waitFor(named("HTTP request", (r) => r.annotations["request.id"] === "req-404"))
        expect(notFound!.annotations).toMatchObject({ "url.path": "/v1/nothing/{id}/{id}", "http.response.status_code": 404 })
        expect(notFound!.annotations["http.route"]).toBeUndefined()
        yield* call("GET", "/health/live", { headers: { "X-Request-Id": "req-health" } })
        const [health] = yield* waitFor(named("HTTP request", (r) => r.annotations["request.id"] === "req-health"))
        expect(health!.logLevel).toBe("DEBUG")
        expect(health!.annotations["http.route"]).toBe("/health/live")

        // Never the message text, the API token or the admin token.
        const all = lines.join("\n")
        expect(all).not.toContain(SECRET_TEXT)
        expect(all).not.toContain(tenant.token)
        expect(all).not.toContain(ADMIN_TOKEN)
        expect(all).not.toContain(tenant.webhookSecret)
      }))

    it.effect("a 500: an error record with the cause and the trace id the answer carries", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const sql = yield* SqlClient.SqlClient
        // The database changes under the running app: a real defect, not a test route.
        yield* sql`ALTER TABLE customers RENAME TO customers_away`
        const reply = yield* call("GET", "/v1/customer/external-id/somebody", {
          token: tenant.token,
          headers: { "X-Request-Id": "req-500" }
        }).pipe(Effect.ensuring(Effect.orDie(sql`ALTER TABLE customers_away RENAME TO customers`)))
        expect(reply.status).toBe(500)
        const { body } = yield* bodyAs(InternalBody)(reply)
        expect(body.traceId).toMatch(HEX32)
        const [error] = yield* waitFor(named("Unexpected failure answered 500"))
        expect(error!.logLevel).toBe("ERROR")
        expect(error!.annotations["trace_id"]).toBe(body.traceId)
        expect(error!.annotations["request.id"]).toBe("req-500")
        expect(error!.cause).toMatch(/customers/)
        const [access] = yield* waitFor(named("HTTP request", (r) => r.annotations["request.id"] === "req-500"))
        expect(access!.annotations).toMatchObject({
          "http.response.status_code": 500,
          "http.route": "/v1/customer/external-id/{external_id}",
          trace_id: body.traceId
        })
      }))

    it.effect("a failing delivery: a warn per failed attempt, then info when it arrives", () =>
      Effect.gen(function*() {
        const receiver = yield* makeReceiver((_, index) => ({ status: index === 0 ? 503 : 200 }))
        const tenant = yield* makeTenant({ webhookUrl: receiver.url, supportedFeatures: { escalation: false } })
        yield* ask(tenant, "m-2", "retried", { "X-Request-Id": "req-retried" })
        yield* receiver.waitFor(2)
        const [failed] = yield* waitFor(named("Delivery attempt failed", about(tenant.integrationId)))
        expect(failed!.logLevel).toBe("WARN")
        expect(failed!.annotations).toMatchObject({
          "integration.id": tenant.integrationId,
          "event.kind": "send_messages",
          "delivery.attempt": 1,
          "http.response.status_code": 503,
          error: "HTTP 503"
        })
        expect(failed!.annotations["event.id"]).toMatch(/^[0-9a-f-]{36}$/)
        expect(failed!.annotations["delivery.next_attempt_at"]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
        // One story: the request's trace.
        const [request] = records().filter(named("HTTP request", (r) => r.annotations["request.id"] === "req-retried"))
        expect(failed!.annotations["trace_id"]).toBe(request!.annotations["trace_id"])
        const [delivered] = yield* waitFor(named("Delivered", about(tenant.integrationId)))
        expect(delivered!.logLevel).toBe("INFO")
        expect(delivered!.annotations).toMatchObject({
          "event.id": failed!.annotations["event.id"],
          "delivery.attempt": 2,
          "http.response.status_code": 200
        })
      }))

    it.effect("a credential in a logged error is masked: a webhook URL with a token in its query", () =>
      Effect.gen(function*() {
        // Nothing listens on port 9: the attempt fails with an error that names the URL.
        const tenant = yield* makeTenant({
          webhookUrl: "http://127.0.0.1:9/webhook?token=hunter2-integrator-secret&x=1",
          supportedFeatures: { escalation: false }
        })
        yield* ask(tenant, "m-6", "masked")
        const [failed] = yield* waitFor(named("Delivery attempt failed", about(tenant.integrationId)))
        expect(failed!.annotations["error"]).toContain("token=REDACTED&x=1")
        expect(lines.join("\n")).not.toContain("hunter2-integrator-secret")
      }))

    it.effect("a dead letter: an error record when the retry window closes, and one for a 410", () =>
      Effect.gen(function*() {
        const failing = yield* makeReceiver(() => ({ status: 500 }))
        const tenant = yield* makeTenant({ webhookUrl: failing.url, supportedFeatures: { escalation: false } })
        yield* ask(tenant, "m-3", "dead")
        const [dead] = yield* waitFor(named("Delivery dead-lettered", about(tenant.integrationId)))
        expect(dead!.logLevel).toBe("ERROR")
        expect(dead!.annotations).toMatchObject({
          "event.kind": "send_messages",
          "http.response.status_code": 500,
          error: "HTTP 500",
          "delivery.dead_reason": "HTTP 500"
        })
        expect(dead!.annotations["delivery.attempt"]).toEqual(expect.any(Number))
        expect(dead!.annotations["trace_id"]).toMatch(HEX32)

        const gone = yield* makeReceiver(() => ({ status: 410 }))
        const other = yield* makeTenant({ webhookUrl: gone.url, supportedFeatures: { escalation: false } })
        yield* ask(other, "m-4", "gone")
        const [disabled] = yield* waitFor(named("Receiver answered 410 Gone: webhook disabled", about(other.integrationId)))
        expect(disabled!.logLevel).toBe("ERROR")
        const [deadGone] = yield* waitFor(named("Delivery dead-lettered", about(other.integrationId)))
        expect(deadGone!.annotations).toMatchObject({
          "http.response.status_code": 410,
          "delivery.dead_reason": "410 Gone: webhook disabled"
        })
      }))

    it.effect("a failing job: a warn with its cause, retried", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant({ supportedFeatures: { escalation: false } })
        const sql = yield* SqlClient.SqlClient
        // The knowledge base is gone under the running app: the reply job fails (a defect) and is retried.
        yield* sql`ALTER TABLE kb_chunks RENAME TO kb_chunks_away`
        const [failed] = yield* ask(tenant, "m-5", "job-fails").pipe(
          Effect.andThen(waitFor(named("Job failed", (r) => r.annotations["job.kind"] === "generate_reply"))),
          Effect.ensuring(Effect.orDie(sql`ALTER TABLE kb_chunks_away RENAME TO kb_chunks`))
        )
        expect(failed!.logLevel).toBe("WARN")
        expect(failed!.annotations).toMatchObject({ "job.kind": "generate_reply", "job.attempt": 1, "job.outcome": "Retry" })
        expect(failed!.annotations["job.retry_in_ms"]).toEqual(expect.any(Number))
        expect(failed!.cause).toMatch(/kb_chunks/)
        expect(failed!.annotations["trace_id"]).toMatch(HEX32)
      }))
  })

  describe("LOG_REQUESTS=false", () => {
    const quiet: Array<string> = []
    layer(TestApp({ LOG_REQUESTS: "false" }).pipe(Layer.provide(capturing(quiet))), { timeout: 120_000 })((it) => {
      it.effect("no access records; the request id is still answered", () =>
        Effect.gen(function*() {
          const reply = yield* call("GET", "/health/ready", { headers: { "X-Request-Id": "quiet-1" } })
          expect(reply.headers["x-request-id"]).toBe("quiet-1")
          yield* call("GET", "/v1/customer/external-id/nobody")
          expect(quiet.map(parseRecord).filter((r) => r.message === "HTTP request")).toEqual([])
          expect(quiet.map(parseRecord).some((r) => r.message === "Parley started")).toBe(true)
        }))
    })
  })
})
