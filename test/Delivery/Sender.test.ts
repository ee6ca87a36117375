/**
 * The sender alone: one attempt at an event, against the real database, with the integrator's receiver
 * replaced by a `WebhookClient` double and the workspace's secrets by a typed partial double. No server,
 * no worker, no sleep: each test calls `deliver` and reads what it decided and stored.
 */
import { describe, expect, layer } from "@effect/vitest"
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as crypto from "node:crypto"
import { Events } from "../../src/Delivery/Events.js"
import { DeliveriesRepo } from "../../src/Delivery/Repo.js"
import { Sender } from "../../src/Delivery/Sender.js"
import { verifyWebhook } from "../../src/Delivery/Signature.js"
import { WebhookClient, type WebhookRequest } from "../../src/Delivery/WebhookClient.js"
import { EventId } from "../../src/Domain/Ids.js"
import { defaultFeatures } from "../../src/Domain/Integration.js"
import { IntegrationsRepo } from "../../src/Integrations/Repo.js"
import { Outcome } from "../../src/Jobs/Job.js"
import { WorkspacesRepo } from "../../src/Workspaces/Repo.js"
import { Workspaces } from "../../src/Workspaces/Workspaces.js"
import { TestConfig } from "../support/App.js"
import { TestDatabase } from "../support/Database.js"
import { makeTestLayer } from "../support/Layer.js"

const SECRET = "whsec_dGhlIHRlc3Qgc2VjcmV0IG9mIHRoZSBzZW5kZXIgdGVzdA=="

/** A request as the receiver double saw it: header names lower-cased, as a server sees them. */
interface Sent {
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly text: string
}

/** What the receiver double answers, and what it was sent. */
const receiver = {
  sent: [] as Array<Sent>,
  answer: (_: Sent): Response => new Response("{}", { status: 200 }),
  /** Runs while the request is "in flight". */
  during: Effect.void as Effect.Effect<void, never, SqlClient.SqlClient>
}

const WebhookClientDouble = Layer.effect(
  WebhookClient,
  Effect.map(Effect.context<SqlClient.SqlClient>(), (context) => ({
    post: (request: WebhookRequest) =>
      Effect.gen(function*() {
        const sent = {
          url: request.url,
          headers: Object.fromEntries(Object.entries(request.headers).map(([name, value]) => [name.toLowerCase(), value])),
          text: request.body
        }
        receiver.sent.push(sent)
        yield* Effect.provide(receiver.during, context)
        const response = receiver.answer(sent)
        const body = yield* Effect.promise(() => response.text())
        return { status: response.status, retryAfter: response.headers.get("retry-after") ?? undefined, body: body.slice(0, request.keep) }
      })
  }))
)

/** The workspace's secrets: a fixed one, or (when `unreadable`) a failure as a wrong encryption key gives. */
let unreadable = false
const WorkspacesDouble = makeTestLayer(Workspaces)({
  openWebhookSecrets: () =>
    unreadable
      ? Effect.die(new Error("A webhook secret could not be decrypted: is PARLEY_ENCRYPTION_KEY the key it was sealed with?"))
      : Effect.succeed({ current: SECRET, previous: Option.none() })
})

const SenderTest = Sender.layerWithoutDependencies.pipe(
  Layer.provide([WebhookClientDouble, WorkspacesDouble]),
  Layer.provideMerge(
    Layer.mergeAll(DeliveriesRepo.layer, IntegrationsRepo.layer, WorkspacesRepo.layer, Events.layer)
  ),
  Layer.provideMerge(TestDatabase),
  Layer.provide(TestConfig({ DELIVERY_RETRY_BASE: "5 seconds", DELIVERY_MAX_AGE: "1 hour" })),
  Layer.orDie
)

/** A workspace, an integration and one pending event of it; `ageMinutes` back-dates the event. */
const anEvent = (options: { readonly ageMinutes?: number } = {}) =>
  Effect.gen(function*() {
    const workspace = yield* Effect.flatMap(WorkspacesRepo, (repo) =>
      repo.insert({ name: "Sender", webhookSecret: SECRET, previousWebhookSecret: null, previousSecretExpiresAt: null }))
    const integration = yield* Effect.flatMap(IntegrationsRepo, (repo) =>
      repo.insert({
        workspaceId: workspace.id,
        integration: "api",
        settings: {
          name: "Sender test",
          supportedFeatures: defaultFeatures,
          toneId: null,
          firstResponseToneId: null,
          channelsSettings: {},
          webhook: { url: "https://receiver.example/hook", headers: { "X-Shop": "7" }, metadata: {} },
          webhookEnabled: true
        }
      }))
    const id = yield* Effect.flatMap(Events, (events) =>
      events.emit({ integration, conversation: null, kind: "typing", data: {} }))
    if (options.ageMinutes !== undefined) {
      yield* Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql`UPDATE events SET created_at = now() - make_interval(mins => ${options.ageMinutes ?? 0}) WHERE id = ${id}`)
    }
    return { id, integration }
  }).pipe(Effect.orDie)

const eventOf = (id: EventId) =>
  Effect.flatMap(DeliveriesRepo, (repo) => repo.findByIds([id])).pipe(
    Effect.flatMap((events) => Effect.fromNullishOr(events[0])),
    Effect.orDie
  )

const attemptsOf = (id: EventId) => Effect.flatMap(DeliveriesRepo, (repo) => repo.attempts(id)).pipe(Effect.orDie)

const reset = (answer: (request: Sent) => Response) =>
  Effect.sync(() => {
    receiver.sent = []
    receiver.answer = answer
    receiver.during = Effect.void
    unreadable = false
  })

describe("Sender", () => {
  // The real clock: signatures carry the time, and retries are scheduled from it.
  layer(SenderTest, { excludeTestServices: true })((it) => {
    it.effect("a 2xx: delivered, one attempt recorded, the body signed with the workspace's secret", () =>
      Effect.gen(function*() {
        yield* reset(() => new Response("{\"ok\":true}", { status: 202 }))
        const { id } = yield* anEvent()
        const outcome = yield* Effect.flatMap(Sender, (sender) => sender.deliver(id))
        expect(outcome).toEqual(Outcome.Done())
        expect(yield* eventOf(id)).toMatchObject({ status: "delivered", attempts: 1, lastStatusCode: 202, lastError: null })
        const [attempt] = yield* attemptsOf(id)
        expect(attempt).toMatchObject({ attempt: 1, statusCode: 202, error: null, responseSnippet: "{\"ok\":true}" })
        const [request] = receiver.sent
        expect(request!.headers["x-shop"]).toBe("7")
        expect(verifyWebhook({ secret: SECRET, headers: request!.headers, rawBody: request!.text }).ok).toBe(true)
      }))

    it.effect("a 5xx: failed, retried after the scheduled delay, Retry-After honoured when longer", () =>
      Effect.gen(function*() {
        yield* reset(() => new Response("busy", { status: 503, headers: { "retry-after": "120" } }))
        const { id } = yield* anEvent()
        const outcome = yield* Effect.flatMap(Sender, (sender) => sender.deliver(id))
        expect(outcome._tag).toBe("Retry")
        expect(outcome._tag === "Retry" && outcome.delay).toBeDefined()
        const event = yield* eventOf(id)
        expect(event).toMatchObject({ status: "failed", attempts: 1, lastStatusCode: 503, lastError: "HTTP 503" })
        const wait = (event.nextAttemptAt?.epochMilliseconds ?? 0) - Date.now()
        expect(wait).toBeGreaterThan(110_000)
        expect(wait).toBeLessThanOrEqual(120_000)
      }))

    it.effect("410 Gone: dead at once, and the integration's webhook turned off", () =>
      Effect.gen(function*() {
        yield* reset(() => new Response(null, { status: 410 }))
        const { id, integration } = yield* anEvent()
        expect(yield* Effect.flatMap(Sender, (sender) => sender.deliver(id))).toEqual(Outcome.Done())
        expect(yield* eventOf(id)).toMatchObject({ status: "dead", lastError: "410 Gone: webhook disabled" })
        const stored = yield* Effect.flatMap(IntegrationsRepo, (repo) => repo.findById(integration.integrationId)).pipe(
          Effect.map(Option.getOrThrow),
          Effect.orDie
        )
        expect(stored.settings.webhookEnabled).toBe(false)
      }))

    it.effect("a secret that cannot be read is an attempt in the delivery policy, dead once the window closed", () =>
      Effect.gen(function*() {
        yield* reset(() => new Response(null, { status: 200 }))
        unreadable = true
        const young = yield* anEvent()
        const retried = yield* Effect.flatMap(Sender, (sender) => sender.deliver(young.id))
        expect(retried._tag).toBe("Retry")
        expect(yield* eventOf(young.id)).toMatchObject({ status: "failed", attempts: 1 })
        expect((yield* eventOf(young.id)).lastError).toContain("PARLEY_ENCRYPTION_KEY")

        const old = yield* anEvent({ ageMinutes: 61 })
        expect(yield* Effect.flatMap(Sender, (sender) => sender.deliver(old.id))).toEqual(Outcome.Done())
        expect(yield* eventOf(old.id)).toMatchObject({ status: "dead", attempts: 1 })
        expect(receiver.sent).toEqual([])
      }))

    it.effect("an attempt overtaken by a replay is recorded but leaves the event to the replay", () =>
      Effect.gen(function*() {
        yield* reset(() => new Response(null, { status: 200 }))
        const { id } = yield* anEvent()
        receiver.during = Effect.flatMap(SqlClient.SqlClient, (sql) =>
          sql`UPDATE events SET generation = generation + 1, status = 'pending' WHERE id = ${id}`).pipe(Effect.orDie)
        expect(yield* Effect.flatMap(Sender, (sender) => sender.deliver(id))).toEqual(Outcome.Done())
        expect(yield* eventOf(id)).toMatchObject({ status: "pending", attempts: 1, lastStatusCode: 200 })
        expect(yield* attemptsOf(id)).toHaveLength(1)
      }))

    it.effect("several events at once: each settled on its own (2xx delivered, 5xx retried, a settled one not sent, a missing one dead)", () =>
      Effect.gen(function*() {
        const failing = yield* anEvent()
        const down = yield* anEvent()
        yield* reset((request) =>
          new Response(null, {
            status: request.headers["webhook-id"] === failing.id ? 503 : request.headers["webhook-id"] === down.id ? 500 : 200
          })
        )
        const delivered = yield* anEvent()
        const settled = yield* anEvent()
        yield* Effect.flatMap(SqlClient.SqlClient, (sql) => sql`UPDATE events SET status = 'delivered' WHERE id = ${settled.id}`)
        const missing = EventId.make(crypto.randomUUID())
        const outcomes = yield* Effect.flatMap(Sender, (sender) =>
          sender.deliverMany([delivered.id, failing.id, settled.id, missing, down.id].map((eventId) => ({ eventId }))))
        expect(outcomes.map((outcome) => outcome._tag)).toEqual(["Done", "Retry", "Done", "Dead", "Retry"])
        expect(yield* eventOf(delivered.id)).toMatchObject({ status: "delivered", attempts: 1, lastStatusCode: 200 })
        expect((yield* attemptsOf(delivered.id)).map((a) => [a.attempt, a.nextRetryAt])).toEqual([[1, null]])
        // The two failures, recorded together: each failed until its next attempt, which its attempt records.
        for (const [id, status] of [[failing.id, 503], [down.id, 500]] as const) {
          const event = yield* eventOf(id)
          expect(event).toMatchObject({ status: "failed", attempts: 1, lastStatusCode: status, lastError: `HTTP ${status}` })
          const wait = (event.nextAttemptAt?.epochMilliseconds ?? 0) - Date.now()
          expect(wait).toBeGreaterThan(3_000)
          const [attempt] = yield* attemptsOf(id)
          expect(attempt).toMatchObject({ attempt: 1, statusCode: status, error: `HTTP ${status}` })
          expect(attempt?.nextRetryAt?.epochMilliseconds).toBe(event.nextAttemptAt?.epochMilliseconds)
        }
        expect(receiver.sent.map((request) => request.headers["webhook-id"]).sort())
          .toEqual([delivered.id, failing.id, down.id].sort())
      }))

    it.effect("a settled event is not sent again", () =>
      Effect.gen(function*() {
        yield* reset(() => new Response(null, { status: 200 }))
        const { id } = yield* anEvent()
        yield* Effect.flatMap(Sender, (sender) => sender.deliver(id))
        expect(yield* Effect.flatMap(Sender, (sender) => sender.deliver(id))).toEqual(Outcome.Done())
        expect(receiver.sent).toHaveLength(1)
      }))
  })
})
