/**
 * `Timestamp` (message-received `sentAt`, the deliveries `since` query): only real calendar dates that
 * PostgreSQL can store are accepted; everything else is a 422 at the field, never a 500.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as SchemaParser from "effect/SchemaParser"
import { Timestamp } from "../../src/Domain/Primitives.js"
import { isRealCalendarDate, isStorableMillis } from "../../src/Domain/StorableTime.js"
import { validationDetail } from "../Fuzz/Wire.js"
import { call, makeTenant, TestApp } from "../support/App.js"

const decode = (input: string) =>
  SchemaParser.decodeUnknownResult(Timestamp)(input).pipe(Result.map((dt) => new Date(dt.epochMilliseconds).toISOString()))

/** Out of PostgreSQL's range, not a date, or a date that does not exist. */
const refused = [
  "-271821-04-20T00:00:00Z",
  "+275760-09-13T00:00:00Z",
  "275760-09-13T00:00:00Z",
  "-004714-01-01T00:00:00Z",
  "9999-99-99T00:00:00Z",
  "2026-02-30T00:00:00Z",
  "2026-04-31T10:00:00Z",
  "2025-02-29T00:00:00Z",
  "2026-13-01T00:00:00Z",
  "2026-00-10T00:00:00Z",
  "2026-01-00T00:00:00Z",
  "Nov 22 2026",
  "",
  "2026-01-01T25:00:00Z",
  "2026-01-01T10:00:00+99:99"
]

describe("Timestamp", () => {
  it.each(refused)("refuses %j", (input) => {
    expect(Result.isFailure(decode(input))).toBe(true)
  })

  it.each([
    ["2024-02-29T12:00:00Z", "2024-02-29T12:00:00.000Z"],
    ["2000-02-29T00:00:00Z", "2000-02-29T00:00:00.000Z"],
    ["0000-01-01T00:00:00Z", "0000-01-01T00:00:00.000Z"],
    ["9999-12-31T23:59:59.999-23:59", "+010000-01-01T23:58:59.999Z"],
    ["2026-11-22T10:00:00+05", "2026-11-22T05:00:00.000Z"]
  ])("accepts %j as %s", (input, iso) => {
    expect(decode(input)).toEqual(Result.succeed(iso))
  })

  it("the storable range is PostgreSQL's first instant to JavaScript's last", () => {
    expect(isStorableMillis(Date.UTC(-4713, 10, 24))).toBe(true)
    expect(isStorableMillis(Date.UTC(-4713, 10, 23, 23, 59, 59))).toBe(false)
    expect(isStorableMillis(8.64e15)).toBe(true)
    expect(isStorableMillis(8.64e15 + 1)).toBe(false)
    expect(isStorableMillis(Number.NaN)).toBe(false)
    expect(isRealCalendarDate("+275760-09-13T00:00:00Z")).toBe(true)
    expect(isRealCalendarDate("-004713-02-29")).toBe(false)
    expect(isRealCalendarDate("-004712-02-29")).toBe(true)
  })

  it.layer(TestApp(), { timeout: 120_000 })((it) => {
    it.effect("message-received: sentAt out of range or not a date is a 422 at [body, sentAt]", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        for (const [index, sentAt] of refused.entries()) {
          for (const field of ["sentAt", "sent_at"]) {
            const reply = yield* call("POST", `/v1/webhooks/${tenant.integrationId}/message-received`, {
              token: tenant.token,
              body: {
                id: `m-${index}-${field}`,
                role: "human",
                customerId: "6f1c1f8e-1d7e-4c8e-9a0a-1b2c3d4e5f60",
                conversationId: "c-1",
                text: "hi",
                syncOnly: true,
                [field]: sentAt
              }
            })
            expect.soft(reply.status, `${field} ${sentAt}`).toBe(422)
            if (reply.status !== 422) continue
            expect.soft(validationDetail(reply), `${field} ${sentAt}`).toEqual([
              { loc: ["body", expect.stringMatching(/^(sentAt|sent_at)$/)], msg: expect.any(String), type: "datetime_parsing" }
            ])
          }
        }
        const list = yield* call("GET", `/v1/integration/${tenant.integrationId}/deliveries?since=${encodeURIComponent("-271821-04-20T00:00:00Z")}`, {
          token: tenant.token
        })
        expect(list.status).toBe(422)
        expect(validationDetail(list)[0]?.loc).toEqual(["query", "since"])
        const listed = yield* call("GET", `/v1/integration/${tenant.integrationId}/deliveries?since=2026-02-30T00:00:00Z`, {
          token: tenant.token
        })
        expect(listed.status).toBe(422)
      }))
  })
})
