/**
 * Node's HTTP server as Parley runs it (`main`, the demo and the tests all use `createServer`), with
 * the answers Node gives on its own put into the API's `{"detail": ...}` shape (docs/api.md):
 * - a request Node's parser rejects (a malformed request line or header, headers over 16 KiB, a
 *   request timeout) is answered from the `clientError` event: 400, 431 or 408 with a JSON body;
 * - an `Expect` other than `100-continue` is answered 417 with a JSON body;
 * - a body the app stops reading (a chunked body over the limit) is drained, not cut off: destroying
 *   an unfinished request destroys its socket, and the 413 written after it would never arrive.
 */
import * as http from "node:http"
import type { Duplex } from "node:stream"

/** Bytes of an abandoned body that are read and discarded before the connection is closed instead. */
const DRAIN_LIMIT = 16 * 1024 * 1024

/** How long a rejected connection stays open for the client to read its answer. */
const LINGER_MS = 1_000

/**
 * A request whose `destroy()` without an error, before the body is complete, drains the rest of the
 * body instead of destroying the socket, so that the answer the app writes next reaches the client
 * (Effect's body readers destroy the stream when they give up, e.g. over `maxBytes`).
 */
class DrainingRequest extends http.IncomingMessage {
  override destroy(error?: Error): this {
    if (error !== undefined || this.complete || this.destroyed) return super.destroy(error)
    this.removeAllListeners("data")
    let drained = 0
    this.on("data", (chunk: Buffer | string) => {
      drained += typeof chunk === "string" ? Buffer.byteLength(chunk) : chunk.length
      if (drained > DRAIN_LIMIT) super.destroy()
    })
    this.resume()
    return this
  }
}

const reasons: Record<number, string> = {
  400: "Bad Request",
  408: "Request Timeout",
  413: "Payload Too Large",
  417: "Expectation Failed",
  431: "Request Header Fields Too Large"
}

/** A whole HTTP/1.1 response with a `{"detail": ...}` body, as bytes for a raw socket. */
const rawResponse = (status: number, detail: string): string => {
  const body = JSON.stringify({ detail })
  return [
    `HTTP/1.1 ${status} ${reasons[status] ?? "Error"}`,
    "Content-Type: application/json",
    `Content-Length: ${Buffer.byteLength(body)}`,
    "Connection: close",
    "",
    body
  ].join("\r\n")
}

const codeOf = (error: Error): string | undefined =>
  "code" in error && typeof error.code === "string" ? error.code : undefined

/** What Node's parser rejected, as a status and a detail (the same statuses Node itself answers). */
export const clientErrorAnswer = (error: Error): { readonly status: number; readonly detail: string } => {
  switch (codeOf(error)) {
    case "HPE_HEADER_OVERFLOW":
      return { status: 431, detail: "Request header fields too large" }
    case "HPE_CHUNK_EXTENSIONS_OVERFLOW":
      return { status: 413, detail: "Chunk extensions too large" }
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return { status: 408, detail: "Request timeout" }
    default: {
      const reason = "reason" in error && typeof error.reason === "string" ? error.reason : "unparsable request"
      return { status: 400, detail: `Malformed HTTP request: ${reason}` }
    }
  }
}

/** Whether a response has already started on this socket (a pipelined request): nothing may be written then. */
const responseStarted = (socket: Duplex): boolean => {
  const message: unknown = "_httpMessage" in socket ? socket._httpMessage : undefined
  return typeof message === "object" && message !== null && "headersSent" in message && message.headersSent === true
}

const answered = new WeakSet<Duplex>()

const onClientError = (error: Error, socket: Duplex) => {
  if (answered.has(socket)) return
  answered.add(socket)
  const code = codeOf(error)
  if (code === "ECONNRESET" || code === "EPIPE" || !socket.writable || responseStarted(socket)) {
    socket.destroy()
    return
  }
  const { detail, status } = clientErrorAnswer(error)
  // Half-close after the answer, and read (discard) what the client still sends for a moment: closing
  // a socket with unread data sends a reset, which can make the client lose the answer.
  socket.on("data", () => {})
  socket.end(rawResponse(status, detail))
  setTimeout(() => socket.destroy(), LINGER_MS).unref()
}

const onCheckExpectation = (request: http.IncomingMessage, response: http.ServerResponse) => {
  const body = JSON.stringify({ detail: `Unsupported Expect: ${request.headers.expect ?? ""}` })
  response.writeHead(417, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
  response.end(body)
}

/** Node's HTTP server with Parley's answers to what Node rejects itself (pass it to `NodeHttpServer.layer`). */
export const createServer = (): http.Server => {
  const server = http.createServer({ IncomingMessage: DrainingRequest })
  server.on("clientError", onClientError)
  server.on("checkExpectation", onCheckExpectation)
  return server
}
