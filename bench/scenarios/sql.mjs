// sql: what Parley sends to PostgreSQL, observed on the wire through a recording proxy (lib/pg-sniffer).
// 1. message-received with syncOnly, one request at a time: the statements and round trips of one
//    request, and whether the baseline server (bench/lib/statements.mjs) sends the same sequence.
// 2. message-received without syncOnly, through reply and signed delivery, one at a time: statements per
//    message end to end (idle polling and metrics queries are pushed out of the window).
import { startBaseline } from "../lib/baseline.mjs"
import { QUESTION, benchArticle, messageBody, messagePath } from "../lib/messages.mjs"
import { normalize, startSniffer } from "../lib/pg-sniffer.mjs"
import { sleep } from "../lib/proc.mjs"
import { allAnswered, tenantFor, waitForWebhooks } from "../lib/harness.mjs"
import { MESSAGE_RECEIVED_SEQUENCE } from "../lib/statements.mjs"
import { round } from "../lib/stats.mjs"

const SAMPLES = 20
const QUIET = { JOB_POLL_INTERVAL: "1 hour", JOB_METRICS_INTERVAL: "1 hour" }

const send = async (baseUrl, tenant, spec, i) => {
  const response = await fetch(`${baseUrl}${messagePath(tenant.integrationId)}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${tenant.token}` },
    body: messageBody(spec, i)
  })
  await response.text()
  if (response.status !== 200) throw new Error(`message-received answered ${response.status}`)
}

/** Statements grouped by text, with how many times each ran per message, most frequent first. */
const perMessage = (log, messages) => {
  const counts = new Map()
  for (const entry of log) {
    const text = normalize(entry.text)
    counts.set(text, (counts.get(text) ?? 0) + 1)
  }
  return [...counts.entries()].sort((a, b) => b[1] - a[1]).map(([text, n]) => ({ perMessage: round(n / messages, 2), text }))
}

/** The sequence of one request, if all `messages` requests sent the same sequence; else null. */
const uniformSequence = (log, messages) => {
  if (log.length % messages !== 0) return null
  const size = log.length / messages
  const first = log.slice(0, size).map((e) => normalize(e.text))
  for (let m = 1; m < messages; m++) {
    if (log.slice(m * size, (m + 1) * size).some((e, k) => normalize(e.text) !== first[k])) return null
  }
  return first
}

/** Parse messages per request: unnamed ones are parsed at every execution, named ones once per connection. */
const parses = ({ named, unnamed }) =>
  `Parse per request: ${round(unnamed / SAMPLES, 2)} unnamed, ${round(named / SAMPLES, 2)} named (prepared once per connection)`

export default {
  name: "sql",
  description: "Parley's SQL per message, recorded on the wire; the baseline's statements checked against it",
  run: async (ctx) => {
    const db = await ctx.database("sql")
    const upstream = new URL(db.url)
    const sniffer = await startSniffer({ host: upstream.hostname, port: Number(upstream.port || 5432) })
    ctx.defer(() => sniffer.stop())
    const proxiedUrl = new URL(db.url)
    proxiedUrl.hostname = "127.0.0.1"
    proxiedUrl.port = String(sniffer.port)
    const proxied = proxiedUrl.toString()
    const receiver = await ctx.receiver("ok")
    const parley = await ctx.parley({ databaseUrl: proxied, env: { ...QUIET, REPLY_DEBOUNCE: "0 millis", PARLEY_TOKEN_CACHE_TTL: "0 seconds", PARLEY_INTEGRATION_CACHE_TTL: "0 seconds" }, label: "parley-sql" })
    const tenant = await tenantFor(parley.url, receiver, { name: "sql", articles: [benchArticle] })

    // 1. syncOnly: warm up (prepared statements are parsed once per connection), then record.
    const syncSpec = { prefix: "s", syncOnly: true, conversations: 5, text: QUESTION }
    for (let i = 0; i < 5; i++) await send(parley.url, tenant, syncSpec, i)
    sniffer.reset()
    for (let i = 5; i < 5 + SAMPLES; i++) await send(parley.url, tenant, syncSpec, i)
    const { log: syncLog, roundTrips: syncRoundTrips, parses: syncParses } = sniffer.take()
    const sequence = uniformSequence(syncLog, SAMPLES)

    // 2. A reply end to end: each message waits for its webhook (and the bookkeeping after it).
    const replySpec = { prefix: "r", syncOnly: false, text: QUESTION }
    const replyOne = async (i) => {
      const before = await receiver.call("count")
      await send(parley.url, tenant, replySpec, i)
      await waitForWebhooks(receiver, { since: before, done: allAnswered([`r-c${i}`]), idleMs: 10_000, timeoutMs: 30_000 })
      await sleep(300)
    }
    for (let i = 0; i < 3; i++) await replyOne(i)
    sniffer.reset()
    const replies = ctx.quick ? 5 : 10
    for (let i = 3; i < 3 + replies; i++) await replyOne(i)
    const { log: replyLog, roundTrips: replyRoundTrips } = sniffer.take()
    await parley.stop()

    // 3. The baseline through the same proxy.
    // The token and integration caches off on both sides: every request sends the whole list (under load
    // both send each look-up once a second).
    const baseline = await startBaseline({
      databaseUrl: proxied,
      logDir: ctx.logDir,
      label: "baseline-sql",
      env: { BASELINE_TOKEN_CACHE_TTL_MS: "0", BASELINE_INTEGRATION_CACHE_TTL_MS: "0" }
    })
    ctx.defer(() => baseline.stop())
    const baselineSpec = { prefix: "b", syncOnly: true, conversations: 5, text: QUESTION }
    for (let i = 0; i < 5; i++) await send(baseline.url, tenant, baselineSpec, i)
    sniffer.reset()
    for (let i = 5; i < 5 + SAMPLES; i++) await send(baseline.url, tenant, baselineSpec, i)
    const baselineTaken = sniffer.take()
    const baselineSequence = uniformSequence(baselineTaken.log, SAMPLES)
    await baseline.stop()

    const expected = MESSAGE_RECEIVED_SEQUENCE.map(normalize)
    const differences = (observed) =>
      observed === null
        ? ["not the same sequence on every request"]
        : [
          ...observed.filter((text) => !expected.includes(text)).map((text) => `+ ${text}`),
          ...expected.filter((text) => !observed.includes(text)).map((text) => `- ${text}`),
          ...(observed.length === expected.length && observed.every((t, k) => t === expected[k]) ? [] : ["order or count differs"])
        ].filter((d, k, all) => !(d === "order or count differs" && all.length > 1))
    const parleyVsList = differences(sequence)
    const baselineVsList = differences(baselineSequence)
    const statementsPerReply = round(replyLog.length / replies, 1)

    return {
      figures: {
        messageReceivedSyncOnly: {
          requests: SAMPLES,
          statementsPerRequest: round(syncLog.length / SAMPLES, 2),
          roundTripsPerRequest: round(syncRoundTrips / SAMPLES, 2),
          parsesPerRequest: { named: round(syncParses.named / SAMPLES, 2), unnamed: round(syncParses.unnamed / SAMPLES, 2) },
          baselineParsesPerRequest: {
            named: round(baselineTaken.parses.named / SAMPLES, 2),
            unnamed: round(baselineTaken.parses.unnamed / SAMPLES, 2)
          },
          sequence,
          parleyMatchesBaselineList: parleyVsList.length === 0,
          differencesFromBaselineList: parleyVsList,
          baselineSendsTheList: baselineVsList.length === 0,
          baselineDifferences: baselineVsList
        },
        replyEndToEnd: {
          messages: replies,
          statementsPerMessage: statementsPerReply,
          roundTripsPerMessage: round(replyRoundTrips / replies, 1),
          statements: perMessage(replyLog, replies)
        }
      },
      rows: [
        {
          work: "SQL per message-received (syncOnly), on the wire",
          parley: `${round(syncLog.length / SAMPLES, 2)} statements, ${round(syncRoundTrips / SAMPLES, 2)} round trips, ${
            parses(syncParses)
          }`,
          baseline: baselineVsList.length === 0 && parleyVsList.length === 0
            ? `same statements, same order; ${parses(baselineTaken.parses)}${
              (baselineTaken.parses.unnamed === 0) === (syncParses.unnamed === 0) ? "" : " (DIFFERENT protocol from Parley's)"
            }`
            : `DIFFERENT: Parley ${parleyVsList.join("; ") || "="}, baseline ${baselineVsList.join("; ") || "="}`,
          ratio: null
        },
        {
          work: "SQL per message through reply and delivery (debounce 0)",
          parley: `${statementsPerReply} statements, ${round(replyRoundTrips / replies, 1)} round trips`,
          baseline: "",
          ratio: null
        }
      ],
      targets: {}
    }
  }
}
