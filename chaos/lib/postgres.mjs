// A throwaway PostgreSQL cluster the chaos harness owns: initdb into a temp dir, started with pg_ctl on a
// free port (unix socket in the temp dir), restarted and stopped at will, deleted at the end. It never
// touches any other cluster on the machine.
import { execFileSync, spawn, spawnSync } from "node:child_process"
import { chmodSync, chownSync, existsSync, mkdirSync, rmSync } from "node:fs"
import { join } from "node:path"
import { freePort } from "./net.mjs"

const candidates = () => {
  const dirs = []
  if (process.env.PG_BIN) dirs.push(process.env.PG_BIN)
  for (const version of ["17", "16", "15", "14"]) dirs.push(`/usr/lib/postgresql/${version}/bin`)
  return dirs
}

const findBin = () => {
  const dir = candidates().find((d) => existsSync(join(d, "initdb")) && existsSync(join(d, "pg_ctl")))
  if (dir === undefined) throw new Error("No PostgreSQL server binaries found (set PG_BIN to the folder of initdb and pg_ctl)")
  return dir
}

/** initdb and postgres refuse to run as root: then they run as the `postgres` user. */
const runAs = () => {
  if (typeof process.getuid !== "function" || process.getuid() !== 0) return {}
  const line = execFileSync("getent", ["passwd", "postgres"], { encoding: "utf8" }).trim()
  const [, , uid, gid] = line.split(":")
  return { uid: Number(uid), gid: Number(gid) }
}

export const startPostgres = async (root, log) => {
  const bin = findBin()
  const owner = runAs()
  const data = join(root, "pgdata")
  const socketDir = join(root, "pgsocket")
  mkdirSync(socketDir, { recursive: true })
  if (owner.uid !== undefined) {
    chownSync(root, owner.uid, owner.gid)
    chownSync(socketDir, owner.uid, owner.gid)
  }
  chmodSync(root, 0o755)
  const port = await freePort(55432)
  const run = (tool, args, options = {}) => {
    const result = spawnSync(join(bin, tool), args, { encoding: "utf8", ...owner, ...options })
    if (result.status !== 0) {
      throw new Error(`${tool} ${args.join(" ")} failed (${result.status}): ${result.stderr}${result.stdout}`)
    }
    return result.stdout
  }
  run("initdb", ["-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"])
  const options = [
    `-p ${port}`,
    "-c listen_addresses=127.0.0.1",
    `-c unix_socket_directories=${socketDir}`,
    "-c fsync=off",
    "-c synchronous_commit=off",
    "-c full_page_writes=off",
    "-c max_connections=100",
    "-c shared_buffers=64MB"
  ].join(" ")
  const logFile = join(root, "postgres.log")
  const start = () => run("pg_ctl", ["-D", data, "-l", logFile, "-o", options, "-w", "-t", "60", "start"])
  start()
  log(`PostgreSQL (throwaway) on 127.0.0.1:${port}, data in ${data}`)
  let running = true
  const psql = existsSync(join(bin, "psql")) ? join(bin, "psql") : "psql"
  /** Runs SQL on a database of this cluster (directly, not through any proxy); stdout, unaligned. */
  const query = (database, sql) => {
    const result = spawnSync(psql, ["-h", "127.0.0.1", "-p", String(port), "-U", "postgres", "-d", database, "-v",
      "ON_ERROR_STOP=1", "-Atq", "-c", sql], { encoding: "utf8", maxBuffer: 256 * 1024 * 1024 })
    if (result.status !== 0) throw new Error(`psql failed: ${result.stderr}`)
    return result.stdout
  }
  return {
    port,
    url: (database) => `postgres://postgres@127.0.0.1:${port}/${database}`,
    query,
    /** Rows of a SELECT as objects. */
    rows: (database, select) => JSON.parse(query(database, `SELECT coalesce(json_agg(t), '[]') FROM (${select}) t`)),
    createDatabase: (name) => query("postgres", `CREATE DATABASE ${name}`),
    /** `pg_ctl restart -m fast`: every connection is cut, the server is back when this returns. */
    restart: () =>
      new Promise((resolve, reject) => {
        // Asynchronous: the harness's receiver and load keep running while PostgreSQL restarts.
        const child = spawn(join(bin, "pg_ctl"), ["-D", data, "-l", logFile, "-o", options, "-m", "fast", "-w", "-t", "60", "restart"], {
          ...owner,
          stdio: "ignore"
        })
        child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`pg_ctl restart failed (${code})`))))
      }),
    stop: () => {
      if (!running) return
      running = false
      spawnSync(join(bin, "pg_ctl"), ["-D", data, "-m", "immediate", "-w", "-t", "30", "stop"], { ...owner, encoding: "utf8" })
    },
    remove: () => rmSync(root, { recursive: true, force: true }),
    logFile
  }
}
