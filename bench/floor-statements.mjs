// The cost of one SQL statement in the Parley process's client stack against plain node-postgres, for
// the `floor` scenario: the same statement (Parley's integration look-up), 8 loops at once on an
// 8-connection pool, CPU time of this process per statement. Three ways:
//   pg        node-postgres Pool.query (what the baseline server does)
//   effect    @effect/sql-pg with Parley's client options (name transforms), `sql` template, rows as read
//   decoded   the same, rows decoded into Parley's Integration model (SqlSchema.findOneOption), as Parley reads it
// Each way runs `rounds` times in turns (pg, effect, decoded, pg, …) after a warm-up; the figure of a way
// is its median. Prints one JSON line. Usage: node bench/floor-statements.mjs DATABASE_URL ID WORKSPACE_ID [statements]
import { PgClient } from "@effect/sql-pg"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import * as SqlSchema from "effect/sql/SqlSchema"
import * as String from "effect/String"
import pg from "pg"
import { Integration } from "../dist/Domain/Integration.js"
import { INTEGRATION_LOOKUP as text } from "./lib/statements.mjs"

const [url, id, workspaceId, perLoopArg = "1500"] = process.argv.slice(2)
const LOOPS = 8
const perLoop = Number(perLoopArg)
const rounds = 3

const cpuPerStatementUs = async (run) => {
  await run(100)
  const before = process.cpuUsage()
  await run(perLoop)
  const used = process.cpuUsage(before)
  return (used.user + used.system) / (perLoop * LOOPS)
}

const pool = new pg.Pool({ connectionString: url, max: LOOPS })
const loops = (n, one) => Promise.all(Array.from({ length: LOOPS }, async () => { for (let i = 0; i < n; i++) await one() }))

const layer = PgClient.layer({
  url: Redacted.make(url),
  maxConnections: LOOPS,
  transformResultNames: String.snakeToCamel,
  transformQueryNames: String.camelToSnake,
  transformJson: false
})

const figures = await Effect.runPromise(Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const find = SqlSchema.findOneOption({
    Request: Schema.Struct({ id: Schema.String, workspaceId: Schema.String }),
    Result: Integration,
    execute: (key) => sql.unsafe(text, [key.id, key.workspaceId])
  })
  const effectLoops = (statement) => (n) =>
    Effect.runPromise(Effect.all(Array.from({ length: LOOPS }, () => Effect.repeat(statement, { times: n - 1 })), { concurrency: "unbounded" }))
  const ways = {
    pg: (n) => loops(n, () => pool.query(text, [id, workspaceId])),
    effect: effectLoops(sql.unsafe(text, [id, workspaceId])),
    decoded: effectLoops(Effect.flatMap(find({ id, workspaceId }), (row) => row._tag === "Some" ? Effect.void : Effect.die("no row")))
  }
  const samples = { pg: [], effect: [], decoded: [] }
  for (let r = 0; r < rounds; r++) {
    for (const [name, run] of Object.entries(ways)) samples[name].push(yield* Effect.promise(() => cpuPerStatementUs(run)))
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  return Object.fromEntries(Object.entries(samples).map(([name, xs]) => [name, Math.round(median(xs) * 10) / 10]))
}).pipe(Effect.provide(layer), Effect.scoped))
await pool.end()
console.log(JSON.stringify({ statementsPerWay: perLoop * LOOPS * rounds, cpuUsPerStatement: figures }))
