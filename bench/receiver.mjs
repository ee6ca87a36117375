// A webhook receiver in its own process (forked by run.mjs). Mode `ok` answers 200 at once and records
// every request: arrival time, eventId, event kind, the integrator's conversationId, whether the
// signature (X-Parley-Webhook-Signature: hex HMAC-SHA256 of "<timestamp>.<body>") verifies with one of
// the workspace secrets it was given. Mode `hang` accepts connections and never answers (a dead
// receiver that keeps its sockets open); mode `gone` answers 410 Gone. Both record arrivals too. The mode
// can be changed while running (`setMode`).
import { createHmac, timingSafeEqual } from "node:crypto"
import { createServer } from "node:http"
import { serve } from "./lib/ipc-child.mjs"
import { nowMs } from "./lib/proc.mjs"

let server = null
let currentMode = "ok"
let secrets = []
let records = []
const hanging = new Set()

const verifies = (timestamp, signature, body) => {
  if (typeof timestamp !== "string" || typeof signature !== "string") return false
  const given = Buffer.from(signature, "utf8")
  return secrets.some((secret) => {
    const expected = Buffer.from(createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex"), "utf8")
    return expected.length === given.length && timingSafeEqual(expected, given)
  })
}

const record = (arrivedAt, body, headers) => {
  let parsed = null
  try {
    parsed = JSON.parse(body)
  } catch {
    // recorded with nulls: a malformed body is itself a finding
  }
  records.push({
    at: arrivedAt,
    eventId: parsed?.eventId ?? headers["webhook-id"] ?? null,
    event: parsed?.event ?? null,
    conversationId: parsed?.conversationId ?? null,
    valid: verifies(headers["x-parley-webhook-timestamp"], headers["x-parley-webhook-signature"], body)
  })
}

const start = ({ mode, workspaceSecrets = [] }) =>
  new Promise((resolve) => {
    secrets = workspaceSecrets
    records = []
    currentMode = mode
    server = createServer((req, res) => {
      const chunks = []
      req.on("data", (chunk) => chunks.push(chunk))
      req.on("end", () => {
        const arrivedAt = nowMs()
        record(arrivedAt, Buffer.concat(chunks).toString("utf8"), req.headers)
        if (currentMode === "hang") {
          hanging.add(res)
          res.on("close", () => hanging.delete(res))
          return
        }
        res.writeHead(currentMode === "gone" ? 410 : 200, { "content-type": "application/json" })
        res.end(currentMode === "gone" ? "{\"gone\":true}" : "{\"ok\":true}")
      })
    })
    server.keepAliveTimeout = 60_000
    server.listen(0, "127.0.0.1", () => resolve({ port: server.address().port }))
  })

serve({
  start,
  addSecrets: ({ workspaceSecrets }) => {
    secrets = [...secrets, ...workspaceSecrets]
    return secrets.length
  },
  /** The records so far; `since` skips the first ones already collected. */
  collect: ({ since = 0 } = {}) => ({ total: records.length, records: records.slice(since) }),
  count: () => records.length,
  setMode: ({ mode }) => {
    currentMode = mode
    return mode
  },
  stop: () =>
    new Promise((resolve) => {
      for (const res of hanging) res.destroy()
      server?.closeAllConnections?.()
      server?.close(() => resolve(true))
    })
})
