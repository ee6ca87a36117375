// pipeline: 20 messages per second, steady (open loop, evenly spaced), each opening a new conversation,
// reply debounce 0, instant AI (the embedded responder): from the moment a request is sent to the
// arrival of the signed send_messages webhook for its conversation. p50, p99; the HTTP answer's latency
// beside it.
import { allAnswered, analyzeWebhooks, endToEnd, failures, statusesOf, tenantFor, waitForWebhooks } from "../lib/harness.mjs"
import { QUESTION, benchArticle } from "../lib/messages.mjs"
import { summarize } from "../lib/stats.mjs"
import { target } from "../lib/targets.mjs"
import { cpuTimeMs } from "../lib/proc.mjs"
import { REPLY_NOW } from "./deliveries.mjs"

/**
 * Sends `count` new conversations at `rate` per second and waits for their webhooks. Returns the send
 * records, what the receiver got for them, and the HTTP latency.
 */
export const pacedConversations = async ({ driver, receiver, targetUrl, tenant, prefix, rate, count, sentAt = false, timeoutMs = 120_000 }) => {
  const spec = { prefix, syncOnly: false, text: QUESTION, sentAt }
  const since = await receiver.call("count")
  const sent = await driver.call("paced", { target: targetUrl, token: tenant.token, integrationId: tenant.integrationId, spec, rate, count })
  const conversations = sent.records.map((r) => r.conversationId)
  const waited = await waitForWebhooks(receiver, { since, done: allAnswered(conversations), idleMs: 20_000, timeoutMs })
  return {
    records: sent.records,
    report: analyzeWebhooks(waited.records, conversations),
    http: { latencyMs: summarize(sent.records.map((r) => r.endAt - r.sentAt)), failures: failures(statusesOf(sent.records)) },
    waitEnded: waited.stopped
  }
}

/** The pipeline figures at `rate` for `seconds` on a running Parley (used by growth too). */
export const measurePipeline = async ({ driver, receiver, parley, tenant, prefix, rate, seconds }) => {
  await pacedConversations({ driver, receiver, targetUrl: parley.url, tenant, prefix: `${prefix}w`, rate: 10, count: 10 })
  const cpuBefore = cpuTimeMs(parley.pid)
  const run = await pacedConversations({ driver, receiver, targetUrl: parley.url, tenant, prefix, rate, count: rate * seconds })
  const cpuMs = cpuTimeMs(parley.pid) - cpuBefore
  return {
    rate,
    messages: run.records.length,
    endToEndMs: endToEnd(run.records, run.report.arrivals),
    httpMs: run.http.latencyMs,
    httpFailures: run.http.failures,
    // Parley's CPU (user + system) from the first message sent to the last webhook received, per message.
    cpuMsPerMessage: run.records.length === 0 ? null : Math.round((1000 * cpuMs) / run.records.length) / 1000,
    lost: run.report.lost,
    duplicated: run.report.duplicated,
    invalidSignatures: run.report.invalidSignatures,
    waitEnded: run.waitEnded
  }
}

export default {
  name: "pipeline",
  description: "message in → signed webhook out at 20 msg/s steady, debounce 0, embedded responder",
  run: async (ctx) => {
    const db = await ctx.database("pipeline")
    const driver = ctx.driver()
    const receiver = await ctx.receiver("ok")
    const parley = await ctx.parley({ databaseUrl: db.url, env: REPLY_NOW, label: "parley-pipeline" })
    const tenant = await tenantFor(parley.url, receiver, { name: "pipeline", articles: [benchArticle] })
    const result = await measurePipeline({ driver, receiver, parley, tenant, prefix: "p", rate: 20, seconds: ctx.quick ? 3 : 15 })
    const e2e = result.endToEndMs
    return {
      figures: result,
      rows: [
        {
          work: `message in → signed webhook out, ${result.rate} msg/s, debounce 0 (${result.messages} messages): p50`,
          parley: `${e2e.p50} ms`,
          baseline: "",
          ratio: null,
          target: "pipeline_p50_ms"
        },
        {
          work: "  p99 (and max, never delivered)",
          parley: `${e2e.p99} ms (max ${e2e.max} ms; ${e2e.missing} never delivered)`,
          baseline: "",
          ratio: null,
          target: "pipeline_p99_ms"
        },
        {
          work: "  its HTTP answer (message-received, not syncOnly)",
          parley: `p50 ${result.httpMs.p50} ms, p99 ${result.httpMs.p99} ms${result.httpFailures === "" ? "" : `; ${result.httpFailures}`}; Parley CPU ${result.cpuMsPerMessage} ms per message`,
          baseline: "",
          ratio: null
        }
      ],
      targets: {
        pipeline_p50_ms: target(e2e.p50, "<", 10, { unit: "ms" }),
        pipeline_p99_ms: target(e2e.missing > 0 ? null : e2e.p99, "<", 50, {
          unit: "ms",
          ...(e2e.missing > 0 ? { note: `${e2e.missing} messages never answered` } : {})
        })
      }
    }
  }
}
