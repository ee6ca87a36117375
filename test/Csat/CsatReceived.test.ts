import { describe, expect, it } from "@effect/vitest"
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import { MessageReceived } from "../../src/Domain/Conversation.js"
import { CsatRecordView } from "../../src/Domain/Csat.js"
import { bodyAs, call, makeTenant, type Tenant, TestApp, ValidationBody } from "../support/App.js"

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

const postCsat = (tenant: Pick<Tenant, "token" | "integrationId">, body: unknown) =>
  call("POST", `/v1/webhooks/${tenant.integrationId}/csat-response-received`, { token: tenant.token, body })

/** A conversation of `tenant`, made through message-received; its Parley id and the integrator's id. */
const conversationOf = (tenant: Tenant, externalId = `conv-${Math.random().toString(36).slice(2)}`) =>
  Effect.gen(function*() {
    const reply = yield* call("POST", `/v1/webhooks/${tenant.integrationId}/message-received`, {
      token: tenant.token,
      body: {
        id: `msg-${Math.random().toString(36).slice(2)}`,
        role: "human",
        sentAt: "2026-11-22T10:00:00Z",
        customerId: crypto.randomUUID(),
        text: "My parcel never arrived",
        conversationId: externalId
      }
    })
    expect(reply.status).toBe(200)
    const { body } = yield* bodyAs(MessageReceived)(reply)
    return { id: body.conversation.id, externalId }
  })

const csatRows = (conversationId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ readonly ratingAnswer: string; readonly isCurrent: boolean; readonly score: number; readonly rating: string }>`
      SELECT rating_answer, is_current, score, rating FROM csat_responses
      WHERE conversation_id = ${conversationId} ORDER BY created_at, id`)

describe("POST /v1/webhooks/{integration_id}/csat-response-received", () => {
  it.layer(TestApp(), { timeout: 120_000 })((it) => {
    it.effect("answers the stored CSAT record: raw answer kept, 1–5 score and good/bad beside it", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const conversation = yield* conversationOf(tenant)
        const reply = yield* postCsat(tenant, {
          conversationId: conversation.externalId,
          ratingStyle: 5,
          ratingAnswer: "⭐⭐⭐⭐",
          csatComment: "Quick and friendly"
        })
        expect(reply.status).toBe(200)
        expect(reply.body).toEqual({
          id: expect.stringMatching(uuid),
          conversationId: conversation.id,
          externalConversationId: conversation.externalId,
          ratingStyle: 5,
          ratingAnswer: "⭐⭐⭐⭐",
          csatComment: "Quick and friendly",
          score: 4,
          rating: "good",
          createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/)
        })
        // Exactly these keys: the decode allows no other key (and misses none).
        yield* bodyAs(CsatRecordView)(reply)
        expect(yield* csatRows(conversation.id)).toEqual([
          { ratingAnswer: "⭐⭐⭐⭐", isCurrent: true, score: 4, rating: "good" }
        ])
      }))

    it.effect("a number answer is stored as sent, as a string; no comment is null", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const conversation = yield* conversationOf(tenant)
        const five = yield* postCsat(tenant, { conversationId: conversation.externalId, ratingStyle: 5, ratingAnswer: 5 })
        expect(five.status).toBe(200)
        expect(five.body).toMatchObject({ ratingAnswer: "5", csatComment: null, score: 5, rating: "good" })

        const nps = yield* postCsat(tenant, { conversationId: conversation.externalId, ratingStyle: 11, ratingAnswer: 3 })
        expect(nps.status).toBe(200)
        expect(nps.body).toMatchObject({ ratingStyle: 11, ratingAnswer: "3", score: 2, rating: "bad" })

        const thumbs = yield* postCsat(tenant, {
          conversationId: conversation.externalId,
          ratingStyle: 2,
          ratingAnswer: "👎",
          csatComment: null
        })
        expect(thumbs.status).toBe(200)
        expect(thumbs.body).toMatchObject({ ratingStyle: 2, ratingAnswer: "👎", csatComment: null, score: 1, rating: "bad" })
      }))

    it.effect("finds the conversation by the integrator's conversationId and by Parley's UUID", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const conversation = yield* conversationOf(tenant)
        const byExternal = yield* postCsat(tenant, {
          conversationId: conversation.externalId,
          ratingStyle: 3,
          ratingAnswer: "3"
        })
        expect(byExternal.status).toBe(200)
        expect(byExternal.body).toMatchObject({
          conversationId: conversation.id,
          externalConversationId: conversation.externalId,
          score: 5,
          rating: "good"
        })
        const byParley = yield* postCsat(tenant, { conversationId: conversation.id, ratingStyle: 3, ratingAnswer: "😐" })
        expect(byParley.status).toBe(200)
        expect(byParley.body).toMatchObject({
          conversationId: conversation.id,
          externalConversationId: conversation.externalId,
          ratingAnswer: "😐",
          score: 3,
          rating: "bad"
        })
      }))

    it.effect("an unknown conversation answers 404, and nothing is stored", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const unknown = yield* postCsat(tenant, { conversationId: "never-seen", ratingStyle: 5, ratingAnswer: "5" })
        expect(unknown.status).toBe(404)
        expect(unknown.body).toEqual({ detail: "Conversation not found" })
        const unknownUuid = yield* postCsat(tenant, {
          conversationId: crypto.randomUUID(),
          ratingStyle: 5,
          ratingAnswer: "5"
        })
        expect(unknownUuid.status).toBe(404)
        expect(unknownUuid.body).toEqual({ detail: "Conversation not found" })
      }))

    it.effect("a conversation of another workspace answers 404, by either id, and stores nothing", () =>
      Effect.gen(function*() {
        const theirs = yield* makeTenant()
        const mine = yield* makeTenant()
        const conversation = yield* conversationOf(theirs, "shared-looking-id")
        for (const conversationId of [conversation.id, conversation.externalId]) {
          const reply = yield* postCsat(mine, { conversationId, ratingStyle: 5, ratingAnswer: "1" })
          expect(reply.status).toBe(404)
          expect(reply.body).toEqual({ detail: "Conversation not found" })
        }
        // Their integration with my token is not found either.
        const viaTheirIntegration = yield* postCsat(
          { token: mine.token, integrationId: theirs.integrationId },
          { conversationId: conversation.id, ratingStyle: 5, ratingAnswer: "1" }
        )
        expect(viaTheirIntegration.status).toBe(404)
        expect(viaTheirIntegration.body).toEqual({ detail: "Integration not found" })
        expect(yield* csatRows(conversation.id)).toEqual([])
      }))

    it.effect("an answer that fits no reading of its scale is a 422 at ratingAnswer, and nothing is stored", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const conversation = yield* conversationOf(tenant)
        const cases: ReadonlyArray<readonly [number, unknown]> = [
          [5, "7"],
          [5, 0],
          [5, 4.5],
          [2, "maybe"],
          [3, "4"],
          [10, "11"],
          [11, -1]
        ]
        for (const [ratingStyle, ratingAnswer] of cases) {
          const reply = yield* postCsat(tenant, { conversationId: conversation.externalId, ratingStyle, ratingAnswer })
          expect(reply.status, `${ratingStyle}/${String(ratingAnswer)}`).toBe(422)
          expect(reply.body).toEqual({
            detail: [{ loc: ["body", "ratingAnswer"], msg: expect.any(String), type: expect.any(String) }]
          })
        }
        expect(yield* csatRows(conversation.id)).toEqual([])
      }))

    it.effect("ratingStyle outside 2, 3, 5, 10, 11 is a 422 at ratingStyle", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const conversation = yield* conversationOf(tenant)
        for (const ratingStyle of [4, 0, "5"]) {
          const reply = yield* postCsat(tenant, { conversationId: conversation.externalId, ratingStyle, ratingAnswer: "4" })
          expect(reply.status, String(ratingStyle)).toBe(422)
          expect(reply.body).toEqual({
            detail: [{ loc: ["body", "ratingStyle"], msg: expect.any(String), type: "literal_error" }]
          })
        }
        expect(yield* csatRows(conversation.id)).toEqual([])
      }))

    it.effect("missing fields are each a 422 'missing'", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const reply = yield* postCsat(tenant, {})
        expect(reply.status).toBe(422)
        expect((yield* bodyAs(ValidationBody)(reply)).body.detail).toEqual([
          { loc: ["body", "conversationId"], msg: "Field required", type: "missing" },
          { loc: ["body", "ratingStyle"], msg: "Field required", type: "missing" },
          { loc: ["body", "ratingAnswer"], msg: "Field required", type: "missing" }
        ])
        const noAnswer = yield* postCsat(tenant, { conversationId: "c", ratingStyle: 5 })
        expect(noAnswer.status).toBe(422)
        expect(noAnswer.body).toEqual({
          detail: [{ loc: ["body", "ratingAnswer"], msg: "Field required", type: "missing" }]
        })
      }))

    it.effect("a second answer replaces the first as current; both stay in history", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const conversation = yield* conversationOf(tenant)
        const first = yield* postCsat(tenant, {
          conversationId: conversation.externalId,
          ratingStyle: 5,
          ratingAnswer: "2",
          csatComment: "Slow"
        })
        expect(first.status).toBe(200)
        const second = yield* postCsat(tenant, {
          conversationId: conversation.externalId,
          ratingStyle: 5,
          ratingAnswer: "5",
          csatComment: "Sorted in the end"
        })
        expect(second.status).toBe(200)
        expect((yield* bodyAs(CsatRecordView)(second)).body.id).not.toBe((yield* bodyAs(CsatRecordView)(first)).body.id)
        expect(second.body).toMatchObject({ ratingAnswer: "5", csatComment: "Sorted in the end", score: 5, rating: "good" })
        expect(yield* csatRows(conversation.id)).toEqual([
          { ratingAnswer: "2", isCurrent: false, score: 2, rating: "bad" },
          { ratingAnswer: "5", isCurrent: true, score: 5, rating: "good" }
        ])
      }))

    it.effect("two answers arriving at once: both stored, exactly one current", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const conversation = yield* conversationOf(tenant)
        const replies = yield* Effect.all(
          ["1", "4"].map((ratingAnswer) =>
            postCsat(tenant, { conversationId: conversation.externalId, ratingStyle: 5, ratingAnswer })
          ),
          { concurrency: 2 }
        )
        expect(replies.map((r) => r.status)).toEqual([200, 200])
        const rows = yield* csatRows(conversation.id)
        expect(rows.map((r) => r.ratingAnswer).sort()).toEqual(["1", "4"])
        expect(rows.filter((r) => r.isCurrent)).toHaveLength(1)
      }))

    it.effect("no bearer token is a 401 with WWW-Authenticate: Bearer, and nothing is stored", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const conversation = yield* conversationOf(tenant)
        const body = { conversationId: conversation.externalId, ratingStyle: 5, ratingAnswer: "5" }
        const path = `/v1/webhooks/${tenant.integrationId}/csat-response-received`
        const none = yield* call("POST", path, { body })
        expect(none.status).toBe(401)
        expect(none.headers["www-authenticate"]).toBe("Bearer")
        expect(none.body).toEqual({ detail: expect.any(String) })
        const wrong = yield* call("POST", path, { body, token: "prl_not-a-real-token" })
        expect(wrong.status).toBe(401)
        expect(wrong.headers["www-authenticate"]).toBe("Bearer")
        expect(wrong.body).toEqual({ detail: expect.any(String) })
        expect(yield* csatRows(conversation.id)).toEqual([])
      }))
  })
})
