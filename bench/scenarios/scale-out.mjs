// scale-out: 1, 2 and 3 Parley instances on one database (different ports, same DATABASE_URL), a burst of
// conversations spread over them, each answered and delivered. Throughput, and the count that proves no
// double processing: every eventId received exactly once, and delivery_attempts = events in Parley's
// tables. Each instance count gets a fresh database. On a 2-core machine shared with the load generator
// and PostgreSQL, more instances add contention rather than cores: the figure to read is the counts.
import { query } from "../lib/db.mjs"
import { tenantFor } from "../lib/harness.mjs"
import { benchArticle } from "../lib/messages.mjs"
import { target } from "../lib/targets.mjs"
import { REPLY_NOW, burst, deliveryCounts } from "./deliveries.mjs"

/** How many jobs each instance ran (jobs.locked_by is "<host>:<pid>:<random>#<worker>"), if readable. */
const jobsPerInstance = async (databaseUrl) => {
  try {
    const rows = await query(databaseUrl, `SELECT split_part(locked_by, '#', 1) AS instance, count(*)::int AS jobs
      FROM jobs WHERE locked_by IS NOT NULL GROUP BY 1 ORDER BY 1`)
    return rows.map((r) => r.jobs)
  } catch (error) {
    return { error: error.message }
  }
}

export default {
  name: "scaleout",
  description: "1, 2 and 3 Parley instances on one PostgreSQL: throughput and no double processing",
  run: async (ctx) => {
    const count = ctx.quick ? 100 : 1000
    const driver = ctx.driver()
    const runs = []
    for (const instances of [1, 2, 3]) {
      const db = await ctx.database(`scaleout${instances}`)
      const receiver = await ctx.receiver("ok")
      const first = await ctx.parley({ databaseUrl: db.url, env: REPLY_NOW, label: `parley-scale${instances}-1` })
      const others = await Promise.all(Array.from({ length: instances - 1 }, (_, k) =>
        ctx.parley({ databaseUrl: db.url, env: REPLY_NOW, label: `parley-scale${instances}-${k + 2}` })
      ))
      const all = [first, ...others]
      const tenant = await tenantFor(first.url, receiver, { name: `scale${instances}`, articles: [benchArticle] })
      const targets = all.map((p) => p.url)
      await burst({ driver, receiver, targets, tenant, prefix: `s${instances}w`, count: 10 * instances, timeoutMs: 60_000 })
      ctx.say(`${instances} instance(s): burst of ${count}`)
      const result = await burst({ driver, receiver, targets, tenant, prefix: `s${instances}`, count, timeoutMs: ctx.quick ? 120_000 : 600_000 })
      // Let in-flight bookkeeping (attempt rows) settle before counting.
      await new Promise((resolve) => setTimeout(resolve, 1000))
      const counts = await deliveryCounts(db.url)
      const perInstance = await jobsPerInstance(db.url)
      await Promise.all(all.map((p) => p.stop()))
      runs.push({ instances, ...result, database: counts, jobsPerInstance: perInstance })
      ctx.say(`  ${result.deliveriesPerSecond} webhooks/s; lost ${result.lost}, duplicated ${result.duplicated}; events ${counts.events}, attempts ${counts.attempts}`)
    }
    const doubles = runs.reduce((sum, r) => sum + r.duplicated + Math.max(0, (r.database.attempts ?? 0) - (r.database.events ?? 0)), 0)
    const countsReadable = runs.every((r) => r.database.events !== undefined)
    return {
      figures: { conversations: count, runs },
      rows: runs.map((r) => ({
        work: `${r.instances} instance${r.instances > 1 ? "s" : ""}, one database: burst of ${count} conversations`,
        parley: `${r.deliveriesPerSecond} webhooks/s (ingest ${r.ingest.requestsPerSecond} req/s); lost ${r.lost}, duplicated ${r.duplicated}; events ${r.database.events ?? "?"} = attempts ${r.database.attempts ?? "?"}`,
        baseline: r.instances === 1 ? "" : `jobs per instance ${JSON.stringify(r.jobsPerInstance)}`,
        ratio: r.instances === 1 ? null : Math.round((r.deliveriesPerSecond / runs[0].deliveriesPerSecond) * 100) / 100,
        ...(r.instances === 3 ? { target: "scaleout_double_processing" } : {})
      })),
      targets: {
        scaleout_double_processing: target(countsReadable ? doubles : null, "=", 0, {
          note: "duplicated eventIds at the receiver + (delivery_attempts − events), over 1, 2 and 3 instances"
        })
      }
    }
  }
}
