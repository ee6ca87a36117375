/** Deliveries as integrators and operators see them: listing, detail, replay. */
import * as SqlClient from "@effect/sql/SqlClient"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { Delivery, DeliveryDetail, DeliveryStatus } from "../Domain/Delivery.js"
import { NotFound } from "../Domain/Errors.js"
import type { EventId, IntegrationId } from "../Domain/Ids.js"
import { JobQueue } from "../Jobs/Queue.js"
import { DeliverEvent } from "./Jobs.js"
import { DeliveriesRepo, type EventRow } from "./Repo.js"

export const toDelivery = (row: EventRow): Delivery => ({
  id: row.id,
  event: row.kind,
  integrationId: row.integrationId,
  conversationId: row.conversationId,
  status: row.status,
  attempts: row.attempts,
  lastStatusCode: row.lastStatusCode,
  lastError: row.lastError,
  nextAttemptAt: row.nextAttemptAt,
  createdAt: row.createdAt,
  deliveredAt: row.deliveredAt,
  deadAt: row.deadAt
})

const notFound = new NotFound({ detail: "Delivery not found" })

export class Deliveries extends Effect.Service<Deliveries>()("Parley/Deliveries", {
  dependencies: [DeliveriesRepo.Default, JobQueue.Default],
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const repo = yield* DeliveriesRepo
    const queue = yield* JobQueue

    const list = Effect.fn("Deliveries.list")(function*(
      integrationId: IntegrationId,
      filter: { readonly status?: DeliveryStatus; readonly since?: DateTime.Utc; readonly limit: number }
    ) {
      const rows = yield* repo.list({
        integrationId,
        statuses: filter.status === undefined ? [] : [filter.status],
        since: filter.since ?? null,
        limit: filter.limit
      }).pipe(Effect.orDie)
      return rows.map(toDelivery)
    })

    const find = (integrationId: IntegrationId, id: EventId) =>
      repo.findInIntegration({ integrationId, id }).pipe(
        Effect.orDie,
        Effect.flatMap(Option.match({ onNone: () => Effect.fail(notFound), onSome: Effect.succeed }))
      )

    const get = Effect.fn("Deliveries.get")(function*(integrationId: IntegrationId, id: EventId) {
      const row = yield* find(integrationId, id)
      const attempts = yield* repo.attempts(id).pipe(Effect.orDie)
      return {
        ...toDelivery(row),
        body: row.body,
        attemptLog: attempts.map((a) => ({
          attempt: a.attempt,
          startedAt: a.startedAt,
          latencyMs: a.latencyMs,
          statusCode: a.statusCode,
          error: a.error,
          responseSnippet: a.responseSnippet,
          nextRetryAt: a.nextRetryAt
        }))
      } satisfies DeliveryDetail
    })

    /**
     * Sends the event again now, signed afresh, in a new retry window. Under the event's row lock (the
     * sender settles under it too): a waiting job is brought forward, a running one runs again right
     * after its attempt (which then leaves the event to the replay), and with no live job a fresh one
     * is queued after the conversation's others. `fresh` (replay all) also retires a waiting job and
     * queues a new one, so that replayed events keep their order among themselves.
     */
    const replayRow = (row: EventRow, fresh: boolean) =>
      Effect.gen(function*() {
        const replayed = yield* repo.markReplayed(row.id)
        if (fresh) yield* queue.supersede(DeliverEvent, row.id)
        const brought = yield* queue.runNow(DeliverEvent, row.id)
        if (!brought) yield* queue.enqueue(DeliverEvent, { eventId: row.id }, { conversationId: row.conversationId })
        return replayed
      }).pipe(sql.withTransaction, Effect.orDie)

    const replay = Effect.fn("Deliveries.replay")(function*(integrationId: IntegrationId, id: EventId) {
      return toDelivery(yield* replayRow(yield* find(integrationId, id), false))
    })

    const replayAll = Effect.fn("Deliveries.replayAll")(function*(integrationId: IntegrationId, since: DateTime.Utc) {
      const rows = yield* repo.list({ integrationId, statuses: ["dead", "failed"], since, limit: 10_000 }).pipe(
        Effect.orDie
      )
      // Oldest first and all with fresh jobs, so a conversation's events are queued again in their order.
      const ordered = [...rows].sort((a, b) => a.createdAt.epochMillis - b.createdAt.epochMillis)
      const replayed = yield* Effect.forEach(ordered, (row) => replayRow(row, true))
      return { replayed: replayed.length, deliveryIds: replayed.map((r) => r.id) }
    })

    return { list, get, replay, replayAll } as const
  })
}) {}
