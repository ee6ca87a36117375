// embedded: Parley on its embedded database (PGlite: no DATABASE_URL, a fresh PARLEY_DATA_DIR). Idle RSS
// after start-up, message-received (syncOnly) at 8 connections, and the client-abort stall: requests
// whose client destroys the socket mid-request, each round followed by a normal request whose latency
// is the figure (5,033 ms on PGlite against 77 ms on PostgreSQL).
import { rmSync } from "node:fs"
import { createTenant } from "../lib/parley.mjs"
import { sleep } from "../lib/proc.mjs"
import { round } from "../lib/stats.mjs"
import { target } from "../lib/targets.mjs"
import { measureAbortStall, measureMax } from "./ingest.mjs"

/** The idle figure is RSS this long after /health/ready, sampled every second on the way. */
const settleSeconds = (quick) => (quick ? 5 : 10)

export default {
  name: "embedded",
  description: "the embedded database (PGlite): idle RSS, message-received at 8 connections, client-abort stall",
  run: async (ctx) => {
    const driver = ctx.driver()
    const parley = await ctx.parley({ label: "parley-pglite" })
    ctx.defer(() => rmSync(parley.dataDir, { recursive: true, force: true }))
    // Start-up allocations settle (and a GC may run) before the idle figure is read.
    const samples = []
    for (let second = 0; second < settleSeconds(ctx.quick); second++) {
      await sleep(1000)
      samples.push(round(parley.memory().rssMiB))
    }
    const idle = parley.memory()
    ctx.say(`ready in ${round(parley.readyMs)} ms; idle RSS ${round(idle.rssMiB)} MiB (each second: ${samples.join(", ")})`)

    const tenant = await createTenant(parley.url, { name: "embedded", webhookUrl: "http://127.0.0.1:9/unused" })
    const [max] = await measureMax({
      driver,
      servers: [parley],
      tenant,
      prefix: "e",
      warmAmount: ctx.quick ? 150 : 600,
      durationS: ctx.quick ? 3 : 15
    })
    ctx.say(`${max.requestsPerSecond} req/s, p99 ${max.latencyMs.p99} ms; client-abort probe`)
    const abort = await measureAbortStall({ driver, url: parley.url, tenant, prefix: "ea", rounds: ctx.quick ? 4 : 8 })
    const afterLoad = parley.memory()
    await parley.stop()

    return {
      figures: {
        readyMs: round(parley.readyMs),
        idleMemory: { rssMiB: round(idle.rssMiB), peakRssMiB: round(idle.peakRssMiB), rssEachSecondMiB: samples },
        memoryAfterLoad: { rssMiB: round(afterLoad.rssMiB), peakRssMiB: round(afterLoad.peakRssMiB) },
        ingest: max,
        abort
      },
      rows: [
        {
          work: "message-received, syncOnly, 8 connections (PGlite)",
          parley: `${max.requestsPerSecond} req/s, p50 ${max.latencyMs.p50} ms, p99 ${max.latencyMs.p99} ms${max.failures === "" ? "" : `; ${max.failures}`}`,
          baseline: "",
          ratio: null,
          target: "embedded_p99_ms"
        },
        {
          work: "next request after client aborts (PGlite)",
          parley: `max ${abort.nextRequestMaxMs} ms, median ${abort.nextRequestMedianMs} ms (undisturbed ${abort.undisturbedMedianMs} ms)`,
          baseline: "",
          ratio: null,
          target: "embedded_abort_stall_ms"
        },
        {
          work: `idle RSS ${samples.length} s after ready (PGlite; ready in ${round(parley.readyMs / 1000, 1)} s)`,
          parley: `${round(idle.rssMiB)} MiB (peak ${round(idle.peakRssMiB)} MiB; ${round(afterLoad.rssMiB)} MiB after the load)`,
          baseline: "",
          ratio: null,
          target: "embedded_idle_rss_mib"
        }
      ],
      targets: {
        embedded_p99_ms: target(max.latencyMs.p99, "<", 100, { unit: "ms" }),
        embedded_abort_stall_ms: target(abort.nextRequestMaxMs, "<", 100, {
          unit: "ms",
          note: "slowest normal request right after a client hung up mid-request (max over rounds)"
        }),
        embedded_idle_rss_mib: target(idle.rssMiB, "<", 250, { unit: "MiB" })
      }
    }
  }
}
