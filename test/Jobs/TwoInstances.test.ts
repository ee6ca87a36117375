/**
 * Two Parley instances (two worker pools) on one database share the work and never do a job twice.
 * The claim's SKIP LOCKED lets both work at once. Runs on PostgreSQL only: PGlite is one session.
 */
import { describe, expect, layer } from "@effect/vitest"
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Events } from "../../src/Delivery/Events.js"
import { Integrations } from "../../src/Integrations/Integrations.js"
import { IntegrationsRepo } from "../../src/Integrations/Repo.js"
import { ServicesLive, WorkerPoolLive } from "../../src/App.js"
import { Workspaces } from "../../src/Workspaces/Workspaces.js"
import { fastPipeline } from "../support/App.js"
import { usingPostgres } from "../support/Database.js"
import { jobsSettled } from "../support/Eventually.js"
import { AnyEvent, makeReceiver, webhookBody } from "../support/Receiver.js"
import { layerTest } from "../support/Services.js"

describe("two Parley instances on one database", () => {
  // Two pools (`Layer.fresh`: each its own instance) on the services, in one build: one database, one
  // copy of each service they share. The pools take `Workspaces` from the services, as in the app: the
  // purge job's handler (`WorkspacesJobsLive`) cannot provide it (Workspaces.ts imports that module).
  const TwoPools = layerTest(
    Layer.mergeAll(Layer.fresh(WorkerPoolLive), Layer.fresh(WorkerPoolLive)).pipe(
      Layer.provideMerge(Layer.mergeAll(ServicesLive, Events.layer, IntegrationsRepo.layer))
    ),
    // A lease long enough that a loaded machine (event-loop stalls, the heartbeat waiting for a pooled
    // connection behind deliveries) does not expire one: a lost lease is at-least-once by design, and
    // this test is about claims, which must never hand one job to both pools.
    { ...fastPipeline, WORKER_CONCURRENCY: "3", JOB_LEASE: "10 seconds" }
  )

  layer(TwoPools, { excludeTestServices: true, timeout: 120_000 })((it) => {
    // PGlite is one session: claims run one at a time there, so exclusivity cannot fail; PostgreSQL only.
    it.effect.skipIf(!usingPostgres)("share the work and never deliver an event twice", () =>
      Effect.gen(function*() {
        const receiver = yield* makeReceiver(() => ({ status: 200, delayMs: 30 }))
        const workspace = yield* Effect.flatMap(Workspaces, (w) => w.create("Two pools"))
        const created = yield* Effect.flatMap(Integrations, (i) =>
          i.create(workspace.workspace.id, {
            name: "pools",
            integration: "api",
            webhook: { url: receiver.url, headers: {}, metadata: {} },
            supportedFeatures: {},
            channelsSettings: {}
          }))
        const integration = yield* Effect.flatMap(IntegrationsRepo, (r) => r.findById(created.integrationId)).pipe(
          Effect.map(Option.getOrThrow)
        )
        const events = yield* Events
        const sql = yield* SqlClient.SqlClient
        const count = 40
        for (let i = 0; i < count; i++) {
          yield* events.emit("conversation_summary", { integration, conversation: null, data: { summary: String(i), at: "close" } }).pipe(
            sql.withTransaction
          )
        }
        yield* receiver.waitFor(count, 30_000)
        // Every delivery job settled: a job run twice would have posted before it settled.
        yield* jobsSettled({ workspaceId: workspace.workspace.id, integrationId: created.integrationId })
        const ids = receiver.received().map((r) => webhookBody(AnyEvent)(r).eventId)
        expect(ids).toHaveLength(count)
        expect(new Set(ids).size).toBe(count)
        const attempts = yield* sql<{ readonly n: number }>`
          SELECT count(*)::int AS n FROM delivery_attempts a JOIN events e ON e.id = a.event_id
          WHERE e.integration_id = ${integration.integrationId}`
        expect(attempts[0]!.n).toBe(count)
        const instances = yield* sql<{ readonly instance: string }>`
          SELECT DISTINCT split_part(locked_by, '#', 1) AS instance FROM jobs
          WHERE kind = 'deliver_event' AND payload->>'eventId' IN ${sql.in(ids)}`
        // Both instances took jobs (SKIP LOCKED lets them claim side by side).
        expect(instances).toHaveLength(2)
      }))
  })
})
