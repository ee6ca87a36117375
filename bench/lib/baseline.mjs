// Starts a baseline server as its own process: bench/baseline-server.mjs (Parley's SQL in plain
// node:http + pg) or bench/floor-server.mjs (the same SQL through Effect's HttpApi and @effect/sql-pg).
import { join } from "node:path"
import { repoRoot } from "./parley.mjs"
import { freePort, sleep, spawnLogged, stopChild } from "./proc.mjs"

/** Parley's default DATABASE_POOL_SIZE: the baseline gets the same pool. */
export const POOL_SIZE = 10

export const startBaseline = async ({ databaseUrl, logDir, label = "baseline", script = "baseline-server.mjs", env = {} }) => {
  const port = await freePort()
  const logFile = join(logDir, `${label}.log`)
  const child = spawnLogged(process.execPath, [join(repoRoot, "bench", script)], {
    env: { PATH: process.env.PATH, DATABASE_URL: databaseUrl, PORT: String(port), DATABASE_POOL_SIZE: String(POOL_SIZE), ...env },
    cwd: repoRoot,
    logFile
  })
  const url = `http://127.0.0.1:${port}`
  for (let i = 0; i < 200; i++) {
    try {
      if ((await fetch(`${url}/health/ready`)).ok) return { url, pid: child.pid, stop: () => stopChild(child) }
    } catch {
      await sleep(50)
    }
  }
  await stopChild(child, { signal: "SIGKILL" })
  throw new Error(`${label} server did not start; see ${logFile}`)
}
