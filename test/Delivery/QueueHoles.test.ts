/**
 * The three holes of the job queue, each shown by a test that failed before the fix:
 * 1. a delivery that fails before its POST ends in the delivery policy (dead with the reason), and a
 *    dead event never blocks the events of its conversation behind it;
 * 2. a replay while an attempt is in flight takes effect after that attempt, at once, with one live job;
 * 3. events of one conversation enqueued by concurrent transactions are delivered in commit order.
 */
import { describe, expect, layer } from "@effect/vitest"
import * as SqlClient from "effect/sql/SqlClient"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { Replayed } from "../../src/Delivery/Api.js"
import { Events } from "../../src/Delivery/Events.js"
import { MessageReceived } from "../../src/Domain/Conversation.js"
import { ConversationId, CustomerId, IntegrationId } from "../../src/Domain/Ids.js"
import { IntegrationsRepo } from "../../src/Integrations/Repo.js"
import { bodyAs, call, makeTenant, type Tenant, TestAppWithWorkers } from "../support/App.js"
import { usingPostgres } from "../support/Database.js"
import { eventually } from "../support/Eventually.js"
import { AnyEvent, Envelope, makeReceiver, webhookBody } from "../support/Receiver.js"

const customerId = "6f1c1f8e-1d7e-4c8e-9a0a-1b2c3d4e5f60"

const eventRows = (integrationId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ readonly id: string; readonly status: string; readonly lastError: string | null; readonly attempts: number }>`
      SELECT id, status, last_error, attempts FROM events WHERE integration_id = ${integrationId}
      ORDER BY created_at, id`)

const liveJobs = (eventId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ readonly n: number }>`
      SELECT count(*)::int AS n FROM jobs
      WHERE kind = 'deliver_event' AND payload->>'eventId' = ${eventId} AND status IN ('pending', 'running')`)
    .pipe(Effect.map((rows) => rows[0]?.n ?? 0))

/** A conversation of the tenant, made through the API (events need one to be ordered). */
const conversationOf = (tenant: Tenant, externalId: string) =>
  call("POST", `/v1/webhooks/${tenant.integrationId}/message-received`, {
    token: tenant.token,
    body: { id: `${externalId}-m`, role: "human", customerId, conversationId: externalId, text: "hi", syncOnly: true }
  }).pipe(
    Effect.flatMap(bodyAs(MessageReceived)),
    Effect.map(({ body }) => ({
      id: ConversationId.make(body.conversation.id),
      externalId,
      customerId: CustomerId.make(body.conversation.customerId)
    }))
  )

const integrationOf = (tenant: Tenant) =>
  Effect.flatMap(IntegrationsRepo, (repo) => repo.findById(IntegrationId.make(tenant.integrationId))).pipe(
    Effect.map(Option.getOrThrow),
    Effect.orDie
  )

const App = (overrides: Record<string, string>) =>
  Layer.mergeAll(Events.layer, IntegrationsRepo.layer).pipe(Layer.provideMerge(TestAppWithWorkers(overrides)))

describe("queue holes", () => {
  layer(
    App({
      DELIVERY_MAX_AGE: "1500 millis",
      DELIVERY_RETRY_BASE: "100 millis",
      DELIVERY_RETRY_MAX_DELAY: "200 millis"
    }),
    { excludeTestServices: true, timeout: 120_000 }
  )((it) => {
    it.effect("a webhook secret that cannot be decrypted ends in the delivery policy: dead with the reason", () =>
      Effect.gen(function*() {
        const receiver = yield* makeReceiver()
        const tenant = yield* makeTenant({ webhookUrl: receiver.url })
        const sql = yield* SqlClient.SqlClient
        // Sealed with a key this instance does not have.
        yield* sql`UPDATE workspaces SET webhook_secret = 'aes256gcm:v1:AAAAAAAAAAAAAAAA:AAAAAAAAAAAAAAAAAAAAAA==:AAAA'
                   WHERE id = ${tenant.workspaceId}`
        const conversation = yield* conversationOf(tenant, "secret")
        const integration = yield* integrationOf(tenant)
        const events = yield* Events
        yield* events.emit("send_csat", { integration, conversation, data: {} }).pipe(sql.withTransaction)
        const [dead] = yield* eventually(eventRows(tenant.integrationId), (rows) => rows[0]?.status === "dead")
        expect(dead!.lastError).toContain("PARLEY_ENCRYPTION_KEY")
        expect(receiver.received()).toEqual([])
      }))

    it.effect("a job whose payload does not decode is dead, and the events behind it are delivered", () =>
      Effect.gen(function*() {
        const receiver = yield* makeReceiver()
        const tenant = yield* makeTenant({ webhookUrl: receiver.url })
        const conversation = yield* conversationOf(tenant, "payload")
        const integration = yield* integrationOf(tenant)
        const events = yield* Events
        const sql = yield* SqlClient.SqlClient
        const [, second] = yield* Effect.gen(function*() {
          const first = yield* events.emit("conversation_title", { integration, conversation, data: { title: "1" } })
          yield* sql`UPDATE jobs SET payload = '{"eventId": 5}'::jsonb WHERE payload->>'eventId' = ${first}`
          const second = yield* events.emit("conversation_title", { integration, conversation, data: { title: "2" } })
          return [first, second] as const
        }).pipe(sql.withTransaction)
        const [request] = yield* receiver.waitFor(1)
        expect(webhookBody(AnyEvent)(request!).eventId).toBe(second)
        const jobs = yield* sql<{ readonly status: string; readonly lastError: string | null }>`
          SELECT status, last_error FROM jobs WHERE kind = 'deliver_event' AND payload = '{"eventId": 5}'::jsonb`
        expect(jobs.map((j) => j.status)).toEqual(["dead"])
        expect(jobs[0]!.lastError).toContain("eventId")
      }))

    it.effect("replay during an attempt: one live job, and the replay runs right after that attempt", () =>
      Effect.gen(function*() {
        // The first attempt takes 800 ms and fails; a retry would wait DELIVERY_RETRY_BASE (10 s here).
        const receiver = yield* makeReceiver((_, index) => index === 0 ? { status: 500, delayMs: 800 } : { status: 200 })
        const tenant = yield* makeTenant({ webhookUrl: receiver.url })
        const sql = yield* SqlClient.SqlClient
        const conversation = yield* conversationOf(tenant, "replay-running")
        const integration = yield* integrationOf(tenant)
        const events = yield* Events
        const eventId = yield* events.emit("send_csat", { integration, conversation, data: {} }).pipe(
          sql.withTransaction
        )
        yield* receiver.waitFor(1)
        const replay = yield* call("POST", `/v1/integration/${tenant.integrationId}/deliveries/${eventId}/replay`, {
          token: tenant.token
        })
        expect(replay.status).toBe(200)
        expect(yield* liveJobs(eventId)).toBe(1)
        const requests = yield* receiver.waitFor(2, 5_000)
        const [row] = yield* eventually(eventRows(tenant.integrationId), (rows) => rows[0]?.status === "delivered")
        expect(row!.attempts).toBe(2)
        expect(requests).toHaveLength(2)
        // The event is marked delivered inside the attempt; its job is finished just after it returns.
        expect(yield* eventually(liveJobs(eventId), (n) => n === 0)).toBe(0)
        const attempts = yield* sql<{ readonly attempt: number }>`
          SELECT attempt FROM delivery_attempts WHERE event_id = ${eventId} ORDER BY id`
        expect(attempts.map((a) => a.attempt)).toEqual([1, 2])
      }), { timeout: 60_000 })

    it.effect("an event without a conversation is never attempted twice at once", () =>
      Effect.gen(function*() {
        const receiver = yield* makeReceiver((_, index) => ({ status: 200, delayMs: index === 0 ? 600 : 0 }))
        const tenant = yield* makeTenant({ webhookUrl: receiver.url })
        const integration = yield* integrationOf(tenant)
        const events = yield* Events
        const sql = yield* SqlClient.SqlClient
        const eventId = yield* events.emit("conversation_summary", { integration, conversation: null, data: { summary: "s", at: "close" } }).pipe(
          sql.withTransaction
        )
        yield* receiver.waitFor(1)
        yield* call("POST", `/v1/integration/${tenant.integrationId}/deliveries/${eventId}/replay`, { token: tenant.token })
        const requests = yield* receiver.waitFor(2, 5_000)
        // The second request starts only after the first was answered.
        expect(requests[1]!.at).toBeGreaterThanOrEqual(requests[0]!.at + 550)
        const attempts = yield* eventually(
          sql<{ readonly attempt: number }>`SELECT attempt FROM delivery_attempts WHERE event_id = ${eventId} ORDER BY id`,
          (rows) => rows.length >= 2
        )
        expect(attempts.map((a) => a.attempt)).toEqual([1, 2])
      }))

    it.effect("replay all queues hundreds of dead events at once, each conversation's in its order, one live job each", () =>
      Effect.gen(function*() {
        // 410 turns the webhook off: the first event dies on it, the others die unsent.
        const receiver = yield* makeReceiver(() => ({ status: 410 }))
        const tenant = yield* makeTenant({ webhookUrl: receiver.url })
        const sql = yield* SqlClient.SqlClient
        const integration = yield* integrationOf(tenant)
        const events = yield* Events
        const conversations = yield* Effect.forEach(["bulk-a", "bulk-b", "bulk-c", "bulk-d"], (id) => conversationOf(tenant, id))
        const emitted: ReadonlyArray<ReadonlyArray<string>> = yield* Effect.forEach(conversations, (conversation) =>
          Effect.forEach(Array.from({ length: 50 }, (_, n) => n), (n) =>
            events.emit("conversation_title", { integration, conversation, data: { title: String(n) } })).pipe(sql.withTransaction))
        yield* eventually(eventRows(tenant.integrationId), (rows) => rows.length === 200 && rows.every((r) => r.status === "dead"), 30_000)

        // After the replay, each conversation's first event fails once: its retry (DELIVERY_RETRY_BASE
        // later) must come before any later event of its conversation. Without the per-conversation
        // order, those go out beside it or while it waits for its retry.
        const heads = new Set(emitted.map((ids) => ids[0]))
        const failed = new Set<string>()
        receiver.respondWith((request) => {
          const { eventId } = webhookBody(AnyEvent)(request)
          if (!heads.has(eventId) || failed.has(eventId)) return { status: 200 }
          failed.add(eventId)
          return { status: 503 }
        })
        yield* call("POST", `/v1/integration/${tenant.integrationId}/update-settings`, {
          token: tenant.token,
          body: { webhookEnabled: true }
        })
        const before = receiver.received().length
        const replay = yield* call("POST", `/v1/integration/${tenant.integrationId}/deliveries/replay?since=2000-01-01T00:00:00Z`, {
          token: tenant.token
        }).pipe(Effect.flatMap(bodyAs(Replayed)))
        expect(replay.body.replayed).toBe(200)
        // Oldest first: a conversation's events in the order they were emitted.
        for (const ids of emitted) {
          expect(replay.body.deliveryIds.filter((id) => ids.includes(id))).toEqual(ids)
        }

        const received = (yield* receiver.waitFor(before + 204, 30_000)).slice(before).map((r) => webhookBody(AnyEvent)(r).eventId)
        expect(new Set(received).size).toBe(200)
        // One at a time per conversation, in its order: the first event, its retry, then the others.
        for (const ids of emitted) {
          expect(received.filter((id) => ids.includes(id))).toEqual([ids[0], ...ids])
        }
        const rows = yield* eventually(eventRows(tenant.integrationId), (rows) => rows.every((r) => r.status === "delivered"))
        expect(rows).toHaveLength(200)
        // The last events are marked delivered inside their attempts; their jobs finish just after.
        const live = yield* eventually(
          sql<{ readonly n: number }>`
            SELECT count(*)::int AS n FROM jobs
            WHERE kind = 'deliver_event' AND payload->>'eventId' IN ${sql.in(emitted.flat())} AND status IN ('pending', 'running')`,
          (rows) => rows[0]?.n === 0
        )
        expect(live[0]!.n).toBe(0)
      }), { timeout: 60_000 })
  })

  layer(App({ DELIVERY_RETRY_BASE: "10 seconds", DELIVERY_RETRY_MAX_DELAY: "10 seconds" }), {
    excludeTestServices: true,
    timeout: 120_000
  })((it) => {
    it.effect("a replay of a failing event does not wait for the retry it replaces", () =>
      Effect.gen(function*() {
        const receiver = yield* makeReceiver((_, index) => index === 0 ? { status: 500, delayMs: 800 } : { status: 200 })
        const tenant = yield* makeTenant({ webhookUrl: receiver.url })
        const sql = yield* SqlClient.SqlClient
        const conversation = yield* conversationOf(tenant, "replay-wait")
        const integration = yield* integrationOf(tenant)
        const events = yield* Events
        const eventId = yield* events.emit("send_csat", { integration, conversation, data: {} }).pipe(
          sql.withTransaction
        )
        yield* receiver.waitFor(1)
        yield* call("POST", `/v1/integration/${tenant.integrationId}/deliveries/${eventId}/replay`, { token: tenant.token })
        const requests = yield* receiver.waitFor(2, 5_000)
        expect(requests[1]!.at - requests[0]!.at).toBeLessThan(3_000)
      }))

    // On PGlite transactions run one at a time, so the race cannot happen there.
    it.effect.skipIf(!usingPostgres)("events of one conversation from concurrent transactions go out in commit order", () =>
      Effect.gen(function*() {
        const receiver = yield* makeReceiver()
        const tenant = yield* makeTenant({ webhookUrl: receiver.url })
        const sql = yield* SqlClient.SqlClient
        const conversation = yield* conversationOf(tenant, "order")
        const integration = yield* integrationOf(tenant)
        const events = yield* Events
        const emit = (n: number) => events.emit("conversation_title", { integration, conversation, data: { title: String(n) } })
        // The first transaction takes its sequence number, then holds on until the second has committed
        // or is waiting for a lock the first holds (seen from a third connection, outside both).
        const emitted = yield* Deferred.make<void>()
        const secondDone = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const lockWaiters = sql<{ readonly n: number }>`
          SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock'`.pipe(Effect.map((rows) => rows[0]?.n ?? 0))
        yield* Effect.all([
          emit(1).pipe(
            Effect.andThen(Deferred.succeed(emitted, undefined)),
            Effect.andThen(Deferred.await(release)),
            sql.withTransaction
          ),
          Deferred.await(emitted).pipe(
            Effect.andThen(emit(2).pipe(sql.withTransaction)),
            Effect.andThen(Deferred.succeed(secondDone, undefined))
          ),
          Deferred.await(emitted).pipe(
            Effect.andThen(eventually(
              Effect.all([Deferred.isDone(secondDone), lockWaiters]),
              ([done, waiting]) => done || waiting > 0
            )),
            Effect.andThen(Deferred.succeed(release, undefined))
          )
        ], { concurrency: 3 })
        const requests = yield* receiver.waitFor(2)
        const title = webhookBody(Envelope(Schema.Literal("conversation_title"), Schema.Struct({ title: Schema.String })))
        expect(requests.map((r) => title(r).data.title)).toEqual(["1", "2"])
      }))
  })
})
