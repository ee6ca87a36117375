import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  // The order events were created in. `created_at` has milliseconds: the events a transaction emits in a
  // burst share them, and ordered by `created_at, id` a replay re-queued them (and so re-sent one
  // conversation's events) out of order.
  yield* sql`ALTER TABLE events ADD COLUMN seq bigint GENERATED ALWAYS AS IDENTITY`
})
