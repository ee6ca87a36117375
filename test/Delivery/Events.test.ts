/**
 * `Events.emit(kind, { data })` on the wire: every kind's body, as the integrator's receiver gets it, is
 * that kind's envelope (`WebhookEvents`, derived from the one record `EventData`) with the data it was
 * given, byte for byte the JSON Parley sent before emission was typed (the envelope's fields in their
 * documented order, `data` encoded by its kind's schema). Data of another kind does not compile.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import { Events } from "../../src/Delivery/Events.js"
import { DeliveriesRepo } from "../../src/Delivery/Repo.js"
import { MessageReceived } from "../../src/Domain/Conversation.js"
import { EventKind } from "../../src/Domain/Delivery.js"
import { EventData, type EventDataOf } from "../../src/Domain/EventData.js"
import { ConversationId, CustomerId, EventId, IntegrationId } from "../../src/Domain/Ids.js"
import type { Integration } from "../../src/Domain/Integration.js"
import { WebhookEvents } from "../../src/Domain/WebhookEvent.js"
import { IntegrationsRepo } from "../../src/Integrations/Repo.js"
import { bodyAs, call, makeTenant, TestAppWithWorkers } from "../support/App.js"
import { makeReceiver } from "../support/Receiver.js"

const customerId = "6f1c1f8e-1d7e-4c8e-9a0a-1b2c3d4e5f60"
/** A nested object, a list, a null and text beyond ASCII. */
const metadata = { zone: "eu-1", shop: { id: 7, tags: ["a", "b"] }, note: "café ☕", empty: null }

const App = Layer.mergeAll(Events.layer, IntegrationsRepo.layer, DeliveriesRepo.layer).pipe(
  Layer.provideMerge(TestAppWithWorkers())
)

/** The compiler refuses another kind's data (tsc fails on an unused `@ts-expect-error`); never run. */
export const refused = (events: typeof Events.Service, integration: Integration) => [
  // @ts-expect-error a title is not an escalation's data
  events.emit("escalate", { integration, conversation: null, data: { title: "Shipping" } }),
  // @ts-expect-error typing names the customer's message
  events.emit("typing", { integration, conversation: null, data: {} }),
  // @ts-expect-error a reason out of EscalationReason
  events.emit("escalate", { integration, conversation: null, data: { reason: "bored", detail: "", summary: "", messageId: null } })
]

/** What the compiler would refuse, let through for a test of what happens at run time. */
const pretend = (_: unknown): _ is EventDataOf<"escalate"> => true

describe("Events.emit", () => {
  it("every kind's envelope is derived from the one record: its event is the kind, its data the record's schema", () => {
    for (const kind of EventKind.literals) {
      expect(WebhookEvents[kind].fields.event.literal).toBe(kind)
      expect(WebhookEvents[kind].fields.data).toBe(EventData[kind])
    }
  })

  layer(App, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("each kind's body on the wire is its envelope with the data given, in the envelope's byte format", () =>
      Effect.gen(function*() {
        const receiver = yield* makeReceiver()
        const tenant = yield* makeTenant({ webhookUrl: receiver.url })
        const updated = yield* call("POST", `/v1/integration/${tenant.integrationId}/update-settings`, {
          token: tenant.token,
          body: { webhook: { metadata } }
        })
        expect(updated.status).toBe(200)
        // A conversation (history only: no reply, so no event but the ones emitted here).
        const received = yield* call("POST", `/v1/webhooks/${tenant.integrationId}/message-received`, {
          token: tenant.token,
          body: { id: "m-1", role: "human", customerId, conversationId: "order-1", text: "hi", syncOnly: true }
        }).pipe(Effect.flatMap(bodyAs(MessageReceived)))
        const conversation = {
          id: ConversationId.make(received.body.conversation.id),
          externalId: "order-1",
          customerId: CustomerId.make(received.body.conversation.customerId)
        }
        const integration = yield* Effect.flatMap(IntegrationsRepo, (repo) =>
          repo.findById(IntegrationId.make(tenant.integrationId))).pipe(Effect.map(Option.getOrThrow))
        // Read back as stored: PostgreSQL's jsonb keeps its own order of keys, which the body then has.
        expect(integration.settings.webhook.metadata).toEqual(metadata)
        const events = yield* Events
        const sql = yield* SqlClient.SqlClient

        // One event of each kind, its data as Parley holds it (the message with its DateTimes).
        const { message } = yield* Schema.decodeUnknownEffect(MessageReceived)(received.body)
        const samples: { readonly [K in EventKind]: EventDataOf<K> } = {
          send_messages: { messages: [message] },
          typing: { messageId: message.id },
          escalate: { reason: "handover", detail: "Asked for a person.", summary: "Wants a refund for \"order 7\" — today.", messageId: message.id },
          close_conversation: { summary: "Answered; satisfied ☺.", messageId: null, reason: "resolved" },
          conversation_summary: { summary: "Asked about shipping.\nAnswered.", at: "close" },
          conversation_title: { title: "Livraison au Canada" },
          send_csat: {},
          message_delta: { messageId: message.id, sequence: 3, text: "Shipping to Canada takes" }
        }
        const emitted = new Map<EventId, { readonly kind: EventKind; readonly data: EventDataOf<EventKind> }>()
        for (const kind of EventKind.literals) {
          const data = samples[kind]
          const id = yield* events.emit(kind, { integration, conversation, data }).pipe(sql.withTransaction)
          emitted.set(id, { kind, data })
        }

        const total = EventKind.literals.length
        const requests = yield* receiver.waitFor(total, 30_000)
        expect(requests).toHaveLength(total)
        const rows = yield* Effect.flatMap(DeliveriesRepo, (repo) => repo.findByIds([...emitted.keys()]))
        const createdAt = new Map(rows.map((row) => [row.id, DateTime.formatIso(row.createdAt)]))
        const seen = new Map<EventKind, number>()
        for (const request of requests) {
          const { eventId } = Schema.decodeUnknownSync(Schema.fromJsonString(Schema.Struct({ eventId: EventId })))(request.body)
          const sent = emitted.get(eventId)
          if (sent === undefined) throw new Error(`Not an emitted event: ${request.body}`)
          const { data, kind } = sent
          seen.set(kind, (seen.get(kind) ?? 0) + 1)
          // The wire format, written out: the envelope's fields in this order, data encoded by its kind's schema.
          expect(request.body, kind).toBe(JSON.stringify({
            event: kind,
            eventId,
            integrationId: tenant.integrationId,
            conversationId: "order-1",
            customerId: conversation.customerId,
            createdAt: createdAt.get(eventId),
            metadata: integration.settings.webhook.metadata,
            data: Schema.encodeUnknownSync(EventData[kind])(data)
          }))
          // The kind's envelope decodes it, to the data given; no other kind's does.
          const decoded = Schema.decodeUnknownSync(Schema.fromJsonString(WebhookEvents[kind]))(request.body)
          expect(decoded.event).toBe(kind)
          expect(Schema.encodeUnknownSync(EventData[kind])(decoded.data)).toEqual(Schema.encodeUnknownSync(EventData[kind])(data))
          for (const other of EventKind.literals.filter((k) => k !== kind)) {
            const asOther = Schema.decodeUnknownResult(Schema.fromJsonString(WebhookEvents[other]))(request.body)
            expect(Result.isFailure(asOther), `${kind} as ${other}`).toBe(true)
          }
        }
        for (const kind of EventKind.literals) expect(seen.get(kind), kind).toBe(1)
      }))

    it.effect("data its kind's schema refuses is not stored nor sent: a defect, not a webhook", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const integration = yield* Effect.flatMap(IntegrationsRepo, (repo) =>
          repo.findById(IntegrationId.make(tenant.integrationId))).pipe(Effect.map(Option.getOrThrow))
        const events = yield* Events
        const sql = yield* SqlClient.SqlClient
        const data: unknown = { reason: "bored", detail: "d", summary: "s", messageId: null }
        if (!pretend(data)) throw new Error("unreachable")
        const exit = yield* events.emit("escalate", { integration, conversation: null, data }).pipe(
          sql.withTransaction,
          Effect.exit
        )
        expect(exit._tag).toBe("Failure")
        const stored = yield* sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM events WHERE integration_id = ${tenant.integrationId}`
        expect(stored[0]?.n).toBe(0)
      }))
  })
})
