import * as SqlClient from "effect/sql/SqlClient"
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

  // Ungrouped due jobs, for the claim's branch that reads them: it scanned jobs_due_idx, which holds
  // every pending job, grouped and blocked ones too — 30 ms per claim with 100k deliveries due behind an
  // integration at its share (EXPLAIN ANALYZE). No lane's jobs are ungrouped today: this index is empty.
  yield* sql`CREATE INDEX jobs_ungrouped_ready_idx ON jobs (kind, run_at, seq)
    WHERE status = 'pending' AND NOT blocked AND group_key IS NULL`

  // The claim (see JobQueue.claim): up to `wanted` due jobs of the lane's kinds, leased to `claimer`,
  // oldest first, no group past `per_group` running; with the wait until the lane's next job falls due
  // and whether due jobs were left for a group at its share. A function, so that its plan is made once
  // per connection (a generic plan): planning the statement took 1.0–1.5 ms of each claim's 1.7 ms on
  // an idle queue, two claims on every message's path; through the function a claim takes 0.25 ms.
  //
  // A generic plan is made once, with the statistics of that moment — on a new database, those of an
  // empty table — and kept until the next ANALYZE. So the statement leaves the planner no choice that
  // depends on them: every read is an index probe or range driven by the step before (sequential scans,
  // hash and merge joins off); no EXISTS is turned into a join (OFFSET 0 keeps each a probe per row:
  // as a join, the share check read every due job, 3,000 of them per claim); the jobs to lease are
  // found by id from an array, not by a join the planner could turn around (it read every pending job
  // for each chosen one: 48 ms per claim during a burst, on a plan made when the table was empty).
  // JIT is off: inflated estimates once made PostgreSQL JIT-compile the claim, 870 ms per claim.
  yield* sql`
    CREATE FUNCTION parley_claim(lane text, claimer text, wanted int, per_group int, lease_seconds float8)
    RETURNS TABLE (job jsonb, wait float8, left_behind boolean)
    LANGUAGE plpgsql
    SET plan_cache_mode = force_generic_plan
    SET enable_seqscan = off
    SET enable_hashjoin = off
    SET enable_mergejoin = off
    SET jit = off
    AS $$
    #variable_conflict use_column
    BEGIN
      RETURN QUERY
      WITH RECURSIVE lane_kinds AS (
        SELECT unnest(string_to_array(lane, ',')) AS kind),
      -- The groups with ready jobs, one index probe each (a loose index scan of jobs_ready_idx).
      groups AS (
        SELECT l.kind, (
            SELECT j.group_key FROM jobs j
            WHERE j.status = 'pending' AND NOT j.blocked AND j.kind = l.kind AND j.group_key IS NOT NULL
            ORDER BY j.group_key LIMIT 1) AS group_key
        FROM lane_kinds l
        UNION ALL
        SELECT g.kind, (
            SELECT j.group_key FROM jobs j
            WHERE j.status = 'pending' AND NOT j.blocked AND j.kind = g.kind AND j.group_key > g.group_key
            ORDER BY j.group_key LIMIT 1)
        FROM groups g WHERE g.group_key IS NOT NULL),
      busy AS (
        SELECT j.group_key, count(*) AS running FROM jobs j
        WHERE j.status = 'running' AND j.kind IN (SELECT l.kind FROM lane_kinds l) AND j.group_key IS NOT NULL
        GROUP BY j.group_key),
      -- The groups whose oldest due job is among the oldest: no other group can have a job among the
      -- oldest ones claimed. A group at its share is not read at all.
      heads AS (
        SELECT g.kind, g.group_key FROM groups g
        CROSS JOIN LATERAL (
          SELECT j.run_at, j.seq FROM jobs j
          WHERE j.status = 'pending' AND NOT j.blocked AND j.kind = g.kind AND j.group_key = g.group_key
            AND j.run_at <= now()
          ORDER BY j.run_at, j.seq LIMIT 1) h
        WHERE g.group_key IS NOT NULL
          AND coalesce((SELECT b.running FROM busy b WHERE b.group_key = g.group_key), 0) < per_group
        ORDER BY h.run_at, h.seq
        LIMIT wanted),
      -- Those groups' oldest runnable jobs, up to a share each; and the ungrouped ones. Runnable: due,
      -- not waiting, and the first live one of its conversation (the order check stays: a blocked flag
      -- only spares the claim from reading the jobs that wait).
      candidates AS (
        SELECT c.* FROM heads g
        CROSS JOIN LATERAL (
          SELECT j.id, j.group_key, j.run_at, j.seq FROM jobs j
          WHERE j.kind = g.kind AND j.group_key = g.group_key
            AND j.status = 'pending' AND NOT j.blocked AND j.run_at <= now()
            AND (NOT j.ordered OR NOT EXISTS (
              SELECT 1 FROM jobs e
              WHERE e.ordered AND e.conversation_id = j.conversation_id AND e.kind = j.kind
                AND e.seq < j.seq AND e.status IN ('pending', 'running')
              OFFSET 0))
          ORDER BY j.run_at, j.seq
          LIMIT least(wanted, per_group)) c
        UNION ALL
        (SELECT j.id, j.group_key, j.run_at, j.seq FROM jobs j
         WHERE j.kind IN (SELECT l.kind FROM lane_kinds l) AND j.group_key IS NULL
           AND j.status = 'pending' AND NOT j.blocked AND j.run_at <= now()
           AND (NOT j.ordered OR NOT EXISTS (
             SELECT 1 FROM jobs e
             WHERE e.ordered AND e.conversation_id = j.conversation_id AND e.kind = j.kind
               AND e.seq < j.seq AND e.status IN ('pending', 'running')
             OFFSET 0))
         ORDER BY j.run_at, j.seq
         LIMIT wanted)),
      -- A group's share holds across the lane's kinds too.
      chosen AS (
        SELECT c.id FROM (
          SELECT c.*, row_number() OVER (PARTITION BY c.group_key ORDER BY c.run_at, c.seq) AS rank
          FROM candidates c) c
        WHERE c.group_key IS NULL
           OR c.rank + coalesce((SELECT b.running FROM busy b WHERE b.group_key = c.group_key), 0) <= per_group
        ORDER BY c.run_at, c.seq
        LIMIT wanted),
      taken AS (
        UPDATE jobs SET status = 'running', attempts = jobs.attempts + 1, locked_by = claimer,
            locked_until = now() + make_interval(secs => lease_seconds), updated_at = now()
        -- The status is checked again on the locked row: another instance may have claimed (and
        -- committed) a chosen job since this statement's snapshot; FOR UPDATE then sees its new
        -- version, which must not be claimed a second time.
        WHERE jobs.id = ANY (ARRAY(
            SELECT j.id FROM jobs j
            WHERE j.id = ANY (ARRAY(SELECT c.id FROM chosen c)) AND j.status = 'pending'
            FOR UPDATE SKIP LOCKED))
          AND jobs.status = 'pending'
        RETURNING jobs.id, jobs.kind, jobs.payload, jobs.attempts, jobs.trace_context, jobs.conversation_id,
          jobs.group_key, jobs.run_at, jobs.seq),
      -- Due jobs left for a group at its share (after this claim): one of its jobs ending frees a place
      -- for them. (Every part of the statement sees the same snapshot: the jobs just taken still look
      -- pending, hence the NOT IN.)
      leftover AS (
        SELECT EXISTS (
          SELECT 1 FROM groups g
          WHERE g.group_key IS NOT NULL
            AND coalesce((SELECT b.running FROM busy b WHERE b.group_key = g.group_key), 0)
                + (SELECT count(*) FROM taken t WHERE t.group_key = g.group_key) >= per_group
            AND EXISTS (
              SELECT 1 FROM jobs j
              WHERE j.status = 'pending' AND NOT j.blocked AND j.kind = g.kind AND j.group_key = g.group_key
                AND j.run_at <= now() AND j.id NOT IN (SELECT t.id FROM taken t)
              OFFSET 0)) AS value),
      -- The wait until the next job falls due, in the same snapshot: a job due before it was this
      -- claim's to take (or to leave, above), and one queued after it announces itself. The first of
      -- each kind by the index (a min() over all kinds read every future job).
      next_due AS (
        SELECT (extract(epoch FROM min(d.run_at) - now()) * 1000)::float8 AS value
        FROM lane_kinds l
        CROSS JOIN LATERAL (
          SELECT j.run_at FROM jobs j
          WHERE j.status = 'pending' AND NOT j.blocked AND j.kind = l.kind AND j.run_at > now()
          ORDER BY j.run_at LIMIT 1) d)
      SELECT CASE WHEN t.id IS NULL THEN NULL ELSE jsonb_build_object(
               'id', t.id, 'kind', t.kind, 'payload', t.payload, 'attempts', t.attempts,
               'traceContext', t.trace_context, 'conversationId', t.conversation_id, 'groupKey', t.group_key)
             END,
             n.value, l.value
      FROM next_due n CROSS JOIN leftover l LEFT JOIN taken t ON true
      ORDER BY t.run_at, t.seq;
    END
    $$`
})
