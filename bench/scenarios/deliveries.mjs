// deliveries: a burst of N conversations, each with one customer message (reply debounce 0), answered
// by the embedded responder from a knowledge-base article and delivered as signed webhooks to a local
// receiver in its own process. Deliveries per second (whole burst; while ingest still runs; once it has
// stopped), lost (conversations never answered) and duplicated eventIds, bad signatures.
// Then the deliveries lane alone: the receiver answers 410 Gone to a second burst (the webhook is turned
// off and every reply is dead), comes back, the webhook is re-enabled and every dead event is replayed
// with one request; the rate at which the replayed events arrive is the lane's own throughput, with no
// reply generation in front of it.
import { backendPids, query } from "../lib/db.mjs"
import { allAnswered, analyzeWebhooks, failures, okPerSecond, tenantFor, waitForWebhooks } from "../lib/harness.mjs"
import { QUESTION, benchArticle, conversationOf } from "../lib/messages.mjs"
import { apiCall } from "../lib/parley.mjs"
import { cpuTimeMs, cpuTimeOfAll, nowMs, sleep } from "../lib/proc.mjs"
import { round } from "../lib/stats.mjs"
import { target } from "../lib/targets.mjs"
import { runPgbenchScript } from "./ingest.mjs"

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

/** Waits until `count` events of the integration are dead (or the time-out passes); returns how many are. */
const waitForDead = async (databaseUrl, integrationId, count, timeoutMs) => {
  const started = nowMs()
  for (;;) {
    const [row] = await query(databaseUrl,
      `SELECT count(*)::int AS dead FROM events WHERE integration_id = $1 AND status = 'dead'`, [integrationId])
    if (row.dead >= count || nowMs() - started > timeoutMs) return row.dead
    await sleep(200)
  }
}

/**
 * The deliveries lane alone: `count` replies made dead behind a 410, then replayed by one replay-all
 * request once the receiver answers 200 again. Rate from the replay request to the last arrival, and
 * from its answer to the last arrival (the replay queues its jobs one by one, the lane starts at once).
 */
export const lane = async ({ driver, receiver, parleyUrl, parleyPid, databaseUrl, databaseName, tenant, count, timeoutMs }) => {
  await receiver.call("setMode", { mode: "gone" })
  const spec = { prefix: "lane", syncOnly: false, text: QUESTION }
  const since = new Date(Date.now() - 1000).toISOString()
  const ingest = await driver.call("autocannon", {
    targets: [parleyUrl],
    token: tenant.token,
    integrationId: tenant.integrationId,
    spec,
    connections: 8,
    amount: count
  })
  const conversations = Array.from({ length: ingest.nextIndex - ingest.firstIndex }, (_, k) => conversationOf(spec, ingest.firstIndex + k))
  const dead = await waitForDead(databaseUrl, tenant.integrationId, conversations.length, timeoutMs)
  await receiver.call("setMode", { mode: "ok" })
  await apiCall(parleyUrl, tenant.token, "POST", `/v1/integration/${tenant.integrationId}/update-settings`, { webhookEnabled: true })
  const before = await receiver.call("count")
  const pgPids = await backendPids(databaseName)
  const cpuBefore = { parley: cpuTimeMs(parleyPid), postgres: cpuTimeOfAll(pgPids) }
  const replayStarted = nowMs()
  const replayed = await apiCall(parleyUrl, tenant.token, "POST",
    `/v1/integration/${tenant.integrationId}/deliveries/replay?since=${encodeURIComponent(since)}`)
  const replayAnswered = nowMs()
  const waited = await waitForWebhooks(receiver, { since: before, done: allAnswered(conversations), idleMs: 30_000, timeoutMs })
  const cpuAfter = { parley: cpuTimeMs(parleyPid), postgres: cpuTimeOfAll(pgPids) }
  const report = analyzeWebhooks(waited.records, conversations)
  const arrivals = [...report.arrivals.values()].sort((a, b) => a - b)
  const last = arrivals.at(-1) ?? replayAnswered
  const perDelivery = (key) => arrivals.length === 0 ? null : round((cpuAfter[key] - cpuBefore[key]) / arrivals.length, 3)
  const afterAnswer = arrivals.filter((at) => at > replayAnswered).length
  return {
    conversations: conversations.length,
    dead,
    replayed: replayed.replayed,
    replayRequestMs: round(replayAnswered - replayStarted, 1),
    delivered: arrivals.length,
    lost: report.lost,
    duplicated: report.duplicated,
    invalidSignatures: report.invalidSignatures,
    waitEnded: waited.stopped,
    deliveriesPerSecond: round(arrivals.length / ((last - replayStarted) / 1000), 1),
    deliveriesPerSecondAfterAnswer: afterAnswer === 0 ? null : round(afterAnswer / ((last - replayAnswered) / 1000), 1),
    deliveredDuringReplayRequest: arrivals.length - afterAnswer,
    // CPU per delivery (ms) of the Parley process and of the database's backends, over the whole wait.
    cpuMsPerDelivery: { parley: perDelivery("parley"), postgres: perDelivery("postgres") }
  }
}

/**
 * What PostgreSQL allows: every statement of a message through reply and delivery
 * (message-path.pgbench.sql) in pgbench, 8 clients, Parley stopped. Messages per second counted in the
 * database (delivery jobs done), with a reply, citations and an event body taken from Parley's own rows
 * of this run. Returns `{ error }` when there is no reply to copy.
 */
export const messagePathCeiling = async ({ databaseUrl, databaseName, tenant, durationS }) => {
  const [sample] = await query(databaseUrl, `SELECT
      (SELECT text FROM messages WHERE role = 'ai' ORDER BY seq DESC LIMIT 1) AS answer,
      (SELECT citations::text FROM reply_metadata WHERE citations IS NOT NULL LIMIT 1) AS citations,
      (SELECT body FROM events WHERE kind = 'send_messages' LIMIT 1) AS body`)
  if (sample.answer === null || sample.body === null) return { error: "no reply stored to copy" }
  const variables = {
    workspace_id: tenant.workspaceId,
    integration_id: tenant.integrationId,
    text: QUESTION,
    answer: sample.answer,
    citations: sample.citations ?? "[]",
    body: sample.body
  }
  const done = async () => (await query(databaseUrl,
    `SELECT count(*)::int AS n FROM jobs WHERE kind LIKE 'deliver\\_event\\_%' AND status = 'done'`))[0].n
  await runPgbenchScript({ database: databaseName, script: "message-path.pgbench.sql", variables, durationS: 2 })
  const before = await done()
  const run = await runPgbenchScript({ database: databaseName, script: "message-path.pgbench.sql", variables, durationS })
  const delivered = (await done()) - before
  return {
    messagesPerSecond: round(delivered / durationS, 1),
    delivered,
    transactions: run.transactions,
    failed: run.failed,
    latencyMs: run.latencyMs
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
    ctx.say(`${result.delivered}/${count} delivered, ${result.deliveriesPerSecond}/s; lost ${result.lost}, duplicated ${result.duplicated}`)
    // BENCH_LANE_COUNT: a longer lane for targeted runs (a quick run's 300 last about a second).
    const laneCount = Number(process.env.BENCH_LANE_COUNT) || (ctx.quick ? 300 : 1000)
    ctx.say(`the deliveries lane: ${laneCount} replies dead behind a 410, then replayed at once`)
    const alone = await lane({
      driver, receiver, parleyUrl: parley.url, parleyPid: parley.pid, databaseUrl: db.url, databaseName: db.name, tenant,
      count: laneCount,
      timeoutMs: ctx.quick ? 120_000 : 600_000
    })
    ctx.say(`lane: ${alone.delivered}/${alone.replayed} replayed delivered, ${alone.deliveriesPerSecond}/s (replay request ${alone.replayRequestMs} ms); lost ${alone.lost}`)
    const counts = await deliveryCounts(db.url)
    await parley.stop()
    ctx.say("what PostgreSQL allows: a message's every statement, through reply and delivery, in pgbench (Parley stopped)")
    const ceiling = await messagePathCeiling({ databaseUrl: db.url, databaseName: db.name, tenant, durationS: ctx.quick ? 3 : 10 })
    const ceilingRate = ceiling.messagesPerSecond ?? null
    return {
      figures: { ...result, lane: alone, database: counts, postgresCeiling: ceiling },
      rows: [
        {
          work: `the deliveries lane alone: ${alone.replayed} dead events replayed by one request (one integration)`,
          parley: `${alone.deliveriesPerSecond} webhooks/s from the request (${alone.deliveriesPerSecondAfterAnswer ?? "–"}/s after its answer, ${alone.replayRequestMs} ms; ${alone.deliveredDuringReplayRequest} arrived during it)`,
          baseline: "goal 1,000/s",
          ratio: round(alone.deliveriesPerSecond / 1000, 3),
          target: "deliveries_per_second"
        },
        {
          work: "  lost / duplicated / bad signatures",
          parley: `${alone.lost} / ${alone.duplicated} / ${alone.invalidSignatures} (of ${alone.conversations}; ${alone.dead} dead before the replay); CPU per delivery ${alone.cpuMsPerDelivery.parley} ms Parley, ${alone.cpuMsPerDelivery.postgres} ms PostgreSQL`,
          baseline: "",
          ratio: null,
          target: "deliveries_lane_lost"
        },
        {
          work: `replies delivered, burst of ${count} conversations (debounce 0)`,
          parley: `${result.deliveriesPerSecond} webhooks/s (${result.deliveriesPerSecondDuringIngest}/s during ingest, ${result.deliveriesPerSecondAfterIngest ?? "–"}/s after)`,
          baseline: "goal 1,000/s",
          ratio: round(result.deliveriesPerSecond / 1000, 3),
          target: "replies_delivered_per_second"
        },
        {
          work: "  what PostgreSQL allows: the same statements per message (stored, answered, delivered) in pgbench, 8 clients, no Parley",
          parley: "",
          baseline: ceilingRate === null
            ? `not measured (${ceiling.error})`
            : `${ceilingRate} messages/s (${ceiling.delivered} delivered in the database; transaction p50 ${ceiling.latencyMs.p50} ms, p99 ${ceiling.latencyMs.p99} ms; ${ceiling.failed} failed)`,
          ratio: ceilingRate === null ? null : round(result.deliveriesPerSecond / ceilingRate, 3)
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
        deliveries_per_second: target(alone.deliveriesPerSecond, ">=", 1000, { unit: "webhooks/s", note: "the deliveries lane alone (replayed events)" }),
        deliveries_lane_lost: target(alone.lost, "=", 0, { note: `of ${alone.conversations}; duplicated ${alone.duplicated}` }),
        replies_delivered_per_second: target(result.deliveriesPerSecond, ">=", 1000, {
          unit: "webhooks/s",
          note: `replies generated and delivered, a burst of new conversations; PostgreSQL alone allows ${ceilingRate ?? "–"} messages/s with the same statements (pgbench)`
        }),
        deliveries_lost: target(result.lost, "=", 0, { note: `of ${count}; duplicated ${result.duplicated}` })
      }
    }
  }
}
