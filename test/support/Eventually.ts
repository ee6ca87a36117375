/** Waiting for what happens in the background (workers, deliveries), on the real clock. */
import * as Effect from "effect/Effect"
import * as SqlClient from "effect/sql/SqlClient"

/**
 * Runs `check` every 25 ms until `predicate` holds of its result, which it returns; dies after
 * `timeoutMs` with the last result, so the failure says what was seen.
 */
export const eventually = <A, E, R>(
  check: Effect.Effect<A, E, R>,
  predicate: (value: A) => boolean,
  timeoutMs = 15_000
): Effect.Effect<A, E, R> =>
  Effect.gen(function*() {
    const deadline = Date.now() + timeoutMs
    while (true) {
      const value = yield* check
      if (predicate(value)) return value
      if (Date.now() > deadline) {
        return yield* Effect.die(`Timed out after ${timeoutMs} ms; last seen: ${JSON.stringify(value)}`)
      }
      yield* Effect.sleep("25 millis")
    }
  })

/**
 * Waits until no job of `tenant` is pending or running (jobs are grouped by workspace, its replies,
 * and by integration, its deliveries): from then on the workers send nothing more for it unless
 * something new is queued. What a test that checks "nothing else arrives" waits for, instead of a while.
 */
export const jobsSettled = (tenant: { readonly workspaceId: string; readonly integrationId: string }, timeoutMs?: number) =>
  eventually(
    Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql<{ readonly kind: string; readonly status: string }>`
        SELECT kind, status FROM jobs
        WHERE group_key IN (${tenant.workspaceId}, ${tenant.integrationId}) AND status IN ('pending', 'running')`).pipe(
        Effect.orDie
      ),
    (live) => live.length === 0,
    timeoutMs
  )
