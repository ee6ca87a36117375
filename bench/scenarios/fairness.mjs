// fairness: tenant X's receiver accepts connections and never answers; X sends a burst of messages; tenant Y
// (another workspace, a healthy receiver) sends messages at a low steady rate meanwhile. Y's end-to-end
// latency (request sent → webhook received) with X stuck, against Y alone measured first in the same run.
// Y's replies that never arrive within the wait are counted, and their latency is taken as the wait
// itself (so p99 is then a lower bound, marked "≥").
import { allAnswered, analyzeWebhooks, endToEnd, tenantFor, waitForWebhooks } from "../lib/harness.mjs"
import { QUESTION, benchArticle } from "../lib/messages.mjs"
import { nowMs } from "../lib/proc.mjs"
import { round, summarize } from "../lib/stats.mjs"
import { target } from "../lib/targets.mjs"
import { REPLY_NOW } from "./deliveries.mjs"
import { pacedConversations } from "./pipeline.mjs"

const Y_RATE = 2

export default {
  name: "fairness",
  description: "one tenant's dead receiver must not stall another tenant's replies",
  run: async (ctx) => {
    const xMessages = 40
    const ySeconds = ctx.quick ? 5 : 10
    const waitMs = ctx.quick ? 40_000 : 150_000
    const db = await ctx.database("fairness")
    const driver = ctx.driver()
    const healthy = await ctx.receiver("ok")
    const dead = await ctx.receiver("hang")
    const parley = await ctx.parley({ databaseUrl: db.url, env: REPLY_NOW, label: "parley-fairness" })
    const x = await tenantFor(parley.url, dead, { name: "tenant-x", articles: [benchArticle] })
    const y = await tenantFor(parley.url, healthy, { name: "tenant-y", articles: [benchArticle] })

    await pacedConversations({ driver, receiver: healthy, targetUrl: parley.url, tenant: y, prefix: "yw", rate: 5, count: 5 })
    ctx.say(`Y alone: ${Y_RATE} msg/s for ${ySeconds} s`)
    const alone = await pacedConversations({ driver, receiver: healthy, targetUrl: parley.url, tenant: y, prefix: "ya", rate: Y_RATE, count: Y_RATE * ySeconds })
    const yAlone = endToEnd(alone.records, alone.report.arrivals)

    ctx.say(`X: ${xMessages} messages to a receiver that never answers; Y meanwhile`)
    const xSpec = { prefix: "x", syncOnly: false, text: QUESTION }
    const xSent = await driver.call("paced", { target: parley.url, token: x.token, integrationId: x.integrationId, spec: xSpec, rate: 200, count: xMessages })
    const xStarted = xSent.records[0].sentAt
    const ySince = await healthy.call("count")
    const ySent = await driver.call("paced", {
      target: parley.url,
      token: y.token,
      integrationId: y.integrationId,
      spec: { prefix: "yx", syncOnly: false, text: QUESTION },
      rate: Y_RATE,
      count: Y_RATE * ySeconds
    })
    const yConversations = ySent.records.map((r) => r.conversationId)
    const waited = await waitForWebhooks(healthy, { since: ySince, done: allAnswered(yConversations), idleMs: waitMs, timeoutMs: waitMs })
    const yReport = analyzeWebhooks(waited.records, yConversations)
    const deadline = nowMs()
    // Not arrived: counted at the wait's end, a lower bound of their latency.
    const withX = summarize(ySent.records.map((r) => (yReport.arrivals.get(r.conversationId) ?? deadline) - r.sentAt))
    const yMissing = yReport.lost
    const xArrivals = (await dead.call("collect")).records
    const xFirstAttempts = new Set(xArrivals.map((r) => r.eventId)).size

    const goal = Math.max(2 * yAlone.p99, yAlone.p99 + 50)
    const bound = yMissing > 0 ? "≥ " : ""
    return {
      figures: {
        xMessages,
        xHttpFailures: xSent.records.filter((r) => r.status !== 200).length,
        xDeliveryAttemptsSeen: xArrivals.length,
        xDistinctEventsSeen: xFirstAttempts,
        yRate: Y_RATE,
        yMessages: ySent.records.length,
        yAloneMs: yAlone,
        yWithXStuckMs: { ...withX, notArrived: yMissing, waitedMs: round(deadline - xStarted) },
        waitEnded: waited.stopped
      },
      rows: [
        {
          work: `tenant Y's reply latency while tenant X's receiver hangs (X: ${xMessages} messages; Y: ${Y_RATE} msg/s)`,
          parley: `with X stuck: p50 ${bound}${withX.p50} ms, p99 ${bound}${withX.p99} ms; ${yMissing} of ${ySent.records.length} not arrived after ${round(waitMs / 1000)} s`,
          baseline: `Y alone: p50 ${yAlone.p50} ms, p99 ${yAlone.p99} ms`,
          ratio: yAlone.p99 === null ? null : round(withX.p99 / yAlone.p99, 1),
          target: "fairness_y_p99_with_x_stuck_ms"
        }
      ],
      targets: {
        fairness_y_p99_with_x_stuck_ms: target(withX.p99, "<=", goal, {
          unit: "ms",
          note: `goal = max(2 × Y-alone p99, Y-alone p99 + 50 ms), Y alone p99 ${yAlone.p99} ms in this run${yMissing > 0 ? `; ${yMissing} replies never arrived, value is a lower bound` : ""}`
        })
      }
    }
  }
}
