/**
 * HTTP/1.1 over a bare TCP socket: the exact bytes of a request (invalid UTF-8, lone-surrogate escapes,
 * duplicate keys, odd request lines, chunked bodies), and the response as the wire has it, or
 * "no answer" when the server closes the connection or stays silent.
 */
import * as net from "node:net"

export interface RawRequest {
  readonly method: string
  /** Path and query exactly as sent (no encoding is applied). */
  readonly target: string
  readonly headers?: ReadonlyArray<readonly [string, string]>
  readonly body?: string | Buffer
  /** Send the body chunked (no Content-Length). */
  readonly chunked?: boolean
  /** Replace the whole request head (request line and headers) with these bytes. */
  readonly head?: string
}

export interface RawResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly text: string
  /** The body parsed as JSON; undefined when it is empty or not JSON. */
  readonly json: unknown
}

export type RawOutcome =
  | { readonly _tag: "Answered"; readonly response: RawResponse }
  | { readonly _tag: "NoAnswer"; readonly reason: string }

const decodeChunked = (body: Buffer): Buffer => {
  const parts: Array<Buffer> = []
  let offset = 0
  while (offset < body.length) {
    const lineEnd = body.indexOf("\r\n", offset)
    if (lineEnd === -1) break
    const size = parseInt(body.subarray(offset, lineEnd).toString("latin1"), 16)
    if (!Number.isFinite(size) || size === 0) break
    parts.push(body.subarray(lineEnd + 2, lineEnd + 2 + size))
    offset = lineEnd + 2 + size + 2
  }
  return Buffer.concat(parts)
}

const parseJson = (text: string): unknown => {
  if (text === "") return undefined
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** Parses one response out of everything the server sent before closing. */
export const parseResponse = (all: Buffer): RawResponse | undefined => {
  let bytes = all
  // Interim answers (100 Continue) come before the real one.
  while (/^HTTP\/1\.[01] 1\d\d/.test(bytes.subarray(0, 12).toString("latin1"))) {
    const end = bytes.indexOf("\r\n\r\n")
    if (end === -1) return undefined
    bytes = bytes.subarray(end + 4)
  }
  const headEnd = bytes.indexOf("\r\n\r\n")
  if (headEnd === -1) return undefined
  const [statusLine = "", ...lines] = bytes.subarray(0, headEnd).toString("latin1").split("\r\n")
  const match = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine)
  if (match === null) return undefined
  const headers: Record<string, string> = {}
  for (const line of lines) {
    const colon = line.indexOf(":")
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
  }
  let body = bytes.subarray(headEnd + 4)
  if (headers["transfer-encoding"]?.toLowerCase().includes("chunked")) body = decodeChunked(body)
  else if (headers["content-length"] !== undefined) body = body.subarray(0, Number(headers["content-length"]))
  const text = body.toString("utf8")
  return { status: Number(match[1]), headers, text, json: parseJson(text) }
}

const requestBytes = (request: RawRequest, host: string): Buffer => {
  const body = request.body === undefined
    ? undefined
    : typeof request.body === "string"
    ? Buffer.from(request.body, "utf8")
    : request.body
  if (request.head !== undefined) {
    return Buffer.concat([Buffer.from(request.head, "latin1"), body ?? Buffer.alloc(0)])
  }
  const lines = [`${request.method} ${request.target} HTTP/1.1`, `Host: ${host}`, "Connection: close"]
  for (const [name, value] of request.headers ?? []) lines.push(`${name}: ${value}`)
  if (body !== undefined && request.chunked === true) lines.push("Transfer-Encoding: chunked")
  else if (body !== undefined) lines.push(`Content-Length: ${body.length}`)
  const head = Buffer.from(lines.join("\r\n") + "\r\n\r\n", "latin1")
  if (body === undefined) return head
  if (request.chunked !== true) return Buffer.concat([head, body])
  const chunks: Array<Buffer> = [head]
  for (let offset = 0; offset < body.length; offset += 16_384) {
    const chunk = body.subarray(offset, offset + 16_384)
    chunks.push(Buffer.from(`${chunk.length.toString(16)}\r\n`, "latin1"), chunk, Buffer.from("\r\n", "latin1"))
  }
  chunks.push(Buffer.from("0\r\n\r\n", "latin1"))
  return Buffer.concat(chunks)
}

/** Sends one request on a new connection and waits for the answer (at most `timeoutMs`). */
export const sendRaw = (port: number, request: RawRequest, timeoutMs = 10_000): Promise<RawOutcome> =>
  new Promise((resolve) => {
    const received: Array<Buffer> = []
    const socket = net.connect({ host: "127.0.0.1", port })
    let settled = false
    const settle = (reason: string) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      socket.destroy()
      const response = parseResponse(Buffer.concat(received))
      resolve(response === undefined ? { _tag: "NoAnswer", reason } : { _tag: "Answered", response })
    }
    const timer = setTimeout(() => settle(`no answer within ${timeoutMs} ms`), timeoutMs)
    socket.on("data", (chunk: Buffer) => {
      received.push(chunk)
      // Connection: close makes the server end the connection after its answer; a complete answer with a
      // Content-Length is enough (the server may keep the socket open after an early 413).
      const response = parseResponse(Buffer.concat(received))
      const length = response?.headers["content-length"]
      if (response !== undefined && length !== undefined && Buffer.byteLength(response.text) >= Number(length)) {
        settle("answered")
      }
    })
    socket.on("end", () => settle("connection closed without an answer"))
    socket.on("close", () => settle("connection closed without an answer"))
    socket.on("error", (error) => settle(`socket error: ${error.message}`))
    socket.write(requestBytes(request, `127.0.0.1:${port}`), () => {})
  })
