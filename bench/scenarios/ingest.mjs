// ingest: message-received with syncOnly on PostgreSQL, 8 connections, as fast as it answers, taking
// turns with the same load against the baseline server (Parley's SQL in plain node:http + pg) and the
// bare-stack floor (the same SQL through Effect's HttpApi and @effect/sql-pg, nothing else); then
// pgbench on the same transaction. Then Parley at half its measured maximum (open loop, evenly spaced; and autocannon's
// overallRate for comparison), and the client-abort probe on PostgreSQL (the embedded scenario has the
// same probe on PGlite).
import { execFile } from "node:child_process"
import { createHash } from "node:crypto"
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { startBaseline } from "../lib/baseline.mjs"
import { adminUrl, backendPids } from "../lib/db.mjs"
import { failures, okPerSecond, statusesOf } from "../lib/harness.mjs"
import { QUESTION } from "../lib/messages.mjs"
import { createTenant, repoRoot } from "../lib/parley.mjs"
import { cpuTimeMs, cpuTimeOfAll } from "../lib/proc.mjs"
import { median, ratio, round, summarize } from "../lib/stats.mjs"
import { target } from "../lib/targets.mjs"

const CONNECTIONS = 8
const CONVERSATIONS = 1000

export const syncSpec = (prefix) => ({ prefix, syncOnly: true, conversations: CONVERSATIONS, text: QUESTION })

/** The figures of one server's closed-loop runs, taken together. */
const summarizeRuns = (runs, { database, backends }) => {
  const ok = runs.reduce((sum, r) => sum + okPerSecond(r).ok, 0)
  const elapsedMs = runs.reduce((sum, r) => sum + r.elapsedMs, 0)
  const serverCpuMs = runs.reduce((sum, r) => sum + r.serverCpuMs, 0)
  const databaseCpuMs = runs.reduce((sum, r) => sum + r.databaseCpuMs, 0)
  const statuses = {}
  for (const r of runs) for (const [status, n] of Object.entries(r.statuses)) statuses[status] = (statuses[status] ?? 0) + n
  return {
    requestsPerSecond: round(ok / (elapsedMs / 1000), 1),
    perRoundRequestsPerSecond: runs.map((r) => round(okPerSecond(r).perSecond, 1)),
    latencyMs: summarize(runs.flatMap((r) => r.samples)),
    ok,
    failures: failures(statuses, {
      errors: runs.reduce((sum, r) => sum + r.errors, 0),
      timeouts: runs.reduce((sum, r) => sum + r.timeouts, 0)
    }),
    seconds: round(elapsedMs / 1000),
    serverCpuMsPerRequest: ok === 0 ? null : round(serverCpuMs / ok, 3),
    serverCpuCores: round(serverCpuMs / elapsedMs, 2),
    databaseCpuMsPerRequest: ok === 0 || database === undefined ? null : round(databaseCpuMs / ok, 3),
    databaseCpuCores: database === undefined ? null : round(databaseCpuMs / elapsedMs, 2),
    databaseBackends: backends
  }
}

/**
 * Closed-loop load, 8 connections, on each of `servers` ({ url, pid }) after a warm-up: req/s, latency
 * from raw samples, CPU per request of the server process and of the database's backends. With several
 * servers and `rounds` > 1 the servers take turns (A B A B …), so that a noisy neighbour on a shared
 * machine weighs on all of them alike. Runs are counted (autocannon `amount`), not timed: a timed
 * autocannon run ends by destroying the connections of the requests still in flight, and those client
 * aborts disturb what follows (on PGlite they stall the next requests for seconds). The warm-up
 * (`warmAmount` requests) estimates each server's rate, so that its runs last about `durationS` in all.
 * `specFor(prefix)` gives the messages (default: syncOnly, spread over 1,000 conversations).
 */
export const measureMax = async ({
  driver,
  servers,
  tenant,
  prefix,
  warmAmount,
  durationS,
  rounds = 1,
  database,
  specFor = syncSpec
}) => {
  const base = (url) => ({ targets: [url], token: tenant.token, integrationId: tenant.integrationId, connections: CONNECTIONS })
  const amounts = []
  for (const [k, server] of servers.entries()) {
    const warm = await driver.call("autocannon", { ...base(server.url), spec: specFor(`${prefix}${k}w`), amount: warmAmount })
    amounts.push(Math.max(CONNECTIONS * 10, Math.round((okPerSecond(warm).perSecond * durationS) / rounds)))
  }
  const pgPids = database === undefined ? [] : await backendPids(database)
  const runs = servers.map(() => [])
  for (let r = 0; r < rounds; r++) {
    for (const [k, server] of servers.entries()) {
      const before = { server: cpuTimeMs(server.pid), db: cpuTimeOfAll(pgPids) }
      const run = await driver.call("autocannon", { ...base(server.url), spec: specFor(`${prefix}${k}r${r}`), amount: amounts[k] })
      runs[k].push({ ...run, serverCpuMs: cpuTimeMs(server.pid) - before.server, databaseCpuMs: cpuTimeOfAll(pgPids) - before.db })
    }
  }
  return runs.map((list) => summarizeRuns(list, { database, backends: pgPids.length }))
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
      connections: paced.connections,
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

const pgbenchConnection = (database) => {
  const url = new URL(adminUrl)
  return ["-h", url.hostname, "-p", url.port || "5432", "-U", decodeURIComponent(url.username || "postgres"), database]
}

/**
 * pgbench running `script` (a file in bench/) with `variables`, 8 clients, `-M prepared` (Parley's
 * protocol): tps and the latency of every transaction (from its -l log).
 */
export const runPgbenchScript = async ({ database, script, variables, durationS, clients = 8 }) => {
  const pgbench = process.env.PGBENCH ?? "pgbench"
  const logDir = mkdtempSync(join(tmpdir(), "parley-bench-pgbench-"))
  const args = [
    "-n", "-M", "prepared", "-c", String(clients), "-j", "2", "-T", String(durationS), "-f", join(repoRoot, "bench", script),
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

/** pgbench on message-received's transaction (message-received.pgbench.sql). */
export const runPgbench = ({ database, tenant, tokenHash, durationS, clients = 8 }) =>
  runPgbenchScript({
    database,
    script: "message-received.pgbench.sql",
    durationS,
    clients,
    variables: {
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
  })

export default {
  name: "ingest",
  description: "message-received (syncOnly) on PostgreSQL vs the plain node:http + pg baseline and pgbench",
  run: async (ctx) => {
    const warmAmount = ctx.quick ? 200 : 1000
    const durationS = ctx.quick ? 3 : 15
    const db = await ctx.database("ingest")
    const driver = ctx.driver()

    const parley = await ctx.parley({ databaseUrl: db.url, label: "parley-ingest" })
    const tenant = await createTenant(parley.url, { name: "ingest", webhookUrl: "http://127.0.0.1:9/unused" })
    const baseline = await startBaseline({ databaseUrl: db.url, logDir: ctx.logDir })
    ctx.defer(() => baseline.stop())
    const floor = await startBaseline({ databaseUrl: db.url, logDir: ctx.logDir, label: "floor", script: "floor-server.mjs" })
    ctx.defer(() => floor.stop())
    const rounds = ctx.quick ? 1 : 3
    ctx.say(`Parley, the baseline and the bare-stack floor in turns (${rounds} rounds): closed loop, 8 connections`)
    const [max, baselineMax, floorMax] = await measureMax({
      driver,
      servers: [parley, baseline, floor],
      tenant,
      prefix: "i",
      warmAmount,
      durationS,
      rounds,
      database: db.name
    })
    await baseline.stop()
    await floor.stop()
    const halfRate = Math.max(1, Math.floor(max.requestsPerSecond / 2))
    ctx.say(`Parley: ${max.requestsPerSecond} req/s, baseline ${baselineMax.requestsPerSecond} req/s; Parley at half its max, ${halfRate} req/s`)
    const half = await measureAtRate({ driver, url: parley.url, tenant, prefix: "h", rate: halfRate, durationS })
    ctx.say("Parley: client-abort probe on PostgreSQL")
    const abort = await measureAbortStall({ driver, url: parley.url, tenant, prefix: "a", rounds: ctx.quick ? 4 : 8 })
    await parley.stop()

    ctx.say("pgbench: 8 clients")
    const tokenHash = createHash("sha256").update(tenant.token, "utf8").digest("hex")
    await runPgbench({ database: db.name, tenant, tokenHash, durationS: ctx.quick ? 1 : 3 })
    const pgbench = await runPgbench({ database: db.name, tenant, tokenHash, durationS })

    const vsBaseline = ratio(max.requestsPerSecond, baselineMax.requestsPerSecond)
    const perRound = max.perRoundRequestsPerSecond.map((rps, r) => ratio(rps, baselineMax.perRoundRequestsPerSecond[r]))
    const vsPgbench = ratio(max.requestsPerSecond, pgbench.tps)
    const p99Half = half.openLoop.latencyMs.p99
    return {
      figures: { rounds, parley: max, baseline: baselineMax, floor: floorMax, ratioPerRound: perRound, halfLoad: half, abortOnPostgres: abort, pgbench },
      rows: [
        {
          work: `message-received, syncOnly, 8 connections (PostgreSQL; ${rounds} turn${rounds > 1 ? "s" : ""} each, ratio per turn ${perRound.join(", ")})`,
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
          work: "  the bare-stack floor (HttpApi + @effect/sql-pg, the same SQL, nothing else): req/s; server CPU per request (ms)",
          parley: `Parley ÷ floor: ${ratio(max.serverCpuMsPerRequest, floorMax.serverCpuMsPerRequest)}× the CPU`,
          baseline: `floor: ${floorMax.requestsPerSecond} req/s, ${floorMax.serverCpuMsPerRequest} ms (${ratio(floorMax.serverCpuMsPerRequest, baselineMax.serverCpuMsPerRequest)}× node:http + pg)`,
          ratio: ratio(max.serverCpuMsPerRequest, floorMax.serverCpuMsPerRequest)
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
