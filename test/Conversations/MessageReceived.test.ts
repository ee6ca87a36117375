import { describe, expect, it } from "@effect/vitest"
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { MessageReceived } from "../../src/Domain/Conversation.js"
import { CustomerJson } from "../../src/Domain/Customer.js"
import { bodyAs, call, makeTenant, TestApp, ValidationBody } from "../support/App.js"

const customerId = "6f1c1f8e-1d7e-4c8e-9a0a-1b2c3d4e5f60"

const message = (overrides: Record<string, unknown> = {}) => ({
  id: `msg-${Math.random().toString(36).slice(2)}`,
  role: "human",
  sentAt: "2026-11-22T10:00:00+02:00",
  customerId: crypto.randomUUID(),
  text: "Where is my order?",
  conversationId: `conv-${Math.random().toString(36).slice(2)}`,
  ...overrides
})

const post = (tenant: { token: string; integrationId: string }, body: unknown) =>
  call("POST", `/v1/webhooks/${tenant.integrationId}/message-received`, { token: tenant.token, body })

const jobsFor = (conversationId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ readonly kind: string; readonly payload: unknown }>`
      SELECT kind, payload FROM jobs WHERE conversation_id = ${conversationId} ORDER BY created_at`)

/** What the tenant has stored: its customers, conversations and messages. */
const storedFor = (tenant: { workspaceId: string; integrationId: string }) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ readonly customers: number; readonly conversations: number; readonly messages: number }>`
      SELECT (SELECT count(*) FROM customers WHERE workspace_id = ${tenant.workspaceId})::int AS customers,
             (SELECT count(*) FROM conversations WHERE integration_id = ${tenant.integrationId})::int AS conversations,
             (SELECT count(*) FROM messages WHERE integration_id = ${tenant.integrationId})::int AS messages`)
    .pipe(Effect.map((rows) => rows[0]))

describe("POST /v1/webhooks/{integration_id}/message-received", () => {
  it.layer(TestApp(), { timeout: 120_000 })((it) => {
    it.effect("stores the message and answers {message, conversation} as docs/api.md describes", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const body = message({ customerId })
        const reply = yield* post(tenant, body).pipe(Effect.flatMap(bodyAs(MessageReceived)))
        expect(reply.status).toBe(200)
        const { conversation, message: stored } = reply.body
        expect(stored).toEqual({
          id: expect.stringMatching(/^[0-9a-f-]{36}$/),
          externalId: body.id,
          role: "human",
          sentAt: "2026-11-22T08:00:00.000Z",
          type: "default",
          text: "Where is my order?",
          attachments: [],
          isSuggestion: false,
          agentInfo: null
        })
        expect(conversation).toEqual({
          id: expect.stringMatching(/^[0-9a-f-]{36}$/),
          externalId: body.conversationId,
          status: "open",
          createdAt: expect.stringMatching(/Z$/),
          customerId,
          channel: "api",
          firstUnreadMessageId: stored.id
        })
        const jobs = yield* jobsFor(conversation.id)
        expect(jobs.map((j) => j.kind)).toEqual(["generate_reply"])
        expect(jobs[0]!.payload).toEqual({ conversationId: conversation.id, messageId: stored.id })
      }))

    it.effect("accepts the snake_case spellings of the getting-started example", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const reply = yield* post(tenant, {
          id: "snake-1",
          role: "human",
          sent_at: "2026-11-22T10:00:00Z",
          customer_id: customerId,
          conversation_id: "snake-conv",
          sync_only: true,
          request_context: { channel: "whatsapp" },
          text: "hi"
        })
        expect(reply.status).toBe(200)
        const { body } = yield* bodyAs(MessageReceived)(reply)
        expect(body.conversation.externalId).toBe("snake-conv")
        expect(body.conversation.channel).toBe("whatsapp")
        expect(body.message.sentAt).toBe("2026-11-22T10:00:00.000Z")
        expect(yield* jobsFor(body.conversation.id)).toEqual([])
      }))

    it.effect("both spellings of one field with different values is a 422 naming the field", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const reply = yield* post(tenant, message({ conversation_id: "other", conversationId: "this" }))
        expect(reply.status).toBe(422)
        expect(reply.body).toEqual({
          detail: [{ loc: ["body", "conversation_id"], msg: expect.any(String), type: "conflicting_alias" }]
        })
        const same = yield* post(tenant, message({ conversation_id: "same", conversationId: "same" }))
        expect(same.status).toBe(200)
      }))

    it.effect("is idempotent on the message id: same stored message, no second reply job", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const body = message()
        const first = yield* post(tenant, body)
        const again = yield* post(tenant, { ...body, text: "changed" })
        expect(again.status).toBe(200)
        expect(again.body).toEqual(first.body)
        const concurrent = yield* Effect.all([post(tenant, message({ id: "race" })), post(tenant, message({ id: "race" }))], {
          concurrency: 2
        })
        expect(concurrent.map((r) => r.status)).toEqual([200, 200])
        const [one, other] = yield* Effect.forEach(concurrent, bodyAs(MessageReceived))
        expect(one.body.message.id).toBe(other.body.message.id)
        const jobs = yield* jobsFor((yield* bodyAs(MessageReceived)(first)).body.conversation.id)
        expect(jobs).toHaveLength(1)
      }))

    it.effect("a repeated message id under another conversation and customer answers the stored message and stores nothing", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const tenant = yield* makeTenant()
        const body = message()
        const first = yield* post(tenant, body)
        const counts = sql<{ readonly conversations: number; readonly customers: number; readonly messages: number }>`
          SELECT (SELECT count(*)::int FROM conversations WHERE integration_id = ${tenant.integrationId}) AS conversations,
                 (SELECT count(*)::int FROM customers WHERE workspace_id = ${tenant.workspaceId}) AS customers,
                 (SELECT count(*)::int FROM messages WHERE integration_id = ${tenant.integrationId}) AS messages`
        const before = yield* counts
        // The store is tried and rolled back: the new conversation and customer it made are undone.
        const moved = yield* post(tenant, { ...body, conversationId: "elsewhere", customerId: crypto.randomUUID() })
        expect(moved.status).toBe(200)
        expect(moved.body).toEqual(first.body)
        // A retry whose customer would not resolve now (not a UUID) is still answered with what was stored.
        const odd = yield* post(tenant, { ...body, customerId: "not-a-uuid" })
        expect(odd.status).toBe(200)
        expect(odd.body).toEqual(first.body)
        expect(yield* counts).toEqual(before)
        expect(before).toEqual([{ conversations: 1, customers: 1, messages: 1 }])
        // A new message with that customer id is still a 422.
        const invalid = yield* post(tenant, message({ customerId: "not-a-uuid" }))
        expect(invalid.status).toBe(422)
      }))

    it.effect("threads messages sharing a conversationId into one conversation", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const { body: a } = yield* post(tenant, message({ conversationId: "thread", customerId })).pipe(
          Effect.flatMap(bodyAs(MessageReceived))
        )
        const { body: b } = yield* post(tenant, message({ conversationId: "thread", customerId, sentAt: "2026-11-22T10:01:00Z" }))
          .pipe(Effect.flatMap(bodyAs(MessageReceived)))
        expect(a.conversation.id).toBe(b.conversation.id)
        // Both unanswered: the first unread is still the first message.
        expect(b.conversation.firstUnreadMessageId).toBe(a.message.id)
      }))

    it.effect("the first unread message is the customer's first after the last answer, by sentAt", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const at = (minute: number) => `2026-11-22T10:${String(minute).padStart(2, "0")}:00Z`
        const send = (role: string, minute: number) =>
          post(tenant, message({ conversationId: "unread", customerId, role, syncOnly: true, sentAt: at(minute) })).pipe(
            Effect.flatMap(bodyAs(MessageReceived)),
            Effect.map(({ body }) => body)
          )
        const h1 = yield* send("human", 1)
        expect(h1.conversation.firstUnreadMessageId).toBe(h1.message.id)
        expect((yield* send("ai", 2)).conversation.firstUnreadMessageId).toBeNull()
        const h3 = yield* send("human", 3)
        expect(h3.conversation.firstUnreadMessageId).toBe(h3.message.id)
        // Arrives last but was sent before the answer: answered already; the unread one stays h3.
        expect((yield* send("human", 0)).conversation.firstUnreadMessageId).toBe(h3.message.id)
        expect((yield* send("human", 4)).conversation.firstUnreadMessageId).toBe(h3.message.id)
        // An answer sent before h3 answers nothing after it.
        expect((yield* send("agent", 2)).conversation.firstUnreadMessageId).toBe(h3.message.id)
        expect((yield* send("agent", 5)).conversation.firstUnreadMessageId).toBeNull()
      }))

    it.effect("syncOnly imports history without scheduling a reply", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const reply = yield* post(tenant, message({ syncOnly: true })).pipe(Effect.flatMap(bodyAs(MessageReceived)))
        expect(reply.status).toBe(200)
        expect(yield* jobsFor(reply.body.conversation.id)).toEqual([])
      }))

    it.effect("status rules: agent escalates, no reply while escalated", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const conversationId = "rules"
        yield* post(tenant, message({ conversationId, customerId }))
        const { body: agent } = yield* post(tenant, message({ conversationId, customerId, role: "agent", text: "I'm on it" }))
          .pipe(Effect.flatMap(bodyAs(MessageReceived)))
        expect(agent.conversation.status).toBe("escalated")
        const { body: human } = yield* post(tenant, message({ conversationId, customerId })).pipe(
          Effect.flatMap(bodyAs(MessageReceived))
        )
        expect(human.conversation.status).toBe("escalated")
        const jobs = yield* jobsFor(human.conversation.id)
        expect(jobs).toHaveLength(1)
        const sql = yield* SqlClient.SqlClient
        const changes = yield* sql<{ readonly toStatus: string; readonly cause: string }>`
          SELECT to_status, cause FROM conversation_status_changes
          WHERE conversation_id = ${human.conversation.id} ORDER BY id`
        expect(changes).toEqual([{ toStatus: "escalated", cause: "agent_message" }])
      }))

    it.effect("a human message reopens a closed conversation and schedules a reply", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const first = yield* post(tenant, message({ conversationId: "closed-one", customerId })).pipe(
          Effect.flatMap(bodyAs(MessageReceived))
        )
        const id = first.body.conversation.id
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE conversations SET status = 'closed' WHERE id = ${id}`
        const again = yield* post(tenant, message({ conversationId: "closed-one", customerId })).pipe(
          Effect.flatMap(bodyAs(MessageReceived))
        )
        expect(again.body.conversation.status).toBe("open")
        expect(yield* jobsFor(id)).toHaveLength(2)
      }))

    it.effect("customers: unknown Parley ids are created; externalCustomerId takes the integrator's own id", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const notUuid = yield* post(tenant, message({ customerId: "user-42" }))
        expect(notUuid.status).toBe(422)
        expect((yield* bodyAs(ValidationBody)(notUuid)).body.detail[0]).toMatchObject({ loc: ["body", "customerId"], type: "uuid_parsing" })

        const external = yield* makeTenant({ supportedFeatures: { externalCustomerId: true } })
        const first = yield* post(external, message({ customerId: "user-42" }))
        const second = yield* post(external, message({ customerId: "user-42" }))
        expect(first.status).toBe(200)
        const parleyId = (yield* bodyAs(MessageReceived)(first)).body.conversation.customerId
        expect(parleyId).toMatch(/^[0-9a-f-]{36}$/)
        expect((yield* bodyAs(MessageReceived)(second)).body.conversation.customerId).toBe(parleyId)
        const lookup = yield* call("GET", "/v1/customer/external-id/user-42", { token: external.token })
        expect(lookup.status).toBe(200)
        const { body: customer } = yield* bodyAs(Schema.NullOr(CustomerJson))(lookup)
        expect(customer?.id).toBe(parleyId)
        expect(customer?.userId).toBe("user-42")
      }))

    it.effect("reports every validation problem, located, with stable types", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const reply = yield* post(tenant, {
          role: "robot",
          customerId: 5,
          sentAt: "yesterday",
          text: "x",
          conversationId: "c",
          attachments: [{ name: "a", url: "not a url" }],
          syncOnly: "yes"
        })
        expect(reply.status).toBe(422)
        expect((yield* bodyAs(ValidationBody)(reply)).body.detail).toEqual([
          { loc: ["body", "id"], msg: "Field required", type: "missing" },
          { loc: ["body", "role"], msg: expect.any(String), type: "literal_error" },
          { loc: ["body", "sentAt"], msg: expect.any(String), type: "datetime_parsing" },
          { loc: ["body", "customerId"], msg: "Input should be a valid string", type: "string_type" },
          { loc: ["body", "attachments", 0, "url"], msg: expect.any(String), type: "url_parsing" },
          { loc: ["body", "syncOnly"], msg: "Input should be a valid boolean", type: "bool_type" }
        ])
      }))

    it.effect("malformed JSON is a 422 json_invalid, and nothing is stored", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const whole = JSON.stringify(message({ customerId }))
        for (const raw of ["{\"id\": \"m\", ", whole.slice(0, -1), `${whole},`]) {
          const reply = yield* call("POST", `/v1/webhooks/${tenant.integrationId}/message-received`, {
            token: tenant.token,
            raw
          })
          expect(reply.status, raw).toBe(422)
          expect(reply.body).toEqual({ detail: [{ loc: ["body"], msg: expect.any(String), type: "json_invalid" }] })
        }
        expect(yield* storedFor(tenant)).toEqual({ customers: 0, conversations: 0, messages: 0 })
        // The same message, well-formed, is stored: the count above reads where a message would be.
        const stored = yield* call("POST", `/v1/webhooks/${tenant.integrationId}/message-received`, {
          token: tenant.token,
          raw: whole
        })
        expect(stored.status).toBe(200)
        expect(yield* storedFor(tenant)).toEqual({ customers: 1, conversations: 1, messages: 1 })
      }))

    it.effect("limits: text over 32,000 characters and over 20 attachments are 422s", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const long = yield* post(tenant, message({ text: "a".repeat(32_001) }))
        expect(long.status).toBe(422)
        expect((yield* bodyAs(ValidationBody)(long)).body.detail).toEqual([
          { loc: ["body", "text"], msg: expect.any(String), type: "string_too_long" }
        ])
        const exact = yield* post(tenant, message({ text: "a".repeat(32_000) }))
        expect(exact.status).toBe(200)
        const attachments = Array.from({ length: 21 }, (_, i) => ({ name: `f${i}`, url: `https://x.test/${i}` }))
        const many = yield* post(tenant, message({ attachments }))
        expect(many.status).toBe(422)
        expect((yield* bodyAs(ValidationBody)(many)).body.detail[0]).toMatchObject({ loc: ["body", "attachments"], type: "too_long" })
      }))

    it.effect("NUL characters are a 422 naming the field, not a 500", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const reply = yield* post(tenant, message({ text: "a\u0000b" }))
        expect(reply.status).toBe(422)
        expect((yield* bodyAs(ValidationBody)(reply)).body.detail).toEqual([
          { loc: ["body", "text"], msg: expect.any(String), type: "string_nul" }
        ])
        const nested = yield* post(tenant, message({ requestContext: { note: ["ok", "x\u0000"] } }))
        expect((yield* bodyAs(ValidationBody)(nested)).body.detail[0].loc).toEqual(["body", "requestContext", "note", 1])
      }))

    it.effect("any ISO 8601 offset is accepted, hours-only included", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        for (const [sentAt, utc] of [
          ["2026-11-22T10:00:00+05", "2026-11-22T05:00:00.000Z"],
          ["2026-11-22T10:00:00+0530", "2026-11-22T04:30:00.000Z"],
          ["2026-11-22T10:00:00-03:00", "2026-11-22T13:00:00.000Z"],
          ["2026-11-22T10:00:00", "2026-11-22T10:00:00.000Z"]
        ] as const) {
          const reply = yield* post(tenant, message({ sentAt })).pipe(Effect.flatMap(bodyAs(MessageReceived)))
          expect(reply.status).toBe(200)
          expect(reply.body.message.sentAt).toBe(utc)
        }
      }))

    it.effect("a body over the 1 MiB limit is a 413", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const reply = yield* post(tenant, message({ text: "a".repeat(1024 * 1024 + 10) }))
        expect(reply.status).toBe(413)
        expect(reply.body).toEqual({ detail: "Request body too large" })
      }))

    it.effect("an integration of another workspace answers 404, and stores nothing", () =>
      Effect.gen(function*() {
        const mine = yield* makeTenant()
        const theirs = yield* makeTenant()
        const reply = yield* post({ token: mine.token, integrationId: theirs.integrationId }, message({ id: "probe" }))
        expect(reply.status).toBe(404)
        expect(reply.body).toEqual({ detail: "Integration not found" })
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql`SELECT id FROM messages WHERE external_id = 'probe'`
        expect(rows).toEqual([])
      }))
  })
})
