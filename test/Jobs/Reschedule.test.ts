/**
 * Keyed jobs re-armed and cancelled (`JobQueue.reschedule`, `cancel`): in the caller's transaction,
 * and seen by the workers of every instance (the database is all they share).
 */
import { describe, expect, layer } from "@effect/vitest"
import * as SqlClient from "effect/sql/SqlClient"
import * as Deferred from "effect/Deferred"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as crypto from "node:crypto"
import * as Job from "../../src/Jobs/Job.js"
import { JobQueue } from "../../src/Jobs/Queue.js"
import { fastPipeline } from "../support/App.js"
import { eventually } from "../support/Eventually.js"
import { layerTest } from "../support/Services.js"
import { startWorkers } from "../support/Workers.js"

const timers = Job.lane("timers", { concurrency: () => 4, perGroup: () => 4 })

/** A timer per key: a debounce, re-armed by each message of its key. */
const Timer = Job.define("timer", { payload: Schema.Struct({ key: Schema.String }), lane: timers, key: ({ key }) => key })
/** A keyed, ordered kind. */
const Step = Job.define("step", {
  payload: Schema.Struct({ key: Schema.String }),
  lane: timers,
  key: ({ key }) => key,
  ordered: true
})

/** A run: how many of its key's messages were stored when it ran, and how long after the last one (database clock). */
interface Run {
  readonly messages: number
  readonly sinceLastMs: number
}
const runs = new Map<string, Array<Run>>()
const runsOf = (key: string) => Effect.sync(() => runs.get(key) ?? [])
/** A key's runs wait at its gate, when it has one, until the test opens it. */
const gates = new Map<string, Deferred.Deferred<void>>()

const TimerJobs = Job.handlers(Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const run = ({ key }: { readonly key: string }) =>
    Effect.gen(function*() {
      const rows = yield* sql<{ readonly messages: number; readonly sinceLastMs: number | null }>`
        SELECT count(*)::int AS messages, (extract(epoch FROM now() - max(created_at)) * 1000)::float8 AS since_last_ms
        FROM timer_messages WHERE key = ${key}`
      const seen = { messages: rows[0]?.messages ?? 0, sinceLastMs: rows[0]?.sinceLastMs ?? Number.NaN }
      yield* Effect.sync(() => runs.set(key, [...runs.get(key) ?? [], seen]))
      const gate = gates.get(key)
      if (gate !== undefined) yield* Deferred.await(gate)
      return Job.Outcome.Done()
    })
  return [Job.handle(Timer, run), Job.handle(Step, run)]
}))

const startPoolWith = (settings: Record<string, string>) => startWorkers(TimerJobs, settings)
const startPool = startPoolWith({})

const setup = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql`CREATE TABLE IF NOT EXISTS timer_messages (key text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`)

const storeMessage = (key: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql`INSERT INTO timer_messages (key) VALUES (${key})`)

/**
 * A message of `key`, stored in the transaction that re-arms the key's timer `delay` after it: its live
 * timer moved, or a new one. Whether a timer was moved.
 */
const message = (key: string, delay: Duration.Input) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const queue = yield* JobQueue
    return yield* Effect.gen(function*() {
      yield* storeMessage(key)
      const moved = yield* queue.reschedule(Timer, key, { delay })
      if (!moved) yield* queue.enqueue(Timer, { key }, { delay })
      return moved
    }).pipe(sql.withTransaction)
  })

/** The jobs of `kind` and `key`: status, and when due (Unix ms). */
const jobsOf = (key: string, kind = Timer.name) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ readonly status: string; readonly runAt: number; readonly blocked: boolean }>`
      SELECT status, (extract(epoch FROM run_at) * 1000)::float8 AS run_at, blocked
      FROM jobs WHERE kind = ${kind} AND key = ${key} ORDER BY seq`)

const ranOnce = (key: string) => eventually(runsOf(key), (seen) => seen.length === 1)

const Base = layerTest(JobQueue.layer, fastPipeline)

describe("keyed jobs re-armed and cancelled", () => {
  layer(Base, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("a timer pushed back by each new message fires once, after the last one", () =>
      Effect.gen(function*() {
        yield* setup
        yield* startPool
        const key = crypto.randomUUID()
        const moved: Array<boolean> = []
        const dueTimes: Array<number> = []
        for (let i = 0; i < 5; i++) {
          moved.push(yield* message(key, "3 seconds"))
          dueTimes.push((yield* jobsOf(key))[0]?.runAt ?? 0)
          // Messages a moment apart, as a customer types them: each moves the timer later.
          yield* Effect.sleep("150 millis")
        }
        // One timer, armed by the first message and pushed back by each of the others.
        expect(moved).toEqual([false, true, true, true, true])
        for (let i = 1; i < dueTimes.length; i++) expect(dueTimes[i]).toBeGreaterThan(dueTimes[i - 1]!)
        const [run] = yield* ranOnce(key)
        // When it ran, every message was stored, the last one its delay ago at least.
        expect(run!.messages).toBe(5)
        expect(run!.sinceLastMs).toBeGreaterThanOrEqual(2_999)
        const jobs = yield* eventually(jobsOf(key), (jobs) => jobs[0]?.status === "done")
        expect(jobs).toHaveLength(1)
        expect(yield* runsOf(key)).toHaveLength(1)
      }))

    it.effect("cancel removes a pending timer: it never runs, and its key is free again", () =>
      Effect.gen(function*() {
        const queue = yield* JobQueue
        const sql = yield* SqlClient.SqlClient
        yield* setup
        yield* startPool
        const key = crypto.randomUUID()
        yield* message(key, "300 millis")
        // In the transaction that stores what made it moot.
        const cancelled = yield* Effect.andThen(storeMessage(key), queue.cancel(Timer, key)).pipe(sql.withTransaction)
        expect(cancelled).toBe(true)
        expect(yield* jobsOf(key)).toEqual([])
        // A timer due after it runs: the cancelled one, due first, would have been claimed before it.
        const later = crypto.randomUUID()
        yield* message(later, "600 millis")
        yield* eventually(jobsOf(later), (jobs) => jobs[0]?.status === "done")
        expect(yield* runsOf(key)).toEqual([])
        expect(yield* queue.cancel(Timer, key)).toBe(false)
        // Its key is free: a message arms a new timer, which runs.
        expect(yield* message(key, 0)).toBe(false)
        yield* ranOnce(key)
      }))

    it.effect("cancelling an ordered job lets the next one of its order key run", () =>
      Effect.gen(function*() {
        const queue = yield* JobQueue
        yield* setup
        const orderKey = crypto.randomUUID()
        const [first, second] = [crypto.randomUUID(), crypto.randomUUID()]
        yield* queue.enqueue(Step, { key: first }, { orderKey, delay: "1 hour" })
        yield* queue.enqueue(Step, { key: second }, { orderKey })
        expect((yield* jobsOf(second, Step.name))[0]?.blocked).toBe(true)
        yield* startPool
        expect(yield* queue.cancel(Step, first)).toBe(true)
        yield* ranOnce(second)
        expect(yield* runsOf(first)).toEqual([])
      }))

    it.effect("reschedule and cancel in a transaction that rolls back change nothing", () =>
      Effect.gen(function*() {
        const queue = yield* JobQueue
        const sql = yield* SqlClient.SqlClient
        yield* setup
        yield* startPool
        const key = crypto.randomUUID()
        yield* message(key, "1 hour")
        const [before] = yield* jobsOf(key)
        const rolledBack = (change: Effect.Effect<boolean>) =>
          Effect.gen(function*() {
            yield* storeMessage(key)
            expect(yield* change).toBe(true)
            return yield* Effect.fail("rolled back")
          }).pipe(sql.withTransaction, Effect.flip)
        expect(yield* rolledBack(queue.reschedule(Timer, key, { delay: 0 }))).toBe("rolled back")
        expect(yield* rolledBack(queue.cancel(Timer, key))).toBe("rolled back")
        expect(yield* jobsOf(key)).toEqual([before])
        // Workers told of the move (on the embedded database before the commit that never came) look,
        // and find nothing due: a timer due after it runs, and it still waits.
        const later = crypto.randomUUID()
        yield* message(later, "300 millis")
        yield* eventually(jobsOf(later), (jobs) => jobs[0]?.status === "done")
        expect(yield* runsOf(key)).toEqual([])
        expect(yield* jobsOf(key)).toEqual([before])
      }))

    it.effect("a timer moved earlier runs then, on any instance, not at the next poll", () =>
      Effect.gen(function*() {
        yield* setup
        // Two instances, idle until their poll, 20 s away; the move is made by neither.
        yield* startPoolWith({ JOB_POLL_INTERVAL: "20 seconds" })
        yield* startPoolWith({ JOB_POLL_INTERVAL: "20 seconds" })
        const key = crypto.randomUUID()
        yield* message(key, "1 hour")
        // A timer run first (not a fixed while): the instance that took it, having taken fewer than it
        // asked for, waited idle for the poll before the run could even end; the other, told of it too,
        // claimed meanwhile and waits as well.
        const first = crypto.randomUUID()
        yield* message(first, 0)
        yield* ranOnce(first)
        expect(yield* message(key, "200 millis")).toBe(true)
        yield* eventually(runsOf(key), (seen) => seen.length === 1, 5_000)
      }))

    it.effect("a timer moved later does not run at its old time", () =>
      Effect.gen(function*() {
        yield* setup
        yield* startPoolWith({ JOB_POLL_INTERVAL: "20 seconds" })
        const key = crypto.randomUUID()
        // The idle dispatcher is told it is due in a second, and waits for that.
        yield* message(key, "1 second")
        expect(yield* message(key, "1 hour")).toBe(true)
        const later = crypto.randomUUID()
        yield* message(later, "1500 millis")
        yield* ranOnce(later)
        expect(yield* runsOf(key)).toEqual([])
        expect((yield* jobsOf(key))[0]?.status).toBe("pending")
      }))

    it.effect("a running timer is not stopped: moved, it runs again then; cancelled, that next run is dropped", () =>
      Effect.gen(function*() {
        const queue = yield* JobQueue
        yield* setup
        yield* startPool
        const moved = crypto.randomUUID()
        const movedGate = yield* Deferred.make<void>()
        gates.set(moved, movedGate)
        yield* message(moved, 0)
        yield* ranOnce(moved)
        // A message while it runs, which the run may not have seen: it runs again, after the delay (not
        // as soon as the run ends).
        expect(yield* message(moved, "1500 millis")).toBe(true)
        yield* Deferred.succeed(movedGate, undefined)
        const [, again] = yield* eventually(runsOf(moved), (seen) => seen.length === 2)
        expect(again!.messages).toBe(2)
        expect(again!.sinceLastMs).toBeGreaterThanOrEqual(1_499)
        yield* eventually(jobsOf(moved), (jobs) => jobs.length === 1 && jobs[0]!.status === "done")

        const cancelled = crypto.randomUUID()
        const cancelledGate = yield* Deferred.make<void>()
        gates.set(cancelled, cancelledGate)
        yield* message(cancelled, 0)
        yield* ranOnce(cancelled)
        expect(yield* message(cancelled, "200 millis")).toBe(true)
        // The next run is dropped; the run itself goes on, and nothing is left to cancel.
        expect(yield* queue.cancel(Timer, cancelled)).toBe(true)
        expect(yield* queue.cancel(Timer, cancelled)).toBe(false)
        expect((yield* jobsOf(cancelled))[0]?.status).toBe("running")
        yield* Deferred.succeed(cancelledGate, undefined)
        yield* eventually(jobsOf(cancelled), (jobs) => jobs.length === 1 && jobs[0]!.status === "done")
        expect(yield* runsOf(cancelled)).toHaveLength(1)
      }))
  })
})
