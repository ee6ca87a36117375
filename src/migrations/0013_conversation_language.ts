import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // The customer's language as the last reply detected it (en, es, fr, de, pt), for Parley's own texts
  // when a later message says too little to tell (docs/ai.md, "Languages").
  yield* sql`ALTER TABLE conversations ADD COLUMN language text`
})
