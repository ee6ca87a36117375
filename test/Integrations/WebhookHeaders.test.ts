/**
 * Custom webhook headers that could never be sent are refused when they are saved (create through the
 * admin API, update-settings through the public API): 422 located at the header, nothing stored.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { ADMIN_TOKEN, call, makeTenant, type Tenant, TestApp } from "../support/App.js"
import { validationDetail } from "../Fuzz/Wire.js"

const Listed = Schema.Array(Schema.Struct({
  integrationId: Schema.String,
  settings: Schema.Struct({ webhook: Schema.Struct({ headers: Schema.Record(Schema.String, Schema.String) }) })
}))

const createIn = (workspaceId: string, headers: unknown) =>
  call("POST", `/admin/v1/workspaces/${workspaceId}/integrations`, {
    token: ADMIN_TOKEN,
    body: { name: "Headers", webhook: { url: "https://hooks.example.com/x", headers } }
  })

const update = (tenant: Tenant, headers: unknown) =>
  call("POST", `/v1/integration/${tenant.integrationId}/update-settings`, {
    token: tenant.token,
    body: { webhook: { headers } }
  })

const storedHeaders = (tenant: Tenant) =>
  Effect.map(call("GET", "/v1/integration/list", { token: tenant.token }), (reply) =>
    Schema.decodeUnknownSync(Listed)(reply.body).find((i) => i.integrationId === tenant.integrationId)?.settings.webhook
      .headers)

const integrationCount = (workspaceId: string) =>
  Effect.map(
    call("GET", `/admin/v1/workspaces/${workspaceId}/integrations`, { token: ADMIN_TOKEN }),
    (reply) => Schema.decodeUnknownSync(Schema.Array(Schema.Unknown))(reply.body).length
  )

const kib = (n: number, char = "a") => char.repeat(n * 1024)

/**
 * [header name, value, the 422 type it must get]. (A NUL anywhere in a body may be refused earlier, by
 * the body reader, as string_nul: either word is right for it.)
 */
const refused: ReadonlyArray<readonly [string, string, string | RegExp]> = [
  ["Transfer-Encoding", "chunked", "forbidden_header"],
  ["transfer-encoding", "gzip", "forbidden_header"],
  ["Expect", "100-continue", "forbidden_header"],
  ["Keep-Alive", "timeout=5", "forbidden_header"],
  ["Upgrade", "websocket", "forbidden_header"],
  ["Connection", "close", "forbidden_header"],
  ["TE", "trailers", "forbidden_header"],
  ["Trailer", "X-Checksum", "forbidden_header"],
  ["Proxy-Connection", "keep-alive", "forbidden_header"],
  ["Proxy-Authorization", "Basic eDp5", "forbidden_header"],
  ["Content-Encoding", "gzip", "forbidden_header"],
  ["HTTP2-Settings", "AAMAAABkAAQAoAAAAAIAAAAA", "forbidden_header"],
  ["Host", "internal.example", "reserved_header"],
  ["Content-Length", "0", "reserved_header"],
  ["X-Parley-Anything", "forged", "reserved_header"],
  ["Webhook-Version", "2", "reserved_header"],
  ["Bad Header", "v", "header_name"],
  ["X-Bad:Name", "v", "header_name"],
  ["X-Ünicode", "v", "header_name"],
  [`X-${"n".repeat(300)}`, "v", "header_too_long"],
  ["X-Injected", "a\r\nX-Evil: 1", "header_value"],
  ["X-Lf", "a\nb", "header_value"],
  ["X-Cr", "a\rb", "header_value"],
  ["X-Nul", "a\u0000b", /^(header_value|string_nul)$/],
  ["X-Control", "a\u0001b", "header_value"],
  ["X-Escape", "\u001b[31m", "header_value"],
  ["X-Del", "a\u007fb", "header_value"],
  ["X-Latin", "café", "header_value"],
  ["X-Emoji", "hi 😀", "header_value"],
  ["X-Leading", " value", "header_value"],
  ["X-Trailing", "value ", "header_value"],
  ["X-Tab", "\tvalue", "header_value"],
  ["X-Big", kib(4) + "a", "header_too_long"],
  ["X-Huge", kib(70), "header_too_long"]
]

/** Header maps that are sendable and must be accepted and stored as sent. */
const accepted: ReadonlyArray<Record<string, string>> = [
  { "X-Api-Key": "k1" },
  { Authorization: "Bearer abc.def-ghi" },
  { "X-Inner-Space": "a b\tc", "X-Empty": "", "X-Punctuation": "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~" },
  { "X-Max": kib(4) },
  { "x-token.with_odd~chars!": "v", "Cookie": "a=b; c=d" }
]

describe("custom webhook headers", () => {
  it.layer(TestApp(), { timeout: 120_000 })((it) => {
    it.effect("create: a header that can never be sent is a 422 located at the header, and nothing is stored", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        for (const [name, value, type] of refused) {
          const reply = yield* createIn(tenant.workspaceId, { "X-Fine": "ok", [name]: value })
          const label = `${name.slice(0, 40)}: ${JSON.stringify(value.slice(0, 40))}`
          expect.soft(reply.status, label).toBe(422)
          if (reply.status !== 422) continue
          expect.soft(validationDetail(reply), label).toEqual([
            { loc: ["body", "webhook", "headers", name], msg: expect.any(String), type: expect.stringMatching(typeof type === "string" ? new RegExp(`^${type}$`) : type) }
          ])
        }
        expect(yield* integrationCount(tenant.workspaceId)).toBe(1)
      }))

    it.effect("update-settings: the same 422s, and the stored headers stay as they were", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const before = yield* update(tenant, { "X-Api-Key": "k1" })
        expect(before.status).toBe(200)
        for (const [name, value, type] of refused) {
          const reply = yield* update(tenant, { [name]: value })
          const label = `${name.slice(0, 40)}: ${JSON.stringify(value.slice(0, 40))}`
          expect.soft(reply.status, label).toBe(422)
          if (reply.status !== 422) continue
          expect.soft(validationDetail(reply), label).toEqual([
            { loc: ["body", "webhook", "headers", name], msg: expect.any(String), type: expect.stringMatching(typeof type === "string" ? new RegExp(`^${type}$`) : type) }
          ])
        }
        expect(yield* storedHeaders(tenant)).toEqual({ "X-Api-Key": "k1" })
      }))

    it.effect("every bad header is reported, each at its own loc", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const reply = yield* update(tenant, { Connection: "close", "X-Ok": "fine", "X-Crlf": "a\r\nb", "X-Number": 5 })
        expect(reply.status).toBe(422)
        const detail = validationDetail(reply)
        expect(detail.map((item) => [item.loc, item.type])).toEqual(expect.arrayContaining([
          [["body", "webhook", "headers", "Connection"], "forbidden_header"],
          [["body", "webhook", "headers", "X-Crlf"], "header_value"],
          [["body", "webhook", "headers", "X-Number"], "string_type"]
        ]))
        expect(detail).toHaveLength(3)
      }))

    it.effect("the same name twice in different case is a 422 duplicate_header", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const reply = yield* update(tenant, { "X-Key": "a", "x-key": "b" })
        expect(reply.status).toBe(422)
        expect(validationDetail(reply)).toEqual([
          { loc: ["body", "webhook", "headers", "x-key"], msg: expect.any(String), type: "duplicate_header" }
        ])
      }))

    it.effect("all headers together are limited to 8 KiB: 422 headers_too_large at [body, webhook, headers]", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const headers = { "X-One": kib(3), "X-Two": kib(3), "X-Three": kib(3) }
        const updated = yield* update(tenant, headers)
        expect(updated.status).toBe(422)
        expect(validationDetail(updated)).toEqual([
          { loc: ["body", "webhook", "headers"], msg: expect.any(String), type: "headers_too_large" }
        ])
        const created = yield* createIn(tenant.workspaceId, headers)
        expect(created.status).toBe(422)
        expect(validationDetail(created)[0]?.type).toBe("headers_too_large")
      }))

    it.effect("sendable headers are accepted at create and update and stored exactly as sent", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        for (const headers of accepted) {
          const created = yield* createIn(tenant.workspaceId, headers)
          expect(created.status, Object.keys(headers).join()).toBe(201)
          const updated = yield* update(tenant, headers)
          expect(updated.status, Object.keys(headers).join()).toBe(200)
          expect(yield* storedHeaders(tenant)).toEqual(headers)
        }
      }))
  })
})
