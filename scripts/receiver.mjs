#!/usr/bin/env node
// `npm run receiver`: a webhook receiver for trying Parley, on http://127.0.0.1:8787/webhook (where the
// demo integration sends its events). It verifies each delivery's X-Parley-Webhook-Signature with a plain
// HMAC-SHA256 (the rule in docs/webhooks.md, no Parley code), answers 401 to a bad signature or a
// timestamp more than 5 minutes away and 200 otherwise, and prints each event (a repeated eventId is
// a redelivery: acknowledged, marked as such).
//
// The secret: PARLEY_WEBHOOK_SECRET, else the one in <PARLEY_DATA_DIR or ./.parley>/demo.env.
// Options (environment): RECEIVER_PORT (8787), RECEIVER_HOST (127.0.0.1), RECEIVER_STATUS (answer
// this status instead of 200, to watch Parley retry).
import { createHmac, timingSafeEqual } from "node:crypto"
import { existsSync, readFileSync } from "node:fs"
import { createServer } from "node:http"
import { resolve } from "node:path"

const demoEnv = resolve(process.env.PARLEY_DATA_DIR ?? ".parley", "demo.env")

const secretFromDemoEnv = () => {
  if (!existsSync(demoEnv)) return undefined
  const line = readFileSync(demoEnv, "utf8").split("\n").find((l) => l.includes("PARLEY_WEBHOOK_SECRET="))
  return line?.slice(line.indexOf("=") + 1).trim()
}

const secret = process.env.PARLEY_WEBHOOK_SECRET ?? secretFromDemoEnv()
if (secret === undefined || secret === "") {
  console.error(`No webhook secret: set PARLEY_WEBHOOK_SECRET (or start Parley once so that ${demoEnv} exists)`)
  process.exit(1)
}
const port = Number(process.env.RECEIVER_PORT ?? 8787)
const host = process.env.RECEIVER_HOST ?? "127.0.0.1"
const status = Number(process.env.RECEIVER_STATUS ?? 200)
const seen = new Set()

const verify = (headers, body) => {
  const timestamp = headers["x-parley-webhook-timestamp"]
  const signature = headers["x-parley-webhook-signature"]
  if (typeof timestamp !== "string" || typeof signature !== "string") return "missing signature headers"
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > 300) return "timestamp outside 5 minutes"
  const expected = createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex")
  const ok = expected.length === signature.length && timingSafeEqual(Buffer.from(expected), Buffer.from(signature))
  return ok ? undefined : "signature does not match"
}

const server = createServer((req, res) => {
  const chunks = []
  req.on("data", (chunk) => chunks.push(chunk))
  req.on("end", () => {
    const body = Buffer.concat(chunks).toString("utf8")
    const problem = verify(req.headers, body)
    const time = new Date().toISOString()
    if (problem !== undefined) {
      console.log(`${time} REJECTED ${req.method} ${req.url}: ${problem}`)
      res.writeHead(401, { "content-type": "application/json" }).end(JSON.stringify({ error: problem }))
      return
    }
    let event
    try {
      event = JSON.parse(body)
    } catch {
      res.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify({ error: "not JSON" }))
      return
    }
    const again = seen.has(event.eventId)
    seen.add(event.eventId)
    console.log(`${time} ${event.event} (signature verified${again ? "; a redelivery of an event already received" : ""})`)
    console.log(JSON.stringify(event, null, 2).split("\n").map((line) => `  ${line}`).join("\n"))
    res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify({ received: true }))
  })
})

server.on("error", (error) => {
  console.error(`The receiver cannot listen on ${host}:${port}: ${error.message} (set RECEIVER_PORT)`)
  process.exit(1)
})
server.listen(port, host, () => {
  console.log(`Webhook receiver on http://${host}:${port}/webhook, verifying with the secret from ${
    process.env.PARLEY_WEBHOOK_SECRET ? "PARLEY_WEBHOOK_SECRET" : demoEnv
  }${status === 200 ? "" : `; answering ${status}`}`)
})

for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => server.close(() => process.exit(0)))

