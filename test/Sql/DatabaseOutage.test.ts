/**
 * The database out of reach: every wait is bounded, requests answer 503 with
 * `Retry-After` and `{"detail"}` instead of 500 or a hang, `/health/ready` answers within its 2 s, and
 * service resumes when the database is back. PostgreSQL is reached through a TCP proxy (the network
 * edge) that can refuse connections or swallow every byte. PostgreSQL only: the embedded database is
 * in the process and cannot become unreachable.
 */
import { HttpClient } from "effect/http"
import * as SqlClient from "effect/sql/SqlClient"
import * as SqlError from "effect/sql/SqlError"
import { describe, expect, it, layer } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { makeApp } from "../../src/App.js"
import { DatabaseUnavailable } from "../../src/Domain/Errors.js"
import { isConnectionFailure, isDatabaseUnavailable } from "../../src/Sql.js"
import { ADMIN_TOKEN, bodyAs, call, DetailBody, makeTenant, type Reply, TestConfig, TestServer } from "../support/App.js"
import { postgresAddress, postgresTest, usingPostgres } from "../support/Database.js"
import { type TcpProxy, tcpProxy } from "../support/TcpProxy.js"

class Proxy extends Context.Service<Proxy, TcpProxy>()("test/Proxy") {}

const timeouts = {
  // Longer than the readiness probe's 2 s: the probe must not wait for it.
  connect: Duration.seconds(3),
  statement: Duration.seconds(2),
  // Longer than any outage here: the server must not be what ends a transaction left open.
  idleInTransaction: Duration.seconds(60)
}

const OutageApp = Layer.unwrap(
  Effect.gen(function*() {
    const { host, port } = postgresAddress()
    const proxy = yield* tcpProxy(host, port)
    return makeApp({ server: TestServer, database: postgresTest({ via: proxy.port, timeouts }), workers: false }).pipe(
      Layer.provide(TestConfig()),
      Layer.merge(Layer.succeed(Proxy, proxy))
    )
  })
).pipe(Layer.orDie)

/** A call, how long it took, and a bound on it: a hang fails the test instead of stalling it. */
const timed = (effect: Effect.Effect<Reply, never, HttpClient.HttpClient>) =>
  effect.pipe(
    Effect.timeoutOrElse({ duration: "15 seconds", orElse: () => Effect.fail(new Error("no answer within 15 s")) }),
    Effect.timed,
    Effect.map(([elapsed, reply]) => ({ reply, ms: Math.round(Duration.toMillis(elapsed)) }))
  )

const expectUnavailable = (reply: Reply) =>
  Effect.gen(function*() {
    expect(reply.status, JSON.stringify(reply.body)).toBe(503)
    expect(reply.headers["retry-after"]).toBe("5")
    yield* bodyAs(DetailBody)(reply)
  })

describe("connection failures are told apart from other database errors", () => {
  // What the driver (@effect/sql-pg's own wire-protocol client) fails with: a SqlError whose reason is
  // classified (a ConnectionError for the network and the connection, a StatementTimeoutError for
  // 57014, another reason for the rest), its cause the network's error or PostgreSQL's fields (`code`).
  it("by the network's codes, PostgreSQL's SQLSTATEs and the driver's own verdicts", () => {
    const failure = (cause: unknown) =>
      new SqlError.SqlError({ reason: new SqlError.UnknownError({ cause, message: "Failed to execute statement" }) })
    const connection = (message: string, cause: unknown = new Error(message)) =>
      new SqlError.SqlError({ reason: new SqlError.ConnectionError({ cause, message: `PgConnection: ${message}` }) })
    const coded = (message: string, code: string) => Object.assign(new Error(message), { code })
    expect([
      failure(coded("connect ECONNREFUSED 127.0.0.1:1", "ECONNREFUSED")),
      failure(new AggregateError([coded("connect ECONNREFUSED ::1:1", "ECONNREFUSED")])),
      connection("Connection timed out"),
      connection("Connection closed"),
      connection("Socket error", coded("PostgreSQL sent nothing for 4000 ms", "ETIMEDOUT")),
      failure(coded("terminating connection due to administrator command", "57P01")),
      new SqlError.SqlError({
        reason: new SqlError.StatementTimeoutError({ cause: coded("canceling statement due to statement timeout", "57014") })
      }),
      failure(coded("connection failure", "08006")),
      new DatabaseUnavailable({ detail: "down" })
    ].map((error) => isConnectionFailure(error))).toEqual(Array(9).fill(true))
    expect([
      failure(coded("duplicate key value violates unique constraint", "23505")),
      failure(coded("syntax error", "42601")),
      failure(new Error("something else"))
    ].map((error) => isConnectionFailure(error))).toEqual([false, false, false])
    // The same failures as defects (`Effect.orDie`): a connection failure is still told apart.
    expect(isDatabaseUnavailable(Cause.die(connection("Connection closed")))).toBe(true)
    expect(isDatabaseUnavailable(Cause.die(failure(coded("syntax error", "42601"))))).toBe(false)
  })
})

describe.skipIf(!usingPostgres)("PostgreSQL out of reach", () => {
  layer(OutageApp, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("refused, then silent: 503 with Retry-After within the time-outs, ready within 2 s, then back", () =>
      Effect.gen(function*() {
        const proxy = yield* Proxy
        const tenant = yield* makeTenant()
        const list = call("GET", "/v1/integration/list", { token: tenant.token })
        const messageWith = (id: string) =>
          call("POST", `/v1/webhooks/${tenant.integrationId}/message-received`, {
            token: tenant.token,
            body: { id, conversationId: `c-${id}`, customerId: crypto.randomUUID(), text: "hello", role: "human", sentAt: "2026-11-22T10:00:00Z" }
          })
        const message = messageWith("m-1")
        const ready = call("GET", "/health/ready")
        expect((yield* list).status).toBe(200)

        // Down: connections are refused (and the open ones reset).
        yield* proxy.refuse
        const refused: Array<number> = []
        for (const request of [list, message, call("GET", `/admin/v1/workspaces/${tenant.workspaceId}`, { token: ADMIN_TOKEN })]) {
          const { ms, reply } = yield* timed(request)
          refused.push(ms)
          yield* expectUnavailable(reply)
          expect(ms).toBeLessThan(1_500)
        }
        const refusedReady = yield* timed(ready)
        expect(refusedReady.reply.status).toBe(503)
        yield* bodyAs(DetailBody)(refusedReady.reply)
        expect(refusedReady.ms).toBeLessThan(2_500)

        // Silent: new connections are accepted and never answered (the connect time-out, 3 s).
        yield* proxy.blackhole
        const [silent, silentReady] = yield* Effect.all([timed(list), timed(ready)], { concurrency: 2 })
        yield* expectUnavailable(silent.reply)
        expect(silent.ms).toBeLessThan(4_500)
        expect(silentReady.reply.status).toBe(503)
        expect(silentReady.ms).toBeLessThan(2_500)

        // Back: served again.
        yield* proxy.forward
        expect((yield* list).status).toBe(200)
        expect((yield* ready).status).toBe(200)

        // Silent with connections open in the pool: a statement sent on one is never answered; the client
        // gives up 2 s after the 2 s statement time-out. The readiness probe still answers within 2 s.
        yield* Effect.all(Array.from({ length: 6 }, () => list), { concurrency: 6 }) // several open connections
        yield* proxy.blackhole
        const [stalled, stalledReady, stalledMessage] = yield* Effect.all(
          [timed(list), timed(ready), timed(messageWith("m-stalled"))],
          { concurrency: 3 }
        )
        yield* expectUnavailable(stalled.reply)
        yield* expectUnavailable(stalledMessage.reply)
        expect(stalled.ms).toBeLessThan(6_000)
        expect(stalledReady.reply.status).toBe(503)
        expect(stalledReady.ms).toBeLessThan(2_500)

        // Back again: the held bytes arrive, and requests succeed.
        yield* proxy.forward
        const after = yield* timed(list)
        expect(after.reply.status).toBe(200)
        const replies = yield* Effect.all(["m-1", "m-2", "m-3", "m-4", "m-5"].map(messageWith), { concurrency: 5 })
        expect(replies.map((reply) => reply.status)).toEqual([200, 200, 200, 200, 200])
        // The message answered 503 stored nothing, and no connection was handed on with its transaction
        // still open (what giving up on a query while keeping its connection did).
        yield* Effect.sleep("500 millis")
        const sql = yield* SqlClient.SqlClient
        const stored = yield* sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM messages WHERE external_id = 'm-stalled'`
        const open = yield* sql<{ readonly n: number }>`
          SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND state LIKE 'idle in transaction%' AND pid <> pg_backend_pid()`
        expect([stored[0]?.n, open[0]?.n]).toEqual([0, 0])
        console.log(
          `outage: refused ${refused.join("/")} ms, ready ${refusedReady.ms} ms; silent (new connections) ${silent.ms} ms, ready ${silentReady.ms} ms; ` +
            `silent (open connections) ${stalled.ms} ms, ready ${stalledReady.ms} ms; back ${after.ms} ms`
        )
      }), 60_000)

    it.effect("a statement left unanswered mid-transaction takes its connection along: none of it is ever committed", () =>
      Effect.gen(function*() {
        const proxy = yield* Proxy
        const sql = yield* SqlClient.SqlClient
        yield* sql`CREATE TABLE IF NOT EXISTS outage_markers (n int)`
        const [elapsed, outcome] = yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`INSERT INTO outage_markers VALUES (1)`
          yield* proxy.blackhole
          yield* sql`INSERT INTO outage_markers VALUES (2)`
        })).pipe(Effect.exit, Effect.timed)
        // Its ROLLBACK fails too (the connection is gone): a defect, answered 503 at the edge.
        expect(outcome._tag).toBe("Failure")
        expect(Duration.toMillis(elapsed)).toBeLessThan(10_000)

        // When the network is back, the held statements arrive; the connections that go on serving must
        // not carry that transaction on into the next one (whose COMMIT would store all of it).
        yield* proxy.forward
        for (let i = 0; i < 5; i++) yield* sql.withTransaction(sql`INSERT INTO outage_markers VALUES (3)`)
        yield* Effect.sleep("500 millis")
        const rows = yield* sql<{ readonly n: number }>`SELECT n FROM outage_markers ORDER BY n`
        expect(rows.map((row) => row.n)).toEqual([3, 3, 3, 3, 3])
      }).pipe(Effect.orDie), 30_000)
  })
})
