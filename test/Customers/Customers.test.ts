import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { MessageReceived } from "../../src/Domain/Conversation.js"
import { CustomerJson } from "../../src/Domain/Customer.js"
import { bodyAs, call, makeTenant, type Tenant, TestApp } from "../support/App.js"

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

const postMessage = (tenant: Tenant, customerId: string) =>
  Effect.gen(function*() {
    const reply = yield* call("POST", `/v1/webhooks/${tenant.integrationId}/message-received`, {
      token: tenant.token,
      body: {
        id: `msg-${crypto.randomUUID()}`,
        role: "human",
        sentAt: "2026-11-22T10:00:00Z",
        customerId,
        text: "Hello",
        conversationId: `conv-${crypto.randomUUID()}`,
        syncOnly: true
      }
    })
    expect(reply.status).toBe(200)
    return (yield* bodyAs(MessageReceived)(reply)).body
  })

const lookup = (tenant: Tenant, externalId: string) =>
  call("GET", `/v1/customer/external-id/${encodeURIComponent(externalId)}`, { token: tenant.token })

/** A customer with every documented field present: what Parley knows of a customer only seen by its external id. */
const bareCustomer = (id: string, userId: string) => ({
  id,
  userId,
  email: null,
  firstName: null,
  lastName: null,
  phoneNumber: null,
  location: null,
  ip: null,
  isVisitor: false,
  visitorId: null,
  customFields: null,
  fields: null,
  account: null
})

describe("GET /v1/customer/external-id/{external_id}", () => {
  it.layer(TestApp(), { timeout: 120_000 })((it) => {
    it.effect("answers 200 with the JSON null when no customer has that external id", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant({ supportedFeatures: { externalCustomerId: true } })
        const reply = yield* lookup(tenant, "nobody")
        expect(reply.status).toBe(200)
        expect(reply.body).toBeNull()
        expect(reply.headers["content-type"]).toMatch(/^application\/json/)
      }))

    it.effect("answers the customer, every documented field present, after a message with externalCustomerId", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant({ supportedFeatures: { externalCustomerId: true } })
        const posted = yield* postMessage(tenant, "ext-1")
        const customerId = posted.conversation.customerId
        expect(customerId).toMatch(UUID)

        const reply = yield* lookup(tenant, "ext-1")
        expect(reply.status).toBe(200)
        expect(reply.body).toEqual(bareCustomer(customerId, "ext-1"))
        // Every documented field and no other: the decode allows no other key (and misses none).
        yield* bodyAs(Schema.NullOr(CustomerJson))(reply)

        // A second message keeps the same customer.
        const again = yield* postMessage(tenant, "ext-1")
        expect(again.conversation.customerId).toBe(customerId)
        expect((yield* lookup(tenant, "ext-1")).body).toEqual(bareCustomer(customerId, "ext-1"))
      }))

    it.effect("external ids are matched exactly, including characters that need URL encoding", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant({ supportedFeatures: { externalCustomerId: true } })
        const posted = yield* postMessage(tenant, "user 42@example.com")
        const reply = yield* lookup(tenant, "user 42@example.com")
        expect(reply.status).toBe(200)
        expect(reply.body).toEqual(bareCustomer(posted.conversation.customerId, "user 42@example.com"))
        expect((yield* lookup(tenant, "user 42@example.co")).body).toBeNull()
        expect((yield* lookup(tenant, "USER 42@example.com")).body).toBeNull()
      }))

    it.effect("another workspace's customer with the same external id is not visible", () =>
      Effect.gen(function*() {
        const mine = yield* makeTenant({ supportedFeatures: { externalCustomerId: true } })
        const theirs = yield* makeTenant({ supportedFeatures: { externalCustomerId: true } })
        const posted = yield* postMessage(theirs, "ext-1")

        const reply = yield* lookup(mine, "ext-1")
        expect(reply.status).toBe(200)
        expect(reply.body).toBeNull()

        // Each workspace gets its own customer for the same external id.
        const own = yield* postMessage(mine, "ext-1")
        expect(own.conversation.customerId).not.toBe(posted.conversation.customerId)
        expect((yield* lookup(mine, "ext-1")).body).toEqual(bareCustomer(own.conversation.customerId, "ext-1"))
        expect((yield* lookup(theirs, "ext-1")).body).toEqual(bareCustomer(posted.conversation.customerId, "ext-1"))
      }))

    it.effect("a customer known only by Parley's UUID has no external id to be found by", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const customerId = crypto.randomUUID()
        const posted = yield* postMessage(tenant, customerId)
        expect(posted.conversation.customerId).toBe(customerId)
        const reply = yield* lookup(tenant, customerId)
        expect(reply.status).toBe(200)
        expect(reply.body).toBeNull()
      }))
  })
})
