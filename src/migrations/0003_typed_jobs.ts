import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  // Typed jobs: ordering is a property of the kind, not of one kind's name in the claim query.
  yield* sql`ALTER TABLE jobs ADD COLUMN ordered boolean NOT NULL DEFAULT false`
  // At most one live job per key (a delivery's event id): a replay brings it forward instead of adding one.
  yield* sql`ALTER TABLE jobs ADD COLUMN key text`
  // Set by a replay while the job runs: it runs again right after, whatever that run's outcome.
  yield* sql`ALTER TABLE jobs ADD COLUMN rerun boolean NOT NULL DEFAULT false`
  yield* sql`UPDATE jobs SET ordered = (conversation_id IS NOT NULL), key = payload->>'eventId'
             WHERE kind = 'deliver_event'`
  // Jobs queued twice for one event (replays before this migration): the earliest live one stays.
  yield* sql`
    UPDATE jobs j SET status = 'done', finished_at = now(), last_error = 'superseded: one live job per event'
    WHERE j.key IS NOT NULL AND j.status IN ('pending', 'running') AND EXISTS (
      SELECT 1 FROM jobs o
      WHERE o.kind = j.kind AND o.key = j.key AND o.status IN ('pending', 'running') AND o.seq < j.seq)`
  yield* sql`CREATE UNIQUE INDEX jobs_live_key_idx ON jobs (kind, key)
             WHERE key IS NOT NULL AND status IN ('pending', 'running')`
  yield* sql`DROP INDEX jobs_deliveries_in_flight_idx`
  yield* sql`DROP INDEX jobs_event_idx`
  yield* sql`CREATE INDEX jobs_ordered_live_idx ON jobs (conversation_id, kind, seq)
             WHERE ordered AND status IN ('pending', 'running')`
  // Leases held by an instance (the heartbeat), and finished jobs by age (the purge).
  yield* sql`CREATE INDEX jobs_locked_by_idx ON jobs (locked_by) WHERE status = 'running'`
  yield* sql`CREATE INDEX jobs_finished_idx ON jobs (finished_at) WHERE status IN ('done', 'dead')`

  // Bumped by every replay: an attempt that was in flight during a replay does not settle the event.
  yield* sql`ALTER TABLE events ADD COLUMN generation integer NOT NULL DEFAULT 0`
  // The dead-letter gauge counts these every few seconds: an index-only count.
  yield* sql`CREATE INDEX events_dead_idx ON events (dead_at) WHERE status = 'dead'`
})
