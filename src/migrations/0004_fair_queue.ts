import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  // Whose work a job is (a workspace, an integration): the pool's lanes share out their capacity by it.
  yield* sql`ALTER TABLE jobs ADD COLUMN group_key text`
  yield* sql`UPDATE jobs j SET group_key = e.integration_id::text FROM events e
             WHERE j.kind = 'deliver_event' AND j.key = e.id::text AND j.status IN ('pending', 'running')`
  yield* sql`UPDATE jobs j SET group_key = c.workspace_id::text FROM conversations c
             WHERE j.kind = 'generate_reply' AND j.conversation_id = c.id AND j.status IN ('pending', 'running')`
  // The claim reads due pending jobs of a lane in order: an index range, however many are scheduled
  // for later. Expired leases are reaped to pending apart, so the claim needs no OR over running jobs.
  yield* sql`CREATE INDEX jobs_due_idx ON jobs (kind, run_at, seq) WHERE status = 'pending'`
  yield* sql`CREATE INDEX jobs_running_group_idx ON jobs (kind, group_key) WHERE status = 'running'`
  yield* sql`CREATE INDEX jobs_lease_idx ON jobs (locked_until) WHERE status = 'running'`
  yield* sql`DROP INDEX jobs_claimable_idx`
})
