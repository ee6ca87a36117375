import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // A reply's guardrail decisions (customerMessageGuardrails) and verifier verdicts (verifier,
  // verifierResolution): null for replies made without them, and for every reply made before.
  yield* sql`ALTER TABLE reply_metadata ADD COLUMN guardrails jsonb, ADD COLUMN verification jsonb`
})
