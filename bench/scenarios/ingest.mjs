// ingest: message-received with syncOnly on PostgreSQL, 8 connections, as fast as it answers. The same
// load against the baseline server (Parley's SQL in plain node:http + pg), and pgbench on the same
// transaction. Then Parley at half its measured maximum (open loop, evenly spaced; and autocannon's
// overallRate for comparison), and the client-abort probe on PostgreSQL (the embedded scenario has the
// same probe on PGlite).
import { execFile } from "node:child_process"
import { createHash } from "node:crypto"
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { adminUrl, backendPids } from "../lib/db.mjs"
import { failures, okPerSecond, statusesOf } from "../lib/harness.mjs"
import { QUESTION } from "../lib/messages.mjs"
import { createTenant, repoRoot } from "../lib/parley.mjs"
import { cpuTimeMs, cpuTimeOfAll, freePort, sleep, spawnLogged, stopChild } from "../lib/proc.mjs"
import { median, ratio, round, summarize } from "../lib/stats.mjs"
import { target } from "../lib/targets.mjs"

const CONNECTIONS = 8
const CONVERSATIONS = 1000
const POOL_SIZE = 10

export const syncSpec = (prefix) => ({ prefix, syncOnly: true, conversations: CONVERSATIONS, text: QUESTION })

/**
 * Closed-loop load on `url` after a warm-up: req/s, latency from raw samples, CPU per request of the
 * server process and of the database's backends. Runs are counted (autocannon `amount`), not timed: a
 * timed autocannon run ends by destroying the connections of the requests still in flight, and those
 * client aborts disturb what follows (on PGlite they stall the next requests for seconds). The warm-up
 * (`warmAmount` requests) also estimates the rate, so that the measured run lasts about `durationS`.
 * `specFor(prefix)` gives the messages (default: syncOnly, spread over 1,000 conversations).
 */
export const measureMax = async ({ driver, url, tenant, prefix, warmAmount, durationS, serverPid, database, specFor = syncSpec }) => {
  const base = { targets: [url], token: tenant.token, integrationId: tenant.integrationId, connections: CONNECTIONS }
  const warm = await driver.call("autocannon", { ...base, spec: specFor(`${prefix}w`), amount: warmAmount })
  const amount = Math.max(CONNECTIONS * 10, Math.round(okPerSecond(warm).perSecond * durationS))
  const pgPids = database === undefined ? [] : await backendPids(database)
  const cpuBefore = { server: cpuTimeMs(serverPid), db: cpuTimeOfAll(pgPids) }
  const run = await driver.call("autocannon", { ...base, spec: specFor(prefix), amount })
  const cpuAfter = { server: cpuTimeMs(serverPid), db: cpuTimeOfAll(pgPids) }
  const { ok, perSecond } = okPerSecond(run)
  return {
    requestsPerSecond: round(perSecond, 1),
    latencyMs: summarize(run.samples),
    requests: amount,
    ok,
    failures: failures(run.statuses, run),
    seconds: round(run.elapsedMs / 1000),
    serverCpuMsPerRequest: ok === 0 ? null : round((cpuAfter.server - cpuBefore.server) / ok, 3),
    serverCpuCores: round((cpuAfter.server - cpuBefore.server) / run.elapsedMs, 2),
    databaseCpuMsPerRequest: ok === 0 || database === undefined ? null : round((cpuAfter.db - cpuBefore.db) / ok, 3),
    databaseCpuCores: database === undefined ? null : round((cpuAfter.db - cpuBefore.db) / run.elapsedMs, 2),
    databaseBackends: pgPids.length
  }
}

/** p99 at `rate` req/s: open loop (evenly spaced) and autocannon's overallRate (a burst each second). */
export const measureAtRate = async ({ driver, url, tenant, prefix, rate, durationS }) => {
  const base = { token: tenant.token, integrationId: tenant.integrationId }
  const paced = await driver.call("paced", {
    ...base,
    target: url,
    spec: syncSpec(`${prefix}p`),
    rate,
    count: Math.max(1, Math.round(rate * durationS)),
    maxSockets: CONNECTIONS
  })
  const pacedOk = paced.records.filter((r) => r.status === 200)
  const burst = await driver.call("autocannon", {
    ...base,
    targets: [url],
    connections: CONNECTIONS,
    spec: syncSpec(`${prefix}r`),
    amount: Math.max(1, Math.round(rate * durationS)),
    overallRate: rate
  })
  return {
    rate,
    openLoop: {
      latencyMs: summarize(paced.records.map((r) => r.latencyMs)),
      ok: pacedOk.length,
      failures: failures(statusesOf(paced.records))
    },
    autocannonOverallRate: {
      latencyMs: summarize(burst.samples),
      requestsPerSecond: round(okPerSecond(burst).perSecond, 1),
      failures: failures(burst.statuses, burst)
    }
  }
}

/** Where in a request the client hangs up, as fractions of the undisturbed latency. */
const ABORT_POINTS = [0.2, 0.4, 0.6, 0.8]

/**
 * The stall after a client disconnects mid-request: each round sends one request whose client destroys
 * the socket at a point of the request (a fraction of the undisturbed latency, cycling through
 * ABORT_POINTS, since only an abort that lands while a query runs may stall), then one normal request
 * whose latency is the figure.
 */
export const measureAbortStall = async ({ driver, url, tenant, prefix, rounds }) => {
  const base = { target: url, token: tenant.token, integrationId: tenant.integrationId }
  const calibration = await driver.call("sequential", { ...base, spec: syncSpec(`${prefix}c`), count: 10 })
  const undisturbed = median(calibration.latencies)
  const results = []
  for (let round_ = 0; round_ < rounds; round_++) {
    const abortAfterMs = Math.max(1, Math.round(undisturbed * ABORT_POINTS[round_ % ABORT_POINTS.length]))
    const probe = await driver.call("abortProbe", { ...base, spec: syncSpec(`${prefix}${round_}`), rounds: 1, aborts: 1, abortAfterMs })
    results.push({ abortAfterMs, ...probe.rounds[0] })
  }
  const after = results.map((r) => r.afterMs)
  return {
    undisturbedMedianMs: round(undisturbed),
    rounds: results.map((r) => ({ ...r, beforeMs: round(r.beforeMs), afterMs: round(r.afterMs) })),
    nextRequestMaxMs: round(Math.max(...after)),
    nextRequestMedianMs: round(median(after))
  }
}

const startBaseline = async ({ databaseUrl, logDir }) => {
  const port = await freePort()
  const child = spawnLogged(process.execPath, [join(repoRoot, "bench", "baseline-server.mjs")], {
    env: { PATH: process.env.PATH, DATABASE_URL: databaseUrl, PORT: String(port), DATABASE_POOL_SIZE: String(POOL_SIZE) },
    cwd: repoRoot,
    logFile: join(logDir, "baseline.log")
  })
  const url = `http://127.0.0.1:${port}`
  for (let i = 0; i < 200; i++) {
    try {
      if ((await fetch(`${url}/health/ready`)).ok) return { url, pid: child.pid, stop: () => stopChild(child) }
    } catch {
      await sleep(50)
    }
  }
  await stopChild(child, { signal: "SIGKILL" })
  throw new Error("baseline server did not start; see baseline.log")
}

const pgbenchConnection = (database) => {
  const url = new URL(adminUrl)
  return ["-h", url.hostname, "-p", url.port || "5432", "-U", decodeURIComponent(url.username || "postgres"), database]
}

/** pgbench on the same transaction: tps and the latency of every transaction (from its -l log). */
export const runPgbench = async ({ database, tenant, tokenHash, durationS, clients = 8 }) => {
  const pgbench = process.env.PGBENCH ?? "pgbench"
  const script = join(repoRoot, "bench", "message-received.pgbench.sql")
  const logDir = mkdtempSync(join(tmpdir(), "parley-bench-pgbench-"))
  const variables = {
    token_hash: tokenHash,
    workspace_id: tenant.workspaceId,
    integration_id: tenant.integrationId,
    channel: "api",
    status: "open",
    role: "human",
    type: "default",
    text: QUESTION,
    attachments: "[]",
    sync_only: "true",
    is_suggestion: "false"
  }
  const args = [
    "-n", "-M", "prepared", "-c", String(clients), "-j", "2", "-T", String(durationS), "-f", script,
    ...Object.entries(variables).flatMap(([name, value]) => ["-D", `${name}=${value}`]),
    "-l", "--log-prefix", join(logDir, "tx"),
    ...pgbenchConnection(database)
  ]
  try {
    const { stdout } = await promisify(execFile)(pgbench, args, { cwd: logDir, maxBuffer: 16 * 1024 * 1024 })
    const tps = Number(/tps = ([\d.]+) \(without initial connection time\)/.exec(stdout)?.[1] ?? NaN)
    const failed = Number(/number of failed transactions: (\d+)/.exec(stdout)?.[1] ?? 0)
    // Log lines: client_id transaction_no latency_us script_no epoch_s epoch_us
    const samples = readdirSync(logDir).flatMap((file) =>
      readFileSync(join(logDir, file), "utf8").split("\n").filter((line) => line !== "").map((line) =>
        Number(line.split(" ")[2]) / 1000
      )
    )
    return { tps: round(tps, 1), latencyMs: summarize(samples), transactions: samples.length, failed }
  } finally {
    rmSync(logDir, { recursive: true, force: true })
  }
}

export default {
  name: "ingest",
  description: "message-received (syncOnly) on PostgreSQL vs the plain node:http + pg baseline and pgbench",
  run: async (ctx) => {
    const warmAmount = ctx.quick ? 200 : 1000
    const durationS = ctx.quick ? 3 : 15
    const db = await ctx.database("ingest")
    const driver = ctx.driver()

    ctx.say("Parley: closed loop, 8 connections")
    const parley = await ctx.parley({ databaseUrl: db.url, label: "parley-ingest" })
    const tenant = await createTenant(parley.url, { name: "ingest", webhookUrl: "http://127.0.0.1:9/unused" })
    const max = await measureMax({ driver, url: parley.url, tenant, prefix: "i", warmAmount, durationS, serverPid: parley.pid, database: db.name })
    const halfRate = Math.max(1, Math.floor(max.requestsPerSecond / 2))
    ctx.say(`Parley: ${max.requestsPerSecond} req/s; now at half of it, ${halfRate} req/s`)
    const half = await measureAtRate({ driver, url: parley.url, tenant, prefix: "h", rate: halfRate, durationS })
    ctx.say("Parley: client-abort probe on PostgreSQL")
    const abort = await measureAbortStall({ driver, url: parley.url, tenant, prefix: "a", rounds: ctx.quick ? 4 : 8 })
    await parley.stop()

    ctx.say("Baseline server: closed loop, 8 connections")
    const baseline = await startBaseline({ databaseUrl: db.url, logDir: ctx.logDir })
    ctx.defer(() => baseline.stop())
    const baselineMax = await measureMax({ driver, url: baseline.url, tenant, prefix: "b", warmAmount, durationS, serverPid: baseline.pid, database: db.name })
    await baseline.stop()

    ctx.say("pgbench: 8 clients")
    const tokenHash = createHash("sha256").update(tenant.token, "utf8").digest("hex")
    await runPgbench({ database: db.name, tenant, tokenHash, durationS: ctx.quick ? 1 : 3 })
    const pgbench = await runPgbench({ database: db.name, tenant, tokenHash, durationS })

    const vsBaseline = ratio(max.requestsPerSecond, baselineMax.requestsPerSecond)
    const vsPgbench = ratio(max.requestsPerSecond, pgbench.tps)
    const p99Half = half.openLoop.latencyMs.p99
    return {
      figures: { parley: max, halfLoad: half, abortOnPostgres: abort, baseline: baselineMax, pgbench },
      rows: [
        {
          work: "message-received, syncOnly, 8 connections (PostgreSQL)",
          parley: `${max.requestsPerSecond} req/s, p50 ${max.latencyMs.p50} ms, p99 ${max.latencyMs.p99} ms`,
          baseline: `node:http + pg: ${baselineMax.requestsPerSecond} req/s, p50 ${baselineMax.latencyMs.p50} ms, p99 ${baselineMax.latencyMs.p99} ms`,
          ratio: vsBaseline,
          target: "ingest_throughput_vs_baseline"
        },
        {
          work: "the same transaction in pgbench, 8 clients",
          parley: "",
          baseline: `${pgbench.tps} tps, p50 ${pgbench.latencyMs.p50} ms, p99 ${pgbench.latencyMs.p99} ms`,
          ratio: vsPgbench
        },
        {
          work: "CPU per request (ms): server process / PostgreSQL backends",
          parley: `${max.serverCpuMsPerRequest} / ${max.databaseCpuMsPerRequest} (${max.serverCpuCores} / ${max.databaseCpuCores} cores)`,
          baseline: `${baselineMax.serverCpuMsPerRequest} / ${baselineMax.databaseCpuMsPerRequest} (${baselineMax.serverCpuCores} / ${baselineMax.databaseCpuCores} cores)`,
          ratio: ratio(max.serverCpuMsPerRequest, baselineMax.serverCpuMsPerRequest)
        },
        {
          work: `p99 at half the max load (${halfRate} req/s, open loop, evenly spaced, ≤ 8 connections)`,
          parley: `p50 ${half.openLoop.latencyMs.p50} ms, p99 ${p99Half} ms`,
          baseline: "",
          ratio: null,
          target: "ingest_p99_at_half_load_ms"
        },
        {
          work: `  same rate with autocannon overallRate (each second's budget sent in a burst)`,
          parley: `p50 ${half.autocannonOverallRate.latencyMs.p50} ms, p99 ${half.autocannonOverallRate.latencyMs.p99} ms`,
          baseline: "",
          ratio: null
        },
        {
          work: "next request after client aborts (PostgreSQL)",
          parley: `max ${abort.nextRequestMaxMs} ms, median ${abort.nextRequestMedianMs} ms (undisturbed ${abort.undisturbedMedianMs} ms)`,
          baseline: "",
          ratio: null
        }
      ],
      targets: {
        ingest_throughput_vs_baseline: target(vsBaseline, ">=", 0.8, { note: "Parley req/s ÷ baseline req/s, same run" }),
        ingest_p99_at_half_load_ms: target(p99Half, "<", 25, { unit: "ms" })
      }
    }
  }
}
