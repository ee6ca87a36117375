// Child processes of the benchmark: every one is registered so that an interrupted run ends them all
// (by their own pid, never by name), and small readers of /proc for memory and CPU figures.
import { execFileSync, fork, spawn } from "node:child_process"
import { createWriteStream, readFileSync } from "node:fs"
import { createServer } from "node:net"

const children = new Set()

/** Ends every child still running (SIGKILL): used on exit and on interruption. */
export const killAll = () => {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
  }
}

const register = (child) => {
  children.add(child)
  child.once("exit", () => children.delete(child))
  return child
}

/** Spawns a command with stdout and stderr appended to `logFile`. */
export const spawnLogged = (command, args, { env, cwd, logFile }) => {
  const log = createWriteStream(logFile, { flags: "a" })
  const child = register(spawn(command, args, { env, cwd, stdio: ["ignore", "pipe", "pipe"] }))
  child.stdout.pipe(log)
  child.stderr.pipe(log)
  return child
}

/** Waits for the child to exit; after `timeoutMs` it is killed. Resolves with how it ended. */
export const stopChild = (child, { signal = "SIGTERM", timeoutMs = 15_000 } = {}) =>
  new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      resolve({ code: child.exitCode, signal: child.signalCode, killed: false })
      return
    }
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs)
    child.once("exit", (code, exitSignal) => {
      clearTimeout(timer)
      resolve({ code, signal: exitSignal, killed: exitSignal === "SIGKILL" && signal !== "SIGKILL" })
    })
    child.kill(signal)
  })

/**
 * A Node module run as a child with an IPC channel, answering `call(type, payload)` requests
 * (see `serve` in ipc-child.mjs). Its stdout/stderr go to `logFile` when given, else inherit.
 */
export const forkWorker = (modulePath, { logFile, env = process.env, execArgv = [] } = {}) => {
  const log = logFile === undefined ? undefined : createWriteStream(logFile, { flags: "a" })
  const child = register(fork(modulePath, [], {
    env,
    execArgv,
    stdio: log === undefined ? ["ignore", "inherit", "inherit", "ipc"] : ["ignore", "pipe", "pipe", "ipc"]
  }))
  if (log !== undefined) {
    child.stdout.pipe(log)
    child.stderr.pipe(log)
  }
  let nextId = 0
  const pending = new Map()
  child.on("message", (message) => {
    const waiter = pending.get(message.id)
    if (waiter === undefined) return
    pending.delete(message.id)
    if (message.error !== undefined) waiter.reject(new Error(`${modulePath}: ${message.error}`))
    else waiter.resolve(message.result)
  })
  child.once("exit", (code, signal) => {
    for (const waiter of pending.values()) waiter.reject(new Error(`${modulePath} exited (${code ?? signal})`))
    pending.clear()
  })
  const call = (type, payload = {}) =>
    new Promise((resolve, reject) => {
      const id = ++nextId
      pending.set(id, { resolve, reject })
      child.send({ id, type, payload })
    })
  const stop = () => {
    child.disconnect?.()
    return stopChild(child, { timeoutMs: 5_000 })
  }
  return { child, pid: child.pid, call, stop }
}

/** A TCP port free on 127.0.0.1 right now. */
export const freePort = () =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })

/** Resident memory of a process, in MiB (VmRSS of /proc/<pid>/status); also its peak (VmHWM). */
export const memoryOf = (pid) => {
  const status = readFileSync(`/proc/${pid}/status`, "utf8")
  const field = (name) => {
    const match = new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)
    return match === null ? null : Number(match[1]) / 1024
  }
  return { rssMiB: field("VmRSS"), peakRssMiB: field("VmHWM") }
}

const clockTicks = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100
  } catch {
    return 100
  }
})()

/** CPU time (user + system) a process has used so far, in milliseconds; null when it is gone. */
export const cpuTimeMs = (pid) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    // Fields after the command name (which may contain spaces) start at ") ".
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    const utime = Number(fields[11])
    const stime = Number(fields[12])
    return ((utime + stime) * 1000) / clockTicks
  } catch {
    return null
  }
}

/** Sum of the CPU times of several processes (PostgreSQL backends); missing ones count 0. */
export const cpuTimeOfAll = (pids) => pids.reduce((sum, pid) => sum + (cpuTimeMs(pid) ?? 0), 0)

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** Wall-clock time in milliseconds with sub-millisecond precision, comparable across processes. */
export const nowMs = () => performance.timeOrigin + performance.now()
