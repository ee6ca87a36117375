/**
 * Starting Parley as an operator does (`node dist/main.js`), with what goes wrong in the first hour: a
 * bad setting, a port in use, a database that cannot be reached, production without its secrets, the
 * demo seed in production, a CLI command on the embedded database of a running Parley. Each failure is
 * one line on stderr naming the setting to fix, one `Parley failed to start` record with the detail,
 * and exit code 1; and nothing half-made is left behind.
 */
import { describe, expect, it } from "@effect/vitest"
import { existsSync, mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { cli, ensureBuilt, freePort, occupiedPort, recordsOf, type Run, spawnScript, start, waitUntil } from "../support/Spawn.js"

const KEY = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
const ADMIN = "padm_startup-test-admin-token"

/** The run's exit code, its stderr's first line and its one failure record. */
const failure = async (run: Run) => {
  const code = await run.exited
  const records = recordsOf(run.stdout())
  const failed = records.filter((r) => r.message === "Parley failed to start")
  expect(failed, run.stdout()).toHaveLength(1)
  return { code, line: run.stderr().split("\n")[0] ?? "", record: failed[0]!, records }
}

const stop = async (run: Run) => {
  run.child.kill("SIGTERM")
  return run.exited
}

describe("start-up", () => {
  ensureBuilt()

  it.each([
    ["WORKER_CONCURRENCY", "0", "WORKER_CONCURRENCY=0 is out of range: a whole number from 1 to 1000"],
    ["DELIVERY_CONCURRENCY", "-1", "DELIVERY_CONCURRENCY=-1 is out of range: a whole number from 1 to 10000"],
    ["PARLEY_RATE_LIMIT", "-5", "PARLEY_RATE_LIMIT=-5 is out of range: a whole number from 0 to 1000000"],
    ["DATABASE_POOL_SIZE", "0", "DATABASE_POOL_SIZE=0 is out of range: a whole number from 1 to 1000"],
    ["DELIVERY_TIMEOUT", "0 seconds", "DELIVERY_TIMEOUT=0 millis is out of range: from 10 millis to 5 minutes"],
    ["JOB_POLL_INTERVAL", "2 days", "JOB_POLL_INTERVAL=2 days is out of range: from 10 millis to 1 hour"]
  ])("%s=%s is refused with its name, value and range, before any work", { timeout: 60_000 }, async (name, value, reason) => {
    const port = await freePort()
    const run = start({ PORT: String(port), [name]: value })
    const { code, line, record, records } = await failure(run)
    expect(code).toBe(1)
    expect(line).toBe(`Parley failed to start (${name}): ${reason}`)
    expect(record.annotations).toMatchObject({ setting: name, reason })
    // Refused before the database was opened or the demo created: nothing else was logged or printed.
    expect(records.map((r) => r.message)).toEqual(["Parley failed to start"])
    expect(run.stderr()).not.toContain("PARLEY_TOKEN")
  })

  it("several bad settings are all named at once", { timeout: 60_000 }, async () => {
    const run = start({ PORT: String(await freePort()), WORKER_CONCURRENCY: "lots", PARLEY_RATE_LIMIT: "-5" })
    const { code, line } = await failure(run)
    expect(code).toBe(1)
    expect(line).toContain("PARLEY_RATE_LIMIT")
    expect(line).toContain("WORKER_CONCURRENCY: Expected an integer value but received \"lots\"")
  })

  it("a PORT in use is named at once, before the database is opened or demo credentials printed", { timeout: 60_000 }, async () => {
    const held = await occupiedPort()
    try {
      const run = start({ PORT: String(held.port) })
      const { code, line, records } = await failure(run)
      expect(code).toBe(1)
      expect(line).toBe(
        `Parley failed to start (PORT): PORT=${held.port} is already in use on 127.0.0.1: choose another PORT or stop the process that listens there`
      )
      expect(records.map((r) => r.message)).toEqual(["Parley failed to start"])
      expect(run.stderr()).not.toMatch(/PARLEY_TOKEN|Admin token/)
    } finally {
      await held.close()
    }
  })

  it("a METRICS_PORT in use is named (it printed nothing before)", { timeout: 60_000 }, async () => {
    const held = await occupiedPort()
    try {
      const run = start({ PORT: String(await freePort()), METRICS_PORT: String(held.port) })
      const { code, line, record } = await failure(run)
      expect(code).toBe(1)
      expect(line).toContain(`Parley failed to start (METRICS_PORT): METRICS_PORT=${held.port} is already in use`)
      expect(record.annotations["setting"]).toBe("METRICS_PORT")
    } finally {
      await held.close()
    }
  })

  it("a DATABASE_URL nothing answers is named with the cause, without the password", { timeout: 60_000 }, async () => {
    const closed = await freePort()
    const run = start({
      PORT: String(await freePort()),
      DATABASE_URL: `postgres://parley:sekret@127.0.0.1:${closed}/parley`,
      DATABASE_CONNECT_TIMEOUT: "2 seconds"
    })
    const { code, line, record } = await failure(run)
    expect(code).toBe(1)
    expect(line).toBe(
      `Parley failed to start (DATABASE_URL): connect ECONNREFUSED 127.0.0.1:${closed}: nothing accepts connections there ` +
        `(is PostgreSQL running, and are the host and port right?) (parley@127.0.0.1:${closed}/parley)`
    )
    expect(record.cause).toContain("ECONNREFUSED")
    expect(run.stdout() + run.stderr()).not.toContain("sekret")
  })

  const postgres = process.env["TEST_DATABASE_URL"]
  it.skipIf(postgres === undefined || postgres === "")(
    "a database that does not exist on the server is named",
    { timeout: 60_000 },
    async () => {
      const url = new URL(postgres!)
      url.pathname = "/parley_no_such_database"
      const run = start({ PORT: String(await freePort()), DATABASE_URL: url.toString() })
      const { code, line } = await failure(run)
      expect(code).toBe(1)
      expect(line).toMatch(/^Parley failed to start \(DATABASE_URL\): database "parley_no_such_database" does not exist \(/)
    }
  )

  it("production without PARLEY_ENCRYPTION_KEY is refused, saying how to make one; the opt-out starts", { timeout: 120_000 }, async () => {
    const refused = start({ PORT: String(await freePort()), PARLEY_MODE: "production", PARLEY_ADMIN_TOKEN: ADMIN })
    const { code, line } = await failure(refused)
    expect(code).toBe(1)
    expect(line).toMatch(/^Parley failed to start \(PARLEY_ENCRYPTION_KEY\): PARLEY_ENCRYPTION_KEY must be set in production mode/)
    expect(line).toContain("openssl rand -hex 32")
    expect(line).toContain("PARLEY_ALLOW_PLAINTEXT_SECRETS=true")

    const bad = start({ PORT: String(await freePort()), PARLEY_ENCRYPTION_KEY: "too-short" })
    expect((await failure(bad)).line).toMatch(/^Parley failed to start \(PARLEY_ENCRYPTION_KEY\): PARLEY_ENCRYPTION_KEY must be 32 bytes/)

    const port = await freePort()
    const allowed = start({
      PORT: String(port),
      PARLEY_MODE: "production",
      PARLEY_ADMIN_TOKEN: ADMIN,
      PARLEY_ALLOW_PLAINTEXT_SECRETS: "true"
    })
    try {
      await waitUntil(() => allowed.stdout().includes("\"Parley started\""), () => allowed.stdout() + allowed.stderr())
    } finally {
      expect(await stop(allowed)).toBe(0)
    }
  })

  it("production's first start on an empty database creates no demo; a demo it cannot make leaves nothing", { timeout: 180_000 }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "parley-prod-"))
    const production = { PARLEY_MODE: "production", PARLEY_ADMIN_TOKEN: ADMIN, PARLEY_ENCRYPTION_KEY: KEY, PARLEY_DATA_DIR: dataDir }

    // Asked for explicitly, the demo's loopback webhook is refused by the production SSRF guard.
    const seeded = start({ ...production, PORT: String(await freePort()), PARLEY_SEED_DEMO: "true" })
    const { code, line } = await failure(seeded)
    expect(code).toBe(1)
    expect(line).toMatch(
      /^Parley failed to start \(PARLEY_DEMO_WEBHOOK_URL\): The demo workspace could not be created: PARLEY_DEMO_WEBHOOK_URL=http:\/\/127\.0\.0\.1:8787\/webhook: .*internal address/
    )
    expect(seeded.stderr()).not.toContain("PARLEY_TOKEN")

    // The default: no demo. The database stayed empty (the failed seed rolled back).
    const port = await freePort()
    const run = start({ ...production, PORT: String(port) })
    try {
      await waitUntil(() => run.stdout().includes("\"Parley started\""), () => run.stdout() + run.stderr())
      const ready = await fetch(`http://127.0.0.1:${port}/health/ready`)
      expect(ready.status).toBe(200)
      const workspaces = await fetch(`http://127.0.0.1:${port}/admin/v1/workspaces`, { headers: { authorization: `Bearer ${ADMIN}` } })
      expect(await workspaces.json()).toEqual([])
      expect(run.stderr()).toBe("")
      expect(existsSync(join(dataDir, "demo.env"))).toBe(false)
    } finally {
      expect(await stop(run)).toBe(0)
    }
  })

  it("the demo's webhooks go to PARLEY_DEMO_WEBHOOK_URL, where `npm run receiver` verifies them", { timeout: 120_000 }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "parley-demo-url-"))
    const receiverPort = await freePort()
    const port = await freePort()
    const url = `http://127.0.0.1:${receiverPort}/webhook`
    const run = start({ PORT: String(port), PARLEY_DATA_DIR: dataDir, PARLEY_DEMO_WEBHOOK_URL: url, REPLY_DEBOUNCE: "100 millis" })
    let receiver: Run | undefined
    try {
      await waitUntil(() => run.stdout().includes("\"Parley started\""), () => run.stdout() + run.stderr())
      expect(run.stderr()).toContain(`its webhooks go to ${url}: \`npm run receiver\` listens there`)
      // The receiver reads the secret from <data dir>/demo.env, as after `npm start` in the same folder.
      receiver = spawnScript("scripts/receiver.mjs", { PARLEY_DATA_DIR: dataDir, RECEIVER_PORT: String(receiverPort) })
      await waitUntil(() => receiver!.stdout().includes("Webhook receiver on"), () => receiver!.stdout() + receiver!.stderr())

      const token = /PARLEY_TOKEN=(\S+)/.exec(run.stderr())?.[1] ?? ""
      const integrationId = /PARLEY_INTEGRATION_ID=(\S+)/.exec(run.stderr())?.[1] ?? ""
      const list = await fetch(`http://127.0.0.1:${port}/v1/integration/list`, { headers: { authorization: `Bearer ${token}` } })
      const integrations = await list.json() as Array<{ settings: { webhook: { url: string } } }>
      expect(integrations.map((i) => i.settings.webhook.url)).toEqual([url])

      const sent = await fetch(`http://127.0.0.1:${port}/v1/webhooks/${integrationId}/message-received`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({
          id: "m-1",
          role: "human",
          customerId: "6f1c1f8e-1d7e-4c8e-9a0a-1b2c3d4e5f60",
          conversationId: "order-1",
          text: "How long does shipping take?"
        })
      })
      expect(sent.status).toBe(200)
      await waitUntil(() => receiver!.stdout().includes("send_messages (signature verified)"), () => receiver!.stdout())
      expect(receiver.stdout()).toContain("Orders ship within one business day")

      // A forged delivery is refused.
      const forged = await fetch(url, {
        method: "POST",
        headers: { "x-parley-webhook-timestamp": String(Math.floor(Date.now() / 1000)), "x-parley-webhook-signature": "00".repeat(32) },
        body: "{\"event\":\"send_messages\"}"
      })
      expect(forged.status).toBe(401)
      expect(await forged.json()).toEqual({ error: "signature does not match" })
    } finally {
      receiver?.child.kill("SIGTERM")
      expect(await stop(run)).toBe(0)
    }
  })

  it("a CLI command on the embedded database of a running Parley says to stop Parley first", { timeout: 180_000 }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "parley-busy-"))
    const run = start({ PORT: String(await freePort()), PARLEY_DATA_DIR: dataDir, PARLEY_SEED_DEMO: "false" })
    try {
      await waitUntil(() => run.stdout().includes("\"Parley started\""), () => run.stdout() + run.stderr())
      const pid = run.child.pid
      const reencrypt = cli(["secrets", "reencrypt"], { PARLEY_DATA_DIR: dataDir, PARLEY_ENCRYPTION_KEY: KEY })
      expect(await reencrypt.exited).toBe(1)
      expect(reencrypt.stderr().trim()).toBe(
        `Error: PARLEY_DATA_DIR: The embedded database in ${dataDir} is in use by another process (pid ${pid}): ` +
          "stop Parley first (the embedded database is single-process), or use PostgreSQL (DATABASE_URL)"
      )
      const second = start({ PORT: String(await freePort()), PARLEY_DATA_DIR: dataDir })
      const { code, line } = await failure(second)
      expect(code).toBe(1)
      expect(line).toContain(`Parley failed to start (PARLEY_DATA_DIR): The embedded database in ${dataDir} is in use`)
    } finally {
      expect(await stop(run)).toBe(0)
    }
    // Stopped, the folder is free again (the hold dies with the process, however it ends).
    const migrate = cli(["migrate"], { PARLEY_DATA_DIR: dataDir })
    expect(await migrate.exited).toBe(0)
    expect(migrate.stdout()).toContain("Database migrated")
  })
})
