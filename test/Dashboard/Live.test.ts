/**
 * How long a live stream lasts (src/Dashboard/Live.ts), on the TestClock: as long as its session, never
 * past its lifetime, and only so many at once per session.
 */
import { describe, expect, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Schema from "effect/Schema"
import { HttpClient, HttpClientRequest } from "effect/http"
import * as TestClock from "effect/testing/TestClock"
import { MAX_STREAMS_PER_SESSION } from "../../src/Dashboard/Live.js"
import { TokenSummary } from "../../src/Domain/Workspace.js"
import { ADMIN_TOKEN, bodyAs, call, makeTenant, type Tenant, TestApp } from "../support/App.js"
import { type DashboardSession, signIn } from "../support/Dashboard.js"

/** The live URL of an integration's conversation list (any page's stream behaves alike). */
const liveListPath = (tenant: Tenant) =>
  `/dashboard/w/${tenant.workspaceId}/integrations/${tenant.integrationId}/conversations/events?v=x`

/** Opens the stream and reads its whole text in the background: the fiber ends when the stream does. */
const openStream = (session: DashboardSession, path: string) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const response = yield* client.execute(HttpClientRequest.get(path).pipe(HttpClientRequest.setHeader("cookie", session.cookie)))
    expect(response.status).toBe(200)
    expect(response.headers["content-type"]).toMatch(/^text\/event-stream/)
    return yield* Effect.forkScoped(Effect.orDie(response.text))
  })

/** Lets the server and the sockets do their work: a moment of real time (the TestClock does not pass). */
const settle = Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, 200)))

const revoke = (tokenId: string) => call("DELETE", `/admin/v1/tokens/${tokenId}`, { token: ADMIN_TOKEN })

/** The id of the tenant's first API token (the one `makeTenant` signs in with). */
const firstTokenId = (tenant: Tenant) =>
  call("GET", `/admin/v1/workspaces/${tenant.workspaceId}/tokens`, { token: ADMIN_TOKEN }).pipe(
    Effect.flatMap(bodyAs(Schema.Array(TokenSummary))),
    Effect.map((reply) => reply.body[0]?.id ?? "")
  )

describe("a live stream's life", () => {
  layer(TestApp({ PARLEY_DASHBOARD_SESSION_TTL: "1 hour" }), { timeout: 60_000 })((it) => {
    it.effect("ends within 30 seconds of its integrator's token being revoked", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const session = yield* signIn(tenant.token)
        const stream = yield* openStream(session, liveListPath(tenant))
        yield* TestClock.adjust("29 seconds")
        expect(stream.pollUnsafe()).toBeUndefined()

        // Revoked at 29 s: the stream has not looked yet; its check at 30 s ends it.
        expect((yield* revoke(yield* firstTokenId(tenant))).status).toBe(204)
        yield* TestClock.adjust("500 millis")
        yield* settle
        expect(stream.pollUnsafe()).toBeUndefined()
        yield* TestClock.adjust("1 second")
        const text = yield* Fiber.join(stream)
        expect(text).toContain(": connected")
      }).pipe(Effect.scoped))

    it.effect("ends after 10 minutes (the browser reconnects), and when its session expires, whichever comes first", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const session = yield* signIn(tenant.token)
        const stream = yield* openStream(session, liveListPath(tenant))
        yield* TestClock.adjust("9 minutes")
        yield* settle
        expect(stream.pollUnsafe()).toBeUndefined()
        yield* TestClock.adjust("1 minute")
        expect(yield* Fiber.join(stream)).toContain(": heartbeat")
        // At 55 minutes the session (1 hour) is still valid: a new stream opens, and ends with the
        // session at 60 minutes, before its own 10 minutes are up.
        yield* TestClock.adjust("45 minutes")
        const last = yield* openStream(session, liveListPath(tenant))
        yield* TestClock.adjust("4 minutes")
        yield* settle
        expect(last.pollUnsafe()).toBeUndefined()
        yield* TestClock.adjust("1 minute")
        yield* Fiber.join(last)
      }).pipe(Effect.scoped))

    it.effect(`a session holds at most ${MAX_STREAMS_PER_SESSION} streams at once; more are told to retry later`, () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const session = yield* signIn(tenant.token)
        const open = yield* Effect.forEach(
          Array.from({ length: MAX_STREAMS_PER_SESSION }),
          () => openStream(session, liveListPath(tenant))
        )
        yield* settle
        const refused = yield* Fiber.join(yield* openStream(session, liveListPath(tenant)))
        expect(refused).toContain("retry: 60000")
        expect(refused).not.toContain(": connected")
        // Another session is not counted with this one.
        const other = yield* signIn(tenant.token)
        const elsewhere = yield* openStream(other, liveListPath(tenant))
        yield* settle
        expect(elsewhere.pollUnsafe()).toBeUndefined()
        // One ends: a place is free again.
        yield* Fiber.interrupt(open[0]!)
        yield* settle
        const admitted = yield* openStream(session, liveListPath(tenant))
        yield* settle
        expect(admitted.pollUnsafe()).toBeUndefined()
      }).pipe(Effect.scoped))
  })
})
