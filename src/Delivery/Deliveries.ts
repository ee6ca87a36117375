/** Deliveries as integrators and operators see them: listing, detail, replay. */
import * as SqlClient from "effect/sql/SqlClient"
import * as Context from "effect/Context"
import type * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { DeliveryDetail, DeliveryStatus } from "../Domain/Delivery.js"
import { NotFound } from "../Domain/Errors.js"
import type { EventId, IntegrationId } from "../Domain/Ids.js"
import { JobQueue } from "../Jobs/Queue.js"
import { DeliverEvent } from "./Jobs.js"
import { orDieSql } from "../Sql.js"
import { DeliveriesRepo } from "./Repo.js"

const notFound = new NotFound({ detail: "Delivery not found" })

export class Deliveries extends Context.Service<Deliveries>()("Parley/Deliveries", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const repo = yield* DeliveriesRepo
    const queue = yield* JobQueue

    const list = Effect.fn("Deliveries.list")(function*(
      integrationId: IntegrationId,
      filter: { readonly status?: DeliveryStatus; readonly since?: DateTime.Utc; readonly limit: number }
    ) {
      return yield* repo.list({
        integrationId,
        statuses: filter.status === undefined ? [] : [filter.status],
        since: filter.since ?? null,
        limit: filter.limit
      })
    }, orDieSql)

    const find = (integrationId: IntegrationId, id: EventId) =>
      repo.findInIntegration({ integrationId, id }).pipe(
        Effect.flatMap(Option.match({ onNone: () => Effect.fail(notFound), onSome: Effect.succeed }))
      )

    const get = Effect.fn("Deliveries.get")(function*(integrationId: IntegrationId, id: EventId) {
      const delivery = yield* find(integrationId, id)
      const attemptLog = yield* repo.attempts(id)
      return { ...delivery, attemptLog } satisfies DeliveryDetail
    }, orDieSql)

    /**
     * Sends the event again now, signed afresh, in a new retry window. Under the event's row lock (the
     * sender settles under it too): a waiting job is brought forward, a running one runs again right
     * after its attempt (which then leaves the event to the replay), and with no live job a fresh one
     * is queued after the conversation's others.
     */
    const replay = Effect.fn("Deliveries.replay")(function*(integrationId: IntegrationId, id: EventId) {
      return yield* Effect.gen(function*() {
        // The event's row lock before its job's, as replay-all takes them.
        const replayed = yield* repo.markReplayed({ integrationId, id })
        if (Option.isNone(replayed)) return yield* Effect.fail(notFound)
        const brought = yield* queue.runNow(DeliverEvent, id)
        if (!brought) {
          yield* queue.enqueue(DeliverEvent, { eventId: id }, {
            orderKey: replayed.value.conversationId,
            group: integrationId
          })
        }
        // Read once its job is moved: the next attempt shown is the job's.
        return yield* find(integrationId, id)
      }).pipe(sql.withTransaction)
    }, orDieSql)

    /**
     * Every dead or failed event since `since` (at most 10,000, the newest), in one transaction and a
     * fixed number of statements: each gets a fresh job queued after its conversation's others, oldest
     * first, so replayed events keep their order among themselves (a waiting job is retired; a running
     * one runs again right after its attempt instead).
     */
    const replayAll = Effect.fn("Deliveries.replayAll")(function*(integrationId: IntegrationId, since: DateTime.Utc) {
      const replayed = yield* repo.markAllReplayed({ integrationId, since, limit: 10_000 })
      yield* queue.replaceMany(DeliverEvent, replayed.map((delivery) => ({
        payload: { eventId: delivery.id },
        orderKey: delivery.conversationId,
        group: delivery.integrationId
      })))
      return { replayed: replayed.length, deliveryIds: replayed.map((r) => r.id) }
    }, sql.withTransaction, orDieSql)

    return { list, get, replay, replayAll } as const
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
  static readonly layer = this.layerWithoutDependencies.pipe(Layer.provide([DeliveriesRepo.layer, JobQueue.layer]))
}
