#!/usr/bin/env node
// Chaos: real Parley processes on a real PostgreSQL that this harness owns, under load, while things
// break: Parley SIGKILLed, the receiver down, PostgreSQL restarted, the network to it partitioned, two
// instances on one database. Counted at the receiver: 0 lost, 0 second replies, 0 order inversions,
// no acknowledged message missing from the database.
//
//   npm run chaos                      long form (1,000 conversations per scenario)
//   npm run chaos -- --short           short form for CI (about 2 minutes)
//   npm run chaos -- --only=kill,pg-restart
//   CHAOS_CONVERSATIONS=300 npm run chaos
//
// It depends only on Parley's HTTP API, environment variables and the database schema.
import { execFileSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { cpSync, mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { makeStats, planConversations, probeDelivery, probeReplay, runLoad } from "./lib/load.mjs"
import { freePort, startProxy } from "./lib/net.mjs"
import { sleep, startParley, tail } from "./lib/parley.mjs"
import { startPostgres } from "./lib/postgres.mjs"
import { startReceiver } from "./lib/receiver.mjs"
import { account } from "./lib/verify.mjs"

const args = process.argv.slice(2)
const short = args.includes("--short")
const only = args.find((a) => a.startsWith("--only="))?.slice("--only=".length).split(",")
const conversations = Number(process.env.CHAOS_CONVERSATIONS ?? (short ? 150 : 1000))
const concurrency = Number(process.env.CHAOS_CONCURRENCY ?? 16)
/** The load is spread over this long, so each fault lands while conversations are in flight. */
const loadMs = Number(process.env.CHAOS_LOAD_MS ?? (short ? 8_000 : 40_000))
const root = new URL("..", import.meta.url).pathname
const log = (line) => console.log(`[chaos ${new Date().toISOString().slice(11, 23)}] ${line}`)

/** Fast timings, so a run takes minutes, not the production 28 hours. */
const parleyEnv = {
  PARLEY_MODE: "development",
  PARLEY_SEED_DEMO: "false",
  PARLEY_RATE_LIMIT: "0",
  DATABASE_POOL_SIZE: "8",
  // Bounded database waits, shorter than the load's 10 s request time-out: a partition answers 503.
  DATABASE_CONNECT_TIMEOUT: "2 seconds",
  DATABASE_STATEMENT_TIMEOUT: "3 seconds",
  REPLY_DEBOUNCE: "200 millis",
  JOB_POLL_INTERVAL: "1 second",
  JOB_LEASE: "3 seconds",
  WORKER_CONCURRENCY: "8",
  WORKER_SHUTDOWN_GRACE: "2 seconds",
  DELIVERY_RETRY_BASE: "200 millis",
  DELIVERY_RETRY_MAX_DELAY: "2 seconds",
  DELIVERY_MAX_AGE: "1 hour",
  DELIVERY_TIMEOUT: "5 seconds",
  LOG_LEVEL: "WARN"
}

const articles = [
  {
    title: "Shipping times",
    body: "Orders ship within one business day. Standard shipping takes 3 to 5 business days; express shipping " +
      "takes 1 to 2 business days. A tracking link is emailed when your order ships."
  },
  {
    title: "Returns and refunds",
    body: "You can return any unused item within 30 days. Start a return from your order page; the refund reaches " +
      "your card within 5 business days after the item arrives back at our warehouse."
  }
]

const percentile = (values, p) => {
  if (values.length === 0) return null
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]
}

const json = async (response) => {
  const text = await response.text()
  if (!response.ok) throw new Error(`${response.status} ${text}`)
  return JSON.parse(text)
}

// ---------------------------------------------------------------------------------------------------

const live = new Set()

const setup = async (pg, name) => {
  const database = `chaos_${name.replace(/-/g, "_")}`
  pg.createDatabase(database)
  const proxy = await startProxy(pg.port)
  const receiver = await startReceiver(await freePort(0))
  const adminToken = `padm_chaos_${randomBytes(16).toString("hex")}`
  const env = {
    ...parleyEnv,
    PARLEY_ADMIN_TOKEN: adminToken,
    PARLEY_DATA_DIR: join(pg.root, `data-${name}`),
    DATABASE_URL: `postgres://postgres@127.0.0.1:${proxy.port}/${database}`
  }
  const instances = []
  const start = async (suffix) => {
    const instance = await startParley({ name: `${name}-${suffix}`, env, logDir: pg.root })
    live.add(instance)
    instance.exited.then(() => live.delete(instance))
    await instance.ready()
    instances.push(instance)
    return instance
  }
  const first = await start("a")
  const admin = (path, body) =>
    fetch(`${first.base}/admin/v1${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
      body: JSON.stringify(body)
    }).then(json)
  const workspace = await admin("/workspaces", { name: `Chaos ${name}` })
  const integration = await admin(`/workspaces/${workspace.id}/integrations`, {
    name: "Chaos",
    webhook: { url: receiver.url, headers: { "X-Chaos": name }, metadata: { scenario: name } }
  })
  for (const article of articles) await admin(`/workspaces/${workspace.id}/articles`, article)
  receiver.setSecret(workspace.webhookSecret)
  return {
    name,
    database,
    proxy,
    receiver,
    instances,
    start,
    token: workspace.apiToken,
    integrationId: integration.integrationId,
    /** The instances the load may send to: the ones alive now. */
    targets: () => {
      const alive = instances.filter((i) => live.has(i)).map((i) => i.base)
      return alive.length > 0 ? alive : instances.map((i) => i.base)
    }
  }
}

/** Waits until every expected reply is delivered and nothing is left in flight (or the deadline). */
const drain = async (pg, ctx, stats, timeoutMs) => {
  const started = Date.now()
  let figures
  while (Date.now() - started < timeoutMs) {
    figures = account({
      pg,
      database: ctx.database,
      integrationId: ctx.integrationId,
      deliveries: ctx.receiver.deliveries(),
      acked: stats.acked
    })
    if (figures.lost === 0 && figures.undelivered === 0 && figures.pendingReplies === 0) break
    await sleep(500)
  }
  return { ...figures, drainMs: Date.now() - started }
}

/** When `fraction` of the messages are acknowledged. */
const whenAcknowledged = async (stats, total, fraction) => {
  while (stats.acknowledged < total * fraction) await sleep(25)
}

const deliveryLatencies = (deliveries, filter = () => true) =>
  deliveries.filter(filter).map((d) => d.at - Date.parse(d.createdAt))

const scenarios = {
  /**
   * SIGKILL while conversations are in flight (acknowledged, reply not delivered yet), twice in the long
   * form, each time followed by a new process. The load comes as fast as Parley takes it, so hundreds
   * of conversations are in flight when the process dies.
   */
  kill: async (pg, ctx, plan, stats) => {
    const load = runLoad({ conversations: plan, concurrency, targets: ctx.targets, token: ctx.token, integrationId: ctx.integrationId, stats, deadlineMs: 240_000, durationMs: short ? 2_000 : 5_000 })
    const total = plan.reduce((n, c) => n + c.messages.length, 0)
    const kills = short ? [0.6] : [0.5, 0.97]
    const notes = []
    for (const [index, at] of kills.entries()) {
      await whenAcknowledged(stats, total, at)
      const victim = ctx.instances.find((i) => live.has(i))
      const answered = new Set(ctx.receiver.deliveries().filter((d) => d.kind === "send_messages").map((d) => d.conversationId))
      const waiting = new Set([...stats.acked.values()].filter((a) => !a.syncOnly && !answered.has(a.conversationId)).map((a) => a.conversationId))
      const jobs = pg.query(ctx.database, "SELECT count(*) FROM jobs WHERE status IN ('pending','running')").trim()
      await victim.kill("SIGKILL")
      notes.push(`SIGKILL ${victim.name} at ${stats.acknowledged}/${total} acknowledged: ${waiting.size} conversations in flight (acknowledged, no reply delivered yet), ${jobs} jobs pending or running`)
      await sleep(500)
      await ctx.start(`restart${index + 1}`)
    }
    await load
    return notes
  },

  /** The receiver refuses connections for a while, then comes back. */
  receiver: async (pg, ctx, plan, stats) => {
    const load = runLoad({ conversations: plan, concurrency, targets: ctx.targets, token: ctx.token, integrationId: ctx.integrationId, stats, deadlineMs: 240_000, durationMs: loadMs })
    const total = plan.reduce((n, c) => n + c.messages.length, 0)
    await whenAcknowledged(stats, total, 0.2)
    const downMs = short ? 8_000 : 30_000
    const downAtAck = stats.acknowledged
    await ctx.receiver.down()
    const downAt = Date.now()
    await sleep(downMs)
    const held = pg.query(ctx.database, "SELECT count(*) FROM events WHERE status IN ('pending','failed')").trim()
    await ctx.receiver.up()
    await load
    return [`receiver down ${downMs} ms from ${downAtAck}/${total} acknowledged (${new Date(downAt).toISOString()}); ${held} events waiting when it came back`]
  },

  /** `pg_ctl restart -m fast` under load. */
  "pg-restart": async (pg, ctx, plan, stats) => {
    // How fast an idle worker takes a job an HTTP request enqueued (a replay), before and after the
    // restart: LISTEN/NOTIFY makes it milliseconds, polling alone up to JOB_POLL_INTERVAL.
    const probes = async (label) => {
      const delivered = ctx.receiver.deliveries().filter((d) => d.kind === "send_messages")
      const values = []
      for (let i = 0; i < 10 && delivered.length > 0; i++) {
        const { eventId } = delivered[i % delivered.length]
        values.push(await probeReplay({ base: ctx.instances[0].base, token: ctx.token, integrationId: ctx.integrationId, receiver: ctx.receiver, eventId }))
        await sleep(50)
      }
      const ok = values.filter((v) => v !== null)
      return `replay → delivery ${label} the restart: p50 ${percentile(ok, 50)} ms, max ${percentile(ok, 100)} ms (${ok.length}/${values.length} probes)`
    }
    await probeDelivery({ base: ctx.instances[0].base, token: ctx.token, integrationId: ctx.integrationId, receiver: ctx.receiver, id: "warmup" })
    const before = await probes("before")
    const load = runLoad({ conversations: plan, concurrency, targets: ctx.targets, token: ctx.token, integrationId: ctx.integrationId, stats, deadlineMs: 240_000, durationMs: loadMs })
    const total = plan.reduce((n, c) => n + c.messages.length, 0)
    await whenAcknowledged(stats, total, 0.3)
    const fiveHundredsBefore = stats.fiveHundreds
    const restartedAt = stats.acknowledged
    const restartAt = Date.now()
    await pg.restart()
    const restartMs = Date.now() - restartAt
    await load
    await drain(pg, ctx, stats, 60_000)
    const after = await probes("after")
    return [
      `pg_ctl restart -m fast took ${restartMs} ms at ${restartedAt}/${total} acknowledged; 5xx after it: ${stats.fiveHundreds - fiveHundredsBefore}`,
      before,
      after
    ]
  },

  /** The network to PostgreSQL stops (no packets either way, nothing refused) for a while. */
  partition: async (pg, ctx, plan, stats) => {
    const load = runLoad({ conversations: plan, concurrency, targets: ctx.targets, token: ctx.token, integrationId: ctx.integrationId, stats, deadlineMs: 240_000, requestTimeoutMs: 10_000, durationMs: loadMs })
    const total = plan.reduce((n, c) => n + c.messages.length, 0)
    await whenAcknowledged(stats, total, 0.3)
    const partitionMs = short ? 5_000 : 15_000
    const partitionAtAck = stats.acknowledged
    ctx.proxy.partition()
    const probeStarted = Date.now()
    const probe = fetch(`${ctx.instances[0].base}/health/ready`, { signal: AbortSignal.timeout(60_000) })
      .then((r) => `${r.status} after ${Date.now() - probeStarted} ms`)
      .catch((e) => `${e.name} after ${Date.now() - probeStarted} ms`)
    await sleep(partitionMs)
    ctx.proxy.heal()
    const ready = await probe
    await load
    return [`partition ${partitionMs} ms at ${partitionAtAck}/${total} acknowledged; /health/ready during it: ${ready}`]
  },

  /** Two instances on one database, both taking requests and running workers. */
  "two-instances": async (pg, ctx, plan, stats) => {
    await ctx.start("b")
    await runLoad({ conversations: plan, concurrency, targets: ctx.targets, token: ctx.token, integrationId: ctx.integrationId, stats, deadlineMs: 240_000, durationMs: loadMs })
    const byInstance = pg.rows(ctx.database, "SELECT split_part(locked_by, ':', 2) AS worker, count(*) AS jobs FROM jobs WHERE locked_by IS NOT NULL GROUP BY 1")
    return [`jobs by process: ${byInstance.map((r) => `pid ${r.worker}=${r.jobs}`).join(", ")}`]
  }
}

const runScenario = async (pg, name) => {
  log(`— ${name}: ${conversations} conversations, ${concurrency} at a time`)
  const ctx = await setup(pg, name)
  ctx.root = pg.root
  const plan = planConversations(name, conversations)
  const stats = makeStats()
  const started = Date.now()
  let notes = []
  try {
    notes = await scenarios[name](pg, ctx, plan, stats)
    const figures = await drain(pg, ctx, stats, short ? 60_000 : 180_000)
    if (name === "two-instances" || only !== undefined) notes.push(selfCheck(pg, ctx, stats))
    const deliveries = ctx.receiver.deliveries()
    const latency = deliveryLatencies(deliveries)
    const result = {
      scenario: name,
      seconds: Math.round((Date.now() - started) / 100) / 10,
      tried: stats.tried,
      acknowledged: stats.acknowledged,
      fiveHundreds: stats.fiveHundreds,
      networkErrors: stats.networkErrors,
      timeouts: stats.timeouts,
      gaveUp: stats.gaveUp,
      statuses: Object.fromEntries(stats.statuses),
      badSignatures: ctx.receiver.badSignatures(),
      deliveryP50: percentile(latency, 50),
      deliveryP95: percentile(latency, 95),
      requestP50: percentile(stats.latencies, 50),
      byStatus: Object.fromEntries([...stats.latenciesByStatus].map(([status, values]) =>
        [status, { p50: percentile(values, 50), p95: percentile(values, 95), max: percentile(values, 100) }]
      )),
      requestMax: percentile(stats.latencies, 100),
      ...figures,
      notes
    }
    result.passed = result.lost === 0 && result.duplicated === 0 && result.inversions === 0 &&
      result.missingInDatabase === 0 && result.unexpectedReplies === 0 && result.gaveUp === 0 &&
      result.badSignatures === 0 && result.unknownEvents === 0
    return result
  } finally {
    for (const instance of ctx.instances) await instance.kill("SIGTERM")
    await ctx.receiver.close().catch(() => {})
    await ctx.proxy.close()
  }
}

/**
 * The counters must be able to fail: the same accounting on a tampered copy of what the receiver got
 * (two replies removed, one conversation's events swapped, one reply delivered again under a new event
 * id) must find exactly that.
 */
const selfCheck = (pg, ctx, stats) => {
  const deliveries = ctx.receiver.deliveries().map((d) => ({ ...d }))
  const replies = deliveries.filter((d) => d.kind === "send_messages")
  const ackedConversations = new Set([...stats.acked.values()].filter((a) => !a.syncOnly).map((a) => a.conversationId))
  const singles = replies.filter((d) =>
    ackedConversations.has(d.conversationId) && deliveries.filter((x) => x.conversationId === d.conversationId).length === 1
  )
  const pair = [...new Set(deliveries.map((d) => d.conversationId))].find((c) =>
    new Set(deliveries.filter((d) => d.conversationId === c).map((d) => d.eventId)).size === 2
  )
  if (singles.length < 3 || pair === undefined) return "accounting self-check skipped (not enough conversations)"
  const dropped = new Set([singles[0].eventId, singles[1].eventId])
  let tampered = deliveries.filter((d) => !dropped.has(d.eventId))
  const [first, second] = tampered.filter((d) => d.conversationId === pair)
  tampered = tampered.map((d) => (d === first ? second : d === second ? first : d))
  tampered.push({ ...singles[2], eventId: "00000000-0000-4000-8000-000000000000", at: Date.now() })
  const figures = account({ pg, database: ctx.database, integrationId: ctx.integrationId, deliveries: tampered, acked: stats.acked })
  const ok = figures.lost === 2 && figures.inversions >= 1 && figures.duplicated >= 1
  if (!ok) throw new Error(`accounting self-check failed: ${JSON.stringify(figures)}`)
  return `accounting self-check: 2 replies dropped, 1 pair swapped, 1 reply resent → lost ${figures.lost}, inversions ${figures.inversions}, duplicated ${figures.duplicated} (as expected)`
}

const printResult = (r) => {
  log(`${r.passed ? "PASS" : "FAIL"} ${r.scenario} (${r.seconds} s)`)
  console.log(`  requests tried ${r.tried}, acknowledged ${r.acknowledged}, 5xx ${r.fiveHundreds}, network errors ${r.networkErrors}, time-outs ${r.timeouts}, gave up ${r.gaveUp}; statuses ${JSON.stringify(r.statuses)}`)
  console.log(`  expected replies ${r.expected}, events ${r.events} (${r.delivered} delivered, ${r.escalations} escalate), redeliveries ${r.redeliveries}`)
  console.log(`  lost ${r.lost}${r.lostExamples.length > 0 ? ` (e.g. ${r.lostExamples.join(", ")})` : ""}, duplicated ${r.duplicated}, inversions ${r.inversions}, missing in database ${r.missingInDatabase}, replies to syncOnly ${r.unexpectedReplies}, bad signatures ${r.badSignatures}`)
  console.log(`  delivery latency p50 ${r.deliveryP50} ms, p95 ${r.deliveryP95} ms; request p50 ${r.requestP50} ms, max ${r.requestMax} ms; drained in ${r.drainMs} ms (undelivered ${r.undelivered}, replies pending ${r.pendingReplies})`)
  console.log(`  request latency by status: ${Object.entries(r.byStatus).map(([status, l]) => `${status} p50 ${l.p50} ms, p95 ${l.p95} ms, max ${l.max} ms`).join("; ")}`)
  for (const note of r.notes) console.log(`  ${note}`)
}

const main = async () => {
  const selected = Object.keys(scenarios).filter((name) => only === undefined || only.includes(name))
  log(`building Parley (if needed)`)
  execFileSync(process.execPath, [join(root, "scripts", "ensure-build.mjs")], { stdio: "inherit" })
  const dir = mkdtempSync(join(tmpdir(), "parley-chaos-"))
  const pg = await startPostgres(dir, log)
  pg.root = dir
  let failed = false
  const cleanup = async () => {
    for (const instance of live) await instance.kill("SIGKILL")
    pg.stop()
  }
  const onSignal = async () => {
    await cleanup()
    pg.remove()
    process.exit(130)
  }
  process.on("SIGINT", onSignal)
  process.on("SIGTERM", onSignal)
  const results = []
  try {
    for (const name of selected) {
      try {
        const result = await runScenario(pg, name)
        results.push(result)
        printResult(result)
        if (!result.passed) failed = true
      } catch (error) {
        failed = true
        log(`ERROR in ${name}: ${error instanceof Error ? error.stack : error}`)
      }
    }
  } finally {
    await cleanup()
    if (failed || process.env.CHAOS_KEEP_LOGS) {
      const keep = mkdtempSync(join(tmpdir(), "parley-chaos-logs-"))
      cpSync(dir, keep, { recursive: true, filter: (src) => !src.includes("pgdata") })
      log(`logs kept in ${keep}`)
      for (const instance of [...live]) console.log(tail(instance.logFile))
    }
    pg.remove()
  }
  console.log("\nscenario        tried  acked  5xx  lost  dup  inv  missing  p50ms  drain_s  result")
  for (const r of results) {
    console.log(
      `${r.scenario.padEnd(15)} ${String(r.tried).padStart(5)}  ${String(r.acknowledged).padStart(5)}  ${String(r.fiveHundreds).padStart(3)}  ${String(r.lost).padStart(4)}  ${String(r.duplicated).padStart(3)}  ${String(r.inversions).padStart(3)}  ${String(r.missingInDatabase).padStart(7)}  ${String(r.deliveryP50).padStart(5)}  ${String(Math.round(r.drainMs / 100) / 10).padStart(7)}  ${r.passed ? "PASS" : "FAIL"}`
    )
  }
  if (process.env.CHAOS_JSON) {
    const { writeFileSync } = await import("node:fs")
    writeFileSync(process.env.CHAOS_JSON, JSON.stringify(results, null, 2))
  }
  process.exit(failed ? 1 : 0)
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
