// Parley as a black box: a `node dist/main.js` process configured by environment variables, driven over
// HTTP through its public and admin APIs.
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { freePort, memoryOf, nowMs, sleep, spawnLogged, stopChild } from "./proc.mjs"

export const repoRoot = new URL("../..", import.meta.url).pathname
export const ADMIN_TOKEN = "bench-admin-token-0123456789abcdef0123456789abcdef"

/** Settings for every Parley process of the run (`--parley-env KEY=VALUE`); a scenario's own win. */
let runEnv = {}
export const setRunEnv = (env) => {
  runEnv = env
}

/** Extra `node` flags for every Parley process, e.g. BENCH_PARLEY_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof". */
const extraNodeArgs = (process.env.BENCH_PARLEY_NODE_ARGS ?? "").split(" ").filter((arg) => arg !== "")

/**
 * Starts Parley and waits for /health/ready. `databaseUrl` unset: the embedded database (PGlite) in a
 * fresh temporary PARLEY_DATA_DIR. `env` adds scenario settings (REPLY_DEBOUNCE, WORKER_CONCURRENCY...).
 */
export const startParley = async ({ databaseUrl, env = {}, logDir, label = "parley", nodeArgs = extraNodeArgs }) => {
  const port = await freePort()
  const dataDir = databaseUrl === undefined ? mkdtempSync(join(tmpdir(), "parley-bench-pglite-")) : undefined
  const childEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    PORT: String(port),
    HOST: "127.0.0.1",
    PARLEY_ADMIN_TOKEN: ADMIN_TOKEN,
    PARLEY_RATE_LIMIT: "0",
    PARLEY_SEED_DEMO: "false",
    LOG_LEVEL: "warn",
    // As `npm start` and the image run it (fixed glibc malloc thresholds: ~40 MiB less idle RSS).
    GLIBC_TUNABLES: process.env.GLIBC_TUNABLES ?? "glibc.malloc.trim_threshold=1048576",
    ...(databaseUrl !== undefined ? { DATABASE_URL: databaseUrl } : { PARLEY_DATA_DIR: dataDir }),
    ...runEnv,
    ...env
  }
  const logFile = join(logDir, `${label}-${port}.log`)
  const started = nowMs()
  const child = spawnLogged(process.execPath, ["--liftoff-only", ...nodeArgs, "dist/main.js"], { env: childEnv, cwd: repoRoot, logFile })
  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 60_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${label} exited during start-up (code ${child.exitCode}); see ${logFile}`)
    try {
      const response = await fetch(`${url}/health/ready`)
      if (response.status === 200) break
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stopChild(child, { signal: "SIGKILL" })
      throw new Error(`${label} not ready within 60 s; see ${logFile}`)
    }
    await sleep(50)
  }
  const readyMs = nowMs() - started
  return {
    url,
    port,
    pid: child.pid,
    logFile,
    dataDir,
    readyMs,
    memory: () => memoryOf(child.pid),
    stop: (options) => stopChild(child, options)
  }
}

/** A JSON request to Parley with a bearer token; the decoded answer, or an error naming the call. */
export const apiCall = async (baseUrl, token, method, path, body) => {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {})
  })
  const text = await response.text()
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`)
  return text === "" ? null : JSON.parse(text)
}

const adminCall = (baseUrl, method, path, body) => apiCall(baseUrl, ADMIN_TOKEN, method, `/admin/v1${path}`, body)

/**
 * A workspace with one integration whose webhook points at `webhookUrl`, and the given knowledge-base
 * articles. Returns the ids, the API token and the webhook secret.
 */
export const createTenant = async (baseUrl, { name, webhookUrl, articles = [] }) => {
  const workspace = await adminCall(baseUrl, "POST", "/workspaces", { name })
  const integration = await adminCall(baseUrl, "POST", `/workspaces/${workspace.id}/integrations`, {
    name: `${name} integration`,
    webhook: { url: webhookUrl }
  })
  for (const article of articles) {
    await adminCall(baseUrl, "POST", `/workspaces/${workspace.id}/articles`, article)
  }
  return {
    workspaceId: workspace.id,
    token: workspace.apiToken,
    secret: workspace.webhookSecret,
    integrationId: integration.integrationId
  }
}
