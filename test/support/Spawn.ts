/**
 * Parley as a process: `node dist/main.js` (built first when stale, as `npm start` does) or the `parley`
 * CLI, with a clean environment of the test's choosing, its stdout and stderr captured.
 */
import * as Schema from "effect/Schema"
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import { mkdtempSync } from "node:fs"
import * as net from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

export const root = fileURLToPath(new URL("../..", import.meta.url))

/** Builds dist/ when a source is newer than the last build. */
export const ensureBuilt = () =>
  execFileSync(process.execPath, [join(root, "scripts", "ensure-build.mjs")], { cwd: root, stdio: "ignore" })

export const LogRecord = Schema.Struct({
  message: Schema.String,
  logLevel: Schema.String,
  timestamp: Schema.String,
  cause: Schema.optional(Schema.String),
  annotations: Schema.Record(Schema.String, Schema.Unknown)
})
const decodeRecord = Schema.decodeUnknownSync(Schema.fromJsonString(LogRecord))

/** Every line of stdout as a record; a line that is not one fails the test, naming it. */
export const recordsOf = (stdout: string) =>
  stdout.split("\n").filter((line) => line !== "").map((line) => {
    try {
      return decodeRecord(line)
    } catch (error) {
      throw new Error(`Not a JSON log record on stdout: ${line}\n${String(error)}`)
    }
  })

export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

/** A port held by a plain TCP server until `close`. */
export const occupiedPort = () =>
  new Promise<{ readonly port: number; readonly close: () => Promise<void> }>((resolve, reject) => {
    const server = net.createServer()
    server.once("error", reject)
    server.listen(0, "0.0.0.0", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      resolve({ port, close: () => new Promise((done) => server.close(() => done())) })
    })
  })

export interface Run {
  readonly child: ChildProcess
  readonly stdout: () => string
  readonly stderr: () => string
  readonly exited: Promise<number | null>
}

/** The environment without Parley's own settings (the test gives those). */
const inherited = () =>
  Object.fromEntries(
    Object.entries(process.env).filter(([name]) =>
      !name.startsWith("OTEL_") && !name.startsWith("LOG_") && !name.startsWith("PARLEY_") &&
      !name.startsWith("WORKER_") && !name.startsWith("DELIVERY_") && !name.startsWith("DATABASE_") &&
      !name.startsWith("JOB_") && !name.startsWith("AI_") && name !== "METRICS_PORT" && name !== "PORT"
    )
  )

const run = (args: ReadonlyArray<string>, env: Record<string, string>): Run => {
  // With the V8 flag `npm start`, the image and the CLI pass (why: docs/performance.md).
  const child = spawn(process.execPath, ["--liftoff-only", ...args], {
    cwd: root,
    env: {
      ...inherited(),
      LOG_FORMAT: "json",
      HOST: "127.0.0.1",
      PARLEY_DATA_DIR: mkdtempSync(join(tmpdir(), "parley-start-")),
      ...env
    },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let stdout = ""
  let stderr = ""
  child.stdout?.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")))
  child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
  return { child, stdout: () => stdout, stderr: () => stderr, exited }
}

/** `node dist/main.js` with `env` (JSON logs on 127.0.0.1 and a fresh data folder unless given). */
export const start = (env: Record<string, string>): Run => run(["dist/main.js"], env)

/** `node <script>` (a file of the repository) with `env`. */
export const spawnScript = (script: string, env: Record<string, string>): Run => run([script], env)

/** `node bin/parley.js <args>` with `env`. */
export const cli = (args: ReadonlyArray<string>, env: Record<string, string>): Run => run(["bin/parley.js", ...args], env)

export const waitUntil = async (condition: () => boolean, what: () => string, timeoutMs = 90_000) => {
  const deadline = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Timed out; seen: ${what()}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}
