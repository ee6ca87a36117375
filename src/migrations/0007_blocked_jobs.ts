import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  // An ordered job behind a live (pending or running) job of its conversation cannot run: it is
  // `blocked`, and the claim's index leaves it out. Before, every claim read past such jobs (and past the
  // backlog of groups at their share) one by one: 230 ms per claim with 100k events queued behind 10k
  // retrying conversations, 164 ms with 100k due jobs of one integration at its share (EXPLAIN ANALYZE).
  yield* sql`ALTER TABLE jobs ADD COLUMN blocked boolean NOT NULL DEFAULT false`
  yield* sql`
    UPDATE jobs j SET blocked = true
    WHERE j.ordered AND j.status = 'pending' AND EXISTS (
      SELECT 1 FROM jobs e
      WHERE e.ordered AND e.conversation_id = j.conversation_id AND e.kind = j.kind
        AND e.seq < j.seq AND e.status IN ('pending', 'running'))`
  // Per lane kind and group, oldest first: the claim visits each group that has ready jobs and reads at
  // most its free share of them; a group at its share costs one index probe, whatever its backlog.
  yield* sql`CREATE INDEX jobs_ready_idx ON jobs (kind, group_key, run_at, seq) WHERE status = 'pending' AND NOT blocked`

  // Called when an ordered job ends (done or dead): the next live job of its conversation, if it is
  // waiting, may now run. The lock is the one `enqueue` holds while it decides whether a new job waits;
  // each statement of a (volatile) function sees what committed before it began, so a job enqueued
  // while this one was ending is seen here once the lock is held — neither side can miss the other.
  yield* sql`
    CREATE FUNCTION parley_unblock_next(conversation uuid, job_kind text, ended uuid) RETURNS void
    LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_advisory_xact_lock(hashtextextended(conversation::text, 0));
      UPDATE jobs SET blocked = false, updated_at = now()
      WHERE id = (
          SELECT id FROM jobs
          WHERE ordered AND conversation_id = conversation AND kind = job_kind AND id <> ended
            AND status IN ('pending', 'running')
          ORDER BY seq LIMIT 1)
        AND status = 'pending' AND blocked;
    END
    $$`
})
