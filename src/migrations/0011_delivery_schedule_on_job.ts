import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  // A delivery's retry schedule is its job's `run_at` alone: the event's copy went out of step with it
  // (a crash between the attempt's record and the job's settlement, a replay during an attempt), and
  // the API now reads the job's (`Delivery/Repo.ts`). The column stays, written by nothing, while
  // instances of an earlier version may still run beside this one (a rolling upgrade: they write it);
  // a later release drops it.
  yield* sql`COMMENT ON COLUMN events.next_attempt_at IS
    'Unused since migration 0011: a delivery''s next attempt is its job''s run_at. Dropped in a later release.'`
})
