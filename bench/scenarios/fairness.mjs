// fairness: tenant X's receiver accepts connections and never answers; X sends a burst of messages; tenant Y
// (another workspace, a healthy receiver) sends messages at a low steady rate. Y's end-to-end latency
// (request sent → webhook received) against Y alone measured first in the same run, in two phases after
// X's burst: first from the end of X's burst (Y's first message shares the CPU with X's replies being
// made, as with any busy tenant), then — the target — while X's replies are made and its deliveries hang
// (its share in flight, the rest queued; in the full run this phase also holds their time-outs and
// retries). Y's replies that never arrive within the wait are counted, and their latency is taken as the
// wait itself (so p99 is then a lower bound, marked "≥").
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

    ctx.say(`X: ${xMessages} messages to a receiver that never answers; Y meanwhile, then Y again while X's deliveries hang`)
    const xSpec = { prefix: "x", syncOnly: false, text: QUESTION }
    const xSent = await driver.call("paced", { target: parley.url, token: x.token, integrationId: x.integrationId, spec: xSpec, rate: 200, count: xMessages })
    const xStarted = xSent.records[0].sentAt
    /** Y's messages at Y_RATE for ySeconds, and their end-to-end latency once arrived or waited for. */
    const yPhase = async (prefix) => {
      const since = await healthy.call("count")
      const sent = await driver.call("paced", {
        target: parley.url,
        token: y.token,
        integrationId: y.integrationId,
        spec: { prefix, syncOnly: false, text: QUESTION },
        rate: Y_RATE,
        count: Y_RATE * ySeconds
      })
      const conversations = sent.records.map((r) => r.conversationId)
      const waited = await waitForWebhooks(healthy, { since, done: allAnswered(conversations), idleMs: waitMs, timeoutMs: waitMs })
      const report = analyzeWebhooks(waited.records, conversations)
      const deadline = nowMs()
      // Not arrived: counted at the wait's end, a lower bound of their latency.
      const latencies = sent.records.map((r) => (report.arrivals.get(r.conversationId) ?? deadline) - r.sentAt)
      return { latency: summarize(latencies), inOrder: latencies.map((ms) => round(ms)), missing: report.lost, deadline, waitEnded: waited.stopped }
    }
    // During X's burst: Y's first messages share the process's CPU with X's 40 replies being made, as
    // they would with any busy tenant's; the hung receiver's own cost is measured next.
    const burst = await yPhase("yb")
    // X's replies made, its deliveries hanging at its receiver (its share in flight, the rest queued,
    // time-outs and retries falling in this window): Y's replies must keep their latency.
    const stuck = await yPhase("yx")
    const withX = stuck.latency
    const yMissing = stuck.missing
    const deadline = stuck.deadline
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
        yMessages: withX.count,
        yAloneMs: yAlone,
        yDuringXBurstMs: { ...burst.latency, inOrder: burst.inOrder, notArrived: burst.missing },
        yWithXStuckMs: { ...withX, inOrder: stuck.inOrder, notArrived: stuck.missing, waitedMs: round(deadline - xStarted) },
        waitEnded: stuck.waitEnded
      },
      rows: [
        {
          work: `tenant Y's reply latency while tenant X's receiver hangs with X's deliveries queued (X: ${xMessages} messages; Y: ${Y_RATE} msg/s for ${ySeconds} s, after the phase below)`,
          parley: `with X stuck: p50 ${bound}${withX.p50} ms, p99 ${bound}${withX.p99} ms; ${stuck.missing} of ${withX.count} not arrived after ${round(waitMs / 1000)} s`,
          baseline: `Y alone: p50 ${yAlone.p50} ms, p99 ${yAlone.p99} ms`,
          ratio: yAlone.p99 === null ? null : round(withX.p99 / yAlone.p99, 1),
          target: "fairness_y_p99_with_x_stuck_ms"
        },
        {
          work: `  the ${ySeconds} s before, from the end of X's burst (Y's first messages share the CPU with X's ${xMessages} replies being made)`,
          parley: `p50 ${burst.latency.p50} ms, p99 ${burst.latency.p99} ms; first three in order ${burst.inOrder.slice(0, 3).join(", ")} ms; ${burst.missing} not arrived`,
          baseline: "",
          ratio: yAlone.p99 === null || burst.latency.p99 === null ? null : round(burst.latency.p99 / yAlone.p99, 1)
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
