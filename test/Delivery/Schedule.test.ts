/**
 * A delivery's retry schedule has one owner, its job: a failed attempt's next attempt is the job's
 * `run_at`, the one stored time the API shows, and a replay moves it (the event keeps none). The sender
 * and the queue driven by hand as a worker drives them (a claim, the batch's attempts, the settlement),
 * against the real database, with the integrator's receiver replaced by a double.
 */
import { describe, expect, layer } from "@effect/vitest"
import * as SqlClient from "effect/sql/SqlClient"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { Deliveries } from "../../src/Delivery/Deliveries.js"
import { Events } from "../../src/Delivery/Events.js"
import { DeliveriesRepo } from "../../src/Delivery/Repo.js"
import { Sender } from "../../src/Delivery/Sender.js"
import { WebhookClient, type WebhookRequest } from "../../src/Delivery/WebhookClient.js"
import { EventId } from "../../src/Domain/Ids.js"
import { defaultFeatures } from "../../src/Domain/Integration.js"
import { IntegrationsRepo } from "../../src/Integrations/Repo.js"
import { type Claimed, type Outcome } from "../../src/Jobs/Job.js"
import { JobQueue } from "../../src/Jobs/Queue.js"
import { WorkspacesRepo } from "../../src/Workspaces/Repo.js"
import { Workspaces } from "../../src/Workspaces/Workspaces.js"
import { TestConfig } from "../support/App.js"
import { TestDatabase } from "../support/Database.js"
import { makeTestLayer } from "../support/Layer.js"

const SECRET = "whsec_dGhlIHNjaGVkdWxlIHRlc3QncyBvd24gc2VjcmV0IQ=="
const INSTANCE = "schedule-test"
const LANE = { name: "deliveries", kinds: ["deliver_event"], concurrency: 10, perGroup: 10 }

/** What the receiver double answers, and what runs while a request is "in flight". */
const receiver = {
  status: 503,
  during: Effect.void as Effect.Effect<void>
}

const WebhookClientDouble = Layer.succeed(WebhookClient, {
  post: (_: WebhookRequest) =>
    Effect.gen(function*() {
      yield* receiver.during
      return { status: receiver.status, retryAfter: undefined, body: "" }
    })
})

const WorkspacesDouble = makeTestLayer(Workspaces)({
  openWebhookSecrets: () => Effect.succeed({ current: SECRET, previous: Option.none() })
})

const ScheduleTest = Layer.mergeAll(
  Sender.layerWithoutDependencies.pipe(Layer.provide([WebhookClientDouble, WorkspacesDouble])),
  Deliveries.layerWithoutDependencies
).pipe(
  Layer.provideMerge(
    Layer.mergeAll(DeliveriesRepo.layer, IntegrationsRepo.layer, WorkspacesRepo.layer, Events.layer, JobQueue.layer)
  ),
  Layer.provideMerge(TestDatabase),
  Layer.provide(TestConfig({ DELIVERY_RETRY_BASE: "5 seconds", DELIVERY_MAX_AGE: "1 hour" })),
  Layer.orDie
)

/** A workspace, an integration and one pending event of it, its job queued; the only live job. */
const anEvent = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DELETE FROM jobs`
  const workspace = yield* Effect.flatMap(WorkspacesRepo, (repo) =>
    repo.insert({ name: "Schedule", webhookSecret: SECRET, previousWebhookSecret: null, previousSecretExpiresAt: null }))
  const integration = yield* Effect.flatMap(IntegrationsRepo, (repo) =>
    repo.insert({
      workspaceId: workspace.id,
      integration: "api",
      settings: {
        name: "Schedule test",
        supportedFeatures: defaultFeatures,
        toneId: null,
        firstResponseToneId: null,
        channelsSettings: {},
        webhook: { url: "https://receiver.example/hook", headers: {}, metadata: {} },
        webhookEnabled: true
      }
    }))
  const id = yield* Effect.flatMap(Events, (events) => events.emit("send_csat", { integration, conversation: null, data: {} }))
  return { id, integrationId: integration.integrationId }
}).pipe(Effect.orDie)

/** The claim of the event's job, as a worker makes it. */
const claim = Effect.gen(function*() {
  const jobs = yield* Effect.flatMap(JobQueue, (queue) => queue.claim(INSTANCE, LANE, 10))
  expect(jobs).toHaveLength(1)
  return jobs[0]!
})

/** The claimed job's attempt (the batch the handler runs): its outcome. */
const attempt = (id: EventId) =>
  Effect.flatMap(Sender, (sender) => sender.deliverMany([{ eventId: id }])).pipe(Effect.map((outcomes) => outcomes[0]!))

/** The run's settlement, as the worker records it. */
const settle = (job: Claimed, outcome: Outcome) =>
  Effect.flatMap(JobQueue, (queue) => queue.settleMany(INSTANCE, [{ job, outcome }]))

/** The event's job as stored: its status and when it is due. */
const jobOf = (id: EventId) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`SELECT status, run_at FROM jobs WHERE kind = 'deliver_event' AND key = ${id} AND status IN ('pending', 'running')`).pipe(
      Effect.flatMap(Schema.decodeUnknownEffect(Schema.Array(Schema.Struct({
        status: Schema.String,
        runAt: Schema.DateTimeUtcFromDate
      })))),
      Effect.map((rows) => rows[0]!),
      Effect.orDie
    )

const millisOf = (at: DateTime.Utc | null | undefined) => at?.epochMilliseconds

describe("a delivery's retry schedule", () => {
  layer(ScheduleTest, { excludeTestServices: true })((it) => {
    it.effect("is stored once, on the event's job: a failed attempt's next attempt is what the API shows", () =>
      Effect.gen(function*() {
        receiver.status = 503
        receiver.during = Effect.void
        const { id, integrationId } = yield* anEvent
        const deliveries = yield* Deliveries
        // Before its first attempt there is no next one to show.
        expect(yield* deliveries.get(integrationId, id)).toMatchObject({ status: "pending", nextAttemptAt: null })
        const job = yield* claim
        const outcome = yield* attempt(id)
        expect(outcome).toMatchObject({ _tag: "Retry", error: "HTTP 503" })
        yield* settle(job, outcome)

        const detail = yield* deliveries.get(integrationId, id)
        const stored = yield* jobOf(id)
        expect(stored.status).toBe("pending")
        expect(detail).toMatchObject({ status: "failed", attempts: 1, lastStatusCode: 503 })
        // One time: the job's, shown by the detail and the list alike, and the one the attempt log recorded.
        expect(millisOf(detail.nextAttemptAt)).toBe(stored.runAt.epochMilliseconds)
        expect(millisOf(detail.attemptLog[0]?.nextRetryAt)).toBe(stored.runAt.epochMilliseconds)
        const [listed] = yield* deliveries.list(integrationId, { limit: 10 })
        expect(millisOf(listed?.nextAttemptAt)).toBe(stored.runAt.epochMilliseconds)
        // The retry waits: the policy's first delay (5 s, jitter aside) after the attempt.
        expect(stored.runAt.epochMilliseconds - (millisOf(detail.attemptLog[0]?.startedAt) ?? 0)).toBeGreaterThan(2_000)
        // The event keeps no copy of its own: its old column (left for instances of earlier versions
        // during a rolling upgrade) is written by nothing.
        const sql = yield* SqlClient.SqlClient
        expect(yield* sql`SELECT next_attempt_at FROM events WHERE id = ${id}`).toEqual([{ nextAttemptAt: null }])
      }))

    it.effect("a replay while an attempt is in flight is not overwritten by that attempt's settlement", () =>
      Effect.gen(function*() {
        const deliveries = yield* Deliveries
        receiver.status = 503
        const { id, integrationId } = yield* anEvent
        receiver.during = Effect.orDie(Effect.asVoid(deliveries.replay(integrationId, id)))
        const job = yield* claim
        const outcome = yield* attempt(id)
        receiver.during = Effect.void
        yield* settle(job, outcome)

        const detail = yield* deliveries.get(integrationId, id)
        const stored = yield* jobOf(id)
        // The replay's run: pending, due now (not the failed attempt's retry 5 s on), its attempt recorded.
        expect(detail).toMatchObject({ status: "pending", attempts: 1, lastStatusCode: 503 })
        expect(detail.attemptLog).toMatchObject([{ attempt: 1, nextRetryAt: null }])
        expect(stored.status).toBe("pending")
        expect(millisOf(detail.nextAttemptAt)).toBe(stored.runAt.epochMilliseconds)
        const now = yield* DateTime.now
        expect(stored.runAt.epochMilliseconds).toBeLessThanOrEqual(now.epochMilliseconds)
        // And it runs: the next claim takes it.
        const again = yield* claim
        expect(again.id).toBe(job.id)
      }))

    it.effect("a replay between a failed attempt's record and its job's settlement keeps the replay's time", () =>
      Effect.gen(function*() {
        const deliveries = yield* Deliveries
        receiver.status = 503
        receiver.during = Effect.void
        const { id, integrationId } = yield* anEvent
        const job = yield* claim
        const outcome = yield* attempt(id)
        expect(outcome).toMatchObject({ _tag: "Retry" })
        yield* deliveries.replay(integrationId, id)
        yield* settle(job, outcome)

        const detail = yield* deliveries.get(integrationId, id)
        const stored = yield* jobOf(id)
        expect(detail).toMatchObject({ status: "pending", attempts: 1 })
        expect(millisOf(detail.nextAttemptAt)).toBe(stored.runAt.epochMilliseconds)
        const now = yield* DateTime.now
        expect(stored.runAt.epochMilliseconds).toBeLessThanOrEqual(now.epochMilliseconds)
        expect((yield* claim).id).toBe(job.id)
      }))
  })
})
