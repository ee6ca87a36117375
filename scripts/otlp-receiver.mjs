// A minimal OTLP/HTTP (JSON) receiver for checking Parley's exports by hand: prints each trace's span
// tree as it arrives. Usage: node scripts/otlp-receiver.mjs [port=4318]
import { createServer } from "node:http"

const port = Number(process.argv[2] ?? 4318)
const spans = new Map()

const print = () => {
  const byTrace = new Map()
  for (const span of spans.values()) {
    if (!byTrace.has(span.traceId)) byTrace.set(span.traceId, [])
    byTrace.get(span.traceId).push(span)
  }
  for (const [traceId, list] of byTrace) {
    console.log(`trace ${traceId} (${list.length} spans)`)
    const ids = new Set(list.map((s) => s.spanId))
    const walk = (parent, depth) =>
      list.filter((s) => (parent === null ? !ids.has(s.parentSpanId) : s.parentSpanId === parent))
        .sort((a, b) => Number(BigInt(a.startTimeUnixNano) - BigInt(b.startTimeUnixNano)))
        .forEach((s) => {
          const links = (s.links ?? []).length > 0 ? `  [link → ${s.links[0].spanId}]` : ""
          console.log(`${"  ".repeat(depth + 1)}${s.name}${links}`)
          walk(s.spanId, depth + 1)
        })
    walk(null, 0)
  }
}

createServer((req, res) => {
  let body = ""
  req.on("data", (c) => (body += c))
  req.on("end", () => {
    if (req.url === "/v1/traces") {
      const data = JSON.parse(body)
      for (const rs of data.resourceSpans ?? []) for (const ss of rs.scopeSpans ?? []) for (const s of ss.spans ?? []) spans.set(s.spanId, s)
      print()
    } else {
      console.log(`${req.url}: ${body.length} bytes`)
    }
    res.writeHead(200, { "content-type": "application/json" }).end("{}")
  })
}).listen(port, "127.0.0.1", () => console.log(`OTLP receiver on http://127.0.0.1:${port}`))
