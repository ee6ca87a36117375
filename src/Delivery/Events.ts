/**
 * Outbound events: the body is built and stored once, byte for byte what every attempt sends and
 * signs; a `deliver_event` job is enqueued on the caller's connection (same transaction), in its
 * conversation's order (see `JobQueue.enqueue`).
 */
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as crypto from "node:crypto"
import type { EventKind } from "../Domain/Delivery.js"
import { type ConversationId, type CustomerId, EventId } from "../Domain/Ids.js"
import type { IntegrationRow } from "../Integrations/Repo.js"
import { JobQueue } from "../Jobs/Queue.js"
import { eventsEmitted } from "../Observability/Metrics.js"
import { DeliverEvent } from "./Jobs.js"
import { DeliveriesRepo } from "./Repo.js"

export interface EventConversation {
  readonly id: ConversationId
  /** The integrator's conversation id, as the envelope's `conversationId`. */
  readonly externalId: string
  readonly customerId: CustomerId
}

export class Events extends Effect.Service<Events>()("Parley/Events", {
  dependencies: [DeliveriesRepo.Default, JobQueue.Default],
  effect: Effect.gen(function*() {
    const repo = yield* DeliveriesRepo
    const queue = yield* JobQueue

    /** Stores the event and schedules its delivery; run it inside the transaction that caused it. */
    const emit = Effect.fn("Events.emit")(function*(input: {
      readonly integration: IntegrationRow
      readonly conversation: EventConversation | null
      readonly kind: EventKind
      readonly data: unknown
      /** When what caused the event happened (the customer's message), for end-to-end latency. */
      readonly originAt?: DateTime.Utc | undefined
    }) {
      const id = EventId.make(crypto.randomUUID())
      const createdAt = yield* DateTime.now
      // PRODUCT.md §5 envelope.
      const body = JSON.stringify({
        event: input.kind,
        eventId: id,
        integrationId: input.integration.id,
        conversationId: input.conversation?.externalId ?? null,
        customerId: input.conversation?.customerId ?? null,
        createdAt: DateTime.formatIso(createdAt),
        metadata: input.integration.settings.webhook.metadata,
        data: input.data
      })
      yield* repo.insert({
        id,
        workspaceId: input.integration.workspaceId,
        integrationId: input.integration.id,
        conversationId: input.conversation?.id ?? null,
        kind: input.kind,
        body,
        originAt: input.originAt ?? null
      }).pipe(Effect.orDie)
      yield* queue.enqueue(DeliverEvent, { eventId: id }, { conversationId: input.conversation?.id })
      yield* Metric.increment(Metric.tagged(eventsEmitted, "event", input.kind))
      yield* Effect.annotateCurrentSpan({ "event.id": id, "event.kind": input.kind })
      return id
    })

    return { emit } as const
  })
}) {}
