// What the scenarios share: the run context (databases, processes, logs), waiting for webhooks, and the
// analysis of what a receiver got.
import { join } from "node:path"
import { createDatabase, dropDatabase } from "./db.mjs"
import { createTenant, repoRoot, startParley } from "./parley.mjs"
import { forkWorker, nowMs, sleep } from "./proc.mjs"
import { summarize } from "./stats.mjs"

const benchDir = join(repoRoot, "bench")

/** The context handed to every scenario. */
export const makeContext = ({ quick, runId, logDir, say }) => {
  const cleanups = []
  const defer = (fn) => cleanups.push(fn)
  return {
    quick,
    runId,
    logDir,
    say,
    /** A fresh database for this scenario, dropped when the scenario ends. */
    database: async (label) => {
      const db = await createDatabase(runId, label)
      defer(() => dropDatabase(db.name))
      return db
    },
    /** Parley, stopped when the scenario ends (if the scenario did not stop it itself). */
    parley: async (options) => {
      const parley = await startParley({ logDir, ...options })
      defer(() => parley.stop())
      return parley
    },
    /** The load generator, in its own process. */
    driver: () => {
      const driver = forkWorker(join(benchDir, "driver.mjs"), { logFile: join(logDir, "driver.log") })
      defer(() => driver.stop())
      return driver
    },
    /** A webhook receiver in its own process: mode "ok" (200 at once) or "hang" (never answers). */
    receiver: async (mode, secrets = []) => {
      const receiver = forkWorker(join(benchDir, "receiver.mjs"), { logFile: join(logDir, `receiver-${mode}.log`) })
      defer(async () => {
        await receiver.call("stop").catch(() => undefined)
        await receiver.stop()
      })
      const { port } = await receiver.call("start", { mode, workspaceSecrets: secrets })
      return { ...receiver, url: `http://127.0.0.1:${port}/webhook` }
    },
    /** Registers a clean-up (run in reverse order when the scenario ends). */
    defer,
    /** Runs the clean-ups; called by the runner after each scenario, even a failed one. */
    cleanup: async () => {
      for (const fn of cleanups.reverse()) {
        try {
          await fn()
        } catch (error) {
          say(`clean-up: ${error.message}`)
        }
      }
      cleanups.length = 0
    }
  }
}

/** A tenant whose webhook goes to `receiver`, whose secret the receiver then verifies. */
export const tenantFor = async (parleyUrl, receiver, { name, articles = [] }) => {
  const tenant = await createTenant(parleyUrl, { name, webhookUrl: receiver.url, articles })
  await receiver.call("addSecrets", { workspaceSecrets: [tenant.secret] })
  return tenant
}

/**
 * Waits until `done(records)` holds for the receiver's records (from index `since`), or until nothing
 * new arrived for `idleMs`, or `timeoutMs` passed. Returns the records and why it stopped.
 */
export const waitForWebhooks = async (receiver, { since = 0, done, idleMs = 20_000, timeoutMs = 120_000 }) => {
  const started = nowMs()
  const records = []
  let lastChange = started
  for (;;) {
    // Only the records not fetched yet cross the IPC channel: the receiver shares the CPU with Parley.
    const fresh = await receiver.call("collect", { since: since + records.length })
    records.push(...fresh.records)
    if (done(records)) return { records, stopped: "complete" }
    const now = nowMs()
    if (fresh.records.length > 0) lastChange = now
    if (now - lastChange > idleMs) return { records, stopped: `nothing new for ${idleMs / 1000} s` }
    if (now - started > timeoutMs) return { records, stopped: `time-out after ${timeoutMs / 1000} s` }
    await sleep(100)
  }
}

/** Whether every conversation of `conversationIds` has a send_messages webhook among `records`. */
export const allAnswered = (conversationIds) => (records) => {
  const answered = new Set(records.filter((r) => r.event === "send_messages").map((r) => r.conversationId))
  return conversationIds.every((id) => answered.has(id))
}

/**
 * What a receiver got for the given conversations: the first send_messages arrival per conversation,
 * conversations never answered (lost), eventIds received more than once (duplicated), bad signatures,
 * and the count per event kind.
 */
export const analyzeWebhooks = (records, conversationIds) => {
  const wanted = new Set(conversationIds)
  const mine = records.filter((r) => wanted.has(r.conversationId))
  const arrivals = new Map()
  const seen = new Map()
  const kinds = {}
  for (const r of mine) {
    seen.set(r.eventId, (seen.get(r.eventId) ?? 0) + 1)
    kinds[r.event] = (kinds[r.event] ?? 0) + 1
    if (r.event === "send_messages" && !arrivals.has(r.conversationId)) arrivals.set(r.conversationId, r.at)
  }
  const duplicated = [...seen.values()].filter((n) => n > 1).reduce((sum, n) => sum + n - 1, 0)
  return {
    received: mine.length,
    distinctEvents: seen.size,
    duplicated,
    invalidSignatures: mine.filter((r) => !r.valid).length,
    kinds,
    arrivals,
    lost: conversationIds.filter((id) => !arrivals.has(id)).length
  }
}

/** Latency from each record's send time to its conversation's first send_messages arrival. */
export const endToEnd = (sendRecords, arrivals, { offsetMs = 0 } = {}) => {
  const samples = []
  let missing = 0
  for (const record of sendRecords) {
    const at = arrivals.get(record.conversationId)
    if (at === undefined) missing++
    else samples.push(at - (record.sentAt + offsetMs))
  }
  return { ...summarize(samples), missing }
}

/** Requests per second of the 2xx answers of an autocannon run. */
export const okPerSecond = (run) => {
  const ok = Object.entries(run.statuses).filter(([status]) => status.startsWith("2")).reduce((s, [, n]) => s + n, 0)
  return { ok, perSecond: ok / (run.elapsedMs / 1000) }
}

/** Statuses other than 2xx, as "422×3 500×1", or "" when none (plus connection errors/time-outs). */
export const failures = (statuses, { errors = 0, timeouts = 0 } = {}) => {
  const bad = Object.entries(statuses).filter(([status]) => !status.startsWith("2")).map(([s, n]) => `${s}×${n}`)
  if (errors > 0) bad.push(`errors×${errors}`)
  if (timeouts > 0) bad.push(`timeouts×${timeouts}`)
  return bad.join(" ")
}

/** Status counts of paced records. */
export const statusesOf = (records) =>
  records.reduce((counts, r) => ({ ...counts, [r.status ?? "error"]: (counts[r.status ?? "error"] ?? 0) + 1 }), {})
