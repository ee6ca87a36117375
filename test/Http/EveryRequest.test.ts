/**
 * Every request leaves one trace, and its three records agree: the access record (`HTTP request`),
 * the `http_server_requests_total` sample on a real `/metrics`, and the `http.server` span, with the
 * route in one form everywhere, the template as the OpenAPI document writes it (`{integration_id}`).
 * Also for the requests the app never answers: a client that leaves in the middle of its body (499,
 * nothing written), and what Node's parser answers on its own (400, 431), driven over raw sockets on
 * the real Node server (`src/NodeServer.ts`).
 */
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { describe, expect, layer } from "@effect/vitest"
import { SpanStatusCode } from "@opentelemetry/api"
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import * as Console from "effect/Console"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import { HttpServer } from "effect/http"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import * as net from "node:net"
import { LoggingLive } from "../../src/Observability/Logging.js"
import { registerAll } from "../../src/Observability/Metrics.js"
import { makePrometheusReader } from "../../src/Observability/Prometheus.js"
import { parseResponse, sendRaw } from "../Fuzz/RawHttp.js"
import { find, freePort, parseExposition, scrape } from "../Observability/Exposition.js"
import { call, TestApp, TestConfig } from "../support/App.js"
import { eventually } from "../support/Eventually.js"

const LogRecord = Schema.Struct({
  message: Schema.String,
  logLevel: Schema.String,
  annotations: Schema.Record(Schema.String, Schema.Unknown)
})
type LogRecord = typeof LogRecord.Type
const decodeRecord = Schema.decodeUnknownSync(Schema.fromJsonString(LogRecord))
const parseRecord = (line: string) => decodeRecord(line)

/** What the real logger writes on stdout (JSON), captured. */
const lines: Array<string> = []
const Logging = Layer.provideMerge(
  LoggingLive,
  Layer.succeed(
    Console.Console,
    Object.assign(Object.create(console), {
      log: (...args: ReadonlyArray<unknown>) => void lines.push(args.map(String).join(" "))
    })
  )
).pipe(Layer.provide(TestConfig({ LOG_LEVEL: "Debug" })))

/** Spans in memory, and the metrics on a real Prometheus endpoint (`metricsPort`), through the SDK. */
const spans = new InMemorySpanExporter()
let metricsPort = 0
const Telemetry = Layer.unwrap(
  Effect.gen(function*() {
    metricsPort = yield* freePort
    const prometheus = yield* makePrometheusReader({ port: metricsPort, host: "127.0.0.1" })
    yield* registerAll
    return NodeSdk.layer(() => ({
      resource: { serviceName: "parley-test" },
      spanProcessor: new SimpleSpanProcessor(spans),
      metricReader: prometheus
    }))
  })
)

const port = Effect.map(HttpServer.HttpServer, (server) => server.address._tag !== "UnixPathAddress" ? server.address.port : 0)

/** The access record of the request `requestId`, once written. */
const accessRecord = (requestId: string) =>
  eventually(
    Effect.sync(() =>
      lines.map(parseRecord).filter((r) => r.message === "HTTP request" && r.annotations["request.id"] === requestId)
    ),
    (found) => found.length > 0
  ).pipe(Effect.map((found) => ({ found, record: found[0] })))

/** The server span of the request `requestId`, once ended. */
const serverSpan = (requestId: string) =>
  eventually(
    Effect.sync(() => spans.getFinishedSpans().filter((s) => s.attributes["request.id"] === requestId)),
    (found) => found.length > 0
  ).pipe(Effect.map((found): ReadonlyArray<ReadableSpan> => found))

interface Count {
  readonly route: string | undefined
  readonly method: string | undefined
  readonly status: string | undefined
  readonly value: number
}

/** `http_server_requests_total` on /metrics, by route, method and status. */
const requestCounts = Effect.gen(function*() {
  const exposition = parseExposition((yield* scrape(metricsPort)).body)
  return find(exposition, "http_server_requests_total").filter((s) => s.labels["http_route"] !== undefined)
    .map((s): Count => ({
      route: s.labels["http_route"],
      method: s.labels["http_request_method"],
      status: s.labels["http_response_status_code"],
      value: s.value
    }))
})

/**
 * Sends the headers of a request with `Content-Length: 100` and half its body, then leaves: `close`
 * (destroy: FIN), `reset` (RST) or `half-close` (FIN, reading on). Resolves with what the server sent
 * until the connection closed.
 */
const leaveMidBody = (at: number, path: string, requestId: string, how: "close" | "reset" | "half-close") =>
  Effect.promise(() =>
    new Promise<string>((resolve) => {
      const socket = net.connect({ host: "127.0.0.1", port: at })
      let received = ""
      socket.on("data", (chunk: Buffer) => (received += chunk.toString("latin1")))
      socket.on("error", () => {})
      socket.on("close", () => resolve(received))
      socket.on("connect", () => {
        socket.write(
          `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n` +
            `X-Request-Id: ${requestId}\r\n\r\n{"id":"m-1","role":"human","te`
        )
        setTimeout(() => {
          if (how === "reset") socket.resetAndDestroy()
          else if (how === "close") socket.destroy()
          else socket.end()
        }, 150)
      })
    })
  )

const WEBHOOK = "/v1/webhooks/{integration_id}/message-received"
const webhookPath = "/v1/webhooks/0b4e7d4e-2a6e-4cf2-9d42-0e0f0a0b0c0d/message-received"

const worse = (record: LogRecord) => record.logLevel === "WARN" || record.logLevel === "ERROR"

describe("every request leaves one trace", () => {
  layer(
    TestApp({ LOG_REQUESTS: "true" }).pipe(Layer.provide(Telemetry), Layer.provide(Logging)),
    { excludeTestServices: true, timeout: 120_000 }
  )((it) => {
    it.effect("a route is its OpenAPI template in the span, the access record and the metric alike", () =>
      Effect.gen(function*() {
        const reply = yield* call("GET", "/v1/customer/external-id/nobody", { headers: { "X-Request-Id": "route-1" } })
        expect(reply.status).toBe(401)
        const { record } = yield* accessRecord("route-1")
        const [span] = yield* serverSpan("route-1")
        const route = "/v1/customer/external-id/{external_id}"
        expect(record?.annotations["http.route"]).toBe(route)
        expect(span?.attributes["http.route"]).toBe(route)
        expect(span?.name).toBe("http.server GET")
        expect(yield* requestCounts).toContainEqual({ route, method: "GET", status: "401", value: 1 })
      }))

    for (const how of ["close", "reset", "half-close"] as const) {
      it.effect(`a client that leaves in the middle of its body (${how}): 499, nothing written, recorded once`, () =>
        Effect.gen(function*() {
          const requestId = `gone-${how}`
          const before = (yield* requestCounts).find((c) => c.route === WEBHOOK && c.status === "499")?.value ?? 0
          const received = yield* leaveMidBody(yield* port, webhookPath, requestId, how)
          // Nothing is answered to a client that left (one that only half-closed would read it).
          expect(received).toBe("")

          const { found, record } = yield* accessRecord(requestId)
          expect(found).toHaveLength(1)
          expect(record?.logLevel).toBe("INFO")
          expect(record?.annotations).toMatchObject({
            "http.request.method": "POST",
            "http.route": WEBHOOK,
            "http.response.status_code": 499
          })
          const [span, ...more] = yield* serverSpan(requestId)
          expect(more).toEqual([])
          expect(span?.name).toBe("http.server POST")
          expect(span?.attributes).toMatchObject({ "http.response.status_code": 499, "http.route": WEBHOOK })
          // The client's doing, not a failure of the server's.
          expect(span?.status.code).not.toBe(SpanStatusCode.ERROR)
          expect(record?.annotations["trace_id"]).toBe(span?.spanContext().traceId)

          const counts = yield* requestCounts
          expect(counts).toContainEqual({ route: WEBHOOK, method: "POST", status: "499", value: before + 1 })
          expect(counts.filter((c) => c.route === WEBHOOK && c.status !== "499")).toEqual([])
          // Neither a database failure (its reset error read as one) nor a defect.
          const noisy = lines.map(parseRecord).filter((r) => worse(r) && r.annotations["request.id"] === requestId)
          expect(noisy.map((r) => r.message)).toEqual([])
        }))
    }

    it.effect("a client that leaves while its handler runs: 499 in the metric as in the access record and the span", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const locked = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        // The readiness check's query waits behind this lock until the client has gone.
        yield* sql.withTransaction(
          Effect.andThen(
            sql`LOCK TABLE effect_sql_migrations IN ACCESS EXCLUSIVE MODE`,
            Effect.andThen(Deferred.succeed(locked, undefined), Deferred.await(release))
          )
        ).pipe(Effect.forkChild)
        yield* Deferred.await(locked)
        const at = yield* port
        yield* Effect.promise(() =>
          new Promise<void>((resolve) => {
            const socket = net.connect({ host: "127.0.0.1", port: at })
            socket.on("error", () => {})
            socket.on("close", () => resolve())
            socket.write("GET /health/ready HTTP/1.1\r\nHost: x\r\nX-Request-Id: gone-waiting\r\n\r\n")
            setTimeout(() => socket.destroy(), 300)
          })
        ).pipe(Effect.ensuring(Effect.andThen(Effect.sleep("200 millis"), Deferred.succeed(release, undefined))))

        const { record } = yield* accessRecord("gone-waiting")
        expect(record?.annotations).toMatchObject({ "http.route": "/health/ready", "http.response.status_code": 499 })
        const [span] = yield* serverSpan("gone-waiting")
        expect(span?.attributes).toMatchObject({ "http.route": "/health/ready", "http.response.status_code": 499 })
        const counts = (yield* requestCounts).filter((c) => c.route === "/health/ready")
        expect(counts).toEqual([{ route: "/health/ready", method: "GET", status: "499", value: 1 }])
      }))

    it.effect("a body Node's parser refuses mid-request is answered 400 and recorded once, on its route", () =>
      Effect.gen(function*() {
        const at = yield* port
        const received = yield* Effect.promise(() =>
          new Promise<string>((resolve) => {
            const socket = net.connect({ host: "127.0.0.1", port: at })
            let text = ""
            socket.on("data", (chunk: Buffer) => (text += chunk.toString("latin1")))
            socket.on("error", () => {})
            socket.on("close", () => resolve(text))
            socket.write(
              "POST /admin/v1/workspaces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
                "Transfer-Encoding: chunked\r\nX-Request-Id: bad-chunk\r\n\r\n5\r\n{\"nam\r\n"
            )
            setTimeout(() => socket.write("zz\r\nhello\r\n"), 150)
          })
        )
        expect(parseResponse(Buffer.from(received, "latin1"))?.status).toBe(400)
        const { found, record } = yield* accessRecord("bad-chunk")
        expect(found).toHaveLength(1)
        expect(record?.annotations).toMatchObject({
          "http.route": "/admin/v1/workspaces",
          "http.response.status_code": 400,
          "error.type": "HPE_INVALID_CHUNK_SIZE"
        })
        const [span] = yield* serverSpan("bad-chunk")
        expect(span?.attributes).toMatchObject({ "http.response.status_code": 400, "http.route": "/admin/v1/workspaces" })
        const counts = yield* requestCounts
        expect(counts).toContainEqual({ route: "/admin/v1/workspaces", method: "POST", status: "400", value: 1 })
        expect(counts.filter((c) => c.route === "/admin/v1/workspaces" && c.status === "499")).toEqual([])
        // Node's side answered it, but it is the app's request: not also counted as a refused one.
        expect(counts.filter((c) => c.route === "unmatched" && c.method === "POST")).toEqual([])
      }))

    it.effect("what Node's parser answers itself (400, 431) has an access record, a metric sample and a span", () =>
      Effect.gen(function*() {
        const at = yield* port
        const malformed = yield* Effect.promise(() =>
          sendRaw(at, { method: "GET", target: "/", head: "GET /a b HTTP/1.1\r\nHost: x\r\n\r\n" })
        )
        const big = yield* Effect.promise(() =>
          sendRaw(at, { method: "GET", target: "/health/live", headers: [["X-Big", "b".repeat(20_000)]] })
        )
        const answered = [malformed, big].flatMap((outcome) => outcome._tag === "Answered" ? [outcome.response] : [])
        expect(answered.map((r) => [r.status, r.headers["content-type"]]))
          .toEqual([[400, "application/json"], [431, "application/json"]])

        const expected = [
          { status: 400, code: "HPE_INVALID_CONSTANT", path: "/a" },
          { status: 431, code: "HPE_HEADER_OVERFLOW", path: "/health/live" }
        ]
        for (const [i, { code, path, status }] of expected.entries()) {
          const requestId = answered[i]?.headers["x-request-id"] ?? ""
          expect(requestId).toMatch(/^[0-9a-f-]{36}$/)
          const { found, record } = yield* accessRecord(requestId)
          expect(found).toHaveLength(1)
          // A refused request is no health probe, whatever its path: at info.
          expect(record?.logLevel).toBe("INFO")
          expect(record?.annotations).toMatchObject({
            "http.request.method": "GET",
            "url.path": path,
            "http.response.status_code": status,
            "error.type": code,
            duration_ms: 0
          })
          expect(record?.annotations["http.route"]).toBeUndefined()
          const [span] = yield* serverSpan(requestId)
          expect(span?.name).toBe("http.server GET")
          expect(span?.attributes).toMatchObject({
            "http.request.method": "GET",
            "http.response.status_code": status,
            "url.path": path,
            "error.type": code
          })
          expect(span?.attributes["http.route"]).toBeUndefined()
          expect(record?.annotations["trace_id"]).toBe(span?.spanContext().traceId)
        }
        const counts = yield* requestCounts
        expect(counts).toContainEqual({ route: "unmatched", method: "GET", status: "400", value: 1 })
        expect(counts).toContainEqual({ route: "unmatched", method: "GET", status: "431", value: 1 })
      }))

    it.effect("a request line that is not HTTP at all is method _OTHER; a socket gone before the answer is no crash", () =>
      Effect.gen(function*() {
        const at = yield* port
        // A TLS ClientHello on the plain port.
        const tls = yield* Effect.promise(() =>
          sendRaw(at, { method: "GET", target: "/", head: "\u0016\u0003\u0001\u0000\u00a5\u0001\u0000\u0000\u00a1\u0003\u0003" })
        )
        expect(tls._tag === "Answered" ? tls.response.status : tls.reason).toBe(400)
        const requestId = tls._tag === "Answered" ? tls.response.headers["x-request-id"] ?? "" : ""
        const { record } = yield* accessRecord(requestId)
        expect(record?.annotations).toMatchObject({ "http.request.method": "_OTHER", "http.response.status_code": 400 })
        expect(record?.annotations["url.path"]).toBeUndefined()
        const [span] = yield* serverSpan(requestId)
        expect(span?.name).toBe("http.server HTTP")

        // Malformed requests whose sockets are reset at once, then a request that must still be served.
        for (let i = 0; i < 5; i++) {
          yield* Effect.promise(() =>
            new Promise<void>((resolve) => {
              const socket = net.connect({ host: "127.0.0.1", port: at })
              socket.on("error", () => {})
              socket.on("close", () => resolve())
              socket.on("connect", () => {
                socket.write("GET /a b HTTP/1.1\r\nHost: x\r\n\r\n")
                socket.resetAndDestroy()
              })
            })
          )
        }
        expect((yield* call("GET", "/health/live")).status).toBe(200)
      }))
  })
})
