/**
 * One tenant never stalls another: deliveries wait on receivers in a lane of their own, a few
 * per integration at most, so an integration whose receiver hangs with hundreds of events queued holds
 * only its own share, and another integration's replies still arrive within their normal latency.
 */
import { describe, expect, layer } from "@effect/vitest"
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Events } from "../../src/Delivery/Events.js"
import { IntegrationId } from "../../src/Domain/Ids.js"
import { MessageReceived } from "../../src/Domain/Conversation.js"
import { IntegrationsRepo } from "../../src/Integrations/Repo.js"
import { bodyAs, call, makeTenant, TestAppWithWorkers } from "../support/App.js"
import { eventually } from "../support/Eventually.js"
import { AnyEvent, makeReceiver, webhookBody } from "../support/Receiver.js"

const App = Layer.mergeAll(Events.layer, IntegrationsRepo.layer).pipe(
  Layer.provideMerge(
    TestAppWithWorkers({
      // A receiver that never answers holds an attempt for the whole time-out.
      DELIVERY_TIMEOUT: "30 seconds",
      WORKER_CONCURRENCY: "2",
      DELIVERY_CONCURRENCY: "8",
      DELIVERY_CONCURRENCY_PER_INTEGRATION: "2"
    })
  )
)

const runningDeliveries = (integrationId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ readonly n: number }>`
      SELECT count(*)::int AS n FROM jobs WHERE kind = 'deliver_event' AND status = 'running'
        AND group_key = ${integrationId}`).pipe(Effect.map((rows) => rows[0]?.n ?? 0))

describe("fairness", () => {
  layer(App, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("a hung receiver with hundreds of events queued does not delay another integration's replies", () =>
      Effect.gen(function*() {
        const hung = yield* makeReceiver(() => ({ status: 200, delayMs: 60_000 }))
        const stuck = yield* makeTenant({ webhookUrl: hung.url })
        const integration = yield* Effect.flatMap(IntegrationsRepo, (repo) =>
          repo.findById(IntegrationId.make(stuck.integrationId))).pipe(Effect.map(Option.getOrThrow), Effect.orDie)
        const events = yield* Events
        const sql = yield* SqlClient.SqlClient
        // 300 events, without a conversation (none waits for another): all due at once.
        for (let i = 0; i < 300; i++) {
          yield* events.emit("conversation_summary", { integration, conversation: null, data: { summary: String(i), at: "close" } }).pipe(
            sql.withTransaction
          )
        }
        // The stuck integration has its share in flight, at its receiver.
        yield* eventually(runningDeliveries(stuck.integrationId), (n) => n === 2)
        yield* hung.waitFor(2)

        const healthy = yield* makeReceiver()
        const other = yield* makeTenant({ webhookUrl: healthy.url, supportedFeatures: { escalation: false } })
        yield* call("POST", `/v1/webhooks/${other.integrationId}/message-received`, {
          token: other.token,
          body: { id: "f-1", role: "human", customerId: other.workspaceId, conversationId: "fair", text: "Hello?" }
        }).pipe(Effect.flatMap(bodyAs(MessageReceived)))
        const delivered = yield* eventually(
          Effect.sync(() => healthy.received().map(webhookBody(AnyEvent))),
          (events) => events.some((event) => event.event === "send_messages")
        )
        expect(delivered.every((event) => event.integrationId === other.integrationId)).toBe(true)
        // The reply went out while the stuck integration's two attempts were still hanging (each holds its
        // place for the 30-second time-out): it waited for neither, and the stuck one took no more than
        // its share meanwhile, of either the lane or the receiver.
        expect(yield* runningDeliveries(stuck.integrationId)).toBe(2)
        expect(hung.received()).toHaveLength(2)
      }), 90_000) // the set-up (300 events, one transaction each) took over 30 s on PGlite on a loaded machine
  })
})
