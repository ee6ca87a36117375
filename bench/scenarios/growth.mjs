// growth (not in --quick): the ingest and pipeline figures on an empty database, then again after seeding
// ~1M messages in 100k conversations (100 of them 1,000 messages long, customer and AI alternating) and
// 100k pending deliveries that cannot go out yet (25k retrying in 30 days with 25k due behind them, 50k due
// behind a slow receiver's share of 32 running), with ANALYZE. Ingest is measured spread over the
// seeded conversations and into the 1,000-message ones only. Finally Parley runs briefly behind the
// statement recorder and every statement it sent is EXPLAIN ANALYZEd on the seeded database.
//
// Seeding is SQL (generate_series) that clones rows Parley itself stored during the empty phase (a
// customer, a conversation, a message, a job) and overrides only keys, ids and times: it follows the
// schema of src/migrations/ as it is at the commit measured, whatever columns the redesign adds.
import pg from "pg"
import { allAnswered, tenantFor, waitForWebhooks } from "../lib/harness.mjs"
import { QUESTION, benchArticle, messageBody, messagePath } from "../lib/messages.mjs"
import { startSniffer } from "../lib/pg-sniffer.mjs"
import { explainStatements } from "../lib/plans.mjs"
import { nowMs } from "../lib/proc.mjs"
import { ratio, round } from "../lib/stats.mjs"
import { target } from "../lib/targets.mjs"
import { REPLY_NOW } from "./deliveries.mjs"
import { measureMax, syncSpec } from "./ingest.mjs"
import { measurePipeline } from "./pipeline.mjs"

const CONVERSATIONS = 100_000
const LONG_CONVERSATIONS = 100
const LONG_LENGTH = 1000
const SHORT_LENGTH = 9
/** Pending deliveries seeded: conversations whose receiver is down (two each), and due ones of a slow receiver. */
const DOWN = 25_000
const SLOW = 50_000
/** The slow receiver's running deliveries: its whole share (`DELIVERY_CONCURRENCY_PER_INTEGRATION`'s default). */
const SLOW_SHARE = 32
const CHUNK = 10_000

const ident = (name) => `"${name.replaceAll("\"", "\"\"")}"`

/** Insertable columns of a table (identity and generated columns are left to the database). */
const columnsOf = async (client, table) =>
  (await client.query(
    `SELECT column_name, is_identity, is_generated FROM information_schema.columns
     WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position`,
    [table]
  )).rows.filter((c) => c.is_identity !== "YES" && c.is_generated !== "ALWAYS").map((c) => c.column_name)

/** INSERT INTO table SELECT <template row t, with overrides> FROM <from>. */
const cloneInsert = async (client, table, overrides, from, values = []) => {
  const columns = await columnsOf(client, table)
  for (const name of Object.keys(overrides)) {
    if (!columns.includes(name)) throw new Error(`seed: ${table}.${name} not in the schema any more`)
  }
  const select = columns.map((c) => overrides[c] ?? `t.${ident(c)}`)
  const result = await client.query(
    `INSERT INTO ${table} (${columns.map(ident).join(", ")}) SELECT ${select.join(", ")} FROM ${from} ON CONFLICT DO NOTHING`,
    values
  )
  return result.rowCount
}

const customerId = (g) => `('00000000-0000-4000-8000-' || lpad(${g}::text, 12, '0'))::uuid`

/** Seeds the database through `databaseUrl`; templates are rows of `integrationId`. */
const seed = async (databaseUrl, integrationId, say) => {
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  const started = nowMs()
  try {
    const template = (await client.query(
      `SELECT c.id AS conversation, c.workspace_id AS workspace, c.customer_id AS customer,
              (SELECT m.id FROM messages m WHERE m.conversation_id = c.id LIMIT 1) AS message,
              (SELECT j.id FROM jobs j ORDER BY j.created_at LIMIT 1) AS job
       FROM conversations c WHERE c.integration_id = $1 LIMIT 1`,
      [integrationId]
    )).rows[0]
    if (template?.message == null || template.job == null) throw new Error("seed: no template rows (empty phase stored nothing?)")

    const customers = await cloneInsert(client, "customers", { id: customerId("g"), user_id: "NULL" },
      `(SELECT * FROM customers WHERE workspace_id = $1 AND id = $2) t, generate_series(0, ${CONVERSATIONS - 1}) g`,
      [template.workspace, template.customer])
    const conversations = await cloneInsert(client, "conversations", {
      id: "gen_random_uuid()",
      external_id: "'seed-c' || g",
      customer_id: customerId("g"),
      created_at: "now() - interval '60 days'",
      updated_at: "now() - interval '60 days'"
    }, `(SELECT * FROM conversations WHERE id = $1) t, generate_series(0, ${CONVERSATIONS - 1}) g`, [template.conversation])
    say(`seeded ${customers} customers, ${conversations} conversations (${round((nowMs() - started) / 1000, 1)} s)`)

    let messages = 0
    for (let low = 0; low < CONVERSATIONS; low += CHUNK) {
      messages += await cloneInsert(client, "messages", {
        id: "gen_random_uuid()",
        conversation_id: "c.id",
        external_id: "'seeded-' || c.g || '-' || k",
        role: "CASE WHEN k % 2 = 1 THEN 'human' ELSE 'ai' END",
        sync_only: "true",
        sent_at: "c.created_at + k * interval '1 second'",
        created_at: "c.created_at + k * interval '1 second'",
        reply_to: "NULL"
      }, `(SELECT * FROM messages WHERE id = $1) t,
          (SELECT id, created_at, substring(external_id from 7)::int AS g FROM conversations
           WHERE integration_id = $2 AND external_id LIKE 'seed-c%') c,
          generate_series(1, CASE WHEN c.g < ${LONG_CONVERSATIONS} THEN ${LONG_LENGTH} ELSE ${SHORT_LENGTH} END) k
          WHERE c.g >= ${low} AND c.g < ${low + CHUNK}`, [template.message, integrationId])
      say(`  ${messages} messages (${round((nowMs() - started) / 1000, 1)} s)`)
    }
    // The pending jobs are deliveries that cannot go out yet, as a real backlog has them (all of them
    // due or queued, none of them Parley's to run during the measurement):
    // - a receiver that is down: 25k conversations whose first delivery retries in 30 days, and a second
    //   one, due, queued behind it;
    // - a receiver that is slow: its share of deliveries running (leased for a day by an instance that is
    //   busy with them), and 50k more due now that wait for the integration's share. (With fewer running
    //   than the share, the lane would deliver the backlog during the measurement.)
    const delivery = (await client.query(
      `SELECT id FROM jobs WHERE kind = 'deliver_event' ORDER BY created_at LIMIT 1`
    )).rows[0]?.id
    if (delivery == null) throw new Error("seed: no deliver_event job to clone (empty phase delivered nothing?)")
    const cloneJobs = (overrides, where) =>
      cloneInsert(client, "jobs", {
        id: "gen_random_uuid()",
        status: "'pending'",
        attempts: "0",
        locked_until: "NULL",
        locked_by: "NULL",
        finished_at: "NULL",
        last_error: "NULL",
        conversation_id: "c.id",
        ordered: "true",
        blocked: "false",
        ...overrides
      }, `(SELECT * FROM jobs WHERE id = $1) t,
          (SELECT id, substring(external_id from 7)::int AS g FROM conversations
           WHERE integration_id = $2 AND external_id LIKE 'seed-c%') c
          WHERE ${where}`, [delivery, integrationId])
    const retrying = await cloneJobs({
      run_at: "now() + interval '30 days' + c.g * interval '1 millisecond'",
      attempts: "3",
      last_error: "'HTTP 503'",
      key: "'seed-retrying-' || c.g",
      group_key: "'bench-receiver-down'"
    }, `c.g < ${DOWN}`)
    const behind = await cloneJobs({
      run_at: "now() - interval '1 hour'",
      key: "'seed-behind-' || c.g",
      group_key: "'bench-receiver-down'",
      blocked: "true"
    }, `c.g < ${DOWN}`)
    const running = await cloneJobs({
      status: "'running'",
      attempts: "1",
      locked_by: "'bench-busy-instance'",
      locked_until: "now() + interval '1 day'",
      run_at: "now() - interval '1 hour'",
      key: "'seed-running-' || c.g",
      group_key: "'bench-receiver-slow'"
    }, `c.g >= ${DOWN} AND c.g < ${DOWN + SLOW_SHARE}`)
    const waiting = await cloneJobs({
      run_at: "now() - interval '1 hour' + c.g * interval '1 millisecond'",
      key: "'seed-waiting-' || c.g",
      group_key: "'bench-receiver-slow'"
    }, `c.g >= ${DOWN + SLOW_SHARE} AND c.g < ${DOWN + SLOW_SHARE + SLOW}`)
    const jobs = retrying + behind + waiting
    say(`seeded ${jobs} pending deliveries (${retrying} retrying in 30 days, ${behind} due behind them, ${waiting} due behind ${running} running); VACUUM ANALYZE, CHECKPOINT`)
    await client.query("VACUUM ANALYZE")
    // The seeding's half a gigabyte written out now, not by a checkpoint in the middle of a measurement.
    await client.query("CHECKPOINT")
    const sizes = (await client.query(`SELECT
      (SELECT count(*)::int FROM messages) AS messages,
      (SELECT count(*)::int FROM conversations) AS conversations,
      (SELECT count(*)::int FROM jobs WHERE status = 'pending') AS pending_jobs,
      pg_size_pretty(pg_database_size(current_database())) AS database_size`)).rows[0]
    return { ...sizes, seconds: round((nowMs() - started) / 1000, 1) }
  } finally {
    await client.end()
  }
}

const post = async (parley, tenant, spec, i) => {
  const response = await fetch(`${parley.url}${messagePath(tenant.integrationId)}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${tenant.token}` },
    body: messageBody(spec, i)
  })
  await response.text()
}

export default {
  name: "growth",
  full: true,
  description: "ingest and pipeline with 1M messages, 100k conversations, 1,000-message conversations, 100k pending jobs",
  run: async (ctx) => {
    const durationS = 10
    const db = await ctx.database("growth")
    const driver = ctx.driver()
    const receiver = await ctx.receiver("ok")
    let parley = await ctx.parley({ databaseUrl: db.url, env: REPLY_NOW, label: "parley-growth" })
    const tenant = await tenantFor(parley.url, receiver, { name: "growth", articles: [benchArticle] })
    const ingest = async (prefix, specFor) =>
      (await measureMax({ driver, servers: [parley], tenant, prefix, warmAmount: 500, durationS, database: db.name, specFor }))[0]
    const pipeline = (prefix) => measurePipeline({ driver, receiver, parley, tenant, prefix, rate: 20, seconds: durationS })

    ctx.say("empty database: ingest, pipeline")
    const empty = { ingest: await ingest("ge", syncSpec), pipeline: await pipeline("gpe") }
    const sizes = await seed(db.url, tenant.integrationId, ctx.say)
    // Restarted so that no cache of the empty phase (plans, pooled connections' statistics) is kept.
    await parley.stop()
    parley = await ctx.parley({ databaseUrl: db.url, env: REPLY_NOW, label: "parley-growth-seeded" })

    ctx.say("seeded database: ingest over the seeded conversations, into the 1,000-message ones, pipeline")
    const spread = (prefix) => ({ prefix, syncOnly: true, conversationPrefix: "seed", conversations: CONVERSATIONS, text: QUESTION })
    const long = (prefix) => ({ prefix, syncOnly: true, conversationPrefix: "seed", conversations: LONG_CONVERSATIONS, text: QUESTION })
    const seeded = {
      ingest: await ingest("gs", spread),
      ingestLong: await ingest("gl", long),
      pipeline: await pipeline("gps")
    }
    await parley.stop()

    ctx.say("plans of the statements Parley sends, on the seeded database")
    const upstream = new URL(db.url)
    const sniffer = await startSniffer({ host: upstream.hostname, port: Number(upstream.port || 5432) })
    ctx.defer(() => sniffer.stop())
    const proxied = new URL(db.url)
    proxied.hostname = "127.0.0.1"
    proxied.port = String(sniffer.port)
    parley = await ctx.parley({ databaseUrl: proxied.toString(), env: REPLY_NOW, label: "parley-growth-plans" })
    for (let i = 0; i < 10; i++) await post(parley, tenant, long("gx"), i)
    const since = await receiver.call("count")
    const replies = { prefix: "gy", syncOnly: false, text: QUESTION }
    for (let i = 0; i < 5; i++) await post(parley, tenant, replies, i)
    await waitForWebhooks(receiver, { since, done: allAnswered(["gy-c0", "gy-c1", "gy-c2", "gy-c3", "gy-c4"]), idleMs: 10_000, timeoutMs: 30_000 })
    await parley.stop()
    const plans = await explainStatements(db.url, sniffer.take().log)

    const ingestRatio = ratio(seeded.ingest.requestsPerSecond, empty.ingest.requestsPerSecond)
    const longRatio = ratio(seeded.ingestLong.requestsPerSecond, empty.ingest.requestsPerSecond)
    const pipelineRatio = ratio(seeded.pipeline.endToEndMs.p99, empty.pipeline.endToEndMs.p99)
    const line = (m) => `${m.requestsPerSecond} req/s, p99 ${m.latencyMs.p99} ms`
    const slowest = plans.filter((p) => p.executionMs !== undefined).slice(0, 3)
    return {
      figures: { seeded: sizes, empty, afterSeeding: seeded, plans },
      rows: [
        {
          work: `ingest (syncOnly, 8 connections) with ${sizes.messages} messages / ${sizes.conversations} conversations / ${sizes.pending_jobs} pending jobs stored`,
          parley: line(seeded.ingest),
          baseline: `empty database: ${line(empty.ingest)}`,
          ratio: ingestRatio,
          target: "growth_ingest_throughput"
        },
        {
          work: `  into ${LONG_CONVERSATIONS} conversations of ${LONG_LENGTH} messages`,
          parley: line(seeded.ingestLong),
          baseline: `empty database: ${line(empty.ingest)}`,
          ratio: longRatio,
          target: "growth_long_conversations_ingest_throughput"
        },
        {
          work: "  pipeline at 20 msg/s (message in → webhook out)",
          parley: `p50 ${seeded.pipeline.endToEndMs.p50} ms, p99 ${seeded.pipeline.endToEndMs.p99} ms`,
          baseline: `empty database: p50 ${empty.pipeline.endToEndMs.p50} ms, p99 ${empty.pipeline.endToEndMs.p99} ms`,
          ratio: pipelineRatio,
          target: "growth_pipeline_p99"
        },
        {
          work: "  slowest statements Parley sent, EXPLAIN ANALYZE on the seeded database",
          parley: slowest.map((p) => `${p.executionMs} ms${p.seqScans.length > 0 ? ` (seq scan ${p.seqScans.join(", ")})` : ""}: ${p.statement.slice(0, 60)}…`).join("; "),
          baseline: "",
          ratio: null
        }
      ],
      targets: {
        growth_ingest_throughput: target(ingestRatio, ">=", 0.8, { note: "seeded ÷ empty req/s, same run" }),
        growth_long_conversations_ingest_throughput: target(longRatio, ">=", 0.8, {
          note: `req/s into ${LONG_LENGTH}-message conversations ÷ empty-database req/s`
        }),
        growth_pipeline_p99: target(pipelineRatio, "<=", 1.5, { note: "seeded ÷ empty pipeline p99" })
      }
    }
  }
}
