/**
 * Node's HTTP server as Parley runs it (`main`, the demo and the tests all use `createServer`), with
 * the answers Node gives on its own put into the API's `{"detail": ...}` shape (docs/api.md):
 * - a request Node's parser rejects (a malformed request line or header, headers over 16 KiB, a
 *   request timeout) is answered from the `clientError` event: 400, 431 or 408 with a JSON body, as
 *   Node would answer it; the app never sees such a request, so each answer is handed to the observer
 *   `Http.ts` registers (`observeRejections`), which gives it its access record, metric and span;
 * - a client that goes away in the middle of a request it already sent the headers of (it closes or
 *   resets the connection mid-body) gets no answer: nobody would read it. That request is the app's,
 *   and the app records it as 499 (`clientClosed`). When the parser refuses such a request's body
 *   (malformed chunks, a timeout), the answer written here is the app's record too (`refusedBody`);
 * - an `Expect` other than `100-continue` is answered 417 with a JSON body;
 * - a body the app stops reading (a chunked body over the limit) is drained, not cut off: destroying
 *   an unfinished request destroys its socket, and the 413 written after it would never arrive.
 *   (Effect 4's Node adapter no longer destroys a request its reader gives up on; it drains up to
 *   256 KiB of an unread body after the response, then closes the connection. `DrainingRequest` stays
 *   for any reader that still destroys the request.)
 */
import * as crypto from "node:crypto"
import * as http from "node:http"
import type { Duplex } from "node:stream"

/** Bytes of an abandoned body that are read and discarded before the connection is closed instead. */
const DRAIN_LIMIT = 16 * 1024 * 1024

/** How long a rejected connection stays open for the client to read its answer. */
const LINGER_MS = 1_000

/**
 * A request whose `destroy()` without an error, before the body is complete, drains the rest of the
 * body instead of destroying the socket, so that the answer the app writes next reaches the client
 * (a body reader may destroy the stream when it gives up, e.g. over `maxBytes`).
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
const rawResponse = (status: number, detail: string, requestId: string): string => {
  const body = JSON.stringify({ detail })
  return [
    `HTTP/1.1 ${status} ${reasons[status] ?? "Error"}`,
    "Content-Type: application/json",
    `Content-Length: ${Buffer.byteLength(body)}`,
    // As every answer of the app carries one: the id of this answer's access record.
    `X-Request-Id: ${requestId}`,
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

/** The response in flight on this socket (the app's answer to the request it is handling), if any. */
const inFlightResponse = (socket: Duplex): http.ServerResponse | undefined => {
  const message: unknown = "_httpMessage" in socket ? socket._httpMessage : undefined
  return message instanceof http.ServerResponse ? message : undefined
}

/**
 * The request the app is handling on this socket and has not received whole: a parser error now is
 * about its body (or the client leaving in the middle of it), not about a request of its own.
 */
const unfinishedRequest = (socket: Duplex): http.IncomingMessage | undefined => {
  const request = inFlightResponse(socket)?.req
  return request !== undefined && !request.complete ? request : undefined
}

// -----------------------------------------------------------------------------
// What the app reads of a request's fate (`Http.ts`)
// -----------------------------------------------------------------------------

/** The answer written here for a request whose body Node's parser refused, and the parser's error code. */
export interface RefusedBody {
  readonly status: number
  readonly detail: string
  readonly code: string
}

/** Requests whose body the parser refused, with the answer written here instead of the app's. */
const refused = new WeakMap<http.IncomingMessage, RefusedBody>()

/**
 * The answer already written for a request whose body Node's parser refused (malformed chunks, the
 * request timeout): the app's record of the request carries its status. `source` is the request's
 * `HttpServerRequest.source`.
 */
export const refusedBody = (source: unknown): RefusedBody | undefined =>
  source instanceof http.IncomingMessage ? refused.get(source) : undefined

/**
 * Whether the client went away before sending the whole request: the body stopped short because the
 * connection closed or was reset. Nothing can be answered then (status 499, "client closed request",
 * as nginx logs it).
 */
export const clientClosed = (source: unknown): boolean =>
  source instanceof http.IncomingMessage && !source.complete && refused.get(source) === undefined &&
  (source.readableAborted || source.socket?.destroyed === true)

// -----------------------------------------------------------------------------
// Requests answered here, for the access log, the metrics and the traces
// -----------------------------------------------------------------------------

/** A request Node's parser rejected before the app saw it, and the answer written for it. */
export interface Rejection {
  readonly status: number
  readonly detail: string
  /** Node's error code: `HPE_INVALID_CONSTANT`, `HPE_HEADER_OVERFLOW`, `ERR_HTTP_REQUEST_TIMEOUT`… */
  readonly code: string
  /** The method of the request line, when the line could be read. */
  readonly method: string | undefined
  /** The request target of the request line (path and query, as sent), when the line could be read. */
  readonly target: string | undefined
  /** Sent back as `X-Request-Id`. */
  readonly requestId: string
}

export type RejectionObserver = (rejection: Rejection) => void

/** Servers made by `createServer` that have not closed, and who records their rejections. */
const servers = new Set<http.Server>()
const observers = new WeakMap<http.Server, RejectionObserver>()

/**
 * Hands every rejection of the server listening on `port` (made by `createServer`) to `observer`;
 * returns the function that stops it. (`NodeHttpServer` does not expose the `http.Server` it runs, so
 * the app finds it by the port its `HttpServer` is bound to.)
 */
export const observeRejections = (port: number, observer: RejectionObserver): (() => void) => {
  const matching = [...servers].filter((server) => {
    const address = server.address()
    return typeof address === "object" && address !== null && address.port === port
  })
  for (const server of matching) observers.set(server, observer)
  return () => {
    for (const server of matching) if (observers.get(server) === observer) observers.delete(server)
  }
}

/**
 * `METHOD target` at the start of the bytes the parser choked on, when they start with a request line
 * (they are the chunk being parsed: with a request that arrived in several, a later one may start
 * anywhere, hence a target that must look like one).
 */
const REQUEST_LINE = /^([A-Z]{1,20}) ((?:\/|\*|https?:\/\/)\S{0,2047})/

const requestLineOf = (error: Error): Pick<Rejection, "method" | "target"> => {
  const raw: unknown = "rawPacket" in error ? error.rawPacket : undefined
  const match = Buffer.isBuffer(raw) ? REQUEST_LINE.exec(raw.subarray(0, 2100).toString("latin1")) : null
  return { method: match?.[1], target: match?.[2] }
}

const notify = (server: http.Server, rejection: Rejection) => {
  const observer = observers.get(server)
  if (observer === undefined) return
  try {
    observer(rejection)
  } catch {
    // Recording is best effort: the answer is written already, and a socket handler must not throw.
  }
}

const answered = new WeakSet<Duplex>()

const onClientError = (server: http.Server) => (error: Error, socket: Duplex) => {
  if (answered.has(socket)) return
  answered.add(socket)
  const code = codeOf(error)
  const unfinished = unfinishedRequest(socket)
  if (
    code === "ECONNRESET" || code === "EPIPE" || !socket.writable ||
    inFlightResponse(socket)?.headersSent === true ||
    // The client ended the connection in the middle of a request the app has: it is gone, and the
    // app records that request as 499.
    (unfinished !== undefined && code === "HPE_INVALID_EOF_STATE")
  ) {
    socket.destroy()
    return
  }
  const { detail, status } = clientErrorAnswer(error)
  const requestId = crypto.randomUUID()
  // Half-close after the answer, and read (discard) what the client still sends for a moment: closing
  // a socket with unread data sends a reset, which can make the client lose the answer.
  socket.on("data", () => {})
  socket.end(rawResponse(status, detail, requestId))
  setTimeout(() => socket.destroy(), LINGER_MS).unref()
  if (unfinished !== undefined) {
    // The app's request: its body read fails when the socket closes, and its record says this.
    refused.set(unfinished, { status, detail, code: code ?? "unknown" })
  } else {
    notify(server, { status, detail, code: code ?? "unknown", ...requestLineOf(error), requestId })
  }
}

const onCheckExpectation = (request: http.IncomingMessage, response: http.ServerResponse) => {
  const body = JSON.stringify({ detail: `Unsupported Expect: ${request.headers.expect ?? ""}` })
  response.writeHead(417, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
  response.end(body)
}

/** Node's HTTP server with Parley's answers to what Node rejects itself (pass it to `NodeHttpServer.layer`). */
export const createServer = (): http.Server => {
  const server = http.createServer({ IncomingMessage: DrainingRequest })
  server.on("clientError", onClientError(server))
  server.on("checkExpectation", onCheckExpectation)
  servers.add(server)
  server.on("close", () => servers.delete(server))
  return server
}
