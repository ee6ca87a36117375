/**
 * The job queue's statements: one function per statement, its request and its rows typed with Schema.
 * `JobQueue` (`Queue.ts`) is their API — which statements a call runs, in which transaction, what it
 * notifies — and the place that explains the queue's design (ordering, keys, the claim).
 *
 * The order key (`Job.OrderKey`) is kept in the column `conversation_id`, a `uuid`: the functions the
 * claim runs (`parley_claim`, `parley_unblock_next`, migrations 0007 and 0008) and the indexes of
 * migrations 0001–0003 read it by that name, and renaming it would take a migration recreating them
 * for the name only. So an order key is a UUID (the features give their conversation's id), and the
 * column keeps its historical name; `parley_claim`'s rows name it `conversationId` too (`ClaimedRow`).
 * Order locks hash the key's canonical text (`::uuid::text`), as `parley_unblock_next` does.
 */
import * as SqlClient from "effect/sql/SqlClient"
import * as SqlSchema from "effect/sql/SqlSchema"
import type * as Statement from "effect/sql/Statement"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { JobId } from "../Domain/Ids.js"
import { Claimed, OrderKey, TraceContext } from "./Job.js"
import { JOBS_CHANNEL, notifySql } from "./Notification.js"

/** A job's id. */
const JobRow = Schema.Struct({ id: JobId })

/** A job queued or moved, and when it is due (Unix ms). */
const DueRow = Schema.Struct({ id: JobId, due: Schema.Number })

/** The live job of a keyed kind. */
const KindKey = Schema.Struct({ kind: Schema.String, key: Schema.String })

/** Keys as one JSON array parameter: one statement whatever their number. */
const JsonList = <S extends Schema.Constraint>(item: S) => Schema.fromJsonString(Schema.Array(item))

/** A job to insert (`insert`). */
const NewJob = Schema.Struct({
  kind: Schema.String,
  payload: Schema.fromJsonString(Schema.Unknown),
  orderKey: Schema.NullOr(OrderKey),
  /** Ordered: its kind is, and it has an order key. */
  ordered: Schema.Boolean,
  key: Schema.NullOr(Schema.String),
  group: Schema.NullOr(Schema.String),
  delaySeconds: Schema.Number,
  traceContext: Schema.NullOr(Schema.fromJsonString(TraceContext))
})

/** A claimed job as `parley_claim` writes it: the order key under its column's name. */
const ClaimedRow = Claimed.pipe(Schema.encodeKeys({ orderKey: "conversationId" }))

/** A row of a claim: one per job taken (none: one row without a job), each with the round's figures. */
const ClaimRow = Schema.Struct({
  job: Schema.NullOr(ClaimedRow),
  wait: Schema.NullOr(Schema.Number),
  leftBehind: Schema.Boolean
})

/** A run of a job, as the instance that claimed it knows it: what guards its settlement. */
const Run = Schema.Struct({ id: JobId, instance: Schema.String, attempts: Schema.Number })

/** A run to be retried at the instant `at` (ISO), else after `delay` seconds. */
const RetriedRun = Schema.Struct({
  ...Run.fields,
  delay: Schema.Number,
  at: Schema.NullOr(Schema.String),
  error: Schema.String
})

/**
 * What settling runs let happen: the next job of an order key let run (`unblocked`), runs asked for
 * meanwhile made due (`reruns`).
 */
const EndingRow = Schema.Struct({ unblocked: Schema.NullOr(Schema.Boolean), reruns: Schema.Number })

const DepthRow = Schema.Struct({ pending: Schema.Number, oldestSeconds: Schema.NullOr(Schema.Number) })

export class QueueRepo extends Context.Service<QueueRepo>()("Parley/QueueRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** When a row is due, in Unix ms (what a notification carries). */
    const dueMillis = sql`(extract(epoch FROM run_at) * 1000)::float8`

    // --- Queueing ------------------------------------------------------------------------------------

    /** The lock that orders one key's enqueuers: held to the end of the caller's transaction. */
    const lockOrder = SqlSchema.void({
      Request: OrderKey,
      execute: (orderKey) => sql`SELECT pg_advisory_xact_lock(hashtextextended(${orderKey}::uuid::text, 0))`
    })

    /**
     * The INSERT of one job, refused (no row) when its key has a live job; `blocked` when a live job of
     * its order key is ahead of it (decided under `lockOrder`).
     */
    const insertStatement = (job: typeof NewJob.Encoded) =>
      sql`
        INSERT INTO jobs (kind, payload, conversation_id, ordered, key, group_key, run_at, trace_context, blocked)
        VALUES (${job.kind}, ${job.payload}::jsonb, ${job.orderKey}, ${job.ordered}, ${job.key},
                ${job.group}, now() + make_interval(secs => ${job.delaySeconds}),
                ${job.traceContext}::jsonb,
                ${job.ordered} AND EXISTS (
                  SELECT 1 FROM jobs e
                  WHERE e.ordered AND e.conversation_id = ${job.orderKey} AND e.kind = ${job.kind}
                    AND e.status IN ('pending', 'running')))
        ON CONFLICT (kind, key) WHERE key IS NOT NULL AND status IN ('pending', 'running') DO NOTHING
        RETURNING id, ${dueMillis} AS due`

    /**
     * A statement that returns a job's `id` and `due` time, with a notification of the job's kind and
     * due time sent by the same statement (delivered at commit).
     */
    const notifying = <R extends { readonly kind: string }>(statement: (request: R) => Statement.Fragment) =>
    (request: R) =>
      sql`WITH changed AS (${statement(request)})
          SELECT id, due, ${notifySql(sql, request.kind, sql`due`)} FROM changed`

    /** Inserts a job: its id and due time; none when its key's live job stands. */
    const insert = SqlSchema.findOneOption({ Request: NewJob, Result: DueRow, execute: insertStatement })

    /** `insert`, notifying listeners in the same statement (at commit): PostgreSQL only. */
    const insertNotifying = SqlSchema.findOneOption({ Request: NewJob, Result: DueRow, execute: notifying(insertStatement) })

    /** The live (pending or running) job of a key. */
    const liveJob = SqlSchema.findOneOption({
      Request: KindKey,
      Result: JobRow,
      execute: ({ key, kind }) =>
        sql`SELECT id FROM jobs WHERE kind = ${kind} AND key = ${key} AND status IN ('pending', 'running')`
    })

    /** A notification of `payload` (`Notification.encode`), delivered at commit. */
    const notify = SqlSchema.void({
      Request: Schema.String,
      execute: (payload) => sql`SELECT pg_notify(${JOBS_CHANNEL}, ${payload})`
    })

    // --- Keyed jobs: brought forward, moved, cancelled -----------------------------------------------

    /**
     * The live job of a key made due now (pending), or asked to run again right after its current run
     * (running: its `run_at` is when that next run is due).
     */
    const runNow = SqlSchema.findAll({
      Request: KindKey,
      Result: JobRow,
      execute: ({ key, kind }) =>
        sql`
          UPDATE jobs
          SET run_at = least(run_at, now()), rerun = (status = 'running'), updated_at = now()
          WHERE kind = ${kind} AND key = ${key} AND status IN ('pending', 'running')
          RETURNING id`
    })

    /** When `reschedule` moves a job to: the instant `at` (ISO), else `delaySeconds` from now. */
    const RunAt = Schema.Struct({ ...KindKey.fields, at: Schema.NullOr(Schema.String), delaySeconds: Schema.Number })

    const rescheduleStatement = ({ at, delaySeconds, key, kind }: typeof RunAt.Encoded) =>
      sql`
        UPDATE jobs
        SET run_at = coalesce(${at}::timestamptz, now() + make_interval(secs => ${delaySeconds})),
            rerun = rerun OR status = 'running', updated_at = now()
        WHERE kind = ${kind} AND key = ${key} AND status IN ('pending', 'running')
        RETURNING id, ${dueMillis} AS due`

    /** The live job of a key moved (a running one: its next run); none when the key has no live job. */
    const reschedule = SqlSchema.findOneOption({ Request: RunAt, Result: DueRow, execute: rescheduleStatement })

    /** `reschedule`, notifying listeners in the same statement (at commit): PostgreSQL only. */
    const rescheduleNotifying = SqlSchema.findOneOption({
      Request: RunAt,
      Result: DueRow,
      execute: notifying(rescheduleStatement)
    })

    /** The order lock of a key's pending ordered job (`lockOrder`'s, found through the job). */
    const lockOrderOfPending = SqlSchema.void({
      Request: KindKey,
      execute: ({ key, kind }) =>
        sql`
          SELECT pg_advisory_xact_lock(hashtextextended(conversation_id::text, 0)) FROM jobs
          WHERE kind = ${kind} AND key = ${key} AND status = 'pending' AND ordered`
    })

    /** Deletes a key's pending job; the next of its order key, if it waited for it, may run. */
    const deletePending = SqlSchema.findOne({
      Request: KindKey,
      Result: Schema.Struct({ removed: Schema.Number, unblocked: Schema.NullOr(Schema.Boolean) }),
      execute: ({ key, kind }) =>
        sql`
          WITH removed AS (
            DELETE FROM jobs WHERE kind = ${kind} AND key = ${key} AND status = 'pending'
            RETURNING id, ordered, conversation_id, kind),
          unblocked AS (
            SELECT parley_unblock_next(conversation_id, kind, id) AS freed FROM removed WHERE ordered)
          SELECT (SELECT count(*) FROM removed)::int AS removed, (SELECT bool_or(freed) FROM unblocked) AS unblocked`
    })

    /** Drops the run again asked for of a key's running job. */
    const dropRerun = SqlSchema.findAll({
      Request: KindKey,
      Result: JobRow,
      execute: ({ key, kind }) =>
        sql`
          UPDATE jobs SET rerun = false, updated_at = now()
          WHERE kind = ${kind} AND key = ${key} AND status = 'running' AND rerun
          RETURNING id`
    })

    // --- Replacing many keyed jobs at once (replay) --------------------------------------------------

    const KindKeys = Schema.Struct({ kind: Schema.String, keys: JsonList(Schema.String) })

    /** The running jobs of `keys`, asked to run again right after their current run: their keys. */
    const rerunRunning = SqlSchema.findAll({
      Request: KindKeys,
      Result: Schema.Struct({ key: Schema.String }),
      execute: ({ keys, kind }) =>
        sql`
          UPDATE jobs SET rerun = true, run_at = least(run_at, now()), updated_at = now()
          WHERE id IN (
            SELECT id FROM jobs
            WHERE kind = ${kind} AND status = 'running'
              AND key IN (SELECT jsonb_array_elements_text(${keys}::jsonb))
            ORDER BY id FOR UPDATE)
            AND status = 'running'
          RETURNING key`
    })

    /** `lockOrder` for each of `orderKeys`, in one order. */
    const lockOrders = SqlSchema.void({
      Request: JsonList(OrderKey),
      execute: (orderKeys) =>
        sql`
          SELECT pg_advisory_xact_lock(hashtextextended(k::text, 0))
          FROM (SELECT jsonb_array_elements_text(${orderKeys}::jsonb)::uuid AS k ORDER BY 1) locks`
    })

    /** The pending jobs of `keys`, retired (done, `superseded`). */
    const supersedePending = SqlSchema.void({
      Request: KindKeys,
      execute: ({ keys, kind }) =>
        sql`
          UPDATE jobs SET status = 'done', last_error = 'superseded', finished_at = now(), updated_at = now()
          WHERE kind = ${kind} AND status = 'pending'
            AND key IN (SELECT jsonb_array_elements_text(${keys}::jsonb))`
    })

    /** Jobs of one keyed kind, due now, inserted in the items' order (their `seq`); their ids. */
    const insertMany = SqlSchema.findAll({
      Request: Schema.Struct({
        kind: Schema.String,
        /** The kind is ordered: items with an order key are. */
        ordered: Schema.Boolean,
        traceContext: Schema.NullOr(Schema.fromJsonString(TraceContext)),
        items: JsonList(Schema.Struct({
          payload: Schema.Unknown,
          key: Schema.String,
          orderKey: Schema.NullOr(OrderKey),
          group: Schema.NullOr(Schema.String)
        }))
      }),
      Result: JobRow,
      execute: ({ items, kind, ordered, traceContext }) =>
        sql`
          INSERT INTO jobs (kind, payload, conversation_id, ordered, key, group_key, run_at, trace_context)
          SELECT ${kind}, item->'payload', (item->>'orderKey')::uuid,
                 ${ordered} AND item->>'orderKey' IS NOT NULL, item->>'key', item->>'group', now(),
                 ${traceContext}::jsonb
          FROM jsonb_array_elements(${items}::jsonb) WITH ORDINALITY AS t(item, n)
          ORDER BY n
          ON CONFLICT (kind, key) WHERE key IS NOT NULL AND status IN ('pending', 'running') DO NOTHING
          RETURNING id`
    })

    /**
     * Of the live ordered jobs of `orderKeys`, only each key's first may run; the others wait
     * (`blocked`). One pass over their live jobs, reached through the list (an index probe each): jobs
     * just inserted have no statistics yet, and a plan that re-read the list per job was quadratic.
     */
    const reblock = SqlSchema.void({
      Request: Schema.Struct({ kind: Schema.String, orderKeys: JsonList(OrderKey) }),
      execute: ({ kind, orderKeys }) =>
        sql`
          WITH order_key AS MATERIALIZED (
            SELECT DISTINCT jsonb_array_elements_text(${orderKeys}::jsonb)::uuid AS id),
          live AS MATERIALIZED (
            SELECT j.id, j.status, j.blocked, j.seq = min(j.seq) OVER (PARTITION BY j.conversation_id) AS head
            FROM order_key o
            JOIN jobs j ON j.conversation_id = o.id AND j.kind = ${kind}
              AND j.ordered AND j.status IN ('pending', 'running'))
          UPDATE jobs SET blocked = NOT live.head, updated_at = now()
          FROM live WHERE jobs.id = live.id AND live.status = 'pending' AND live.blocked = live.head`
    })

    /** Removes the pending jobs of `groups`: their ids. */
    const deleteGroups = SqlSchema.findAll({
      Request: Schema.Array(Schema.String),
      Result: JobRow,
      execute: (groups) => sql`DELETE FROM jobs WHERE status = 'pending' AND group_key IN ${sql.in(groups)} RETURNING id`
    })

    // --- The pool's bookkeeping ----------------------------------------------------------------------

    /** The claim: `parley_claim` (migration 0008), one statement whose plan each connection keeps. */
    const claim = SqlSchema.findAll({
      Request: Schema.Struct({
        instance: Schema.String,
        /** The lane's kinds, as the function takes them: one comma-separated text. */
        kinds: Schema.Array(Schema.String),
        limit: Schema.Number,
        perGroup: Schema.Number,
        leaseSeconds: Schema.Number
      }),
      Result: ClaimRow,
      execute: ({ instance, kinds, leaseSeconds, limit, perGroup }) =>
        sql`SELECT job, wait, left_behind
            FROM parley_claim(${kinds.join(",")}, ${instance}, ${limit}, ${perGroup}, ${leaseSeconds})`
    })

    /** Jobs whose lease expired made pending again: their ids. */
    const reap = sql`
      UPDATE jobs SET status = 'pending', rerun = false, locked_by = NULL, locked_until = NULL, updated_at = now()
      WHERE id IN (
        SELECT id FROM jobs WHERE status = 'running' AND locked_until < now() ORDER BY id FOR UPDATE SKIP LOCKED)
        AND status = 'running' AND locked_until < now()
      RETURNING id`.pipe(Effect.flatMap(Schema.decodeUnknownEffect(Schema.Array(JobRow))))

    /** The leases of every job `instance` runs, renewed: the ids it still holds. */
    const heartbeat = SqlSchema.findAll({
      Request: Schema.Struct({ instance: Schema.String, leaseSeconds: Schema.Number }),
      Result: JobRow,
      execute: ({ instance, leaseSeconds }) =>
        sql`
          UPDATE jobs SET locked_until = now() + make_interval(secs => ${leaseSeconds})
          WHERE id IN (
            SELECT id FROM jobs WHERE locked_by = ${instance} AND status = 'running' ORDER BY id FOR UPDATE)
            AND locked_by = ${instance} AND status = 'running'
          RETURNING id`
    })

    /**
     * `update` (an UPDATE of jobs without RETURNING), and for each job it ended (done or dead) the next
     * of its order key let run, if it waits for it.
     */
    const ending = (update: Statement.Fragment) =>
      sql`
        WITH settled AS (${update} RETURNING id, status, ordered, conversation_id, kind),
        unblocked AS (
          SELECT parley_unblock_next(conversation_id, kind, id) AS freed FROM settled
          WHERE ordered AND status IN ('done', 'dead')
          -- The keys' locks in one order (evaluated after the sort: the function is volatile).
          ORDER BY conversation_id)
        -- An aggregate reads every row (an EXISTS would stop at the first, leaving the rest blocked),
        -- and each column is computed.
        SELECT (SELECT bool_or(freed) FROM unblocked) AS unblocked,
               (SELECT count(*) FROM settled WHERE status = 'pending')::int AS reruns`

    /**
     * When a job whose run again was asked for meanwhile is next due: at the time asked for
     * (`reschedule`), at once if that has passed (`runNow`).
     */
    const rerunAt = sql`CASE WHEN rerun THEN greatest(run_at, now()) ELSE now() END`

    /** A done job: due again if a rerun was asked for meanwhile (`runNow`, `reschedule`), else finished. */
    const doneColumns = sql`status = CASE WHEN rerun THEN 'pending' ELSE 'done' END,
      finished_at = CASE WHEN rerun THEN NULL ELSE now() END, run_at = ${rerunAt}, rerun = false,
      locked_until = NULL, locked_by = CASE WHEN rerun THEN NULL ELSE locked_by END, updated_at = now()`

    /**
     * A retried job: pending again at `at`, else after `delay` seconds (when a rerun is due, if one was
     * asked for: a replay's time wins over the retry's), with `error`.
     */
    const retryColumns = (delay: Statement.Fragment, at: Statement.Fragment, error: Statement.Fragment) =>
      sql`status = 'pending',
      run_at = CASE WHEN rerun THEN greatest(run_at, now()) ELSE coalesce(${at}, now() + make_interval(secs => ${delay})) END,
      rerun = false, last_error = ${error}, locked_until = NULL, locked_by = NULL, updated_at = now()`

    /**
     * The claim's attempt number too: a run this instance abandoned (lease lost) must not settle the
     * claim it made again of the same job.
     */
    const guard = ({ attempts, id, instance }: typeof Run.Encoded) =>
      sql`id = ${id} AND locked_by = ${instance} AND status = 'running' AND attempts = ${attempts}`

    /**
     * The ids of the still-running jobs of `runs` (a JSON array of `Run`s), their rows locked in id
     * order, as every statement that locks several running jobs does, so two such statements never wait
     * for each other in a cycle.
     */
    const lockedRunning = (runs: string) =>
      sql`SELECT j.id FROM jobs j
          JOIN jsonb_to_recordset(${runs}::jsonb) AS r(id uuid, attempts int, instance text) ON r.id = j.id
          WHERE j.locked_by = r.instance AND j.status = 'running' AND j.attempts = r.attempts
          ORDER BY j.id
          FOR UPDATE OF j`

    /** One run done (see `ending`, `doneColumns`). A finished job keeps `locked_by`: which instance ran it. */
    const settleDone = SqlSchema.findOne({
      Request: Run,
      Result: EndingRow,
      execute: (run) => ending(sql`UPDATE jobs SET ${doneColumns} WHERE ${guard(run)}`)
    })

    /** One run to be retried (see `retryColumns`). */
    const settleRetry = SqlSchema.void({
      Request: RetriedRun,
      execute: (run) =>
        sql`UPDATE jobs SET ${retryColumns(sql`${run.delay}`, sql`${run.at}::timestamptz`, sql`${run.error}`)}
            WHERE ${guard(run)}`
    })

    /** One run dead (due again if a rerun was asked for meanwhile; see `ending`). */
    const settleDead = SqlSchema.findOne({
      Request: Schema.Struct({ ...Run.fields, error: Schema.String }),
      Result: EndingRow,
      execute: (run) =>
        ending(sql`UPDATE jobs SET status = CASE WHEN rerun THEN 'pending' ELSE 'dead' END,
                finished_at = CASE WHEN rerun THEN NULL ELSE now() END, run_at = ${rerunAt}, rerun = false,
                last_error = ${run.error}, locked_until = NULL,
                locked_by = CASE WHEN rerun THEN NULL ELSE locked_by END, updated_at = now()
            WHERE ${guard(run)}`)
    })

    /** Runs done, in one statement (see `lockedRunning`). */
    const settleDoneMany = SqlSchema.findOne({
      Request: JsonList(Run),
      Result: EndingRow,
      execute: (runs) =>
        ending(sql`UPDATE jobs SET ${doneColumns} WHERE id IN (${lockedRunning(runs)}) AND status = 'running'`)
    })

    /** Runs to be retried, each after its own delay, in one statement (see `lockedRunning`). */
    const settleRetryMany = SqlSchema.void({
      Request: JsonList(RetriedRun),
      execute: (runs) =>
        sql`UPDATE jobs SET ${retryColumns(sql`s.delay`, sql`s.at`, sql`s.error`)}
            FROM jsonb_to_recordset(${runs}::jsonb) AS s(id uuid, delay float8, at timestamptz, error text)
            WHERE jobs.id = s.id AND jobs.id IN (${lockedRunning(runs)}) AND jobs.status = 'running'`
    })

    /**
     * A run given back untouched: due again when it was (or when its next run was asked for, which
     * covers this one), its attempt not counted.
     */
    const release = SqlSchema.void({
      Request: Run,
      execute: (run) =>
        sql`UPDATE jobs SET status = 'pending', attempts = greatest(attempts - 1, 0), rerun = false, locked_until = NULL,
                locked_by = NULL, updated_at = now()
            WHERE ${guard(run)}`
    })

    /** Deletes up to `batch` done and dead jobs finished more than `retentionSeconds` ago: how many. */
    const purge = SqlSchema.findOne({
      Request: Schema.Struct({ retentionSeconds: Schema.Number, batch: Schema.Number }),
      Result: Schema.Struct({ n: Schema.Number }),
      execute: ({ batch, retentionSeconds }) =>
        sql`
          WITH gone AS (
            DELETE FROM jobs WHERE id IN (
              SELECT id FROM jobs WHERE status IN ('done', 'dead')
                AND finished_at < now() - make_interval(secs => ${retentionSeconds})
              LIMIT ${batch})
            RETURNING 1)
          SELECT count(*)::int AS n FROM gone`
    })

    /**
     * Pending and running jobs and the age of the oldest due one. One subquery per status, each an
     * index-only scan of that status's partial index: `status IN (both)` matched neither and scanned
     * the table.
     */
    const depth = sql`
      SELECT ((SELECT count(*) FROM jobs WHERE status = 'pending')
              + (SELECT count(*) FROM jobs WHERE status = 'running'))::int AS pending,
             extract(epoch FROM now() - least(
               (SELECT min(run_at) FROM jobs WHERE status = 'pending' AND run_at <= now()),
               (SELECT min(run_at) FROM jobs WHERE status = 'running' AND run_at <= now())))::float8 AS oldest_seconds`.pipe(
      Effect.flatMap(Schema.decodeUnknownEffect(Schema.Array(DepthRow))),
      Effect.map((rows) => rows[0] ?? { pending: 0, oldestSeconds: null })
    )

    return {
      lockOrder,
      insert,
      insertNotifying,
      liveJob,
      notify,
      runNow,
      reschedule,
      rescheduleNotifying,
      lockOrderOfPending,
      deletePending,
      dropRerun,
      rerunRunning,
      lockOrders,
      supersedePending,
      insertMany,
      reblock,
      deleteGroups,
      claim,
      reap,
      heartbeat,
      settleDone,
      settleRetry,
      settleDead,
      settleDoneMany,
      settleRetryMany,
      release,
      purge,
      depth
    } as const
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
  static readonly layer = this.layerWithoutDependencies
}
