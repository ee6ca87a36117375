/**
 * The sender alone: one attempt at an event, against the real database, with the integrator's receiver
 * replaced by a `WebhookClient` double and the workspace's secrets by a typed partial double. No server,
 * no worker, no sleep: each test calls `deliver` at a given instant (the clock frozen there, the
 * backoff's jitter drawn as 0.5: none) and reads what it decided, stored and sent.
 */
import { describe, expect, layer } from "@effect/vitest"
import * as SqlClient from "effect/sql/SqlClient"
import * as Clock from "effect/Clock"
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import * as crypto from "node:crypto"
import { Events } from "../../src/Delivery/Events.js"
import { DeliveriesRepo } from "../../src/Delivery/Repo.js"
import { Sender } from "../../src/Delivery/Sender.js"
import { verifyWebhook } from "../../src/Delivery/Signature.js"
import { SsrfRefused } from "../../src/Delivery/Ssrf.js"
import {
  WebhookClient,
  type WebhookRequest,
  WebhookTimeout,
  WebhookTransportError
} from "../../src/Delivery/WebhookClient.js"
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

/** What the receiver double answers (or how the POST fails), and what it was sent. */
const receiver = {
  sent: [] as Array<Sent>,
  answer: (_: Sent): Response | WebhookTimeout | WebhookTransportError => new Response("{}", { status: 200 }),
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
        if (!(response instanceof Response)) return yield* Effect.fail(response)
        const body = yield* Effect.promise(() => response.text())
        return { status: response.status, retryAfter: response.headers.get("retry-after") ?? undefined, body: body.slice(0, request.keep) }
      })
  }))
)

/** What opening a secret sealed with another key fails with. */
const UNREADABLE = "A webhook secret could not be decrypted: is PARLEY_ENCRYPTION_KEY the key it was sealed with?"

/** The workspace's secrets: a fixed one, or (when `unreadable`) a failure as a wrong encryption key gives. */
let unreadable = false
const WorkspacesDouble = makeTestLayer(Workspaces)({
  openWebhookSecrets: () =>
    unreadable
      ? Effect.die(new Error(UNREADABLE))
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

/** A workspace, an integration and one pending event of it. */
const anEvent = () =>
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
      events.emit("send_csat", { integration, conversation: null, data: {} }))
    return { id, integration }
  }).pipe(Effect.orDie)

const eventOf = (id: EventId) =>
  Effect.flatMap(DeliveriesRepo, (repo) => repo.findByIds([id])).pipe(
    Effect.flatMap((events) => Effect.fromNullishOr(events[0])),
    Effect.orDie
  )

/**
 * `effect` with the clock frozen at `at` (its sleeps real): every "now" the sender reads is `at`, so
 * what it stores is exact. The backoff's jitter draws 0.5 (none): the delays are exactly the policy's.
 */
const frozenAt = (at: DateTime.Utc) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.clockWith((live) => {
    const millis = at.epochMilliseconds
    const nanos = BigInt(millis) * 1_000_000n
    const frozen: Clock.Clock = {
      currentTimeMillisUnsafe: () => millis,
      currentTimeMillis: Effect.succeed(millis),
      currentTimeNanosUnsafe: () => nanos,
      currentTimeNanos: Effect.succeed(nanos),
      monotonicTimeNanosUnsafe: () => live.monotonicTimeNanosUnsafe(),
      monotonicTimeNanos: live.monotonicTimeNanos,
      sleep: (duration) => live.sleep(duration)
    }
    return effect.pipe(
      Effect.provideService(Clock.Clock, frozen),
      Effect.provideService(Random.Random, { nextDoubleUnsafe: () => 0.5, nextIntUnsafe: () => 0 })
    )
  })

/** Event `id`'s attempt, at `at`. */
const deliverAt = (id: EventId, at: DateTime.Utc) =>
  Effect.flatMap(Sender, (sender) => sender.deliver(id)).pipe(frozenAt(at))

/** The events' attempts as one batch, at `at`. */
const deliverManyAt = (ids: ReadonlyArray<EventId>, at: DateTime.Utc) =>
  Effect.flatMap(Sender, (sender) => sender.deliverMany(ids.map((eventId) => ({ eventId })))).pipe(frozenAt(at))

/** `seconds` after the event `id` was created. */
const after = (id: EventId, seconds: number) =>
  Effect.map(eventOf(id), (event) => DateTime.add(event.createdAt, { seconds }))

const millisOf = (at: DateTime.Utc | null | undefined) => at?.epochMilliseconds

/**
 * When a retry outcome has its job due (the queue stores it as the job's `run_at`, the one stored next
 * attempt: the sender alone writes none).
 */
const retryAt = (outcome: Outcome | undefined) => outcome?._tag === "Retry" ? outcome.at : undefined

/** An outcome's retry delay in milliseconds; what it is when not a retry. */
const retryDelay = (outcome: Outcome) => outcome._tag === "Retry" ? Duration.toMillis(outcome.delay) : outcome._tag

const attemptsOf = (id: EventId) => Effect.flatMap(DeliveriesRepo, (repo) => repo.attempts(id)).pipe(Effect.orDie)

const reset = (answer: typeof receiver.answer) =>
  Effect.sync(() => {
    receiver.sent = []
    receiver.answer = answer
    receiver.during = Effect.void
    unreadable = false
  })

describe("Sender", () => {
  // The real clock underneath (the database's `now()` stamps the events); each attempt runs at an
  // instant of its own (`frozenAt`).
  layer(SenderTest, { excludeTestServices: true })((it) => {
    it.effect("a 2xx: delivered, one attempt recorded, the stored body sent and signed with the workspace's secret", () =>
      Effect.gen(function*() {
        const answer = "x".repeat(600)
        yield* reset(() => new Response(answer, { status: 202 }))
        const { id } = yield* anEvent()
        const at = yield* after(id, 10)
        const outcome = yield* deliverAt(id, at)
        expect(outcome).toEqual(Outcome.Done())
        const event = yield* eventOf(id)
        expect(event).toMatchObject({ status: "delivered", attempts: 1, lastStatusCode: 202, lastError: null })
        expect(millisOf(event.deliveredAt)).toBe(at.epochMilliseconds)
        const [attempt, ...more] = yield* attemptsOf(id)
        expect(more).toEqual([])
        // The first 500 characters of the answer are kept.
        expect(attempt).toMatchObject({ attempt: 1, statusCode: 202, error: null, latencyMs: 0, nextRetryAt: null })
        expect(attempt?.responseSnippet).toBe(answer.slice(0, 500))
        expect(millisOf(attempt?.startedAt)).toBe(at.epochMilliseconds)
        // What the receiver got: the stored body, byte for byte, signed at the attempt's time.
        expect(receiver.sent).toHaveLength(1)
        const [request] = receiver.sent
        expect(request?.url).toBe("https://receiver.example/hook")
        expect(request?.text).toBe(event.body)
        expect(request?.headers).toMatchObject({
          "x-shop": "7",
          "user-agent": "Parley-Webhooks/1",
          "webhook-id": id,
          "webhook-timestamp": String(Math.floor(at.epochMilliseconds / 1000))
        })
        const verified = verifyWebhook({
          secret: SECRET,
          headers: request?.headers ?? {},
          rawBody: request?.text ?? "",
          now: Math.floor(at.epochMilliseconds / 1000)
        })
        expect(verified.ok).toBe(true)
      }))

    it.effect("a 5xx: failed, retried after the scheduled delay, Retry-After honoured when longer", () =>
      Effect.gen(function*() {
        yield* reset(() => new Response("busy", { status: 503, headers: { "retry-after": "120" } }))
        const { id } = yield* anEvent()
        const at = yield* after(id, 10)
        const outcome = yield* deliverAt(id, at)
        // Handed to the queue: the wait (Retry-After's 120 s, longer than the scheduled 5 s) and why.
        expect(outcome).toMatchObject({ _tag: "Retry", error: "HTTP 503" })
        expect(retryDelay(outcome)).toBe(120_000)
        const event = yield* eventOf(id)
        expect(event).toMatchObject({ status: "failed", attempts: 1, lastStatusCode: 503, lastError: "HTTP 503" })
        expect(millisOf(retryAt(outcome))).toBe(at.epochMilliseconds + 120_000)
        const [attempt] = yield* attemptsOf(id)
        expect(attempt).toMatchObject({ attempt: 1, statusCode: 503, error: "HTTP 503", responseSnippet: "busy" })
        expect(millisOf(attempt?.nextRetryAt)).toBe(at.epochMilliseconds + 120_000)
      }))

    it.effect("each failure waits twice as long as the one before: 5 s, 10 s, 20 s, 40 s", () =>
      Effect.gen(function*() {
        yield* reset(() => new Response(null, { status: 500 }))
        const { id } = yield* anEvent()
        let at = yield* after(id, 1)
        const delays: Array<unknown> = []
        for (let n = 1; n <= 4; n++) {
          const outcome = yield* deliverAt(id, at)
          delays.push(retryDelay(outcome))
          const event = yield* eventOf(id)
          expect(event).toMatchObject({ status: "failed", attempts: n })
          expect(millisOf(retryAt(outcome))).toBe(at.epochMilliseconds + 5_000 * 2 ** (n - 1))
          at = retryAt(outcome) ?? at
        }
        expect(delays).toEqual([5_000, 10_000, 20_000, 40_000])
        const attempts = yield* attemptsOf(id)
        expect(attempts.map((a) => [a.attempt, (millisOf(a.nextRetryAt) ?? 0) - (millisOf(a.startedAt) ?? 0)]))
          .toEqual([[1, 5_000], [2, 10_000], [3, 20_000], [4, 40_000]])
        expect(receiver.sent).toHaveLength(4)
      }))

    it.effect("a time-out and a connection failure are retried; the SSRF guard's refusal is dead at once", () =>
      Effect.gen(function*() {
        const timedOut = yield* anEvent()
        const broken = yield* anEvent()
        const internal = yield* anEvent()
        yield* reset((request) =>
          request.headers["webhook-id"] === timedOut.id
            ? new WebhookTimeout({ message: "Timed out after 10s" })
            : request.headers["webhook-id"] === broken.id
            ? new WebhookTransportError({ message: "Transport error (POST …)", cause: new Error("ECONNREFUSED") })
            : new WebhookTransportError({
              message: "Transport error (POST …)",
              cause: new SsrfRefused("receiver.example", "10.0.0.1")
            })
        )
        const at = yield* after(internal.id, 10)
        const outcomes = yield* deliverManyAt([timedOut.id, broken.id, internal.id], at)
        expect(outcomes.map(retryDelay)).toEqual([5_000, 5_000, "Done"])
        expect(yield* eventOf(timedOut.id)).toMatchObject({ status: "failed", lastStatusCode: null, lastError: "Timed out" })
        expect(yield* eventOf(broken.id)).toMatchObject({
          status: "failed",
          lastStatusCode: null,
          lastError: "Transport error (POST …): ECONNREFUSED"
        })
        const refused = "SSRF guard: receiver.example resolves to the internal address 10.0.0.1; refused in production mode"
        const dead = yield* eventOf(internal.id)
        expect(dead).toMatchObject({ status: "dead", attempts: 1, lastStatusCode: null, lastError: refused })
        expect(millisOf(dead.deadAt)).toBe(at.epochMilliseconds)
        expect(yield* attemptsOf(internal.id)).toMatchObject([{ attempt: 1, error: refused, nextRetryAt: null }])
      }))

    it.effect("410 Gone: dead at once, and the integration's webhook turned off", () =>
      Effect.gen(function*() {
        yield* reset(() => new Response(null, { status: 410 }))
        const { id, integration } = yield* anEvent()
        const at = yield* after(id, 10)
        expect(yield* deliverAt(id, at)).toEqual(Outcome.Done())
        const event = yield* eventOf(id)
        expect(event).toMatchObject({ status: "dead", attempts: 1, lastStatusCode: 410, lastError: "410 Gone: webhook disabled" })
        expect(millisOf(event.deadAt)).toBe(at.epochMilliseconds)
        expect(yield* attemptsOf(id)).toMatchObject([{ attempt: 1, statusCode: 410, error: "HTTP 410", nextRetryAt: null }])
        const stored = yield* Effect.flatMap(IntegrationsRepo, (repo) => repo.findById(integration.integrationId)).pipe(
          Effect.map(Option.getOrThrow),
          Effect.orDie
        )
        expect(stored.settings.webhookEnabled).toBe(false)
      }))

    it.effect("an integration whose webhook is disabled: dead at once, nothing sent", () =>
      Effect.gen(function*() {
        yield* reset(() => new Response(null, { status: 200 }))
        const { id, integration } = yield* anEvent()
        yield* Effect.flatMap(IntegrationsRepo, (repo) => repo.setWebhookEnabled(integration.integrationId, false))
        expect(yield* deliverAt(id, yield* after(id, 10))).toEqual(Outcome.Done())
        const event = yield* eventOf(id)
        expect(event).toMatchObject({ status: "dead", attempts: 1, lastStatusCode: null })
        expect(event.lastError).toMatch(/^Webhook disabled /)
        expect(yield* attemptsOf(id)).toMatchObject([{ attempt: 1, statusCode: null, error: event.lastError }])
        expect(receiver.sent).toEqual([])
      }))

    it.effect("a secret that cannot be read is an attempt in the delivery policy, dead once the window closed", () =>
      Effect.gen(function*() {
        yield* reset(() => new Response(null, { status: 200 }))
        unreadable = true
        const error = `Not sent: ${UNREADABLE}`
        const young = yield* anEvent()
        const soon = yield* after(young.id, 10)
        const retried = yield* deliverAt(young.id, soon)
        expect(retried).toMatchObject({ _tag: "Retry", error })
        expect(retryDelay(retried)).toBe(5_000)
        const failed = yield* eventOf(young.id)
        expect(failed).toMatchObject({ status: "failed", attempts: 1, lastStatusCode: null, lastError: error })
        expect(millisOf(retryAt(retried))).toBe(soon.epochMilliseconds + 5_000)
        expect(yield* attemptsOf(young.id)).toMatchObject([{ attempt: 1, statusCode: null, error, responseSnippet: null }])

        // The retry window (DELIVERY_MAX_AGE, 1 hour here) closed: dead.
        const old = yield* anEvent()
        const late = yield* after(old.id, 61 * 60)
        expect(yield* deliverAt(old.id, late)).toEqual(Outcome.Done())
        const dead = yield* eventOf(old.id)
        expect(dead).toMatchObject({ status: "dead", attempts: 1, lastError: error })
        expect(millisOf(dead.deadAt)).toBe(late.epochMilliseconds)
        expect(yield* attemptsOf(old.id)).toMatchObject([{ attempt: 1, error, nextRetryAt: null }])
        expect(receiver.sent).toEqual([])
      }))

    it.effect("an attempt overtaken by a replay is recorded but leaves the event to the replay", () =>
      Effect.gen(function*() {
        yield* reset(() => new Response(null, { status: 200 }))
        const { id } = yield* anEvent()
        receiver.during = Effect.flatMap(SqlClient.SqlClient, (sql) =>
          sql`UPDATE events SET generation = generation + 1, status = 'pending' WHERE id = ${id}`).pipe(Effect.orDie)
        expect(yield* deliverAt(id, yield* after(id, 10))).toEqual(Outcome.Done())
        expect(yield* eventOf(id)).toMatchObject({ status: "pending", attempts: 1, lastStatusCode: 200, deliveredAt: null })
        expect(yield* attemptsOf(id)).toMatchObject([{ attempt: 1, statusCode: 200, error: null, nextRetryAt: null }])
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
        const at = yield* after(settled.id, 10)
        const outcomes = yield* deliverManyAt([delivered.id, failing.id, settled.id, missing, down.id], at)
        expect(outcomes).toMatchObject([
          { _tag: "Done" },
          { _tag: "Retry", error: "HTTP 503" },
          { _tag: "Done" },
          { _tag: "Dead", error: `Event ${missing} not found` },
          { _tag: "Retry", error: "HTTP 500" }
        ])
        expect(outcomes.map(retryDelay)).toEqual(["Done", 5_000, "Done", "Dead", 5_000])
        expect(yield* eventOf(delivered.id)).toMatchObject({ status: "delivered", attempts: 1, lastStatusCode: 200 })
        expect((yield* attemptsOf(delivered.id)).map((a) => [a.attempt, a.nextRetryAt])).toEqual([[1, null]])
        // The two failures, recorded together: each failed until its next attempt (its job's, from the
        // outcome), which its attempt records.
        for (const [index, id, status] of [[1, failing.id, 503], [4, down.id, 500]] as const) {
          const event = yield* eventOf(id)
          expect(event).toMatchObject({ status: "failed", attempts: 1, lastStatusCode: status, lastError: `HTTP ${status}` })
          expect(millisOf(retryAt(outcomes[index]))).toBe(at.epochMilliseconds + 5_000)
          const [attempt] = yield* attemptsOf(id)
          expect(attempt).toMatchObject({ attempt: 1, statusCode: status, error: `HTTP ${status}` })
          expect(millisOf(attempt?.nextRetryAt)).toBe(at.epochMilliseconds + 5_000)
        }
        expect(yield* eventOf(settled.id)).toMatchObject({ status: "delivered", attempts: 0 })
        expect(receiver.sent.map((request) => request.headers["webhook-id"]).sort())
          .toEqual([delivered.id, failing.id, down.id].sort())
      }))

    it.effect("a settled event is not sent again", () =>
      Effect.gen(function*() {
        yield* reset(() => new Response(null, { status: 200 }))
        const { id } = yield* anEvent()
        const at = yield* after(id, 10)
        yield* deliverAt(id, at)
        expect(yield* deliverAt(id, DateTime.add(at, { seconds: 1 }))).toEqual(Outcome.Done())
        expect(receiver.sent).toHaveLength(1)
        expect(yield* attemptsOf(id)).toHaveLength(1)
      }))
  })
})
