import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  // `parley_unblock_next` (0007) now says whether it let a job run: the worker claims again after a job
  // ends only when that ending made a job claimable (or its lane left due jobs behind), not after each
  // job (a claim that came back empty: two per message, of its 39 statements). Same body; the return
  // type cannot be changed in place. An instance still running the old code ignores the result.
  yield* sql`DROP FUNCTION parley_unblock_next(uuid, text, uuid)`
  yield* sql`
    CREATE FUNCTION parley_unblock_next(conversation uuid, job_kind text, ended uuid) RETURNS boolean
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
      RETURN FOUND;
    END
    $$`
})
