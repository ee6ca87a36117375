/**
 * What Node answers on its own (src/NodeServer.ts): the API's `{"detail": ...}` bodies, and a chunked
 * body over the limit answered 413 without losing the connection (the rest of the body is drained).
 */
import { HttpServer } from "effect/http"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as net from "node:net"
import { TestApp } from "../support/App.js"
import { parseResponse, sendRaw } from "../Fuzz/RawHttp.js"

const LIMIT = 4096

const port = Effect.map(HttpServer.HttpServer, (server) => server.address._tag !== "UnixPathAddress" ? server.address.port : 0)

/** Writes `requests` one after another on one keep-alive connection, each after the previous answer. */
const onOneConnection = (port: number, requests: ReadonlyArray<Buffer>) =>
  Effect.promise(() =>
    new Promise<Array<ReturnType<typeof parseResponse>>>((resolve, reject) => {
      const socket = net.connect({ host: "127.0.0.1", port })
      const answers: Array<ReturnType<typeof parseResponse>> = []
      let received = Buffer.alloc(0)
      const next = () => {
        const request = requests[answers.length]
        if (request === undefined) {
          socket.destroy()
          resolve(answers)
        } else socket.write(request)
      }
      const timer = setTimeout(() => {
        socket.destroy()
        reject(new Error(`${answers.length} answers of ${requests.length} within 10 s`))
      }, 10_000)
      socket.on("data", (chunk: Buffer) => {
        received = Buffer.concat([received, chunk])
        const response = parseResponse(received)
        const length = Number(response?.headers["content-length"] ?? NaN)
        if (response !== undefined && Buffer.byteLength(response.text) >= length) {
          answers.push(response)
          received = Buffer.alloc(0)
          if (answers.length === requests.length) clearTimeout(timer)
          next()
        }
      })
      socket.on("error", (error) => {
        clearTimeout(timer)
        reject(error)
      })
      next()
    })
  )

const chunked = (target: string, body: string) => {
  const parts = [`POST ${target} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`]
  for (let offset = 0; offset < body.length; offset += 1000) {
    const piece = body.slice(offset, offset + 1000)
    parts.push(`${piece.length.toString(16)}\r\n${piece}\r\n`)
  }
  parts.push("0\r\n\r\n")
  return Buffer.from(parts.join(""), "latin1")
}

describe("Node's own answers", () => {
  it.layer(TestApp({ PARLEY_BODY_LIMIT: String(LIMIT) }))((it) => {
    it.effect("a chunked body over the limit is answered 413 {detail}, and the connection serves the next request", () =>
      Effect.gen(function*() {
        const answers = yield* onOneConnection(yield* port, [
          chunked("/admin/v1/workspaces", JSON.stringify({ name: "x".repeat(LIMIT * 20) })),
          Buffer.from("GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n", "latin1")
        ])
        expect(answers.map((answer) => answer?.status)).toEqual([413, 200])
        expect(answers[0]?.json).toEqual({ detail: "Request body too large" })
      }))

    it.effect("an Expect other than 100-continue is answered 417 {detail}", () =>
      Effect.gen(function*() {
        const at = yield* port
        const outcome = yield* Effect.promise(() =>
          sendRaw(at, { method: "GET", target: "/health/live", headers: [["Expect", "teapot"]] })
        )
        expect(outcome._tag === "Answered" ? [outcome.response.status, outcome.response.json] : outcome.reason)
          .toEqual([417, { detail: "Unsupported Expect: teapot" }])
      }))

    it.effect("headers over 16 KiB are answered 431 {detail}; a malformed request line 400 {detail}", () =>
      Effect.gen(function*() {
        const at = yield* port
        const big = yield* Effect.promise(() =>
          sendRaw(at, { method: "GET", target: "/health/live", headers: [["X-Big", "b".repeat(20_000)]] })
        )
        const malformed = yield* Effect.promise(() =>
          sendRaw(at, { method: "GET", target: "/", head: "GET /a b HTTP/1.1\r\nHost: x\r\n\r\n" })
        )
        const seen = [big, malformed].map((outcome) =>
          outcome._tag === "Answered" ? [outcome.response.status, outcome.response.headers["content-type"], typeof outcome.response.json] : outcome.reason
        )
        expect(seen).toEqual([[431, "application/json", "object"], [400, "application/json", "object"]])
      }))
  })
})
