/**
 * The queue and the supervised worker pool on the real database: claiming, failures and retries,
 * graceful shutdown, and the pool's refusal to start when its kinds and lanes do not add up.
 */
import { describe, expect, layer } from "@effect/vitest"
import * as SqlClient from "effect/sql/SqlClient"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as Schema from "effect/Schema"
import * as crypto from "node:crypto"
import * as Job from "../../src/Jobs/Job.js"
import { JobQueue } from "../../src/Jobs/Queue.js"
import { explainStartFailure, startFailureLine } from "../../src/Startup.js"
import { fastPipeline } from "../support/App.js"
import { usingPostgres } from "../support/Database.js"
import { eventually } from "../support/Eventually.js"
import { layerTest } from "../support/Services.js"
import { startWorkers } from "../support/Workers.js"

/** The test kinds' lane: two at a time, two per group. */
const testLane = Job.lane("test", { concurrency: () => 2, perGroup: () => 2 })
/** The batch kind's lane: eight at a time, four per group. */
const batchLane = Job.lane("batch", { concurrency: () => 8, perGroup: () => 4 })

const Quick = Job.define("quick", { payload: Schema.Struct({}), lane: testLane })
const Slow = Job.define("slow", { payload: Schema.Struct({}), lane: testLane })
const Boom = Job.define("boom", { payload: Schema.Struct({}), lane: testLane })
/** Claimed by the tests themselves: no handler is registered for it, so no pool runs it. */
const Ordered = Job.define("ordered", { payload: Schema.Struct({ n: Schema.Number }), lane: testLane, ordered: true })
/** Keyed and ordered, as deliveries are; claimed by no test. */
const OrderedKeyed = Job.define("ordered-keyed", {
  payload: Schema.Struct({ key: Schema.String }),
  lane: testLane,
  ordered: true,
  key: ({ key }) => key
})
const Batched = Job.define("batched", { payload: Schema.Struct({ n: Schema.Number }), lane: batchLane })
/** A kind with no handler registered: no pool claims it, so its jobs stay where a test puts them. */
const Probe = Job.define("next-due-probe", { payload: Schema.Struct({}), lane: Job.lane("probe", { concurrency: () => 4, perGroup: () => 1 }) })

/**
 * What the batch handler was given, one entry per call: each item's `n` and the job id on its span.
 * `n` ending in 2 is retried, in 3 dead, 99 fails the whole batch; the others are done.
 */
const batches: Array<ReadonlyArray<{ readonly n: number; readonly spanJob: unknown }>> = []

const TestJobs = Job.handlers(Effect.succeed([
    Job.handle(Quick, () => Effect.as(Effect.sleep("100 millis"), Job.Outcome.Done())),
    Job.handle(Slow, () => Effect.as(Effect.sleep("30 seconds"), Job.Outcome.Done())),
    Job.handle(Boom, () => Effect.die(new Error("handler exploded"))),
    Job.handleBatch(Batched, (items) =>
      Effect.gen(function*() {
        batches.push(items.map(({ payload, span }) => ({ n: payload.n, spanJob: span.attributes.get("job.id") })))
        if (items.some(({ payload }) => payload.n === 99)) return yield* Effect.die(new Error("batch exploded"))
        return items.map(({ payload }) =>
          payload.n % 10 === 2
            ? Job.Outcome.Retry({ delay: "1 hour", error: "try later" })
            : payload.n % 10 === 3
            ? Job.Outcome.Dead({ error: "no use" })
            : Job.Outcome.Done()
        )
      }))
]))

/** The test lane as the tests claim it themselves. */
const lane: Job.PoolLane = { name: "test", kinds: ["quick", "slow", "boom", "ordered"], concurrency: 2, perGroup: 2 }

const jobStatus = (id: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ readonly status: string; readonly attempts: number; readonly lockedBy: string | null; readonly lastError: string | null }>`
      SELECT status, attempts, locked_by, last_error FROM jobs WHERE id = ${id}`).pipe(Effect.map((rows) => rows[0]!))

const blockedOf = (ids: ReadonlyArray<string>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ readonly id: string; readonly blocked: boolean }>`SELECT id, blocked FROM jobs WHERE id IN ${sql.in(ids)}`).pipe(
    Effect.map((rows) => ids.map((id) => rows.find((row) => row.id === id)?.blocked))
  )

/** Rows of `jobs` the current transaction has read, by index or by scan (PostgreSQL's own counters). */
const jobsRowsRead = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql<{ readonly n: number }>`
    SELECT (coalesce(idx_tup_fetch, 0) + coalesce(seq_tup_read, 0))::int AS n
    FROM pg_stat_xact_user_tables WHERE relname = 'jobs'`).pipe(Effect.map((rows) => rows[0]?.n ?? 0))

const Base = layerTest(JobQueue.layer, {
  ...fastPipeline,
  WORKER_CONCURRENCY: "2",
  WORKER_SHUTDOWN_GRACE: "600 millis",
  JOB_MAX_ATTEMPTS: "2"
})

/** A pool of the test handlers, in a scope the test may close itself (as SIGTERM does). */
const startPoolWith = (overrides: Record<string, string>) =>
  startWorkers(TestJobs, { WORKER_CONCURRENCY: "2", WORKER_SHUTDOWN_GRACE: "600 millis", JOB_MAX_ATTEMPTS: "2", ...overrides })

const startPool = startPoolWith({})

/**
 * Returns once the test lane's dispatcher has gone idle: a job is run, and the claim that took it (fewer
 * than it asked for) left the dispatcher waiting for the poll, a notification or a due time, before
 * the job could even end; the job's ending wakes it for nothing (no job waits behind it).
 */
const dispatcherIdle = Effect.flatMap(JobQueue, (queue) => queue.enqueue(Quick, {})).pipe(
  Effect.flatMap((id) => eventually(jobStatus(id), (j) => j.status === "done", 5_000)),
  Effect.asVoid
)

/** The line a start refused for `jobs` prints (`Startup.ts`), or "started". */
const startLine = <E>(jobs: Layer.Layer<never, E, Job.Registry>, expected?: () => ReadonlyArray<string>) =>
  startWorkers(jobs, {}, expected === undefined ? {} : { expected }).pipe(
    Effect.exit,
    Effect.map((exit) => Exit.isSuccess(exit) ? "started" : startFailureLine(explainStartFailure(exit.cause)))
  )

describe("worker pool", () => {
  layer(Base, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("shutdown lets a job finish within the grace period and gives back the one that does not", () =>
      Effect.gen(function*() {
        const queue = yield* JobQueue
        const scope = yield* startPool
        const slow = yield* queue.enqueue(Slow, {})
        yield* eventually(jobStatus(slow), (j) => j.status === "running")
        const quick = yield* queue.enqueue(Quick, {})
        yield* eventually(jobStatus(quick), (j) => j.status === "running")
        yield* Scope.close(scope, Exit.void)
        expect(yield* jobStatus(quick)).toMatchObject({ status: "done", attempts: 1 })
        expect(yield* jobStatus(slow)).toMatchObject({ status: "pending", attempts: 0, lockedBy: null })
      }))

    it.effect("a failing handler is retried with backoff, then dead; the worker goes on with other jobs", () =>
      Effect.gen(function*() {
        const queue = yield* JobQueue
        const scope = yield* startPool
        const boom = yield* queue.enqueue(Boom, {})
        const first = yield* eventually(jobStatus(boom), (j) => j.attempts === 1 && j.status === "pending")
        expect(first.lastError).toContain("handler exploded")
        const quick = yield* queue.enqueue(Quick, {})
        yield* eventually(jobStatus(quick), (j) => j.status === "done")
        // JOB_MAX_ATTEMPTS = 2: the second failure (after a 1 s backoff) buries it.
        yield* eventually(jobStatus(boom), (j) => j.status === "dead")
        yield* Scope.close(scope, Exit.void)
      }))

    it.effect("the pool refuses to start, naming the kind, when a kind is registered twice", () =>
      Effect.gen(function*() {
        const again = Job.handlers(Effect.succeed([Job.handle(Quick, () => Effect.succeed(Job.Outcome.Done()))]))
        expect(yield* startLine(Layer.merge(TestJobs, again))).toBe(
          "Parley failed to start: Job kind quick is registered more than once: one handler per kind"
        )
        // Two definitions of one name are two handlers of one kind too.
        const impostor = Job.define("slow", { payload: Schema.Struct({ n: Schema.Number }), lane: testLane })
        const twice = Job.handlers(Effect.succeed([Job.handle(impostor, () => Effect.succeed(Job.Outcome.Done()))]))
        expect(yield* startLine(Layer.merge(TestJobs, twice))).toContain("Job kind slow is registered more than once")
      }))

    it.effect("the pool refuses to start when two lanes share a name, or when no kind is registered", () =>
      Effect.gen(function*() {
        const otherTest = Job.lane("test", { concurrency: () => 1, perGroup: () => 1 })
        const Stray = Job.define("stray", { payload: Schema.Struct({}), lane: otherTest })
        const stray = Job.handlers(Effect.succeed([Job.handle(Stray, () => Effect.succeed(Job.Outcome.Done()))]))
        expect(yield* startLine(Layer.merge(TestJobs, stray))).toBe(
          "Parley failed to start: Job lane test is declared twice (by boom, quick, slow and by stray): declare it once"
        )
        expect(yield* startLine(Layer.empty)).toContain("No job handler is registered")
        // A kind that no layer registers (`Probe`, `Ordered`) is not the pool's: it starts, and never claims it.
        expect(yield* startLine(TestJobs)).toBe("started")
      }))

    it.effect("an application's pool refuses to start, naming the kind, when a kind its code defines has no handler", () =>
      Effect.gen(function*() {
        // The application's pool expects every defined kind (`App.ts`); this file defines kinds it
        // registers no handler for.
        const line = yield* startLine(TestJobs, Job.definedKinds)
        expect(line).toMatch(/^Parley failed to start: Job kind .*\bprobe\b.* is defined but has no handler/)
        expect(line).not.toMatch(/\bquick\b/)
        // With each defined kind handled, it starts.
        const handled = new Set(["quick", "slow", "boom", "batched"])
        expect(yield* startLine(TestJobs, () => Job.definedKinds().filter((kind) => handled.has(kind)))).toBe("started")
      }))

    // Concurrent claims are serialized by PGlite's single session, so exclusivity cannot fail there.
    it.effect.skipIf(!usingPostgres)("claim hands a due job to one worker only, and a job leased to a live worker to nobody", () =>
      Effect.gen(function*() {
        const queue = yield* JobQueue
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE jobs SET status = 'done' WHERE status IN ('pending', 'running')`
        const id = yield* queue.enqueue(Quick, {})
        const claims = yield* Effect.all([queue.claim("w1", lane, 1), queue.claim("w2", lane, 1), queue.claim("w3", lane, 1)], {
          concurrency: 3
        })
        const winners = claims.flat()
        expect(winners).toHaveLength(1)
        expect(winners[0]!.id).toBe(id)
        expect(yield* queue.claim("w4", lane, 1)).toEqual([])
        expect(yield* queue.reap).toBe(0)
        // Its lease (1 s in tests, on the database's clock) expires: reaped, due again, for another worker.
        expect(yield* eventually(queue.reap, (reaped) => reaped > 0)).toBe(1)
        const again = yield* queue.claim("w5", lane, 1)
        expect(again.map((j) => [j.id, j.attempts])).toEqual([[id, 2]])
      }))

    // A chosen job claimed and committed by another instance after this claim's snapshot was taken is
    // seen by FOR UPDATE in its new version: without the status re-check it was claimed twice.
    it.effect.skipIf(!usingPostgres)("claims racing over many jobs hand each job out exactly once", () =>
      Effect.gen(function*() {
        const queue = yield* JobQueue
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE jobs SET status = 'done' WHERE status IN ('pending', 'running')`
        const wide: Job.PoolLane = { ...lane, perGroup: 1_000 }
        const ids = yield* Effect.forEach(Array.from({ length: 300 }), () => queue.enqueue(Quick, {}))
        const claimer = (worker: string) =>
          Effect.gen(function*() {
            const mine: Array<string> = []
            while (true) {
              const jobs = yield* queue.claim(worker, wide, 3)
              if (jobs.length === 0) return mine
              mine.push(...jobs.map((j) => j.id))
            }
          })
        const claimed = (yield* Effect.all(["w1", "w2", "w3", "w4"].map(claimer), { concurrency: 4 })).flat()
        expect(claimed).toHaveLength(ids.length)
        expect(new Set(claimed).size).toBe(ids.length)
      }), 60_000)

    it.effect("a batch kind: a claim's jobs of one group run together, each settled on its own outcome, under its own span", () =>
      Effect.gen(function*() {
        const queue = yield* JobQueue
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE jobs SET status = 'done' WHERE status IN ('pending', 'running')`
        batches.length = 0
        // Queued before the pool starts: its first claim takes them all, within each group's share.
        const a = yield* Effect.forEach([1, 2, 12, 3, 4], (n) => queue.enqueue(Batched, { n }, { group: "a" }))
        const b = yield* Effect.forEach([11, 15], (n) => queue.enqueue(Batched, { n }, { group: "b" }))
        const bad = yield* queue.enqueue(Batched, { n: 21 }, { group: "b" })
        yield* sql`UPDATE jobs SET payload = '{"n":"twenty-one"}'::jsonb WHERE id = ${bad}`
        yield* startPool
        // Each job of a batch is settled on its own: wait for all of them, not only the last batch's.
        const statuses = yield* eventually(
          Effect.forEach([...a, ...b, bad], (id) => Effect.map(jobStatus(id), (j) => j.status)),
          (all) => all[4] === "done" && !all.includes("running")
        )
        expect(statuses).toEqual(["done", "pending", "pending", "dead", "done", "done", "done", "dead"])
        // The two retried together, each an hour from now, its attempt counted and its error kept.
        const retried = yield* sql<{ readonly inMinutes: number; readonly attempts: number; readonly lastError: string }>`
          SELECT (extract(epoch FROM run_at - now()) / 60)::float8 AS in_minutes, attempts, last_error
          FROM jobs WHERE id IN ${sql.in([a[1]!, a[2]!])}`
        for (const job of retried) {
          expect(job).toMatchObject({ attempts: 1, lastError: "try later" })
          expect(job.inMinutes).toBeGreaterThan(55)
        }
        expect((yield* jobStatus(bad)).lastError).toContain("Payload does not decode")
        // Group a's share of four, then its fifth; group b's two that decode, in one call.
        const ns = batches.map((batch) => batch.map((item) => item.n).sort((x, y) => x - y))
        expect(ns).toContainEqual([1, 2, 3, 12])
        expect(ns).toContainEqual([11, 15])
        expect(ns).toContainEqual([4])
        // Each item ran under its own job's span.
        const spans = new Map(batches.flat().map((item) => [item.n, item.spanJob]))
        expect([1, 2, 12, 3, 4, 11, 15].map((n) => spans.get(n))).toEqual([...a, ...b])
      }))

    it.effect("a batch that fails fails each of its jobs: each is retried on its own", () =>
      Effect.gen(function*() {
        const queue = yield* JobQueue
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE jobs SET status = 'done' WHERE status IN ('pending', 'running')`
        const jobs = yield* Effect.forEach([99, 5], (n) => queue.enqueue(Batched, { n }, { group: "c" }))
        yield* startPool
        const failed = yield* Effect.forEach(jobs, (id) =>
          eventually(jobStatus(id), (j) => j.status === "pending" && j.attempts === 1))
        for (const job of failed) expect(job.lastError).toContain("batch exploded")
      }))

    it.effect("a claim gives each group at most its share, oldest first, and takes the other groups' jobs", () =>
      Effect.gen(function*() {
        const queue = yield* JobQueue
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE jobs SET status = 'done' WHERE status IN ('pending', 'running')`
        const busy = yield* Effect.forEach([1, 2, 3, 4, 5], () => queue.enqueue(Quick, {}, { group: "busy" }))
        const other = yield* queue.enqueue(Quick, {}, { group: "other" })
        const first = yield* queue.claimRound("w1", lane, 10)
        expect(first.jobs.map((j) => j.id)).toEqual([busy[0], busy[1], other])
        // Due jobs left for a group at its share: one of its jobs ending is worth a claim.
        expect(first.leftBehind).toBe(true)
        // The busy group has its two running: nothing more for it until one ends.
        expect(yield* queue.claimRound("w1", lane, 10)).toMatchObject({ jobs: [], leftBehind: true })
        // Ending lets no job run by itself (no job of an order key waits for it, no rerun).
        expect(yield* queue.settle(first.jobs[0]!, "w1", Job.Outcome.Done())).toBe(false)
        expect((yield* queue.claim("w1", lane, 10)).map((j) => j.id)).toEqual([busy[2]])
        yield* sql`UPDATE jobs SET status = 'done' WHERE id IN ${sql.in(busy.slice(3))}`
        // At its share again, with nothing left for it: a job ending frees nothing to claim.
        expect(yield* queue.claimRound("w1", lane, 10)).toMatchObject({ jobs: [], leftBehind: false })
      }))

    it.effect("an ordered job waits behind a live job of its order key: through its retries, until it is done or dead", () =>
      Effect.gen(function*() {
        const queue = yield* JobQueue
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE jobs SET status = 'done' WHERE status IN ('pending', 'running')`
        const [c, d, e] = [0, 1, 2].map(() => crypto.randomUUID())
        const wide: Job.PoolLane = { ...lane, concurrency: 10, perGroup: 10 }
        const [a1, a2, a3] = yield* Effect.forEach([1, 2, 3], (n) => queue.enqueue(Ordered, { n }, { orderKey: c }))
        const b1 = yield* queue.enqueue(Ordered, { n: 4 }, { orderKey: d })
        expect(yield* blockedOf([a1!, a2!, a3!, b1])).toEqual([false, true, true, false])
        const first = yield* queue.claim("w1", wide, 10)
        expect(first.map((j) => j.id)).toEqual([a1, b1])
        // A retry keeps its place: the next one still waits. (It is pending again: worth a look.)
        expect(yield* queue.settle(first[0]!, "w1", Job.Outcome.Retry({ delay: 0, error: "receiver down" }))).toBe(true)
        expect(yield* blockedOf([a2!])).toEqual([true])
        // Nothing waits behind the other order key's job: its ending lets nothing run.
        expect(yield* queue.settle(first[1]!, "w1", Job.Outcome.Done())).toBe(false)
        const again = yield* queue.claim("w1", wide, 10)
        expect(again.map((j) => j.id)).toEqual([a1])
        // The settlement says it let the next one run.
        expect(yield* queue.settle(again[0]!, "w1", Job.Outcome.Done())).toBe(true)
        expect(yield* blockedOf([a2!, a3!])).toEqual([false, true])
        const next = yield* queue.claim("w1", wide, 10)
        expect(next.map((j) => j.id)).toEqual([a2])
        // Dead ends it too; a job enqueued meanwhile lines up behind the live one.
        expect(yield* queue.settle(next[0]!, "w1", Job.Outcome.Dead({ error: "gave up" }))).toBe(true)
        const a4 = yield* queue.enqueue(Ordered, { n: 5 }, { orderKey: c })
        expect(yield* blockedOf([a3!, a4])).toEqual([false, true])
        expect((yield* queue.claim("w1", wide, 10)).map((j) => j.id)).toEqual([a3])
        // Not ordered, or alone with its order key: never waits.
        const lone = yield* queue.enqueue(Ordered, { n: 6 }, { orderKey: e })
        const quick = yield* queue.enqueue(Quick, {}, { orderKey: e })
        expect(yield* blockedOf([lone, quick])).toEqual([false, false])
      }))

    it.effect("replaceMany queues after each order key's live jobs, retiring the ones it replaces; only each key's first may run", () =>
      Effect.gen(function*() {
        const queue = yield* JobQueue
        const sql = yield* SqlClient.SqlClient
        const [c, d] = [crypto.randomUUID(), crypto.randomUUID()]
        const key = (name: string) => `${name}-${c}`
        const liveOf = sql<{ readonly key: string; readonly blocked: boolean }>`
          SELECT key, blocked FROM jobs
          WHERE kind = ${OrderedKeyed.name} AND conversation_id IN (${c}, ${d}) AND status = 'pending' ORDER BY seq`
        yield* queue.enqueue(OrderedKeyed, { key: key("head") }, { orderKey: c })
        const queued = yield* queue.replaceMany(OrderedKeyed, [
          { payload: { key: key("c1") }, orderKey: c },
          { payload: { key: key("d1") }, orderKey: d },
          { payload: { key: key("d2") }, orderKey: d }
        ])
        expect(queued).toBe(3)
        expect(yield* liveOf).toEqual([
          { key: key("head"), blocked: false },
          { key: key("c1"), blocked: true },
          { key: key("d1"), blocked: false },
          { key: key("d2"), blocked: true }
        ])
        // The head replaced: retired, and queued again after the others of its key, which may run first.
        expect(yield* queue.replaceMany(OrderedKeyed, [{ payload: { key: key("head") }, orderKey: c }])).toBe(1)
        expect(yield* liveOf).toEqual([
          { key: key("c1"), blocked: false },
          { key: key("d1"), blocked: false },
          { key: key("d2"), blocked: true },
          { key: key("head"), blocked: true }
        ])
      }))

    it.effect("an order key that is not a UUID is refused, saying what an order key must be", () =>
      Effect.gen(function*() {
        const queue = yield* JobQueue
        for (const refused of [queue.enqueue(Ordered, { n: 7 }, { orderKey: "conversation-7" }), queue.enqueue(Quick, {}, { orderKey: "7" })]) {
          const exit = yield* Effect.exit(refused)
          expect(Exit.isFailure(exit) ? Cause.pretty(exit.cause) : "queued").toContain("A job's order key must be a UUID")
        }
      }))

    // A job that ends and one enqueued behind it at the same moment: each must see the other (PGlite
    // runs one statement at a time, so the race exists only on PostgreSQL).
    it.effect.skipIf(!usingPostgres)("a job enqueued while the one before it ends is never left waiting (300 races)", () =>
      Effect.gen(function*() {
        const queue = yield* JobQueue
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE jobs SET status = 'done' WHERE status IN ('pending', 'running')`
        const wide: Job.PoolLane = { ...lane, concurrency: 10, perGroup: 10 }
        let stranded = 0
        for (let i = 0; i < 300; i++) {
          const orderKey = crypto.randomUUID()
          yield* queue.enqueue(Ordered, { n: 0 }, { orderKey })
          const [head] = yield* queue.claim("w1", wide, 1)
          const [, next] = yield* Effect.all([
            queue.settle(head!, "w1", Job.Outcome.Done()),
            queue.enqueue(Ordered, { n: 1 }, { orderKey })
          ], { concurrency: 2 })
          const [blocked] = yield* blockedOf([next])
          if (blocked === true) stranded++
          const [run] = yield* queue.claim("w1", wide, 1)
          if (run !== undefined) yield* queue.settle(run, "w1", Job.Outcome.Done())
        }
        expect(stranded).toBe(0)
      }), 120_000)

    it.effect("a claim reads neither the backlog of a group at its share nor the jobs waiting behind others", () =>
      Effect.gen(function*() {
        const queue = yield* JobQueue
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE jobs SET status = 'done' WHERE status IN ('pending', 'running')`
        // A table of some size, as in production (on a few hundred rows, scanning it whole is cheapest).
        yield* sql`
          INSERT INTO jobs (kind, payload, status, finished_at)
          SELECT 'quick', '{}'::jsonb, 'done', now() FROM generate_series(1, 20000)`
        // Group "full": 2 running (its share), 500 more due. Group "waiting": 50 order keys whose
        // first job is retrying later, 10 due jobs queued behind each.
        yield* sql`
          INSERT INTO jobs (kind, payload, group_key, status, locked_by, locked_until, attempts)
          SELECT 'quick', '{}'::jsonb, 'full', 'running', 'elsewhere', now() + interval '1 hour', 1
          FROM generate_series(1, 2)`
        yield* sql`
          INSERT INTO jobs (kind, payload, group_key)
          SELECT 'quick', '{}'::jsonb, 'full' FROM generate_series(1, 500)`
        const orderKeys = Array.from({ length: 50 }, () => crypto.randomUUID())
        yield* Effect.forEach(orderKeys, (orderKey) =>
          Effect.gen(function*() {
            yield* queue.enqueue(Ordered, { n: 0 }, { orderKey, group: "waiting", delay: "1 hour" })
            yield* Effect.forEach(Array.from({ length: 10 }, (_, n) => n + 1), (n) =>
              queue.enqueue(Ordered, { n }, { orderKey, group: "waiting" }))
          }))
        const other = yield* queue.enqueue(Quick, {}, { group: "other" })
        // As autovacuum keeps them: the planner's statistics of a table that just grew.
        yield* sql`ANALYZE jobs`
        const [claimed, read] = yield* Effect.gen(function*() {
          const before = yield* jobsRowsRead
          const claimed = yield* queue.claim("w1", lane, 10)
          return [claimed, (yield* jobsRowsRead) - before] as const
        }).pipe(sql.withTransaction)
        expect(claimed.map((j) => j.id)).toEqual([other])
        // Before: every one of the 1,000 due jobs of the two groups, each tested in turn.
        expect(read).toBeLessThan(50)
      }))

    it.effect("depth counts pending and running jobs and ages the oldest due one (a future job is not due)", () =>
      Effect.gen(function*() {
        const queue = yield* JobQueue
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE jobs SET status = 'done' WHERE status IN ('pending', 'running')`
        expect(yield* queue.depth).toEqual({ pending: 0, oldestSeconds: null })
        const [due, running] = yield* Effect.forEach([1, 2], () => queue.enqueue(Quick, {}))
        yield* queue.enqueue(Quick, {}, { delay: "1 hour" })
        yield* sql`UPDATE jobs SET run_at = now() - interval '90 seconds' WHERE id = ${due!}`
        yield* sql`UPDATE jobs SET status = 'running', run_at = now() - interval '30 seconds' WHERE id = ${running!}`
        const depth = yield* queue.depth
        expect(depth.pending).toBe(3)
        expect(depth.oldestSeconds).toBeGreaterThanOrEqual(90)
        expect(depth.oldestSeconds).toBeLessThan(120)
        yield* sql`UPDATE jobs SET status = 'done' WHERE id = ${due!}`
        const later = yield* queue.depth
        expect(later.pending).toBe(2)
        expect(later.oldestSeconds).toBeGreaterThanOrEqual(30)
        expect(later.oldestSeconds).toBeLessThan(60)
      }))

    it.effect("a delayed job runs when it is due, not at the next poll", () =>
      Effect.gen(function*() {
        const queue = yield* JobQueue
        yield* startPoolWith({ JOB_POLL_INTERVAL: "20 seconds" })
        yield* dispatcherIdle
        const id = yield* queue.enqueue(Quick, {}, { delay: "400 millis" })
        yield* eventually(jobStatus(id), (j) => j.status === "done", 5_000)
      }))

    it.effect("a delayed job is not pushed back by the notifications of jobs due later", () =>
      Effect.gen(function*() {
        const queue = yield* JobQueue
        yield* startPoolWith({ JOB_POLL_INTERVAL: "20 seconds" })
        yield* dispatcherIdle
        const first = yield* queue.enqueue(Quick, {}, { delay: "300 millis" })
        const second = yield* queue.enqueue(Quick, {}, { delay: "900 millis" })
        // Once the first has run, the second is known to the idle dispatcher only by its due time. A
        // notification of a later job every 100 ms, for as long as the second waits, must not restart
        // that wait: restarted at each one, it would never end (not before the poll, 20 s away).
        yield* eventually(jobStatus(first), (j) => j.status === "done", 5_000)
        const notifying = yield* Effect.forkScoped(
          Effect.forever(Effect.andThen(Effect.sleep("100 millis"), queue.enqueue(Quick, {}, { delay: "1 hour" })))
        )
        yield* eventually(jobStatus(second), (j) => j.status === "done", 5_000)
        yield* Fiber.interrupt(notifying)
      }))

    it.effect("a claim says how long until the lane's next job falls due, in its own snapshot", () =>
      Effect.gen(function*() {
        const queue = yield* JobQueue
        const sql = yield* SqlClient.SqlClient
        const probes: Job.PoolLane = { name: "probe", kinds: [Probe.name], concurrency: 4, perGroup: 1 }
        const later = yield* queue.enqueue(Probe, {}, { delay: "1 hour" })
        const round = yield* queue.claimRound("w1", probes, 4)
        expect(round.jobs).toEqual([])
        expect(round.leftBehind).toBe(false)
        expect(Option.getOrThrow(round.wait)).toBeGreaterThan(3_590_000)
        expect(Option.getOrThrow(round.wait)).toBeLessThanOrEqual(3_600_000)
        // A job due now is the claim's to take, not a wait (the idle wait once missed such a job until
        // the next wake: 250 ms late in the bench); the one due in an hour is still the next.
        const now = yield* queue.enqueue(Probe, {}, { delay: "1 hour" })
        yield* sql`UPDATE jobs SET run_at = now() - interval '200 milliseconds' WHERE id = ${now}`
        const next = yield* queue.claimRound("w1", probes, 4)
        expect(next.jobs.map((j) => j.id)).toEqual([now])
        expect(Option.getOrThrow(next.wait)).toBeGreaterThan(3_590_000)
        yield* sql`DELETE FROM jobs WHERE id IN (${later}, ${now})`
        expect(Option.isNone((yield* queue.claimRound("w1", probes, 4)).wait)).toBe(true)
      }))

    it.effect("a job ending makes its lane claim again when due jobs were left for its group at its share", () =>
      Effect.gen(function*() {
        const queue = yield* JobQueue
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE jobs SET status = 'done' WHERE status IN ('pending', 'running')`
        batches.length = 0
        // Six of one group with a share of four, in a lane of eight: the lane has room, so only the first
        // batch ending (its group's share freed) can start the last two; the poll is far away.
        const ids = yield* sql.withTransaction(
          Effect.forEach([11, 14, 15, 16, 17, 18], (n) => queue.enqueue(Batched, { n }, { group: "g" }))
        )
        yield* startPoolWith({ JOB_POLL_INTERVAL: "20 seconds" })
        yield* Effect.forEach(ids, (id) => eventually(jobStatus(id), (j) => j.status === "done", 5_000), { discard: true })
        expect(batches.map((batch) => batch.length)).toEqual([4, 2])
      }))

    // The embedded database has no LISTEN (its notifications are in-process).
    it.effect.skipIf(!usingPostgres)("LISTEN is re-established when its connection drops", () =>
      Effect.gen(function*() {
        const queue = yield* JobQueue
        const sql = yield* SqlClient.SqlClient
        yield* startPoolWith({ JOB_POLL_INTERVAL: "20 seconds" })
        const listeners = sql<{ readonly pid: number }>`
          SELECT pid FROM pg_stat_activity WHERE application_name = 'parley-listen' AND datname = current_database()`
        const [listener] = yield* eventually(listeners, (rows) => rows.length === 1)
        yield* sql`SELECT pg_terminate_backend(${listener!.pid})`
        yield* eventually(listeners, (rows) => rows.length === 1 && rows[0]!.pid !== listener!.pid, 5_000)
        const id = yield* queue.enqueue(Quick, {})
        yield* eventually(jobStatus(id), (j) => j.status === "done", 5_000)
      }))

    it.effect("finished jobs are purged after the retention period; pending and recent ones stay", () =>
      Effect.gen(function*() {
        const queue = yield* JobQueue
        const sql = yield* SqlClient.SqlClient
        const old = yield* queue.enqueue(Quick, {}, { delay: "1 hour" })
        const recent = yield* queue.enqueue(Quick, {}, { delay: "1 hour" })
        const pending = yield* queue.enqueue(Quick, {}, { delay: "1 hour" })
        yield* sql`UPDATE jobs SET status = 'done', finished_at = now() - interval '8 days' WHERE id = ${old}`
        yield* sql`UPDATE jobs SET status = 'dead', finished_at = now() - interval '1 day' WHERE id = ${recent}`
        expect(yield* queue.purge("7 days")).toBe(1)
        const left = yield* sql<{ readonly id: string }>`SELECT id FROM jobs WHERE id IN (${old}, ${recent}, ${pending})`
        expect(left.map((r) => r.id).sort()).toEqual([recent, pending].sort())
      }))
  })
})
