// The benchmark's own PostgreSQL databases (`parley_bench_<run>_<label>`): created fresh, dropped at the
// end. Only names this run made are ever dropped.
import pg from "pg"

/** The maintenance connection (the server's `postgres` database); BENCH_PG_URL overrides it. */
export const adminUrl = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres"

const created = new Set()

/** The URL of database `name` on the same server as `adminUrl`. */
export const urlOf = (name, { port } = {}) => {
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  if (port !== undefined) url.port = String(port)
  return url.toString()
}

/** Runs one statement on a short-lived connection and returns its rows. */
export const query = async (url, text, values = []) => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return (await client.query(text, values)).rows
  } finally {
    await client.end()
  }
}

const safeName = /^parley_bench_[a-z0-9_]+$/

export const createDatabase = async (runId, label) => {
  const name = `parley_bench_${runId}_${label}`.toLowerCase().replace(/[^a-z0-9_]/g, "_")
  if (!safeName.test(name)) throw new Error(`bad database name ${name}`)
  await query(adminUrl, `CREATE DATABASE ${name}`)
  created.add(name)
  return { name, url: urlOf(name) }
}

export const dropDatabase = async (name) => {
  if (!created.has(name)) throw new Error(`refusing to drop ${name}: not created by this run`)
  await query(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  created.delete(name)
}

/** Drops every database this run created (best effort: reports failures, never throws). */
export const dropAll = async () => {
  for (const name of [...created]) {
    try {
      await dropDatabase(name)
    } catch (error) {
      process.stderr.write(`could not drop ${name}: ${error.message}\n`)
    }
  }
}

export const serverVersion = async () => (await query(adminUrl, "SHOW server_version"))[0].server_version

/** Pids of the server processes serving `database` (for their CPU time). */
export const backendPids = async (database) =>
  (await query(adminUrl, "SELECT pid FROM pg_stat_activity WHERE datname = $1", [database])).map((row) => row.pid)
