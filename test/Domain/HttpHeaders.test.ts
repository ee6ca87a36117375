/**
 * The custom-header rules, checked against the real thing: whatever the schema accepts is sent by
 * Parley's webhook client (undici) and arrives at a Node receiver exactly as saved.
 */
import { describe, expect, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as SchemaParser from "effect/SchemaParser"
import fc from "fast-check"
import * as http from "node:http"
import { WebhookClient, WebhookClientLive } from "../../src/Delivery/WebhookClient.js"
import { HEADER_VALUE_MAX, headerProblems, HEADERS_TOTAL_MAX } from "../../src/Domain/HttpHeaders.js"
import { WebhookHeaders } from "../../src/Domain/Integration.js"
import { formatIssue } from "../../src/Domain/Validation.js"

const decode = (input: unknown) =>
  SchemaParser.decodeUnknownResult(WebhookHeaders, { errors: "all" })(input).pipe(
    Result.mapError((issue) => formatIssue("body", issue))
  )

const tokenChar = fc.constantFrom(..."!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
const headerName = fc.string({ unit: tokenChar, minLength: 1, maxLength: 30 }).map((name) => `X-${name}`)
/** Values near the rules: visible ASCII, spaces and tabs, sometimes other characters. */
const headerValue = fc.oneof(
  fc.string({ unit: fc.constantFrom(..."ab Z~!\t09\"\\"), maxLength: 40 }),
  fc.string({ unit: "grapheme-ascii", maxLength: 60 }),
  fc.string({ unit: "binary", maxLength: 20 }),
  fc.constantFrom("a\r\nb", "\u0000", "é", "x".repeat(HEADER_VALUE_MAX), "x".repeat(HEADER_VALUE_MAX + 1), " x", "x\t")
)
const headerMap = fc.dictionary(headerName, headerValue, { maxKeys: 6 })

/** A receiver that answers each request with the headers it got, as JSON. */
const echoServer = Effect.acquireRelease(
  Effect.callback<http.Server>((resume) => {
    const server = http.createServer((req, res) => {
      req.resume()
      req.on("end", () => {
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(req.headers))
      })
    })
    server.listen(0, "127.0.0.1", () => {
      resume(Effect.succeed(server))
    })
  }),
  (server) =>
    Effect.callback<void>((resume) => {
      server.close(() => resume(Effect.void))
    })
)

const Echoed = Schema.Record(Schema.String, Schema.Union([Schema.String, Schema.Array(Schema.String)]))

const development = WebhookClientLive.pipe(
  Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord(Object.fromEntries([["PARLEY_MODE", "development"]]))))
)

describe("webhook header rules", () => {
  it("report problems at the header, one per header, and the total only when each header is fine", () => {
    const rules = { reserved: ["host"], reservedPrefixes: ["x-parley-"] }
    expect(headerProblems({ Connection: "close", "X-Ok": "1", "X-Bad": "a\nb" }, rules).map((p) => [p.name, p.type]))
      .toEqual([["Connection", "forbidden_header"], ["X-Bad", "header_value"]])
    expect(headerProblems({ HOST: "x", "X-Parley-Foo": "y" }, rules).map((p) => p.type))
      .toEqual(["reserved_header", "reserved_header"])
    const big = { A: "a".repeat(HEADER_VALUE_MAX), B: "b".repeat(HEADER_VALUE_MAX) }
    expect(headerProblems(big, rules)).toEqual([
      { name: undefined, type: "headers_too_large", msg: expect.stringContaining(String(HEADERS_TOTAL_MAX)) }
    ])
  })

  it("a value that is not a string, or headers that are not an object, fail at the right place", () => {
    expect(decode({ "X-A": 1 })).toEqual(Result.fail([{ loc: ["body", "X-A"], msg: expect.any(String), type: "string_type" }]))
    expect(decode("X-A: 1")).toEqual(Result.fail([{ loc: ["body"], msg: expect.any(String), type: "dict_type" }]))
    expect(decode([])).toEqual(Result.fail([{ loc: ["body"], msg: expect.any(String), type: "dict_type" }]))
  })

  it.effect("every header map the schema accepts is sent by the webhook client and arrives as saved", () =>
    Effect.gen(function*() {
      const server = yield* echoServer
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      const client = yield* WebhookClient
      let accepted = 0
      let refused = 0
      yield* Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(headerMap, async (headers) => {
            const decoded = decode(headers)
            if (Result.isFailure(decoded)) {
              refused++
              for (const item of decoded.failure) expect(item.loc[0]).toBe("body")
              return
            }
            accepted++
            const echoed = await client.post({
              url: `http://127.0.0.1:${port}/`,
              headers: decoded.success,
              body: "{}",
              timeout: Duration.seconds(10),
              keep: 1_000_000
            }).pipe(
              Effect.flatMap((answer) => Schema.decodeUnknownEffect(Schema.fromJsonString(Echoed))(answer.body)),
              Effect.runPromise
            )
            for (const [name, value] of Object.entries(decoded.success)) {
              expect(echoed[name.toLowerCase()], name).toBe(value)
            }
          }),
          { numRuns: 150, seed: 4242 }
        )
      )
      // Both sides of the rules were exercised.
      expect(accepted).toBeGreaterThan(20)
      expect(refused).toBeGreaterThan(20)
    }).pipe(Effect.provide(development), Effect.scoped))
})
