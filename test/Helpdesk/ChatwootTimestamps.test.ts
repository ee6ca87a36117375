/**
 * Chatwoot's timestamps (`created_at`, `updated_at`, `timestamp`: ISO text or Unix seconds) outside what
 * PostgreSQL's timestamptz can hold (4713 BC .. 294276 AD, and JavaScript's own ±8.64e15 ms), or not a
 * date at all, are a 422 at the field, never a 500 from the database, and never silently "now".
 */
import * as SqlClient from "effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as TestClock from "effect/testing/TestClock"
import { readFileSync } from "node:fs"
import { validationDetail } from "../Fuzz/Wire.js"
import { call, makeTenant, type Tenant, TestApp } from "../support/App.js"

const fixtureText = (name: string): string =>
  readFileSync(new URL(`../fixtures/chatwoot/${name}.json`, import.meta.url), "utf8")
const Fixture = Schema.Record(Schema.String, Schema.Unknown)
const fixture = (name: string) => Schema.decodeUnknownSync(Schema.fromJsonString(Fixture))(fixtureText(name))

const incoming = fixture("message_created.incoming")
const resolved = fixture("conversation_status_changed.resolved")

const Received = Schema.Struct({ message: Schema.Struct({ sentAt: Schema.String }) })

const post = (tenant: Tenant, body: unknown) =>
  call("POST", `/v1/webhooks/${tenant.integrationId}/helpdesk-event-received`, { token: tenant.token, body })

/** The event as raw JSON text with `field` set to `literal` (JSON.stringify cannot write 1e400). */
const postRaw = (tenant: Tenant, event: Record<string, unknown>, field: string, literal: string) =>
  call("POST", `/v1/webhooks/${tenant.integrationId}/helpdesk-event-received`, {
    token: tenant.token,
    raw: JSON.stringify({ ...event, [field]: "__VALUE__" }).replace("\"__VALUE__\"", literal)
  })

const messageCount = (integrationId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ readonly count: number }>`SELECT count(*)::int AS count FROM messages WHERE integration_id = ${integrationId}`
  ).pipe(Effect.map((rows) => rows[0]?.count ?? -1), Effect.orDie)

/** [JSON literal, the 422 type]: none of these is an instant PostgreSQL can store. */
const refused: ReadonlyArray<readonly [string, string]> = [
  ["-8000000000000", "datetime_range"], // Unix seconds: about 251,000 BC
  ["8640000000001", "datetime_range"], // a second after JavaScript's last date
  ["1e15", "datetime_range"], // beyond JavaScript's dates
  ["-1e300", "datetime_range"],
  ["1e400", "datetime_parsing"], // parses as Infinity
  ["-1e400", "datetime_parsing"],
  ["\"-271821-04-20T00:00:00Z\"", "datetime_range"], // JavaScript's earliest date
  ["\"+275761-01-01T00:00:00Z\"", "datetime_parsing"], // after JavaScript's last date
  ["\"-004713-11-23T23:59:59Z\"", "datetime_range"], // one second before PostgreSQL's first
  ["\"not a date\"", "datetime_parsing"],
  ["\"\"", "datetime_parsing"],
  ["\"2026-02-30T00:00:00Z\"", "datetime_parsing"]
]

describe("Chatwoot timestamps", () => {
  it.layer(TestApp(), { timeout: 120_000 })((it) => {
    it.effect("message_created: created_at out of range or invalid is a 422 at [body, created_at]", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant({ integration: "chatwoot" })
        for (const [index, [literal, type]] of refused.entries()) {
          // A new message id each time: a repeated id would be answered from the stored message.
          const reply = yield* postRaw(tenant, { ...incoming, id: 80_000 + index }, "created_at", literal)
          expect.soft(reply.status, literal).toBe(422)
          if (reply.status !== 422) continue
          expect.soft(validationDetail(reply), literal).toEqual([
            { loc: ["body", "created_at"], msg: expect.any(String), type }
          ])
        }
        expect(yield* messageCount(tenant.integrationId)).toBe(0)
      }))

    it.effect("conversation_status_changed: updated_at and timestamp out of range are a 422 at the field", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant({ integration: "chatwoot" })
        for (const field of ["updated_at", "timestamp"]) {
          for (const [literal, type] of refused) {
            const reply = yield* postRaw(tenant, resolved, field, literal)
            expect.soft(reply.status, `${field} ${literal}`).toBe(422)
            if (reply.status !== 422) continue
            expect.soft(validationDetail(reply), `${field} ${literal}`).toEqual([
              { loc: ["body", field], msg: expect.any(String), type }
            ])
          }
        }
        expect(yield* messageCount(tenant.integrationId)).toBe(0)
      }))

    it.effect("the edges of the range are stored and answered exactly", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant({ integration: "chatwoot" })
        const cases: ReadonlyArray<readonly [unknown, string]> = [
          ["-004713-11-24T00:00:00Z", "-004713-11-24T00:00:00.000Z"], // PostgreSQL's first instant
          ["+275760-09-13T00:00:00Z", "+275760-09-13T00:00:00.000Z"], // JavaScript's last
          [253402300799, "9999-12-31T23:59:59.000Z"],
          [8640000000000, "+275760-09-13T00:00:00.000Z"],
          [-210866803200, "-004713-11-24T00:00:00.000Z"],
          [0, "1970-01-01T00:00:00.000Z"],
          [1773480300.25, "2026-03-14T09:25:00.250Z"],
          ["Sat Mar 14 2026 10:20:58 GMT+0100", "2026-03-14T09:20:58.000Z"]
        ]
        for (const [index, [createdAt, sentAt]] of cases.entries()) {
          const reply = yield* post(tenant, { ...incoming, id: 90_000 + index, created_at: createdAt })
          expect(reply.status, `${String(createdAt)} ${JSON.stringify(reply.body)}`).toBe(200)
          expect(Schema.decodeUnknownSync(Received)(reply.body).message.sentAt, String(createdAt)).toBe(sentAt)
        }
      }))

    it.effect("a missing or null created_at still means the time of receipt", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant({ integration: "chatwoot" })
        const { created_at: _, ...withoutTime } = incoming
        const sql = yield* SqlClient.SqlClient
        for (const [id, event] of [[91_000, withoutTime], [91_001, { ...incoming, created_at: null }]] as const) {
          // The app runs on this layer's TestClock: moved on a second before each message, so that each
          // receipt has an instant of its own, which nothing else moves during the request.
          yield* TestClock.adjust("1 second")
          const receipt = yield* Clock.currentTimeMillis
          const reply = yield* post(tenant, { ...event, id })
          expect(reply.status, String(id)).toBe(200)
          const answered = Date.parse(Schema.decodeUnknownSync(Received)(reply.body).message.sentAt)
          expect(answered, String(id)).toBe(receipt)
          // Stored as answered.
          const rows = yield* sql<{ readonly sentAt: Date | string }>`
            SELECT sent_at FROM messages
            WHERE integration_id = ${tenant.integrationId} AND external_id = ${`chatwoot:message:${id}`}`
          expect(rows.map((row) => new Date(row.sentAt).getTime()), String(id)).toEqual([answered])
        }
      }))
  })
})
