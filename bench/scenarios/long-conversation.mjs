// longconv: importing a long history into ONE conversation with syncOnly, one message after the other
// (as an integrator backfilling would), customer and AI messages alternating as in a real history: the
// latency of message N for N up to 1,000 (200 in --quick). Flat cost means the last hundred cost what
// the first hundred did.
import { createTenant } from "../lib/parley.mjs"
import { QUESTION } from "../lib/messages.mjs"
import { median, ratio, round } from "../lib/stats.mjs"
import { target } from "../lib/targets.mjs"

const WINDOW = 100

/** Sequential syncOnly import of `count` messages into one conversation; latency by position. */
export const importLongConversation = async ({ driver, parley, tenant, prefix, count }) => {
  const spec = { prefix, syncOnly: true, conversationId: `${prefix}-long`, text: QUESTION, roles: ["human", "ai"] }
  const started = Date.now()
  const run = await driver.call("sequential", { target: parley.url, token: tenant.token, integrationId: tenant.integrationId, spec, count })
  const seconds = (Date.now() - started) / 1000
  const window = Math.min(WINDOW, Math.floor(count / 2))
  const at = (n) => round(median(run.latencies.slice(Math.max(0, n - 10), n)))
  const checkpoints = [10, 100, 250, 500, 750, 1000].filter((n) => n <= count)
  return {
    messages: count,
    seconds: round(seconds, 1),
    messagesPerSecond: round(count / seconds, 1),
    statuses: run.statuses,
    firstWindowMedianMs: round(median(run.latencies.slice(0, window))),
    lastWindowMedianMs: round(median(run.latencies.slice(-window))),
    window,
    // Median of the 10 messages up to each checkpoint.
    medianMsAt: Object.fromEntries(checkpoints.map((n) => [n, at(n)])),
    latenciesMs: run.latencies.map((x) => round(x, 1))
  }
}

export default {
  name: "longconv",
  description: "one conversation imported message by message (syncOnly): latency of message N",
  run: async (ctx) => {
    const count = ctx.quick ? 200 : 1000
    const db = await ctx.database("longconv")
    const driver = ctx.driver()
    const parley = await ctx.parley({ databaseUrl: db.url, label: "parley-longconv" })
    const tenant = await createTenant(parley.url, { name: "longconv", webhookUrl: "http://127.0.0.1:9/unused" })
    const result = await importLongConversation({ driver, parley, tenant, prefix: "lc", count })
    const growth = ratio(result.lastWindowMedianMs, result.firstWindowMedianMs)
    return {
      figures: result,
      rows: [
        {
          work: `one conversation, ${count} syncOnly messages one by one: median of the last ${result.window} vs the first ${result.window}`,
          parley: `${result.lastWindowMedianMs} ms vs ${result.firstWindowMedianMs} ms; at N = ${Object.entries(result.medianMsAt).map(([n, ms]) => `${n}: ${ms}`).join(", ")} ms; ${result.messagesPerSecond} msg/s`,
          baseline: "",
          ratio: growth,
          target: "long_conversation_cost_growth"
        }
      ],
      targets: {
        long_conversation_cost_growth: target(growth, "<=", 1.5, {
          note: `median latency of the last ${result.window} messages ÷ the first ${result.window}, one ${count}-message conversation`
        })
      }
    }
  }
}
