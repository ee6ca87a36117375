import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // The cached summary of a conversation's earlier messages, those that no longer fit in the model's
  // context budget, and how many messages it covers (docs/ai.md, "Context budget").
  yield* sql`ALTER TABLE conversations ADD COLUMN context_summary text, ADD COLUMN context_summary_messages integer`
})
