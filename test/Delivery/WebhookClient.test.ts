/**
 * The webhook client against a real receiver (node:http on a loopback port): what it sends, how much
 * of the answer it reads, redirects, interruption and transport failures.
 */
import { describe, expect, layer } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as http from "node:http"
import { WebhookClient, WebhookClientLive } from "../../src/Delivery/WebhookClient.js"
import { eventually } from "../support/Eventually.js"

/** What the receiver got, and whether each request's connection was closed before it answered. */
const received: Array<{ readonly url: string; readonly headers: http.IncomingHttpHeaders; readonly body: string }> = []
let abandoned = 0

const answers: Record<string, (res: http.ServerResponse) => void> = {
  "/small": (res) => res.writeHead(200, { "content-length": "605" }).end(`{"ok":${"1".repeat(598)}}`),
  "/large": (res) => res.writeHead(200, { "content-length": "100000" }).end("y".repeat(100_000)),
  "/endless": (res) => {
    res.writeHead(200)
    const more = () => {
      while (res.write("x".repeat(100))) { /* until the socket's buffer is full */ }
    }
    res.on("drain", more)
    more()
  },
  "/moved": (res) => res.writeHead(302, { location: "/small" }).end(),
  "/busy": (res) => res.writeHead(503, { "retry-after": "120" }).end("busy"),
  "/hang": () => {},
  // The status at once, the body never finished.
  "/trickle": (res) => {
    res.writeHead(200)
    res.write("partial")
  }
}

const receiver = Effect.acquireRelease(
  Effect.callback<http.Server>((resume) => {
    const server = http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (chunk: Buffer) => chunks.push(chunk))
      req.on("end", () => {
        received.push({ url: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks).toString() })
        res.on("close", () => {
          if (!res.writableFinished) abandoned++
        })
        answers[req.url ?? ""]?.(res)
      })
    })
    server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
  }),
  (server) =>
    Effect.callback<void>((resume) => {
      server.closeAllConnections()
      server.close(() => resume(Effect.void))
    })
)

/** Waits until the receiver saw one request's connection closed before it answered; fails if more were. */
const oneAbandoned = Effect.gen(function*() {
  yield* eventually(Effect.sync(() => abandoned), (n) => n >= 1, 5_000)
  expect(abandoned).toBe(1)
})

const baseOf = (server: http.Server) => {
  const address = server.address()
  return `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`
}

const development = WebhookClientLive.pipe(
  Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord(Object.fromEntries([["PARLEY_MODE", "development"]]))))
)

const post = (
  base: string,
  path: string,
  options: { readonly keep?: number; readonly headers?: Record<string, string>; readonly timeout?: Duration.Duration } = {}
) =>
  Effect.flatMap(WebhookClient, (client) =>
    client.post({
      url: `${base}${path}`,
      headers: options.headers ?? {},
      body: "{\"a\":1}",
      keep: options.keep ?? 500,
      timeout: options.timeout ?? Duration.seconds(10)
    }))

describe("WebhookClient", () => {
  layer(development, { excludeTestServices: true })((it) => {
    it.effect("posts the JSON body with its headers, and the current span as traceparent and b3", () =>
      Effect.gen(function*() {
        const server = yield* receiver
        const base = baseOf(server)
        received.length = 0
        const answer = yield* post(base, "/small", { headers: { "X-Shop": "7", Traceparent: "custom" } }).pipe(
          Effect.withSpan("test.span")
        )
        expect(answer.status).toBe(200)
        const [request] = received
        expect(request?.body).toBe("{\"a\":1}")
        expect(request?.headers["content-type"]).toBe("application/json")
        expect(request?.headers["x-shop"]).toBe("7")
        // The span's, not the custom one, and sent once.
        expect(request?.headers["traceparent"]).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/)
        expect(request?.headers["b3"]).toMatch(/^[0-9a-f]{32}-[0-9a-f]{16}-1$/)
      }))

    it.effect("keeps the answer's first characters: read whole when announced small, streamed otherwise, never to the end", () =>
      Effect.gen(function*() {
        const server = yield* receiver
        const base = baseOf(server)
        const small = yield* post(base, "/small")
        expect(small.body).toBe(`{"ok":${"1".repeat(598)}}`.slice(0, 500))
        expect((yield* post(base, "/large")).body).toBe("y".repeat(500))
        expect((yield* post(base, "/endless", { keep: 1000 })).body).toBe("x".repeat(1000))
        const busy = yield* post(base, "/busy")
        expect(busy).toEqual({ status: 503, retryAfter: "120", body: "busy" })
      }))

    it.effect("does not follow redirects", () =>
      Effect.gen(function*() {
        const server = yield* receiver
        const base = baseOf(server)
        received.length = 0
        expect((yield* post(base, "/moved")).status).toBe(302)
        expect(received.map((request) => request.url)).toEqual(["/moved"])
      }))

    it.effect("an interrupted POST (a time-out) closes its connection", () =>
      Effect.gen(function*() {
        const server = yield* receiver
        const base = baseOf(server)
        abandoned = 0
        const outcome = yield* post(base, "/hang").pipe(Effect.timeout("300 millis"), Effect.result)
        expect(outcome._tag).toBe("Failure")
        yield* oneAbandoned
      }))

    it.effect("a receiver that does not answer within the time-out: WebhookTimeout, and its connection closed", () =>
      Effect.gen(function*() {
        const server = yield* receiver
        const base = baseOf(server)
        abandoned = 0
        received.length = 0
        const error = yield* post(base, "/hang", { timeout: Duration.millis(300) }).pipe(Effect.flip)
        expect(error._tag).toBe("WebhookTimeout")
        expect(error.message).toBe(`Timed out after 300ms (POST ${base}/hang)`)
        // The request was made in full (the receiver read its body) before the client gave up on it.
        expect(received.map((request) => [request.url, request.body])).toEqual([["/hang", "{\"a\":1}"]])
        yield* oneAbandoned
      }))

    it.effect("a status that arrived in time is an answer even when the body is cut off by the time-out", () =>
      Effect.gen(function*() {
        const server = yield* receiver
        const base = baseOf(server)
        abandoned = 0
        const answer = yield* post(base, "/trickle", { timeout: Duration.millis(300) })
        expect(answer.status).toBe(200)
        yield* oneAbandoned
      }))

    it.effect("a receiver that is not there is a transport error naming the URL, with the cause", () =>
      Effect.gen(function*() {
        const error = yield* post("http://127.0.0.1:1", "/nothing").pipe(Effect.flip)
        expect(error._tag).toBe("WebhookTransportError")
        expect(error.message).toBe("Transport error (POST http://127.0.0.1:1/nothing)")
        expect(String(error.cause)).toMatch(/ECONNREFUSED|connect/)
      }))
  })
})
