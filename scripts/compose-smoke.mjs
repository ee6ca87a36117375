#!/usr/bin/env node
// CI's check of the production configuration, without Docker: Parley started as docker-compose.yml's
// `parley` service and the Dockerfile's final stage would start it — the image's ENV, the service's
// environment (with `${VAR:?…}` and `${VAR:-…}` interpolated), the image's CMD — against the database
// given as the first argument (in place of the compose `postgres` service), on an empty database: it
// must become ready (`/health/ready`, as the image's HEALTHCHECK asks), seed no demo, and stop cleanly.
//
//   node scripts/compose-smoke.mjs postgres://postgres@127.0.0.1:5432/parley_ci_smoke
import { spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { readFileSync } from "node:fs"
import { createServer } from "node:net"
import { parse } from "yaml"

const root = new URL("..", import.meta.url).pathname
const databaseUrl = process.argv[2]
if (databaseUrl === undefined) {
  console.error("usage: node scripts/compose-smoke.mjs <postgres URL of an empty database>")
  process.exit(2)
}

const fail = (message) => {
  console.error(`compose smoke: ${message}`)
  process.exit(1)
}

const freePort = () =>
  new Promise((resolve) => {
    const server = createServer()
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })

// The image's final stage: its ENV and its CMD.
const dockerfile = readFileSync(new URL("Dockerfile", `file://${root}`), "utf8").replace(/\\\n/g, " ")
const finalStage = dockerfile.slice(dockerfile.lastIndexOf("\nFROM "))
const imageEnv = {}
for (const line of finalStage.split("\n").filter((l) => l.startsWith("ENV "))) {
  for (const [, name, value] of line.slice(4).matchAll(/([A-Z_][A-Z0-9_]*)=(\S+)/g)) imageEnv[name] = value
}
const cmdLine = finalStage.split("\n").find((l) => l.startsWith("CMD "))
if (cmdLine === undefined) fail("the Dockerfile's final stage has no CMD")
const command = JSON.parse(cmdLine.slice(4))

// The compose service's environment, interpolated as Compose does.
const given = { PARLEY_ADMIN_TOKEN: `padm_${randomBytes(24).toString("hex")}`, PARLEY_ENCRYPTION_KEY: randomBytes(32).toString("hex") }
const interpolate = (value) =>
  String(value).replace(/\$\{([A-Z_][A-Z0-9_]*)(?:(:?[?-])([^}]*))?\}/g, (_, name, op, arg) => {
    const set = given[name]
    if (set !== undefined && set !== "") return set
    if (op === ":?" || op === "?") fail(`${name} is required by docker-compose.yml: ${arg}`)
    return op === ":-" || op === "-" ? arg : ""
  })
const compose = parse(readFileSync(new URL("docker-compose.yml", `file://${root}`), "utf8"))
const service = compose.services?.parley
if (service === undefined) fail("docker-compose.yml has no `parley` service")
const serviceEnv = Object.fromEntries(Object.entries(service.environment ?? {}).map(([k, v]) => [k, interpolate(v)]))
if (serviceEnv.PARLEY_MODE !== "production") fail("the compose service does not run in production mode")

// Here, not in a container: the database given, free ports on loopback, no Jaeger to send traces to.
const port = await freePort()
const metricsPort = await freePort()
const env = {
  PATH: process.env.PATH,
  ...imageEnv,
  ...serviceEnv,
  DATABASE_URL: databaseUrl,
  PORT: String(port),
  METRICS_PORT: String(metricsPort),
  HOST: "127.0.0.1",
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: ""
}
const [program, ...args] = command
const child = spawn(program === "node" ? process.execPath : program, args, { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] })
let output = ""
child.stdout.on("data", (chunk) => (output += chunk))
child.stderr.on("data", (chunk) => (output += chunk))
const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)))

const deadline = Date.now() + 60_000
let ready = false
while (!ready && Date.now() < deadline) {
  if (child.exitCode !== null) fail(`Parley exited with code ${child.exitCode}:\n${output}`)
  ready = await fetch(`http://127.0.0.1:${port}/health/ready`).then((r) => r.ok, () => false)
  if (!ready) await new Promise((resolve) => setTimeout(resolve, 250))
}
if (!ready) {
  child.kill("SIGKILL")
  fail(`not ready within 60 s:\n${output}`)
}
const workspaces = await fetch(`http://127.0.0.1:${port}/admin/v1/workspaces`, {
  headers: { authorization: `Bearer ${given.PARLEY_ADMIN_TOKEN}` }
}).then((r) => r.json())
const metrics = await fetch(`http://127.0.0.1:${metricsPort}/metrics`).then((r) => r.status, () => 0)
child.kill("SIGTERM")
const code = await exited
if (!Array.isArray(workspaces) || workspaces.length !== 0) fail(`expected no workspace (no demo in production), got ${JSON.stringify(workspaces)}`)
if (metrics !== 200) fail(`/metrics on METRICS_PORT answered ${metrics}`)
if (code !== 0) fail(`exit code ${code} after SIGTERM:\n${output}`)
console.log(`compose smoke: \`${command.join(" ")}\` with the image's and the service's environment was ready on an empty database, seeded nothing, served /metrics, and stopped cleanly`)
