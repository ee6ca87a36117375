// floor: what the stack Parley is built on costs before Parley does anything, measured in the same run
// as the things it is compared with — the part of the ingest ratio no change inside Parley's code removes.
// 1. One SQL statement (Parley's integration look-up), 8 at once on an 8-connection pool, CPU per
//    statement of the client process: node-postgres alone (the baseline's stack), @effect/sql-pg with
//    Parley's client options, and the same with the row decoded into Parley's model (bench/floor-statements.mjs).
// 2. One HTTP request that touches no database: Parley's GET /health/live (HttpApi, its middleware: the
//    edge, auth routing, access log, metrics, spans) against a plain node:http server answering the same
//    JSON, 8 connections, CPU per request of the server process.
import { execFile } from "node:child_process"
import { join } from "node:path"
import { promisify } from "node:util"
import { createTenant, repoRoot } from "../lib/parley.mjs"
import { cpuTimeMs, spawnLogged } from "../lib/proc.mjs"
import { ratio, round } from "../lib/stats.mjs"

const QUIET = { JOB_POLL_INTERVAL: "1 hour", JOB_METRICS_INTERVAL: "1 hour" }
const PLAIN_PORT = 8095

const PLAIN_SERVER = `require("node:http").createServer((req, res) => {
  const text = JSON.stringify({ status: "ok" })
  res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
  res.end(text)
}).listen(${PLAIN_PORT}, "127.0.0.1")`

/** CPU ms per request of `pid` under `amount` closed-loop GETs of `url` (after a warm-up of a fifth as many). */
const httpCost = async (driver, pid, url, amount) => {
  await driver.call("get", { url, connections: 8, amount: Math.round(amount / 5) })
  const before = cpuTimeMs(pid)
  const run = await driver.call("get", { url, connections: 8, amount })
  const cpuMs = cpuTimeMs(pid) - before
  return { perRequestMs: round(cpuMs / run.ok, 3), requestsPerSecond: round(run.ok / (run.elapsedMs / 1000), 0), p99Ms: run.p99Ms, non2xx: run.non2xx }
}

export default {
  name: "floor",
  description: "The cost of the stack itself: one SQL statement and one no-database HTTP request, against node-postgres and node:http",
  run: async (ctx) => {
    const db = await ctx.database("floor")
    const parley = await ctx.parley({ databaseUrl: db.url, env: QUIET, label: "parley-floor" })
    const receiver = await ctx.receiver("ok")
    const tenant = await createTenant(parley.url, { name: "floor", webhookUrl: receiver.url })
    const driver = await ctx.driver()

    // 2 first, while Parley runs.
    const amount = ctx.quick ? 8_000 : 30_000
    ctx.say("  HTTP: Parley's /health/live and a plain node:http server, in turns")
    const plain = spawnLogged(process.execPath, ["-e", PLAIN_SERVER], { logFile: join(ctx.logDir, "floor-plain.log"), cwd: repoRoot })
    ctx.defer(() => plain.kill())
    await new Promise((resolve) => setTimeout(resolve, 500))
    const parleyHttp = []
    const plainHttp = []
    for (let turn = 0; turn < 2; turn++) {
      parleyHttp.push(await httpCost(driver, parley.pid, `${parley.url}/health/live`, amount / 2))
      plainHttp.push(await httpCost(driver, plain.pid, `http://127.0.0.1:${PLAIN_PORT}/`, amount / 2))
    }
    plain.kill()
    await parley.stop()

    // 1. With Parley stopped: the statements' process has the machine (bar PostgreSQL).
    ctx.say("  SQL: one statement through node-postgres, @effect/sql-pg, and decoded into Parley's model")
    const { stdout } = await promisify(execFile)(process.execPath, [
      join(repoRoot, "bench", "floor-statements.mjs"),
      db.url,
      tenant.integrationId,
      tenant.workspaceId,
      ctx.quick ? "600" : "1500"
    ], { cwd: repoRoot, maxBuffer: 1 << 20 })
    const statements = JSON.parse(stdout.trim().split("\n").pop())
    const us = statements.cpuUsPerStatement

    const best = (runs) => runs.reduce((a, b) => (a.perRequestMs <= b.perRequestMs ? a : b))
    const parleyBest = best(parleyHttp)
    const plainBest = best(plainHttp)
    return {
      figures: { statements, http: { parley: parleyHttp, plain: plainHttp } },
      rows: [
        {
          work: `one SQL statement, 8 at once: client CPU per statement (µs; ${statements.statementsPerWay} each, median of 3 turns)`,
          parley: `@effect/sql-pg: ${us.effect} µs; decoded into the model: ${us.decoded} µs`,
          baseline: `node-postgres: ${us.pg} µs`,
          ratio: ratio(us.effect, us.pg)
        },
        {
          work: "one HTTP request, no database (GET /health/live), 8 connections: server CPU per request (best of 2 turns)",
          parley: `${parleyBest.perRequestMs} ms (${parleyBest.requestsPerSecond} req/s, p99 ${parleyBest.p99Ms} ms)`,
          baseline: `node:http: ${plainBest.perRequestMs} ms (${plainBest.requestsPerSecond} req/s)`,
          ratio: ratio(parleyBest.perRequestMs, plainBest.perRequestMs)
        }
      ],
      targets: {}
    }
  }
}
