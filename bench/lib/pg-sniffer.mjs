// A TCP proxy in front of PostgreSQL that reads the frontend half of the wire protocol and records every
// statement a client executes: simple queries ('Q') and extended-protocol executions (a Bind 'B' of a
// statement named or unnamed by an earlier Parse 'P'), with their text parameters, the round trips
// (Sync 'S' or 'Q') and the Parse messages (named = prepared once and reused; unnamed = parsed anew). Used to observe exactly what Parley sends per request, whatever its code looks like,
// and to check that the baseline server sends the same. The backend half is only forwarded.
import { connect, createServer } from "node:net"

const SSL_REQUEST = 80877103
const GSSENC_REQUEST = 80877104
const CANCEL_REQUEST = 80877102

const cstring = (buffer, offset) => {
  const end = buffer.indexOf(0, offset)
  return { value: buffer.toString("utf8", offset, end), next: end + 1 }
}

/** Text parameters of a Bind message (binary ones as hex). */
const bindParameters = (payload, offset) => {
  const formatCount = payload.readInt16BE(offset)
  offset += 2
  const formats = []
  for (let i = 0; i < formatCount; i++, offset += 2) formats.push(payload.readInt16BE(offset))
  const count = payload.readInt16BE(offset)
  offset += 2
  const values = []
  for (let i = 0; i < count; i++) {
    const length = payload.readInt32BE(offset)
    offset += 4
    if (length === -1) {
      values.push(null)
      continue
    }
    const format = formats.length === 0 ? 0 : formats.length === 1 ? formats[0] : formats[i]
    const bytes = payload.subarray(offset, offset + length)
    values.push(format === 0 ? bytes.toString("utf8") : `\\x${bytes.toString("hex")}`)
    offset += length
  }
  return values
}

/** Collapses whitespace, for comparing statements written with different indentation. */
export const normalize = (text) => text.replace(/\s+/g, " ").trim()

/**
 * Starts the proxy on a free loopback port in front of `upstream` ({ host, port }).
 * `log` holds `{ connection, at, text, parameters }` per executed statement; `roundTrips` counts.
 */
export const startSniffer = (upstream) =>
  new Promise((resolve) => {
    const state = { log: [], roundTrips: 0, parses: { named: 0, unnamed: 0 }, connections: 0, cancels: 0 }
    const sockets = new Set()
    const server = createServer((client) => {
      const connection = ++state.connections
      const backend = connect(upstream.port, upstream.host)
      sockets.add(client)
      sockets.add(backend)
      const statements = new Map()
      let buffer = Buffer.alloc(0)
      let startup = true
      const onMessage = (type, payload) => {
        switch (type) {
          case "Q":
            state.roundTrips++
            state.log.push({ connection, at: Date.now(), text: cstring(payload, 0).value, parameters: [] })
            break
          case "P": {
            const name = cstring(payload, 0)
            statements.set(name.value, cstring(payload, name.next).value)
            state.parses[name.value === "" ? "unnamed" : "named"]++
            break
          }
          case "B": {
            const portal = cstring(payload, 0)
            const statement = cstring(payload, portal.next)
            state.log.push({
              connection,
              at: Date.now(),
              text: statements.get(statement.value) ?? `<unknown statement ${statement.value}>`,
              parameters: bindParameters(payload, statement.next)
            })
            break
          }
          case "S":
            state.roundTrips++
            break
          default:
            break
        }
      }
      client.on("data", (chunk) => {
        backend.write(chunk)
        buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk])
        for (;;) {
          if (startup) {
            if (buffer.length < 8) return
            const length = buffer.readInt32BE(0)
            if (buffer.length < length) return
            const code = buffer.readInt32BE(4)
            if (code === CANCEL_REQUEST) state.cancels++
            // After an SSL or GSSAPI request the startup message comes next; otherwise messages are typed.
            startup = code === SSL_REQUEST || code === GSSENC_REQUEST
            buffer = buffer.subarray(length)
            continue
          }
          if (buffer.length < 5) return
          const length = buffer.readInt32BE(1)
          if (buffer.length < 1 + length) return
          onMessage(String.fromCharCode(buffer[0]), buffer.subarray(5, 1 + length))
          buffer = buffer.subarray(1 + length)
        }
      })
      backend.on("data", (chunk) => client.write(chunk))
      const close = () => {
        client.destroy()
        backend.destroy()
        sockets.delete(client)
        sockets.delete(backend)
      }
      client.on("close", close)
      backend.on("close", close)
      client.on("error", close)
      backend.on("error", close)
    })
    server.listen(0, "127.0.0.1", () => {
      resolve({
        port: server.address().port,
        state,
        /** Forgets what was recorded so far (after a warm-up). */
        reset: () => {
          state.log = []
          state.roundTrips = 0
          state.parses = { named: 0, unnamed: 0 }
        },
        /** What was recorded since the last reset, and a reset. */
        take: () => {
          const taken = { log: state.log, roundTrips: state.roundTrips, parses: state.parses }
          state.log = []
          state.roundTrips = 0
          state.parses = { named: 0, unnamed: 0 }
          return taken
        },
        stop: () =>
          new Promise((done) => {
            for (const socket of sockets) socket.destroy()
            server.close(() => done())
          })
      })
    })
  })
