// `npm run bench [-- --quick] [-- --only <scenario>[,<scenario>]] [-- --skip <scenario>]`
//
// Builds Parley if needed, then runs each scenario against fresh PostgreSQL databases
// (parley_bench_<run>_<scenario>, dropped at the end) and Parley processes started for it, drives load from
// a separate process, prints a Markdown table with ratios against baselines measured in the same run,
// and writes the results (bench/results.json for a complete run; bench/results-partial.json otherwise).
import { execFileSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { mkdtempSync, writeFileSync } from "node:fs"
import { cpus, loadavg, tmpdir, totalmem } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { dropAll, serverVersion } from "./lib/db.mjs"
import { makeContext } from "./lib/harness.mjs"
import { repoRoot, setRunEnv } from "./lib/parley.mjs"
import { killAll, nowMs } from "./lib/proc.mjs"
import { table, targetList } from "./lib/report.mjs"
import { round } from "./lib/stats.mjs"
import deliveries from "./scenarios/deliveries.mjs"
import debounce from "./scenarios/debounce.mjs"
import embedded from "./scenarios/embedded.mjs"
import fairness from "./scenarios/fairness.mjs"
import floor from "./scenarios/floor.mjs"
import growth from "./scenarios/growth.mjs"
import ingest from "./scenarios/ingest.mjs"
import longConversation from "./scenarios/long-conversation.mjs"
import pipeline from "./scenarios/pipeline.mjs"
import scaleOut from "./scenarios/scale-out.mjs"
import sql from "./scenarios/sql.mjs"

/** In running order. `full: true` ones are left out of --quick unless named with --only. */
const scenarios = [sql, floor, ingest, embedded, deliveries, pipeline, debounce, fairness, scaleOut, longConversation, growth]

const { values: flags } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    only: { type: "string", multiple: true },
    skip: { type: "string", multiple: true },
    out: { type: "string" },
    "parley-env": { type: "string", multiple: true },
    help: { type: "boolean", default: false }
  }
})

if (flags.help) {
  process.stdout.write([
    "npm run bench -- [--quick] [--only a,b] [--skip a,b] [--out file.json] [--parley-env KEY=VALUE ...]",
    "scenarios: " + scenarios.map((s) => s.name + (s.full ? " (not in --quick)" : "")).join(", "),
    ""
  ].join("\n"))
  process.exit(0)
}

const names = (list) => new Set((list ?? []).flatMap((s) => s.split(",")).map((s) => s.trim()).filter(Boolean))
const only = names(flags.only)
const skip = names(flags.skip)
for (const name of [...only, ...skip]) {
  if (!scenarios.some((s) => s.name === name)) throw new Error(`unknown scenario ${name}`)
}
const selected = scenarios.filter((s) =>
  only.size > 0 ? only.has(s.name) : !skip.has(s.name) && !(flags.quick && s.full === true)
)
const parleyEnv = Object.fromEntries((flags["parley-env"] ?? []).map((pair) => {
  const at = pair.indexOf("=")
  if (at <= 0) throw new Error(`--parley-env wants KEY=VALUE, got ${pair}`)
  return [pair.slice(0, at), pair.slice(at + 1)]
}))
setRunEnv(parleyEnv)
const complete = !flags.quick && only.size === 0 && skip.size === 0
const outFile = flags.out ?? join(repoRoot, "bench", complete ? "results.json" : "results-partial.json")

const say = (text) => process.stdout.write(`  ${text}\n`)

let interrupted = false
const abort = async (signal) => {
  if (interrupted) return
  interrupted = true
  process.stdout.write(`\n${signal}: stopping every process this run started and dropping its databases\n`)
  killAll()
  await dropAll()
  process.exit(130)
}
process.on("SIGINT", () => void abort("SIGINT"))
process.on("SIGTERM", () => void abort("SIGTERM"))

const git = (...args) => {
  try {
    return execFileSync("git", args, { cwd: repoRoot, encoding: "utf8" }).trim()
  } catch {
    return null
  }
}

const main = async () => {
  execFileSync(process.execPath, [join(repoRoot, "scripts", "ensure-build.mjs")], { stdio: "inherit", cwd: repoRoot })
  // The code measured is the code at start (a commit made during a long run must not be credited).
  const commit = git("rev-parse", "HEAD")
  const dirty = (git("status", "--porcelain", "--untracked-files=no", "--", "src", "bench") ?? "") !== ""
  const runId = randomBytes(3).toString("hex")
  const logDir = mkdtempSync(join(tmpdir(), `parley-bench-${runId}-`))
  const machine = {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? null,
    memoryGiB: round(totalmem() / 2 ** 30, 1),
    node: process.version,
    postgres: await serverVersion(),
    loadAverageAtStart: loadavg().map((x) => round(x))
  }
  process.stdout.write(`Parley benchmark ${runId}${flags.quick ? " (quick)" : ""}: ${selected.map((s) => s.name).join(", ")}\n`)
  process.stdout.write(`machine: ${machine.cpus} CPUs, Node ${machine.node}, PostgreSQL ${machine.postgres}, load ${machine.loadAverageAtStart.join(" ")}\n`)
  process.stdout.write(`logs: ${logDir}\n`)

  const results = {}
  let targets = {}
  for (const scenario of selected) {
    process.stdout.write(`\n== ${scenario.name}: ${scenario.description}\n`)
    const ctx = makeContext({ quick: flags.quick, runId, logDir, say })
    const started = nowMs()
    try {
      const result = await scenario.run(ctx)
      results[scenario.name] = { ...result, seconds: round((nowMs() - started) / 1000, 1), loadAverageAfter: loadavg().map((x) => round(x)) }
      targets = { ...targets, ...(result.targets ?? {}) }
    } catch (error) {
      say(`FAILED: ${error.stack ?? error}`)
      results[scenario.name] = { error: String(error.message ?? error), seconds: round((nowMs() - started) / 1000, 1) }
    } finally {
      await ctx.cleanup()
    }
    say(`(${results[scenario.name].seconds} s)`)
  }
  await dropAll()

  const output = {
    date: new Date().toISOString(),
    commit,
    uncommittedChangesInSrcOrBench: dirty,
    quick: flags.quick,
    scenariosRun: selected.map((s) => s.name),
    parleyEnv,
    machine: { ...machine, loadAverageAtEnd: loadavg().map((x) => round(x)) },
    targets,
    scenarios: Object.fromEntries(Object.entries(results).map(([name, r]) => [name, r.error !== undefined ? r : { seconds: r.seconds, loadAverageAfter: r.loadAverageAfter, ...r.figures }]))
  }
  writeFileSync(outFile, JSON.stringify(output, null, 2) + "\n")

  process.stdout.write(`\n${table(results, targets)}\n\nTargets:\n${targetList(targets)}\n`)
  process.stdout.write(`\nresults: ${outFile}\nlogs: ${logDir}\n`)
  const failed = Object.values(results).filter((r) => r.error !== undefined).length
  process.exitCode = failed > 0 ? 1 : 0
}

main().catch(async (error) => {
  process.stderr.write(`${error.stack ?? error}\n`)
  killAll()
  await dropAll()
  process.exit(1)
})
