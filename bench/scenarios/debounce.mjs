// debounce: the default reply debounce (1.5 s, set explicitly) at a low steady rate. Lateness = arrival of
// the send_messages webhook − (request sent + debounce). The reply is due debounce after Parley stored
// the message, which is a few ms after the request was sent, so lateness includes the HTTP request's own
// time: that is why the HTTP latency is reported beside it. Measured after a warm-up of 100 messages at 20/s.
import { endToEnd, tenantFor } from "../lib/harness.mjs"
import { benchArticle } from "../lib/messages.mjs"
import { target } from "../lib/targets.mjs"
import { pacedConversations } from "./pipeline.mjs"

const DEBOUNCE_MS = 1500
const RATE = 4
const WARM_RATE = 20
const WARM_COUNT = 100

export default {
  name: "debounce",
  description: "how late a debounced reply leaves (default 1.5 s debounce, 4 msg/s)",
  run: async (ctx) => {
    const db = await ctx.database("debounce")
    const driver = ctx.driver()
    const receiver = await ctx.receiver("ok")
    const parley = await ctx.parley({ databaseUrl: db.url, env: { REPLY_DEBOUNCE: `${DEBOUNCE_MS} millis` }, label: "parley-debounce" })
    const tenant = await tenantFor(parley.url, receiver, { name: "debounce", articles: [benchArticle] })
    // Warm: at 4 msg/s the measured messages alone leave the reply path half-compiled for most of the run
    // (the HTTP answer took twice the pipeline's, at a fifth of its rate); a server is measured warm.
    await pacedConversations({ driver, receiver, targetUrl: parley.url, tenant, prefix: "dbw", rate: WARM_RATE, count: WARM_COUNT, sentAt: true })
    const run = await pacedConversations({
      driver,
      receiver,
      targetUrl: parley.url,
      tenant,
      prefix: "db",
      rate: RATE,
      count: RATE * (ctx.quick ? 4 : 20),
      sentAt: true
    })
    const lateness = endToEnd(run.records, run.report.arrivals, { offsetMs: DEBOUNCE_MS })
    return {
      figures: { debounceMs: DEBOUNCE_MS, rate: RATE, messages: run.records.length, latenessMs: lateness, httpMs: run.http.latencyMs, lost: run.report.lost },
      rows: [
        {
          work: `debounced reply (${DEBOUNCE_MS} ms): arrival − (sent + debounce), ${RATE} msg/s, ${run.records.length} messages`,
          parley: `p50 ${lateness.p50} ms, p99 ${lateness.p99} ms, max ${lateness.max} ms (HTTP answer p50 ${run.http.latencyMs.p50} ms)`,
          baseline: "",
          ratio: null,
          target: "debounce_lateness_p99_ms"
        }
      ],
      targets: {
        debounce_lateness_p99_ms: target(lateness.missing > 0 ? null : lateness.p99, "<", 50, {
          unit: "ms",
          ...(lateness.missing > 0 ? { note: `${lateness.missing} replies never arrived` } : {})
        })
      }
    }
  }
}
