/**
 * Outbound events: the body is built and stored once, byte for byte what every attempt sends and
 * signs; a `deliver_event` job is enqueued on the caller's connection (same transaction), in its
 * conversation's order (see `JobQueue.enqueue`). The body is the kind's envelope (`WebhookEvents`),
 * encoded by its schema: `emit("escalate", { data })` takes only an `escalate` event's data.
 */
import * as Context from "effect/Context"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Schema from "effect/Schema"
import * as crypto from "node:crypto"
import type { Conversation } from "../Domain/Conversation.js"
import type { EventKind } from "../Domain/Delivery.js"
import type { EventDataOf } from "../Domain/EventData.js"
import { type ConversationId, EventId } from "../Domain/Ids.js"
import type { Integration } from "../Domain/Integration.js"
import { WebhookEvents } from "../Domain/WebhookEvent.js"
import { JobQueue } from "../Jobs/Queue.js"
import { eventsEmittedOf } from "../Observability/Metrics.js"
import { orDieSql } from "../Sql.js"
import { DeliverEvent } from "./Jobs.js"
import { DeliveriesRepo } from "./Repo.js"

/** An event of kind `K`: whose it is, and its data. */
export interface EmitInput<K extends EventKind> {
  readonly integration: Integration
  readonly conversation: Pick<Conversation, "id" | "externalId" | "customerId"> | null
  readonly data: EventDataOf<K>
  /** When what caused the event happened (the customer's message), for end-to-end latency. */
  readonly originAt?: DateTime.Utc | undefined
}

export class Events extends Context.Service<Events>()("Parley/Events", {
  make: Effect.gen(function*() {
    const repo = yield* DeliveriesRepo
    const queue = yield* JobQueue

    const store = Effect.fn("Events.emit")(function*(
      kind: EventKind,
      envelope: Schema.Codec<unknown, unknown>,
      input: Omit<EmitInput<EventKind>, "data"> & { readonly data: unknown }
    ) {
      const id = EventId.make(crypto.randomUUID())
      const createdAt = yield* DateTime.now
      // Parley's own data refused by its own schema is a defect, not the caller's mistake.
      const encoded = yield* Schema.encodeUnknownEffect(envelope)({
        event: kind,
        eventId: id,
        integrationId: input.integration.integrationId,
        conversationId: input.conversation?.externalId ?? null,
        customerId: input.conversation?.customerId ?? null,
        createdAt,
        metadata: input.integration.settings.webhook.metadata,
        data: input.data
      }).pipe(Effect.orDie)
      const body = JSON.stringify(encoded)
      yield* repo.insert({
        id,
        workspaceId: input.integration.workspaceId,
        event: kind,
        integrationId: input.integration.integrationId,
        conversationId: input.conversation?.id ?? null,
        body,
        status: "pending",
        attempts: 0,
        lastStatusCode: null,
        lastError: null,
        createdAt,
        deliveredAt: null,
        deadAt: null,
        replayedAt: null,
        originAt: input.originAt ?? null,
        generation: 0
      })
      yield* queue.enqueue(DeliverEvent, { eventId: id }, {
        orderKey: input.conversation?.id,
        group: input.integration.integrationId
      })
      yield* Metric.update(eventsEmittedOf(kind), 1)
      yield* Effect.annotateCurrentSpan({ "event.id": id, "event.kind": kind })
      return id
    }, orDieSql)

    /** Stores the event and schedules its delivery; run it inside the transaction that caused it. */
    const emit = <K extends EventKind>(kind: K, input: EmitInput<K>): Effect.Effect<EventId> =>
      store(kind, WebhookEvents[kind], input)

    /**
     * Gives up the conversation's `message_delta` events not yet attempted and removes their jobs: the
     * final message goes next, never held back by a delta waiting for its turn. In the final message's
     * transaction.
     */
    const supersedeDeltas = Effect.fn("Events.supersedeDeltas")(function*(conversationId: ConversationId) {
      const pending = yield* repo.pendingDeltas(conversationId)
      if (pending.length === 0) return 0
      // A job a worker claimed meanwhile is not cancelled: its attempt goes ahead and is recorded.
      yield* Effect.forEach(pending, ({ id }) => queue.cancel(DeliverEvent, id), { discard: true })
      const superseded = yield* repo.supersedeDeltas(pending.map(({ id }) => id))
      return superseded.length
    }, orDieSql)

    return { emit, supersedeDeltas } as const
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
  static readonly layer = this.layerWithoutDependencies.pipe(Layer.provide([DeliveriesRepo.layer, JobQueue.layer]))
}
