// The integrator's webhook receiver: verifies every signature (X-Parley-Webhook-Signature, docs/webhooks.md),
// records every delivery in arrival order, and can be taken down (connections refused) and up.
import { createHmac, timingSafeEqual } from "node:crypto"
import * as http from "node:http"

export const startReceiver = async (port) => {
  const deliveries = []
  let secret = ""
  let badSignatures = 0
  let server
  let sockets = new Set()

  const verify = (headers, body) => {
    const timestamp = headers["x-parley-webhook-timestamp"] ?? ""
    const signature = headers["x-parley-webhook-signature"] ?? ""
    const expected = createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex")
    return signature.length === expected.length && timingSafeEqual(Buffer.from(signature), Buffer.from(expected))
  }

  const handle = (req, res) => {
    const chunks = []
    req.on("data", (chunk) => chunks.push(chunk))
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8")
      if (!verify(req.headers, body)) {
        badSignatures++
        res.writeHead(401, { "content-type": "application/json" }).end("{\"error\":\"bad signature\"}")
        return
      }
      const event = JSON.parse(body)
      deliveries.push({
        at: Date.now(),
        eventId: event.eventId,
        kind: event.event,
        conversationId: event.conversationId,
        createdAt: event.createdAt,
        replyIds: event.event === "send_messages" ? (event.data?.messages ?? []).map((m) => m.id) : []
      })
      res.writeHead(200, { "content-type": "application/json" }).end("{\"received\":true}")
    })
  }

  const up = () =>
    new Promise((resolve, reject) => {
      sockets = new Set()
      server = http.createServer(handle)
      server.keepAliveTimeout = 5_000
      server.on("connection", (socket) => {
        sockets.add(socket)
        socket.on("close", () => sockets.delete(socket))
      })
      server.once("error", reject)
      server.listen(port, "127.0.0.1", () => resolve())
    })

  const down = () =>
    new Promise((resolve) => {
      for (const socket of sockets) socket.destroy()
      server.close(() => resolve())
    })

  await up()
  return {
    url: `http://127.0.0.1:${port}/webhook`,
    setSecret: (value) => {
      secret = value
    },
    deliveries: () => deliveries,
    badSignatures: () => badSignatures,
    up,
    down,
    close: down
  }
}
