/**
 * fast-check generators of hostile requests: every endpoint of the API (read off the `HttpApi`, so a new
 * endpoint is fuzzed without touching this file), with bodies, paths, queries and headers a careless or
 * malicious client could send. Inputs that trip a known defect (see KnownDefects.ts) are generated only
 * by their own generators, so the main properties stay meaningful while those defects are open.
 */
import { HttpApi } from "effect/http-api"
import fc from "fast-check"
import { readFileSync } from "node:fs"
import { Api } from "../../src/Api.js"
import { knownDefects } from "./KnownDefects.js"

/** `encodeURIComponent`, but a lone surrogate (which has no UTF-8 form) is sent as its CESU-8 bytes. */
export const uriEncode = (text: string): string =>
  text.replace(/\p{Cs}|[^\p{Cs}]+/gu, (part) =>
    /\p{Cs}/u.test(part)
      ? [0xe0 | (part.charCodeAt(0) >> 12), 0x80 | ((part.charCodeAt(0) >> 6) & 0x3f), 0x80 | (part.charCodeAt(0) & 0x3f)]
        .map((byte) => `%${byte.toString(16).toUpperCase()}`).join("")
      : encodeURIComponent(part))

export interface Endpoint {
  readonly group: string
  readonly name: string
  readonly method: string
  /** Template with `:param` segments. */
  readonly path: string
  readonly hasPayload: boolean
}

/** Every endpoint of the API. */
export const endpoints: ReadonlyArray<Endpoint> = (() => {
  const out: Array<Endpoint> = []
  HttpApi.reflect(Api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint, group }) => {
      out.push({
        group: group.identifier,
        name: endpoint.identifier,
        method: endpoint.method,
        path: endpoint.path,
        hasPayload: endpoint.payload.size > 0
      })
    }
  })
  return out
})()

/** The ids a fuzzed request may use: a tenant of its own, and one of another workspace. */
export interface Fixture {
  readonly port: number
  readonly adminToken: string
  readonly token: string
  readonly workspaceId: string
  readonly integrationId: string
  readonly chatwootIntegrationId: string
  /** A Chatwoot integration that requires X-Chatwoot-Signature. */
  readonly signedChatwootIntegrationId: string
  readonly otherToken: string
  readonly otherIntegrationId: string
}

// ---------------------------------------------------------------------------------------------------
// Values

const uuid = fc.uuid()

/** Lone surrogates (known defect 2): in the general generators only once that defect is fixed. */
export const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((code) => `a${String.fromCharCode(code)}b`)

/** Strings a client may send (lone surrogates only once known defect 2 is fixed). */
export const safeString = fc.oneof(
  ...(knownDefects.loneSurrogates ? [] : [{ weight: 1, arbitrary: loneSurrogate }]),
  { weight: 4, arbitrary: fc.string({ unit: "grapheme", maxLength: 24 }) },
  { weight: 2, arbitrary: fc.string({ unit: "grapheme-ascii", maxLength: 40 }) },
  { weight: 1, arbitrary: uuid },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      "",
      " ",
      "\u0000",
      "a\u0000b",
      "\u0001\u001f\u007f",
      "\r\n",
      "null",
      "true",
      "0",
      "-1",
      "1e400",
      "NaN",
      "human",
      "HUMAN",
      "<script>alert(1)</script>",
      "' OR 1=1 --",
      "../../../etc/passwd",
      "%00",
      "%ff%fe",
      "\u202eevil",
      "\ufeffbom",
      "😀👍🏽👨‍👩‍👧",
      "e\u0301",
      "\u2028\u2029",
      "\uffff\ufffe",
      "${jndi:ldap://x}",
      "{{7*7}}",
      "x".repeat(256),
      "x".repeat(5000)
    )
  }
)

/** Date-time texts: valid, lenient, out of range, impossible. */
export const dateText = fc.oneof(
  fc.date({ min: new Date(-8.64e15), max: new Date(8.64e15), noInvalidDate: true }).map((d) => d.toISOString()),
  fc.constantFrom(
    "2026-11-22T10:00:00Z",
    "2026-11-22T10:00:00+05",
    "2026-11-22T10:00:00.123456789-03:30",
    "2026-11-22",
    "2026-02-30T00:00:00Z",
    "-271821-04-20T00:00:00Z",
    "+275760-09-13T00:00:00Z",
    "+275760-09-13T00:00:00.001Z",
    "-004713-11-23T23:59:59Z",
    "0000-01-01T00:00:00Z",
    "9999-12-31T23:59:59.999-23:59",
    "Sat Mar 14 2026 10:20:58 GMT+0100",
    "Nov 22 2026",
    "2026-11-22T25:61:61Z",
    "1773480300",
    ""
  )
)

/** Numbers, including the ones JSON.stringify cannot write (sent as raw literals, see `rawNumber`). */
const jsonNumber = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(0, -0, 1, 2, 3, 5, 10, 11, -1, 2 ** 53 + 2, 1e308, -1e308, 5e-324, -8000000000000, 8640000000001)
)

/** Number literals only raw JSON text can carry. */
export const rawNumber = fc.constantFrom(
  "1e400",
  "-1e400",
  "1e-400",
  "123456789012345678901234567890",
  "-0.0",
  "1E+2",
  "-8000000000000",
  "8640000000001"
)

const jsonLeaf: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  jsonNumber,
  safeString,
  dateText
)

const key = fc.oneof(
  safeString,
  fc.constantFrom("__proto__", "constructor", "prototype", "toString", "id", "sentAt", "sent_at", "", "a.b", "$where")
)

/** Any JSON value of modest depth. */
export const jsonValue: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { maxDepth: 4, depthIdentifier: "json" },
    jsonLeaf,
    fc.array(tie("value"), { maxLength: 5 }),
    fc.dictionary(key, tie("value"), { maxKeys: 5 })
  )
})).value

/** Nested arrays/objects 20–400 levels deep (up to 9,000 once known defect 1 is fixed). */
export const moderatelyNested = fc.tuple(fc.integer({ min: 20, max: knownDefects.nestedJson ? 400 : 9_000 }), fc.boolean()).map(([depth, objects]) =>
  nestedText(depth, objects)
)

export const nestedText = (depth: number, objects: boolean): string =>
  objects ? "{\"a\":".repeat(depth) + "1" + "}".repeat(depth) : "[".repeat(depth) + "1" + "]".repeat(depth)

/** Strings far over every field limit; some also over the fuzz app's body limit (64 KiB). */
export const hugeString = fc.integer({ min: 300, max: 100_000 }).map((n) => "y".repeat(n))

/** A value for a field, as raw JSON text. */
export const fieldText: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: jsonValue.map((v) => JSON.stringify(v) ?? "null") },
  { weight: 2, arbitrary: dateText.map((d) => JSON.stringify(d)) },
  { weight: 1, arbitrary: hugeString.map((s) => JSON.stringify(s)) },
  { weight: 1, arbitrary: moderatelyNested },
  { weight: 1, arbitrary: rawNumber }
)

// ---------------------------------------------------------------------------------------------------
// Bodies

const chatwootFixture = (name: string): Record<string, unknown> => {
  const text = readFileSync(new URL(`../fixtures/chatwoot/${name}.json`, import.meta.url), "utf8")
  const value: unknown = JSON.parse(text)
  return typeof value === "object" && value !== null && !Array.isArray(value) ? { ...value } : {}
}

const chatwootMessage = chatwootFixture("message_created.incoming")
const chatwootStatus = chatwootFixture("conversation_status_changed.resolved")

/** A plausible body for each endpoint with a payload: the starting point of mutations. */
const baseBody = (endpoint: Endpoint, _fixture: Fixture, seed: number): Record<string, unknown> => {
  switch (endpoint.name) {
    case "createWorkspace":
      return { name: `Fuzz ${seed}` }
    case "createToken":
      return { name: `fuzz-${seed}` }
    case "createIntegration":
      return {
        name: `Fuzz ${seed}`,
        integration: "api",
        webhook: { url: "https://hooks.example.com/fuzz", headers: { "X-Api-Key": "k" }, metadata: { a: 1 } },
        supportedFeatures: { csat: true },
        channelsSettings: {}
      }
    case "createTone":
      return { name: `Tone ${seed}`, instructions: "Be brief." }
    case "createArticle":
      return { title: `Article ${seed}`, body: "Shipping takes 3 days.", url: "https://help.example.com/a" }
    case "updateSettings":
      return {
        name: `Fuzz ${seed}`,
        supportedFeatures: { typing: false },
        channelsSettings: { web: true },
        webhook: { url: "https://hooks.example.com/fuzz", headers: { "X-Api-Key": "k" }, metadata: { a: 1 } }
      }
    case "messageReceived":
      return {
        id: `fuzz-${seed}`,
        role: "human",
        sentAt: "2026-11-22T10:00:00Z",
        customerId: "6f1c1f8e-1d7e-4c8e-9a0a-1b2c3d4e5f60",
        text: "Where is my order?",
        attachments: [{ name: "a.png", url: "https://files.example.com/a.png" }],
        conversationId: `conv-${seed % 7}`,
        syncOnly: seed % 2 === 0,
        requestContext: { channel: "web" }
      }
    case "csatResponseReceived":
      return { conversationId: `conv-${seed % 7}`, ratingStyle: 5, ratingAnswer: "4", csatComment: "ok" }
    case "eventReceived":
    case "chatwootEventReceived":
      return seed % 3 === 0
        ? { ...chatwootStatus, id: seed }
        : { ...chatwootMessage, id: seed, conversation: { id: seed % 5, meta: { sender: { id: 7, name: "Ana" } } } }
    default:
      return { unexpected: true }
  }
}

/** The plausible body of an endpoint, as JSON text. */
export const plausibleBody = (endpoint: Endpoint, fixture: Fixture, seed: number): string =>
  JSON.stringify(baseBody(endpoint, fixture, seed))

const snakeAliases: Readonly<Record<string, string>> = {
  sentAt: "sent_at",
  customerId: "customer_id",
  conversationId: "conversation_id",
  syncOnly: "sync_only",
  requestContext: "request_context"
}

const objectText = (entries: ReadonlyArray<readonly [string, string]>): string =>
  `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(",")}}`

export interface BodyCase {
  readonly label: string
  readonly body: string | Buffer
}

/** A body for `endpoint`: a mutation of its plausible body, or something that is not that at all. */
export const bodyCase = (endpoint: Endpoint, fixture: Fixture): fc.Arbitrary<BodyCase> =>
  fc.integer({ min: 1, max: 1_000_000 }).chain((seed) => {
    const base = baseBody(endpoint, fixture, seed)
    const entries = Object.entries(base).map(([k, v]) => [k, JSON.stringify(v)] as const)
    const keys = Object.keys(base)
    const someKey = keys.length > 0 ? fc.constantFrom(...keys) : fc.constant("name")
    return fc.oneof(
      { weight: 2, arbitrary: fc.constant<BodyCase>({ label: "plausible", body: objectText(entries) }) },
      {
        weight: 8,
        arbitrary: fc.tuple(someKey, fieldText).map(([field, value]): BodyCase => ({
          label: `field ${field} := ${value.slice(0, 60)}`,
          body: objectText([...entries.filter(([k]) => k !== field), [field, value]])
        }))
      },
      {
        weight: 2,
        arbitrary: fc.tuple(someKey, fc.constantFrom("webhook", "supportedFeatures", "conversation", "meta", "sender"), fieldText)
          .map(([field, inner, value]): BodyCase => ({
            label: `nested ${field}.${inner} := ${value.slice(0, 60)}`,
            body: objectText([...entries.filter(([k]) => k !== field), [field, objectText([[inner, value]])]])
          }))
      },
      {
        weight: 2,
        arbitrary: someKey.map((field): BodyCase => ({
          label: `without ${field}`,
          body: objectText(entries.filter(([k]) => k !== field))
        }))
      },
      {
        weight: 2,
        arbitrary: fc.tuple(someKey, fieldText).map(([field, value]): BodyCase => ({
          label: `duplicate key ${field}`,
          body: objectText([...entries, [field, value]])
        }))
      },
      {
        weight: 2,
        arbitrary: fc.tuple(fc.constantFrom(...Object.keys(snakeAliases)), fieldText).map(([camel, value]): BodyCase => ({
          label: `snake/camel ${camel}`,
          body: objectText([...entries, [snakeAliases[camel] ?? camel, value]])
        }))
      },
      {
        weight: 2,
        arbitrary: fc.tuple(key, fieldText).map(([extra, value]): BodyCase => ({
          label: `extra key ${extra.slice(0, 30)}`,
          body: objectText([...entries, [extra, value]])
        }))
      },
      {
        weight: 2,
        arbitrary: jsonValue.map((value): BodyCase => ({ label: "any JSON", body: JSON.stringify(value) ?? "null" }))
      },
      { weight: 3, arbitrary: malformedBody(objectText(entries)) }
    )
  })

/** Text that is not JSON, or JSON wrapped in something that is not. */
export const malformedBody = (valid: string): fc.Arbitrary<BodyCase> =>
  fc.oneof(
    fc.integer({ min: 0, max: Math.max(0, valid.length - 1) }).map((cut): BodyCase => ({
      label: `truncated at ${cut}`,
      body: valid.slice(0, cut)
    })),
    fc.constantFrom(
      "",
      " ",
      "\n\t",
      "null",
      "[]",
      "{}",
      "\"just a string\"",
      "{,}",
      "{\"a\":1,}",
      "{'a':1}",
      "{\"a\":NaN}",
      "{\"a\":Infinity}",
      "{\"a\":undefined}",
      "{\"a\":1}/*c*/",
      "{\"a\":01}",
      "{\"a\":\"\\x41\"}",
      "{\"a\":\"\\u12\"}",
      "{\"a\":\"tab\there\"}",
      "{\"a\":\"nl\nhere\"}",
      "{\"__proto__\":{\"polluted\":true}}",
      "{\"constructor\":{\"prototype\":{\"polluted\":true}}}",
      "\u0000",
      "<?xml version=\"1.0\"?><a/>",
      "a=1&b=2",
      "--x\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n--x--"
    ).map((body): BodyCase => ({ label: `malformed ${JSON.stringify(body).slice(0, 40)}`, body })),
    fc.constantFrom("\ufeff", " ", "garbage", "}", "]", "{}", "\u0000").map((extra): BodyCase => ({
      label: `valid + ${JSON.stringify(extra)}`,
      body: extra === "\ufeff" ? extra + valid : valid + extra
    })),
    fc.uint8Array({ minLength: 1, maxLength: 64 }).map((bytes): BodyCase => ({
      label: "random bytes",
      body: Buffer.from(bytes)
    })),
    fc.constant<BodyCase>({
      label: "invalid UTF-8 inside a string",
      body: Buffer.concat([Buffer.from("{\"name\":\"a"), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from("\"}")])
    })
  )

/** Content types a client might send with a JSON body. */
export const contentType = fc.oneof(
  { weight: 6, arbitrary: fc.constant<string | undefined>("application/json") },
  {
    weight: 3,
    arbitrary: fc.constantFrom<string | undefined>(
      undefined,
      "application/json; charset=utf-8",
      "application/json; charset=latin1",
      "APPLICATION/JSON",
      "application/vnd.api+json",
      "text/plain",
      "text/json",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
      "multipart/form-data",
      "application/octet-stream",
      "application/json, text/plain",
      "",
      "*/*",
      "application/json; boundary=\"",
      "ü/ü"
    )
  }
)

// ---------------------------------------------------------------------------------------------------
// Paths, queries, headers

/** A path parameter: the right id, another workspace's, or anything at all (percent-encoded or raw). */
export const pathParam = (name: string, fixture: Fixture): fc.Arbitrary<string> => {
  const right = name === "integration_id"
    ? fc.constantFrom(
      fixture.integrationId,
      fixture.chatwootIntegrationId,
      fixture.signedChatwootIntegrationId,
      fixture.otherIntegrationId
    )
    : name === "workspaceId"
    ? fc.constant(fixture.workspaceId)
    : uuid
  return fc.oneof(
    { weight: 4, arbitrary: right },
    { weight: 2, arbitrary: uuid },
    { weight: 3, arbitrary: safeString.map((s) => uriEncode(s)) },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        "%00",
        "%ff",
        "%e2%82",
        "%",
        "%zz",
        "..",
        "%2e%2e",
        "%2F",
        "a%2Fb",
        "00000000-0000-0000-0000-000000000000",
        "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF",
        "6f1c1f8e-1d7e-4c8e-9a0a-1b2c3d4e5f6",
        "6f1c1f8e1d7e4c8e9a0a1b2c3d4e5f60",
        "{6f1c1f8e-1d7e-4c8e-9a0a-1b2c3d4e5f60}",
        "x".repeat(2000),
        "%F0%9F%98%80",
        "%ED%A0%80"
      )
    }
  )
}

const queryValue = fc.oneof(
  safeString.map((s) => uriEncode(s)),
  dateText.map((s) => uriEncode(s)),
  fc.constantFrom("", "%", "%zz", "%00", "%ED%A0%80", "1", "0", "501", "-1", "1.5", "1e3", "pending", "dead", "x".repeat(3000))
)

/** A query string: the endpoint's own parameters and others, repeated, empty or broken. */
export const queryString = fc.oneof(
  fc.constant(""),
  fc.array(
    fc.tuple(
      fc.constantFrom("status", "since", "limit", "access_token", "x", "", "status[]", "__proto__", "limit%00"),
      queryValue
    ),
    { maxLength: 5 }
  ).map((pairs) => (pairs.length === 0 ? "" : `?${pairs.map(([k, v]) => `${k}=${v}`).join("&")}`)),
  fc.constantFrom("?", "??", "?&&", "?=", "?status", "?limit=1&limit=2", "?since=%", "#frag")
)

/** The Authorization header, or its absence. */
export const authorization = (right: string, fixture: Fixture): fc.Arbitrary<string | undefined> =>
  fc.oneof(
    { weight: 8, arbitrary: fc.constant<string | undefined>(`Bearer ${right}`) },
    {
      weight: 3,
      arbitrary: fc.constantFrom<string | undefined>(
        undefined,
        "",
        "Bearer",
        "Bearer ",
        `bearer ${right}`,
        `BEARER ${right}`,
        `Bearer  ${right}`,
        `Bearer ${right} extra`,
        `Basic ${Buffer.from(`x:${right}`).toString("base64")}`,
        `Token ${right}`,
        `Bearer ${fixture.otherToken}`,
        `Bearer ${fixture.adminToken}`,
        `Bearer ${right}x`,
        `Bearer ${right.slice(0, -1)}`,
        "Bearer prl_",
        `Bearer ${"a".repeat(4000)}`,
        "Bearer \u00ff\u00fe"
      )
    },
    { weight: 1, arbitrary: fc.string({ unit: "grapheme-ascii", maxLength: 60 }).map((s) => `Bearer ${s.replace(/[\r\n]/g, "")}`) }
  )

/** Headers besides Authorization and Content-Type. */
export const extraHeaders = fc.array(
  fc.oneof(
    fc.constantFrom<readonly [string, string]>(
      ["X-Chatwoot-Signature", "sha256=00"],
      ["X-Chatwoot-Timestamp", "1773480300"],
      ["X-Chatwoot-Timestamp", "-1"],
      ["X-Chatwoot-Timestamp", "99999999999999999999"],
      ["Accept", "text/html"],
      ["Accept", "*/*;q=0"],
      ["Accept-Encoding", "gzip, br, zstd"],
      ["Content-Encoding", "gzip"],
      ["Expect", "100-continue"],
      ["X-Forwarded-For", "127.0.0.1"],
      ["Traceparent", "00-zzzz-zzzz-01"],
      ["Traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"],
      ["Baggage", "a=%ff"],
      ["Cookie", "a=b"],
      ["Origin", "https://evil.example"],
      ["Range", "bytes=0-1"],
      ["If-None-Match", "*"]
    ),
    fc.tuple(
      fc.string({ unit: fc.constantFrom(..."abcXYZ-_"), minLength: 1, maxLength: 12 }).map((n) => `X-${n}`),
      fc.string({ unit: "grapheme-ascii", maxLength: 200 }).map((v) => v.replace(/[\r\n]/g, " ").trim())
    )
  ),
  { maxLength: 4 }
)

/** Fills the `:param` segments of a path template. */
export const fillPath = (template: string, values: Readonly<Record<string, string>>): string =>
  template.replace(/:([A-Za-z_]+)/g, (_, name: string) => values[name] ?? "x")

export const paramNames = (template: string): ReadonlyArray<string> =>
  [...template.matchAll(/:([A-Za-z_]+)/g)].map((m) => m[1] ?? "")

/** The right token for an endpoint's group. */
export const tokenFor = (endpoint: Endpoint, fixture: Fixture): string =>
  endpoint.group === "admin" ? fixture.adminToken : fixture.token
