import { describe, expect, it } from "@effect/vitest"
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as TestClock from "effect/testing/TestClock"
import { createHmac } from "node:crypto"
import { readFileSync } from "node:fs"
import { MessageReceived } from "../../src/Domain/Conversation.js"
import { CustomerJson } from "../../src/Domain/Customer.js"
import { bodyAs, call, type CallOptions, makeTenant, type Tenant, TestApp, ValidationBody } from "../support/App.js"

/** A Chatwoot webhook payload from test/fixtures/chatwoot, as the exact text Chatwoot would send. */
const fixtureText = (name: string): string =>
  readFileSync(new URL(`../fixtures/chatwoot/${name}.json`, import.meta.url), "utf8")
const fixture = (name: string): Record<string, unknown> => JSON.parse(fixtureText(name))

const incoming = fixture("message_created.incoming")
const outgoingAgent = fixture("message_created.outgoing_agent")
const outgoingBot = fixture("message_created.outgoing_bot")
const privateNote = fixture("message_created.private_note")
const activity = fixture("message_created.activity")
const withAttachment = fixture("message_created.incoming_attachment")
const resolved = fixture("conversation_status_changed.resolved")
const reopened = fixture("conversation_status_changed.open")
const contactCreated = fixture("contact_created")

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

const chatwootTenant = () => makeTenant({ integration: "chatwoot" })

const eventPath = (tenant: Pick<Tenant, "integrationId">) => `/v1/webhooks/${tenant.integrationId}/helpdesk-event-received`

const post = (tenant: Pick<Tenant, "token" | "integrationId">, body: unknown, options: Omit<CallOptions, "body"> = {}) =>
  call("POST", eventPath(tenant), { token: tenant.token, body, ...options })

/** The 200 body of the helpdesk endpoint: message-received's. */
const received = bodyAs(MessageReceived)

const jobsFor = (conversationId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ readonly kind: string; readonly payload: unknown }>`
      SELECT kind, payload FROM jobs WHERE conversation_id = ${conversationId} ORDER BY created_at`)

const statusChanges = (conversationId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ readonly fromStatus: string; readonly toStatus: string; readonly cause: string }>`
      SELECT from_status, to_status, cause FROM conversation_status_changes
      WHERE conversation_id = ${conversationId} ORDER BY id`)

const messagesOf = (integrationId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ readonly role: string; readonly type: string; readonly text: string }>`
      SELECT role, type, text FROM messages WHERE integration_id = ${integrationId} ORDER BY sent_at, created_at`)

/** Chatwoot's signature: `sha256=` + hex HMAC-SHA256 of `<timestamp>.<raw body>`. */
const sign = (secret: string, timestamp: string, raw: string) =>
  `sha256=${createHmac("sha256", secret).update(`${timestamp}.${raw}`).digest("hex")}`

/**
 * The instant the signature tests take as "now". `it.layer` builds the app with Effect's test services,
 * so the server reads the shared TestClock: setting it makes the timestamp check deterministic.
 */
const NOW_SECONDS = 1_773_480_600 // 2026-03-14T09:30:00Z

describe("POST /v1/webhooks/{integration_id}/helpdesk-event-received (Chatwoot)", () => {
  it.layer(TestApp(), { timeout: 120_000 })((it) => {
    it.effect("an incoming contact message is stored as human and schedules a reply", () =>
      Effect.gen(function*() {
        const tenant = yield* chatwootTenant()
        const reply = yield* post(tenant, incoming)
        expect(reply.status).toBe(200)
        // Exactly conversation and message: the decode allows no other key.
        const { conversation, message } = (yield* received(reply)).body
        expect(message).toEqual({
          id: expect.stringMatching(uuid),
          externalId: expect.stringContaining("58213"),
          role: "human",
          sentAt: "2026-03-14T09:21:33.481Z",
          type: "default",
          text: "Hi, my order #4471 still shows as processing. Can you check?",
          attachments: [],
          isSuggestion: false,
          agentInfo: null
        })
        expect(conversation).toEqual({
          id: expect.stringMatching(uuid),
          externalId: "87",
          status: "open",
          createdAt: expect.stringMatching(/Z$/),
          customerId: expect.stringMatching(uuid),
          channel: "chatwoot",
          firstUnreadMessageId: message.id
        })
        const jobs = yield* jobsFor(conversation.id)
        expect(jobs.map((j) => j.kind)).toEqual(["generate_reply"])
        expect(jobs[0]!.payload).toEqual({ conversationId: conversation.id, messageId: message.id })
      }))

    it.effect("the customer is the Chatwoot contact, found by its contact id, name split in two", () =>
      Effect.gen(function*() {
        const tenant = yield* chatwootTenant()
        const reply = yield* post(tenant, incoming).pipe(Effect.flatMap(received))
        expect(reply.status).toBe(200)
        const lookup = yield* call("GET", "/v1/customer/external-id/1024", { token: tenant.token })
        expect(lookup.status).toBe(200)
        expect(lookup.body).toMatchObject({
          id: reply.body.conversation.customerId,
          userId: "1024",
          email: "maria.garcia@example.com",
          firstName: "Maria",
          lastName: "Elena García",
          phoneNumber: "+34600111222",
          isVisitor: false
        })
        // An agent's reply names the same contact through conversation.meta.sender: same customer.
        const agent = yield* post(tenant, outgoingAgent).pipe(Effect.flatMap(received))
        expect(agent.body.conversation.customerId).toBe(reply.body.conversation.customerId)
        // The agent is not a customer.
        const notACustomer = yield* call("GET", "/v1/customer/external-id/12", { token: tenant.token })
        expect(notACustomer.status).toBe(200)
        expect(notACustomer.body).toBeNull()
      }))

    it.effect("an outgoing agent message is stored as agent, with agentInfo, and escalates the conversation", () =>
      Effect.gen(function*() {
        const tenant = yield* chatwootTenant()
        const first = yield* post(tenant, incoming).pipe(Effect.flatMap(received))
        const reply = yield* post(tenant, outgoingAgent)
        expect(reply.status).toBe(200)
        const { conversation, message } = (yield* received(reply)).body
        expect(conversation.id).toBe(first.body.conversation.id)
        expect(conversation.status).toBe("escalated")
        expect(message).toEqual({
          id: expect.stringMatching(uuid),
          externalId: expect.stringContaining("58220"),
          role: "agent",
          sentAt: "2026-03-14T09:23:05.112Z",
          type: "default",
          text: outgoingAgent["content"],
          attachments: [],
          isSuggestion: false,
          agentInfo: {
            id: "12",
            name: "Sam Lee",
            avatar: "https://chat.acme.example/rails/active_storage/representations/redirect/sam-lee.png"
          }
        })
        // The agent answered the customer's message: nothing is unread.
        expect(conversation.firstUnreadMessageId).toBeNull()
        expect(yield* statusChanges(conversation.id)).toEqual([
          { fromStatus: "open", toStatus: "escalated", cause: "agent_message" }
        ])
        // No reply of the AI beyond the one the customer's message scheduled.
        expect(yield* jobsFor(conversation.id)).toHaveLength(1)
        // While escalated, the customer's next message is stored but the AI does not answer it.
        const next = yield* post(tenant, withAttachment).pipe(Effect.flatMap(received))
        expect(next.status).toBe(200)
        expect(next.body.message.role).toBe("human")
        expect(next.body.conversation.status).toBe("escalated")
        expect(yield* jobsFor(conversation.id)).toHaveLength(1)
      }))

    it.effect("an outgoing agent_bot message is stored as ai and does not escalate", () =>
      Effect.gen(function*() {
        const tenant = yield* chatwootTenant()
        yield* post(tenant, incoming)
        const reply = yield* post(tenant, outgoingBot)
        expect(reply.status).toBe(200)
        const { conversation, message } = (yield* received(reply)).body
        expect(message).toMatchObject({
          role: "ai",
          type: "default",
          sentAt: "2026-03-14T09:21:35.020Z",
          text: outgoingBot["content"],
          agentInfo: null
        })
        expect(conversation.status).toBe("open")
        expect(yield* statusChanges(conversation.id)).toEqual([])
        expect((yield* jobsFor(conversation.id)).map((j) => j.kind)).toEqual(["generate_reply"])
      }))

    it.effect("a private note is stored as a note: it neither escalates nor schedules a reply", () =>
      Effect.gen(function*() {
        const tenant = yield* chatwootTenant()
        yield* post(tenant, incoming)
        const reply = yield* post(tenant, privateNote)
        expect(reply.status).toBe(200)
        const { conversation, message } = (yield* received(reply)).body
        expect(message).toMatchObject({
          role: "agent",
          type: "note",
          text: privateNote["content"],
          sentAt: "2026-03-14T09:22:40.500Z"
        })
        expect(conversation.status).toBe("open")
        expect(yield* statusChanges(conversation.id)).toEqual([])
        expect(yield* jobsFor(conversation.id)).toHaveLength(1)
      }))

    it.effect("attachments of an incoming message are kept, named after their file", () =>
      Effect.gen(function*() {
        const tenant = yield* chatwootTenant()
        const reply = yield* post(tenant, withAttachment).pipe(Effect.flatMap(received))
        expect(reply.status).toBe(200)
        expect(reply.body.message).toMatchObject({
          role: "human",
          text: "Here is the screenshot of the order page",
          attachments: [{
            name: "order-4471.png",
            url:
              "https://chat.acme.example/rails/active_storage/blobs/redirect/eyJfcmFpbHMiOnsiZGF0YSI6MzMxMH19/order-4471.png"
          }]
        })
      }))

    it.effect("an activity message (Chatwoot sends it with sender null) is stored as a system event", () =>
      Effect.gen(function*() {
        const tenant = yield* chatwootTenant()
        const first = yield* post(tenant, incoming).pipe(Effect.flatMap(received))
        const id = first.body.conversation.id
        const reply = yield* post(tenant, activity).pipe(Effect.flatMap(received))
        expect(reply.status).toBe(200)
        expect(reply.body.message).toMatchObject({
          role: "system",
          type: "event",
          text: "Conversation was marked resolved by Sam Lee",
          sentAt: "2026-03-14T09:25:00.301Z",
          agentInfo: null
        })
        expect(reply.body.conversation).toMatchObject({
          id,
          customerId: first.body.conversation.customerId,
          status: "open"
        })
        expect(yield* statusChanges(id)).toEqual([])
        expect(yield* jobsFor(id)).toHaveLength(1)
      }))

    it.effect("resolved closes the conversation with a system event message; open reopens it", () =>
      Effect.gen(function*() {
        const tenant = yield* chatwootTenant()
        const first = yield* post(tenant, incoming).pipe(Effect.flatMap(received))
        const id = first.body.conversation.id
        const closed = yield* post(tenant, resolved).pipe(Effect.flatMap(received))
        expect(closed.status).toBe(200)
        expect(closed.body.conversation).toMatchObject({
          id,
          externalId: "87",
          status: "closed",
          customerId: first.body.conversation.customerId,
          channel: "chatwoot"
        })
        expect(closed.body.message).toMatchObject({
          id: expect.stringMatching(uuid),
          role: "system",
          type: "event",
          sentAt: "2026-03-14T09:25:00.250Z",
          attachments: [],
          agentInfo: null
        })
        const open = yield* post(tenant, reopened).pipe(Effect.flatMap(received))
        expect(open.status).toBe(200)
        expect(open.body.conversation).toMatchObject({ id, status: "open" })
        expect(open.body.message).toMatchObject({ role: "system", type: "event", sentAt: "2026-03-14T09:40:12.000Z" })
        expect(yield* statusChanges(id)).toEqual([
          { fromStatus: "open", toStatus: "closed", cause: "chatwoot_resolved" },
          { fromStatus: "closed", toStatus: "open", cause: "chatwoot_open" }
        ])
        // Status events are not customer messages: only the first message scheduled a reply.
        expect(yield* jobsFor(id)).toHaveLength(1)
      }))

    it.effect("a resolved event for a conversation Parley has not seen yet creates it closed", () =>
      Effect.gen(function*() {
        const tenant = yield* chatwootTenant()
        const reply = yield* post(tenant, resolved).pipe(Effect.flatMap(received))
        expect(reply.status).toBe(200)
        expect(reply.body.conversation).toMatchObject({ externalId: "87", status: "closed", channel: "chatwoot" })
        const lookup = yield* call("GET", "/v1/customer/external-id/1024", { token: tenant.token }).pipe(
          Effect.flatMap(bodyAs(Schema.NullOr(CustomerJson)))
        )
        expect(lookup.body?.id).toBe(reply.body.conversation.customerId)
      }))

    it.effect("the same event delivered twice answers the same and schedules one reply", () =>
      Effect.gen(function*() {
        const tenant = yield* chatwootTenant()
        const first = yield* post(tenant, incoming)
        const again = yield* post(tenant, incoming)
        expect(first.status).toBe(200)
        expect(again.status).toBe(200)
        expect(again.body).toEqual(first.body)
        const id = (yield* received(first)).body.conversation.id
        expect(yield* jobsFor(id)).toHaveLength(1)

        const closed = yield* post(tenant, resolved)
        const closedAgain = yield* post(tenant, resolved)
        expect(closedAgain.status).toBe(200)
        expect(closedAgain.body).toEqual(closed.body)
        expect(yield* statusChanges(id)).toEqual([{ fromStatus: "open", toStatus: "closed", cause: "chatwoot_resolved" }])
        expect(yield* messagesOf(tenant.integrationId)).toHaveLength(2)
      }))

    it.effect("an event Parley does not handle is a 422 at body.event naming the handled ones; nothing stored", () =>
      Effect.gen(function*() {
        const tenant = yield* chatwootTenant()
        const reply = yield* post(tenant, contactCreated)
        expect(reply.status).toBe(422)
        expect(reply.body).toEqual({
          detail: [{ loc: ["body", "event"], msg: expect.any(String), type: "unsupported_event" }]
        })
        const msg = (yield* bodyAs(ValidationBody)(reply)).body.detail[0].msg
        expect(msg).toContain("contact_created")
        expect(msg).toContain("message_created")
        expect(msg).toContain("conversation_status_changed")
        expect(yield* messagesOf(tenant.integrationId)).toEqual([])
        const lookup = yield* call("GET", "/v1/customer/external-id/1031", { token: tenant.token })
        expect(lookup.body).toBeNull()
      }))

    it.effect("the token may be the access_token query parameter; a wrong or missing one is a 401", () =>
      Effect.gen(function*() {
        const tenant = yield* chatwootTenant()
        const viaQuery = yield* call("POST", `${eventPath(tenant)}?access_token=${encodeURIComponent(tenant.token)}`, {
          body: incoming
        })
        expect(viaQuery.status).toBe(200)
        expect((yield* received(viaQuery)).body.message.role).toBe("human")

        const wrong = yield* call("POST", `${eventPath(tenant)}?access_token=prl_wrong-token`, { body: outgoingAgent })
        expect(wrong.status).toBe(401)
        expect(wrong.headers["www-authenticate"]).toBe("Bearer")
        expect(wrong.body).toEqual({ detail: expect.any(String) })

        const none = yield* call("POST", eventPath(tenant), { body: outgoingAgent })
        expect(none.status).toBe(401)
        expect(none.headers["www-authenticate"]).toBe("Bearer")
        expect(none.body).toEqual({ detail: expect.any(String) })

        // Neither rejected request stored anything: the conversation is still open, one message.
        expect(yield* messagesOf(tenant.integrationId)).toHaveLength(1)
      }))

    it.effect("with a Chatwoot webhook secret configured, the X-Chatwoot-Signature is required and checked", () =>
      Effect.gen(function*() {
        const tenant = yield* chatwootTenant()
        const settings = yield* call("POST", `/v1/integration/${tenant.integrationId}/update-settings`, {
          token: tenant.token,
          body: { channelsSettings: { chatwoot: { webhookSecret: "s3cret" } } }
        })
        expect(settings.status).toBe(200)

        yield* TestClock.setTime(NOW_SECONDS * 1000)
        const raw = fixtureText("message_created.incoming")
        const path = `${eventPath(tenant)}?access_token=${encodeURIComponent(tenant.token)}`
        const send = (headers: Record<string, string>) => call("POST", path, { raw, headers })

        const unsigned = yield* send({})
        expect(unsigned.status).toBe(401)
        expect(unsigned.body).toEqual({ detail: expect.any(String) })

        // Correctly signed, but ten minutes old (a replay) or ten minutes ahead.
        for (const offset of [-600, 600]) {
          const at = String(NOW_SECONDS + offset)
          const replayed = yield* send({ "X-Chatwoot-Timestamp": at, "X-Chatwoot-Signature": sign("s3cret", at, raw) })
          expect(replayed.status, String(offset)).toBe(401)
          expect(replayed.body).toEqual({ detail: expect.any(String) })
        }

        const now = String(NOW_SECONDS)
        const wrongKey = yield* send({ "X-Chatwoot-Timestamp": now, "X-Chatwoot-Signature": sign("other", now, raw) })
        expect(wrongKey.status).toBe(401)
        const otherBody = yield* send({
          "X-Chatwoot-Timestamp": now,
          "X-Chatwoot-Signature": sign("s3cret", now, fixtureText("message_created.outgoing_agent"))
        })
        expect(otherBody.status).toBe(401)
        const noTimestamp = yield* send({ "X-Chatwoot-Signature": sign("s3cret", now, raw) })
        expect(noTimestamp.status).toBe(401)
        expect(yield* messagesOf(tenant.integrationId)).toEqual([])

        const signed = yield* send({ "X-Chatwoot-Timestamp": now, "X-Chatwoot-Signature": sign("s3cret", now, raw) })
        expect(signed.status).toBe(200)
        expect((yield* received(signed)).body.message).toMatchObject({ role: "human", sentAt: "2026-03-14T09:21:33.481Z" })
        expect(yield* messagesOf(tenant.integrationId)).toHaveLength(1)
      }))

    it.effect("POST .../chatwoot-event-received is the same endpoint under Chatwoot's name", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const reply = yield* call("POST", `/v1/webhooks/${tenant.integrationId}/chatwoot-event-received`, {
          token: tenant.token,
          body: incoming
        })
        expect(reply.status).toBe(200)
        const { body } = yield* received(reply)
        expect(body.message).toMatchObject({ role: "human", type: "default" })
        expect(body.conversation).toMatchObject({ externalId: "87", status: "open", channel: "chatwoot" })
        expect((yield* jobsFor(body.conversation.id)).map((j) => j.kind)).toEqual(["generate_reply"])
        // And the generic path recognizes the same delivery.
        const again = yield* post(tenant, incoming)
        expect(again.body).toEqual(reply.body)
      }))

    it.effect("an integration of another workspace answers 404, and stores nothing", () =>
      Effect.gen(function*() {
        const mine = yield* chatwootTenant()
        const theirs = yield* chatwootTenant()
        const reply = yield* post({ token: mine.token, integrationId: theirs.integrationId }, incoming)
        expect(reply.status).toBe(404)
        expect(reply.body).toEqual({ detail: "Integration not found" })
        expect(yield* messagesOf(theirs.integrationId)).toEqual([])
      }))
  })
})
