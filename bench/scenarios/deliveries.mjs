// deliveries: a burst of N conversations, each with one customer message (reply debounce 0), answered
// by the embedded responder from a knowledge-base article and delivered as signed webhooks to a local
// receiver in its own process. Deliveries per second (whole burst; while ingest still runs; once it has
// stopped), lost (conversations never answered) and duplicated eventIds, bad signatures.
import { query } from "../lib/db.mjs"
import { allAnswered, analyzeWebhooks, failures, okPerSecond, tenantFor, waitForWebhooks } from "../lib/harness.mjs"
import { QUESTION, benchArticle, conversationOf } from "../lib/messages.mjs"
import { round } from "../lib/stats.mjs"
import { target } from "../lib/targets.mjs"

export const REPLY_NOW = { REPLY_DEBOUNCE: "0 millis" }

/** Counts of events and delivery attempts in Parley's tables (null when the schema has changed). */
export const deliveryCounts = async (databaseUrl) => {
  try {
    const [row] = await query(databaseUrl, `SELECT
      (SELECT count(*)::int FROM events) AS events,
      (SELECT count(*)::int FROM events WHERE status = 'delivered') AS delivered,
      (SELECT count(*)::int FROM delivery_attempts) AS attempts`)
    return row
  } catch (error) {
    return { error: error.message }
  }
}

/**
 * Sends `count` new conversations (one message each) as fast as 8 connections go, spread over
 * `targets`, and waits for every send_messages webhook. Returns the delivery figures.
 */
export const burst = async ({ driver, receiver, targets, tenant, prefix, count, timeoutMs }) => {
  const spec = { prefix, syncOnly: false, text: QUESTION }
  const since = await receiver.call("count")
  const ingest = await driver.call("autocannon", {
    targets,
    token: tenant.token,
    integrationId: tenant.integrationId,
    spec,
    connections: 8,
    amount: count
  })
  const conversations = Array.from({ length: ingest.nextIndex - ingest.firstIndex }, (_, k) => conversationOf(spec, ingest.firstIndex + k))
  const waited = await waitForWebhooks(receiver, { since, done: allAnswered(conversations), idleMs: 30_000, timeoutMs })
  const report = analyzeWebhooks(waited.records, conversations)
  const arrivals = [...report.arrivals.values()].sort((a, b) => a - b)
  const last = arrivals.at(-1) ?? ingest.finishedAt
  const during = arrivals.filter((at) => at <= ingest.finishedAt).length
  const after = arrivals.length - during
  return {
    conversations: conversations.length,
    ingest: {
      requestsPerSecond: round(okPerSecond(ingest).perSecond, 1),
      seconds: round(ingest.elapsedMs / 1000, 2),
      failures: failures(ingest.statuses, ingest)
    },
    delivered: arrivals.length,
    lost: report.lost,
    duplicated: report.duplicated,
    invalidSignatures: report.invalidSignatures,
    eventKinds: report.kinds,
    waitEnded: waited.stopped,
    // From the first request of the burst to the last first-arrival.
    deliveriesPerSecond: round(arrivals.length / ((last - ingest.startedAt) / 1000), 1),
    deliveriesPerSecondDuringIngest: round(during / (ingest.elapsedMs / 1000), 1),
    deliveriesPerSecondAfterIngest: after === 0 ? null : round(after / ((last - ingest.finishedAt) / 1000), 1),
    secondsToLastDelivery: round((last - ingest.startedAt) / 1000, 2)
  }
}

export default {
  name: "deliveries",
  description: "a burst of conversations answered by the embedded responder, delivered as signed webhooks",
  run: async (ctx) => {
    const count = ctx.quick ? 100 : 1000
    const db = await ctx.database("deliveries")
    const driver = ctx.driver()
    const receiver = await ctx.receiver("ok")
    const parley = await ctx.parley({ databaseUrl: db.url, env: REPLY_NOW, label: "parley-deliveries" })
    const tenant = await tenantFor(parley.url, receiver, { name: "deliveries", articles: [benchArticle] })

    const warm = await burst({ driver, receiver, targets: [parley.url], tenant, prefix: "dw", count: 20, timeoutMs: 60_000 })
    if (warm.delivered === 0) throw new Error(`no webhook arrived during the warm-up (${warm.waitEnded})`)
    ctx.say(`burst of ${count} conversations`)
    const result = await burst({ driver, receiver, targets: [parley.url], tenant, prefix: "d", count, timeoutMs: ctx.quick ? 120_000 : 600_000 })
    const counts = await deliveryCounts(db.url)
    ctx.say(`${result.delivered}/${count} delivered, ${result.deliveriesPerSecond}/s; lost ${result.lost}, duplicated ${result.duplicated}`)
    return {
      figures: { ...result, database: counts },
      rows: [
        {
          work: `replies delivered, burst of ${count} conversations (debounce 0)`,
          parley: `${result.deliveriesPerSecond} webhooks/s (${result.deliveriesPerSecondDuringIngest}/s during ingest, ${result.deliveriesPerSecondAfterIngest ?? "–"}/s after)`,
          baseline: "goal 1,000/s",
          ratio: round(result.deliveriesPerSecond / 1000, 3),
          target: "deliveries_per_second"
        },
        {
          work: "  lost / duplicated / bad signatures",
          parley: `${result.lost} / ${result.duplicated} / ${result.invalidSignatures} (events ${JSON.stringify(result.eventKinds)})`,
          baseline: "",
          ratio: null,
          target: "deliveries_lost"
        }
      ],
      targets: {
        deliveries_per_second: target(result.deliveriesPerSecond, ">=", 1000, { unit: "webhooks/s" }),
        deliveries_lost: target(result.lost, "=", 0, { note: `of ${count}; duplicated ${result.duplicated}` })
      }
    }
  }
}
