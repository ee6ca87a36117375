// Query plans of the statements Parley actually sent (recorded by the pg-sniffer, with the parameters of
// one real execution): each is run under EXPLAIN (ANALYZE, BUFFERS) inside a transaction that is rolled
// back, so writes (the job claim is an UPDATE) leave nothing behind.
import pg from "pg"
import { normalize } from "./pg-sniffer.mjs"
import { round } from "./stats.mjs"

const NOT_EXPLAINABLE = /^(BEGIN|COMMIT|ROLLBACK|START|SAVEPOINT|RELEASE|LISTEN|UNLISTEN|SET|SHOW|RESET|DISCARD|DEALLOCATE|LOCK|SELECT pg_notify|SELECT pg_advisory|SELECT 1$)/i

const walk = (node, visit) => {
  visit(node)
  for (const child of node.Plans ?? []) walk(child, visit)
}

/** One entry per distinct statement: execution time, sequential scans, buffers, the plan's top nodes. */
export const explainStatements = async (databaseUrl, log) => {
  const distinct = new Map()
  for (const entry of log) {
    const text = normalize(entry.text)
    if (!NOT_EXPLAINABLE.test(text) && !distinct.has(text)) distinct.set(text, entry)
  }
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  const results = []
  try {
    for (const [text, entry] of distinct) {
      try {
        await client.query("BEGIN")
        const { rows } = await client.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${entry.text}`, entry.parameters)
        const [explained] = rows[0]["QUERY PLAN"]
        const seqScans = []
        const nodes = []
        walk(explained.Plan, (node) => {
          nodes.push(node["Node Type"])
          if (node["Node Type"] === "Seq Scan") seqScans.push(`${node["Relation Name"]} (${node["Actual Rows"]} rows)`)
        })
        results.push({
          executionMs: round(explained["Execution Time"], 3),
          seqScans,
          sharedBuffers: (explained.Plan["Shared Hit Blocks"] ?? 0) + (explained.Plan["Shared Read Blocks"] ?? 0),
          nodes: nodes.slice(0, 8).join(" > "),
          statement: text
        })
      } catch (error) {
        results.push({ error: error.message, statement: text })
      } finally {
        await client.query("ROLLBACK").catch(() => undefined)
      }
    }
  } finally {
    await client.end()
  }
  return results.sort((a, b) => (b.executionMs ?? -1) - (a.executionMs ?? -1))
}
