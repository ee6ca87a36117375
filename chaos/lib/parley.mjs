// Real Parley processes (`node dist/main.js`), configured only through environment variables.
import { spawn } from "node:child_process"
import { createWriteStream, readFileSync } from "node:fs"
import { join } from "node:path"
import { freePort } from "./net.mjs"

const root = new URL("../..", import.meta.url).pathname

export const startParley = async ({ name, env, logDir }) => {
  const port = await freePort(0)
  const logFile = join(logDir, `${name}.log`)
  const log = createWriteStream(logFile, { flags: "a" })
  const child = spawn(process.execPath, ["--liftoff-only", join(root, "dist", "main.js")], {
    cwd: root,
    env: { ...process.env, ...env, PORT: String(port), HOST: "127.0.0.1" },
    stdio: ["ignore", "pipe", "pipe"]
  })
  child.stdout.pipe(log)
  child.stderr.pipe(log)
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })))
  const base = `http://127.0.0.1:${port}`
  const instance = {
    name,
    pid: child.pid,
    base,
    logFile,
    exited,
    /** Waits until /health/ready answers 200. */
    ready: async (timeoutMs = 60_000) => {
      const deadline = Date.now() + timeoutMs
      while (Date.now() < deadline) {
        if (child.exitCode !== null) throw new Error(`${name} exited (${child.exitCode}): ${tail(logFile)}`)
        try {
          const response = await fetch(`${base}/health/ready`, { signal: AbortSignal.timeout(2_000) })
          if (response.status === 200) return
        } catch {
          // not listening yet
        }
        await sleep(100)
      }
      throw new Error(`${name} not ready after ${timeoutMs} ms: ${tail(logFile)}`)
    },
    kill: async (signal = "SIGKILL") => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
      return await exited
    }
  }
  return instance
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

export const tail = (file, lines = 30) => {
  try {
    return readFileSync(file, "utf8").split("\n").slice(-lines).join("\n")
  } catch {
    return ""
  }
}
