/**
 * The job notification's payload, made in each of its places — by the process (`encode`: the embedded
 * database's notifications, `pg_notify` of a job due now), by the database in the statement that
 * queues or moves a job (`encodeSql`) — is read back by the pool (`decode`) as the job's kind and due
 * time; and the queue's own notifications, as the pool receives them, name the jobs they are about.
 */
import { describe, expect, layer } from "@effect/vitest"
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as crypto from "node:crypto"
import * as Job from "../../src/Jobs/Job.js"
import { CONNECTED, listen } from "../../src/Jobs/Listener.js"
import * as Notification from "../../src/Jobs/Notification.js"
import { JobQueue } from "../../src/Jobs/Queue.js"
import { fastPipeline } from "../support/App.js"
import { usingPostgres } from "../support/Database.js"
import { eventually } from "../support/Eventually.js"
import { layerTest } from "../support/Services.js"

/** No handler is registered for these: their jobs stay where the test puts them. */
const lane = Job.lane("notified", { concurrency: () => 1, perGroup: () => 1 })
const Timer = Job.define("notified timer", { payload: Schema.Struct({ key: Schema.String }), lane, key: ({ key }) => key })
const Warmup = Job.define("notified-warmup", { payload: Schema.Struct({}), lane })

const Base = layerTest(JobQueue.layer, fastPipeline)

describe("job notifications", () => {
  layer(Base, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("a payload made by the process or by the database reads back as the kind and the due time, rounded up", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        // A kind's name may hold the separator: the due time is what follows the last one.
        for (const [kind, due] of [["deliver_event", 1_767_225_600_000.2], ["a kind with spaces", 1_767_225_600_001], ["now", 0]] as const) {
          const expected = { kind, due: Math.ceil(due) }
          expect(Notification.decode(Notification.encode(kind, due))).toEqual(Option.some(expected))
          const [row] = yield* sql<{ readonly payload: string }>`
            SELECT ${Notification.encodeSql(sql, kind, sql`${due}::float8`)} AS payload`
          expect(row!.payload).toBe(Notification.encode(kind, due))
          expect(Notification.decode(row!.payload)).toEqual(Option.some(expected))
        }
        // Not a job's notification: the reconnection marker, anything else on the channel.
        for (const stray of [CONNECTED, "", "kind", "kind soon", "kind 12.5", " 12"]) {
          expect(Notification.decode(stray)).toEqual(Option.none())
        }
      }))

    it.effect("the queue's notifications of a job queued, moved and brought forward name it and its due time", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const queue = yield* JobQueue
        const received: Array<string> = []
        // What the pool listens to: LISTEN on PostgreSQL, the queue's own on the embedded database.
        const notifications = usingPostgres ? listen(Notification.JOBS_CHANNEL) : queue.signals
        const listening = yield* Effect.forkScoped(
          Stream.runForEach(notifications, (payload) => Effect.sync(() => received.push(payload)))
        )
        // Until the listener hears one, the others could go unheard.
        yield* eventually(
          Effect.andThen(queue.enqueue(Warmup, {}), Effect.sync(() => received.some((p) => p.startsWith(Warmup.name)))),
          (heard) => heard
        )
        const key = crypto.randomUUID()
        const dueOf = Effect.map(
          sql<{ readonly due: number }>`
            SELECT (extract(epoch FROM run_at) * 1000)::float8 AS due FROM jobs WHERE kind = ${Timer.name} AND key = ${key}`,
          (rows) => Math.ceil(rows[0]!.due)
        )
        yield* queue.enqueue(Timer, { key }, { delay: "1 hour" })
        const queued = yield* dueOf
        expect(yield* queue.reschedule(Timer, key, { delay: "2 hours" })).toBe(true)
        const moved = yield* dueOf
        expect(yield* queue.runNow(Timer, key)).toBe(true)
        const heard = yield* eventually(
          Effect.sync(() => received.flatMap((payload) => Option.toArray(Notification.decode(payload)))),
          (notices) => notices.filter((notice) => notice.kind === Timer.name).length === 3
        )
        expect(heard.filter((notice) => notice.kind === Timer.name).map((notice) => notice.due)).toEqual([queued, moved, 0])
        yield* Fiber.interrupt(listening)
      }))
  })
})
