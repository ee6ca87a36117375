/**
 * The process as `npm start` runs it (`node dist/main.js`, built first when stale), on a fresh embedded
 * database: with `LOG_FORMAT=json` every line of stdout is one JSON record, from the start-up record to
 * the last one of shutdown; the development banners (admin token, demo credentials) are on stderr; a
 * start that fails is one JSON error record and exit code 1.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Schema from "effect/Schema"
import { execFileSync } from "node:child_process"
import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ensureBuilt, freePort, recordsOf, root, start, waitUntil } from "../support/Spawn.js"

const version = Schema.decodeUnknownSync(Schema.fromJsonString(Schema.Struct({ version: Schema.String })))(
  readFileSync(join(root, "package.json"), "utf8")
).version

describe("node dist/main.js", () => {
  ensureBuilt()

  it("with LOG_FORMAT=json, stdout is JSON records only: start-up, requests, shutdown", { timeout: 180_000 }, async () => {
    const port = await freePort()
    const dataDir = mkdtempSync(join(tmpdir(), "parley-start-"))
    const run = start({ PORT: String(port), WORKER_CONCURRENCY: "3", DELIVERY_CONCURRENCY: "5", PARLEY_DATA_DIR: dataDir })
    try {
      await waitUntil(() => run.stdout().includes("\"Parley started\""), () => run.stdout() + run.stderr())
      const health = await fetch(`http://127.0.0.1:${port}/health/live`, { headers: { "x-request-id": "spawned-1" } })
      expect(health.headers.get("x-request-id")).toBe("spawned-1")
      const missing = await fetch(`http://127.0.0.1:${port}/nothing/here?access_token=prl_notarealtokenbutlooksone`)
      expect(missing.status).toBe(404)
      await waitUntil(() => run.stdout().includes("\"url.path\":\"/nothing/here\""), () => run.stdout())
    } finally {
      run.child.kill("SIGTERM")
    }
    expect(await run.exited).toBe(0)

    const records = recordsOf(run.stdout())
    const started = records.find((r) => r.message === "Parley started")
    expect(started?.logLevel).toBe("INFO")
    expect(started?.annotations).toEqual({
      "service.version": version,
      "parley.mode": "development",
      "database.kind": "embedded",
      "worker.concurrency": 3,
      "delivery.concurrency": 5,
      "server.port": port,
      "metrics.port": null,
      url: `http://localhost:${port}`,
      docs: `http://localhost:${port}/docs`,
      dashboard: `http://localhost:${port}/dashboard`
    })
    // Health is logged at debug: below the default level.
    expect(records.filter((r) => r.message === "HTTP request").map((r) => r.annotations["url.path"])).toEqual(["/nothing/here"])
    expect(records.slice(-2).map((r) => r.message)).toEqual(["Parley stopping", "Parley stopped"])
    expect(run.stdout()).not.toContain("prl_notarealtokenbutlooksone")

    // The development banners: on stderr, human-readable.
    expect(run.stderr()).toMatch(/Admin token \(development mode, generated; kept in .*\): padm_/)
    expect(run.stderr()).toMatch(/PARLEY_TOKEN=prl_/)
    expect(run.stdout()).not.toMatch(/padm_[A-Za-z0-9_-]{8}|PARLEY_TOKEN=/)

    // `source .parley/demo.env` exports the demo's credentials: curl and the CLI (which reads
    // PARLEY_TOKEN from the environment) both see them.
    const seen = execFileSync("bash", ["-c", `source ${JSON.stringify(join(dataDir, "demo.env"))} && node -e 'console.log(process.env.PARLEY_TOKEN?.slice(0, 4) ?? "unset")'`], {
      encoding: "utf8",
      env: { PATH: process.env.PATH ?? "" }
    })
    expect(seen.trim()).toBe("prl_")
  })

  it("a start that fails is one JSON error record with its cause, and exit code 1", { timeout: 180_000 }, async () => {
    const run = start({ PORT: String(await freePort()), PARLEY_MODE: "production" })
    expect(await run.exited).toBe(1)
    const records = recordsOf(run.stdout())
    const failed = records.filter((r) => r.message === "Parley failed to start")
    expect(failed).toHaveLength(1)
    expect(failed[0]!.logLevel).toBe("ERROR")
    expect(failed[0]!.cause).toContain("PARLEY_ADMIN_TOKEN must be set in production mode")
    expect(records.map((r) => r.message)).toEqual(["Parley failed to start"])
  })
})
