/**
 * Outbound events: the body is built and stored once, byte for byte what every attempt sends and
 * signs; a `deliver_event` job is enqueued on the caller's connection (same transaction), in its
 * conversation's order (see `JobQueue.enqueue`).
 */
import * as Context from "effect/Context"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as crypto from "node:crypto"
import type { Conversation } from "../Domain/Conversation.js"
import type { EventKind } from "../Domain/Delivery.js"
import { EventId } from "../Domain/Ids.js"
import type { Integration } from "../Domain/Integration.js"
import { JobQueue } from "../Jobs/Queue.js"
import { eventsEmittedOf } from "../Observability/Metrics.js"
import { orDieSql } from "../Sql.js"
import { DeliverEvent } from "./Jobs.js"
import { DeliveriesRepo } from "./Repo.js"

export class Events extends Context.Service<Events>()("Parley/Events", {
  make: Effect.gen(function*() {
    const repo = yield* DeliveriesRepo
    const queue = yield* JobQueue

    /** Stores the event and schedules its delivery; run it inside the transaction that caused it. */
    const emit = Effect.fn("Events.emit")(function*(input: {
      readonly integration: Integration
      readonly conversation: Pick<Conversation, "id" | "externalId" | "customerId"> | null
      readonly kind: EventKind
      readonly data: unknown
      /** When what caused the event happened (the customer's message), for end-to-end latency. */
      readonly originAt?: DateTime.Utc | undefined
    }) {
      const id = EventId.make(crypto.randomUUID())
      const createdAt = yield* DateTime.now
      // docs/webhooks.md envelope.
      const body = JSON.stringify({
        event: input.kind,
        eventId: id,
        integrationId: input.integration.integrationId,
        conversationId: input.conversation?.externalId ?? null,
        customerId: input.conversation?.customerId ?? null,
        createdAt: DateTime.formatIso(createdAt),
        metadata: input.integration.settings.webhook.metadata,
        data: input.data
      })
      yield* repo.insert({
        id,
        workspaceId: input.integration.workspaceId,
        event: input.kind,
        integrationId: input.integration.integrationId,
        conversationId: input.conversation?.id ?? null,
        body,
        status: "pending",
        attempts: 0,
        lastStatusCode: null,
        lastError: null,
        nextAttemptAt: null,
        createdAt,
        deliveredAt: null,
        deadAt: null,
        replayedAt: null,
        originAt: input.originAt ?? null,
        generation: 0
      })
      yield* queue.enqueue(DeliverEvent, { eventId: id }, {
        conversationId: input.conversation?.id,
        group: input.integration.integrationId
      })
      yield* Metric.update(eventsEmittedOf(input.kind), 1)
      yield* Effect.annotateCurrentSpan({ "event.id": id, "event.kind": input.kind })
      return id
    }, orDieSql)

    return { emit } as const
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
  static readonly layer = this.layerWithoutDependencies.pipe(Layer.provide([DeliveriesRepo.layer, JobQueue.layer]))
}
