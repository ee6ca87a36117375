/**
 * Property-based fuzzing of every endpoint (all of `src/Api.ts`: /v1, /admin/v1, the helpdesk endpoint,
 * health) over raw HTTP: bodies, paths, queries and headers a careless or hostile client could send.
 *
 * Properties, for every request: an answer comes (no hang, no dropped connection); never a 5xx; every
 * error body has the API's shape (401/404/409/413/429 `{"detail": string}`, 422 `{"detail":[{loc,msg,
 * type}]}` located under body/path/query/header); a rejected request stores nothing (row counts and
 * digests before and after); and the server still answers its health checks afterwards.
 *
 * `npm test` runs a short form (fixed seed, a few hundred requests); `npm run fuzz` runs long:
 * FUZZ_RUNS (runs per property, default 2000) and FUZZ_SEED (default: random, printed) tune it.
 */
import { HttpServer } from "effect/http"
import type * as SqlClient from "effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import fc from "fast-check"
import { ADMIN_TOKEN, call, makeTenant, TestApp } from "../support/App.js"
import {
  authorization,
  bodyCase,
  contentType,
  type Endpoint,
  endpoints,
  extraHeaders,
  fillPath,
  type Fixture,
  nestedText,
  paramNames,
  pathParam,
  plausibleBody,
  queryString,
  safeString,
  tokenFor,
  uriEncode
} from "./Generators.js"
import { knownDefects } from "./KnownDefects.js"
import { type RawOutcome, type RawRequest, sendRaw } from "./RawHttp.js"
import { describeChange, storedFingerprint } from "./Stored.js"
import { shapeProblem } from "./Wire.js"

const long = process.env["FUZZ"] === "long"
const seed = Number(process.env["FUZZ_SEED"] ?? (long ? Date.now() % 2_147_483_647 : 20_261_122))
const longRuns = Number(process.env["FUZZ_RUNS"] ?? 2000)
/** Runs of one property: the short form's count in `npm test`, FUZZ_RUNS in `npm run fuzz`. */
const runs = (short: number) => (long ? longRuns : short)
const timeoutFor = (short: number) => Math.max(60_000, runs(short) * 250)

if (long) console.log(`fuzz: seed ${seed}, ${longRuns} runs per property (FUZZ_SEED=${seed} repeats this run)`)

/** The fuzz app: a small body limit, so over-limit bodies are cheap to send. */
const BODY_LIMIT = 65_536

const setup = Effect.gen(function*() {
  const server = yield* HttpServer.HttpServer
  const port = server.address._tag !== "UnixPathAddress" ? server.address.port : 0
  const tenant = yield* makeTenant()
  const chatwoot = yield* call("POST", `/admin/v1/workspaces/${tenant.workspaceId}/integrations`, {
    token: ADMIN_TOKEN,
    body: { name: "Chatwoot", integration: "chatwoot", webhook: { url: "https://hooks.example.com/cw" } }
  })
  const signed = yield* call("POST", `/admin/v1/workspaces/${tenant.workspaceId}/integrations`, {
    token: ADMIN_TOKEN,
    body: {
      name: "Signed Chatwoot",
      integration: "chatwoot",
      webhook: { url: "https://hooks.example.com/cw" },
      channelsSettings: { chatwoot: { webhookSecret: "cw-secret" } }
    }
  })
  const idOf = (body: unknown) =>
    typeof body === "object" && body !== null && "integrationId" in body ? String(body.integrationId) : ""
  const other = yield* makeTenant()
  const context = yield* Effect.context<SqlClient.SqlClient>()
  const fixture: Fixture = {
    port,
    adminToken: ADMIN_TOKEN,
    token: tenant.token,
    workspaceId: tenant.workspaceId,
    integrationId: tenant.integrationId,
    chatwootIntegrationId: idOf(chatwoot.body),
    signedChatwootIntegrationId: idOf(signed.body),
    otherToken: other.token,
    otherIntegrationId: other.integrationId
  }
  return { fixture, fingerprint: () => Effect.runPromiseWith(context)(storedFingerprint) }
})

type Setup = Effect.Success<typeof setup>

const describeRequest = (request: RawRequest) =>
  `${request.method} ${request.target.slice(0, 200)} headers=${JSON.stringify(request.headers ?? [])
    .slice(0, 300)} body=${(typeof request.body === "string" ? request.body : request.body?.toString("latin1") ?? "")
    .slice(0, 300)}${request.chunked === true ? " (chunked)" : ""}`

/**
 * Sends one request and checks the properties every answer must have. `expectStatus` narrows the
 * answer further (the known-defect properties say what a fixed server answers).
 */
const checkRequest = async (
  env: Setup,
  request: RawRequest,
  options: { readonly expectStatus?: (status: number) => boolean; readonly statuses?: Map<number, number> } = {}
): Promise<RawOutcome> => {
  const before = await env.fingerprint()
  const outcome = await sendRaw(env.fixture.port, request)
  if (outcome._tag === "Answered") {
    options.statuses?.set(outcome.response.status, (options.statuses.get(outcome.response.status) ?? 0) + 1)
  }
  const context = describeRequest(request)
  if (outcome._tag === "NoAnswer") throw new Error(`No answer (${outcome.reason}) to ${context}`)
  const { response } = outcome
  if (response.status >= 500) {
    throw new Error(`${response.status} ${response.text.slice(0, 300)} for ${context}`)
  }
  if (request.method !== "HEAD") {
    const problem = shapeProblem({ status: response.status, headers: response.headers, body: response.json })
    if (problem !== undefined) throw new Error(`${problem} (raw: ${response.text.slice(0, 200)}) for ${context}`)
  }
  if (options.expectStatus !== undefined && !options.expectStatus(response.status)) {
    throw new Error(`unexpected ${response.status} ${response.text.slice(0, 300)} for ${context}`)
  }
  if (response.status >= 400) {
    const after = await env.fingerprint()
    if (after !== before) {
      throw new Error(`a rejected request (${response.status}) changed what is stored: ${describeChange(before, after)} — ${context}`)
    }
  }
  return outcome
}

/**
 * Prints what a property's requests were answered with, and checks the generators reach past the
 * first gate: some requests must be accepted and some rejected by validation, not all turned away.
 */
const reached = (name: string, statuses: Map<number, number>, expected: ReadonlyArray<number>) =>
  Effect.sync(() => {
    const summary = [...statuses.entries()].sort(([a], [b]) => a - b).map(([status, n]) => `${status}×${n}`).join(" ")
    console.log(`fuzz ${name}: ${summary}`)
    // Too few runs (FUZZ_RUNS=10) may not reach every answer by chance.
    const total = [...statuses.values()].reduce((a, b) => a + b, 0)
    if (total < 50) return
    for (const status of expected) expect(statuses.get(status) ?? 0, `${name}: no ${status} answers`).toBeGreaterThan(0)
  })

const healthy = (env: Setup) =>
  Effect.promise(async () => {
    for (const target of ["/health/live", "/health/ready"]) {
      const outcome = await sendRaw(env.fixture.port, { method: "GET", target })
      expect(outcome._tag === "Answered" ? outcome.response.status : outcome.reason, target).toBe(200)
    }
  })

const assertProperty = <Ts>(property: fc.IAsyncProperty<Ts>, numRuns: number) =>
  Effect.promise(async () => {
    const result = await fc.check(property, { numRuns, seed, endOnFailure: !long })
    if (result.failed) {
      throw new Error(
        `Property failed (FUZZ_SEED=${seed}, path ${result.counterexamplePath ?? "?"}) after ${result.numRuns} runs: ${
          result.errorInstance instanceof Error ? result.errorInstance.message : String(result.errorInstance)
        }`
      )
    }
  })

const headersFor = (
  auth: string | undefined,
  type: string | undefined,
  extra: ReadonlyArray<readonly [string, string]> = []
): ReadonlyArray<readonly [string, string]> => [
  ...(auth === undefined ? [] : [["Authorization", auth] as const]),
  ...(type === undefined ? [] : [["Content-Type", type] as const]),
  ...extra
]

const pathOf = (endpoint: Endpoint, fixture: Fixture): fc.Arbitrary<string> => {
  const names = paramNames(endpoint.path)
  return fc.tuple(...names.map((name) => pathParam(name, fixture))).map((values) =>
    fillPath(endpoint.path, Object.fromEntries(names.map((name, i) => [name, values[i] ?? ""])))
  )
}

/** A path parameter that is always the caller's own (the body is what is fuzzed). */
const rightPath = (endpoint: Endpoint, fixture: Fixture): string =>
  fillPath(endpoint.path, {
    integration_id: endpoint.group === "helpdesk" ? fixture.chatwootIntegrationId : fixture.integrationId,
    workspaceId: fixture.workspaceId,
    external_id: "user-1",
    tokenId: "6f1c1f8e-1d7e-4c8e-9a0a-1b2c3d4e5f60",
    delivery_id: "6f1c1f8e-1d7e-4c8e-9a0a-1b2c3d4e5f60"
  })

const withPayload = endpoints.filter((e) => e.hasPayload)
const jsonEndpoints = withPayload.length > 0 ? withPayload : endpoints

describe("fuzzing every endpoint", () => {
  it("covers every endpoint of the API", () => {
    expect(endpoints.length).toBeGreaterThanOrEqual(25)
    expect(endpoints.map((e) => e.group)).toEqual(expect.arrayContaining([
      "admin",
      "customers",
      "integrations",
      "webhooks",
      "helpdesk",
      "deliveries",
      "health"
    ]))
  })

  it.layer(TestApp({ PARLEY_BODY_LIMIT: String(BODY_LIMIT) }), { timeout: 120_000 })((it) => {
    it.effect("bodies: wrong types, huge and nested values, duplicate keys, snake/camel, dates, malformed JSON", () =>
      Effect.gen(function*() {
        const env = yield* setup
        const { fixture } = env
        const endpoint = fc.oneof(
          { weight: 3, arbitrary: fc.constantFrom(...jsonEndpoints) },
          { weight: 1, arbitrary: fc.constantFrom(...endpoints) }
        )
        const request = endpoint.chain((endpoint) =>
          fc.record({
            endpoint: fc.constant(endpoint),
            path: fc.oneof({ weight: 5, arbitrary: fc.constant(rightPath(endpoint, fixture)) }, {
              weight: 1,
              arbitrary: pathOf(endpoint, fixture)
            }),
            body: bodyCase(endpoint, fixture),
            type: contentType,
            chunked: fc.boolean()
          })
        )
        const statuses = new Map<number, number>()
        yield* assertProperty(
          fc.asyncProperty(request, async ({ body, chunked, endpoint, path, type }) => {
            const size = typeof body.body === "string" ? Buffer.byteLength(body.body) : body.body.length
            await checkRequest(env, {
              method: endpoint.method,
              target: path,
              headers: headersFor(`Bearer ${tokenFor(endpoint, fixture)}`, type),
              body: body.body,
              // Chunked bodies over the limit are the chunkedBodyLimit known defect.
              chunked: chunked && (size <= BODY_LIMIT || !knownDefects.chunkedBodyLimit)
            }, { statuses })
          }),
          runs(220)
        )
        yield* reached("bodies", statuses, [200, 201, 404, 413, 422])
        yield* healthy(env)
      }), timeoutFor(220))

    it.effect("paths and methods: any segment, encoded or not, on every route and none", () =>
      Effect.gen(function*() {
        const env = yield* setup
        const { fixture } = env
        const method = fc.constantFrom("GET", "POST", "DELETE", "PUT", "PATCH", "OPTIONS", "HEAD")
        const target = fc.oneof(
          { weight: 4, arbitrary: fc.constantFrom(...endpoints).chain((e) => pathOf(e, fixture)) },
          {
            weight: 1,
            arbitrary: fc.array(safeString.map(uriEncode), { minLength: 1, maxLength: 5 })
              .map((segments) => `/${segments.join("/")}`)
          },
          {
            weight: 1,
            arbitrary: fc.constantFrom(
              "/",
              "//",
              "/v1",
              "/v1/",
              "/admin/v1/",
              "/v1/integration/list/",
              "/V1/INTEGRATION/LIST",
              "/v1/integration/list?",
              "/v1//integration/list",
              "/v1/integration/../integration/list",
              "/v1/%2e%2e/admin/v1/workspaces",
              "/openapi.json",
              "/docs",
              "/health/live/",
              "/%00",
              "/%",
              `/${"a".repeat(4000)}`
            )
          }
        )
        const request = fc.record({ method, target, query: queryString, auth: fc.boolean() })
        const statuses = new Map<number, number>()
        yield* assertProperty(
          fc.asyncProperty(request, async ({ auth, method, query, target }) => {
            await checkRequest(env, {
              method,
              target: `${target}${query}`,
              headers: headersFor(auth ? `Bearer ${fixture.token}` : undefined, undefined),
              ...(method === "POST" ? { body: "{}" } : {})
            }, { statuses })
          }),
          runs(60)
        )
        yield* reached("paths", statuses, [401, 404])
        yield* healthy(env)
      }), timeoutFor(60))

    it.effect("queries: the deliveries filters, access_token, repeated, empty and broken parameters", () =>
      Effect.gen(function*() {
        const env = yield* setup
        const { fixture } = env
        const queried = endpoints.filter((e) => e.group === "deliveries" || e.group === "helpdesk")
        const request = fc.record({ endpoint: fc.constantFrom(...queried), query: queryString, useHeader: fc.boolean() })
        const statuses = new Map<number, number>()
        yield* assertProperty(
          fc.asyncProperty(request, async ({ endpoint, query, useHeader }) => {
            const target = `${rightPath(endpoint, fixture)}${query}`
            await checkRequest(env, {
              method: endpoint.method,
              target,
              headers: headersFor(useHeader ? `Bearer ${fixture.token}` : undefined, "application/json"),
              ...(endpoint.method === "POST" ? { body: "{}" } : {})
            }, { statuses })
          }),
          runs(50)
        )
        yield* reached("queries", statuses, [200, 401, 422])
        yield* healthy(env)
      }), timeoutFor(50))

    it.effect("headers: Authorization in every spelling, odd content types, signatures and other headers", () =>
      Effect.gen(function*() {
        const env = yield* setup
        const { fixture } = env
        const request = fc.constantFrom(...endpoints).chain((endpoint) =>
          fc.record({
            endpoint: fc.constant(endpoint),
            auth: authorization(tokenFor(endpoint, fixture), fixture),
            type: contentType,
            extra: extraHeaders,
            body: bodyCase(endpoint, fixture),
            signed: fc.boolean()
          })
        )
        const statuses = new Map<number, number>()
        yield* assertProperty(
          fc.asyncProperty(request, async ({ auth, body, endpoint, extra, signed, type }) => {
            const target = endpoint.group === "helpdesk" && signed
              ? rightPath(endpoint, fixture).replace(fixture.chatwootIntegrationId, fixture.signedChatwootIntegrationId)
              : rightPath(endpoint, fixture)
            await checkRequest(env, {
              method: endpoint.method,
              target,
              headers: headersFor(auth, type, extra),
              body: body.body
            }, { statuses })
          }),
          runs(80)
        )
        yield* reached("headers", statuses, [200, 401, 422])
        yield* healthy(env)
      }), timeoutFor(80))

    // -----------------------------------------------------------------------------------------------
    // Known defects (KnownDefects.ts): each property below fails today; flip its switch when fixed.

    const defect = (open: boolean) => (open ? it.effect.fails : it.effect)

    defect(knownDefects.nestedJson)("(1) deeply nested JSON in any body is a 4xx, never a 500", () =>
      Effect.gen(function*() {
        const env = yield* setup
        const { fixture } = env
        const request = fc.record({
          endpoint: fc.constantFrom(...jsonEndpoints),
          objects: fc.boolean()
        }).chain(({ endpoint, objects }) =>
          // Within the body limit: 6 bytes a level for objects, 2 for arrays.
          fc.integer({ min: 5_000, max: objects ? 10_000 : 16_000 }).map((depth) => ({ endpoint, objects, depth }))
        )
        yield* assertProperty(
          fc.asyncProperty(request, async ({ depth, endpoint, objects }) => {
            await checkRequest(env, {
              method: endpoint.method,
              target: rightPath(endpoint, fixture),
              headers: headersFor(`Bearer ${tokenFor(endpoint, fixture)}`, "application/json"),
              body: `{"name":"x","junk":${nestedText(depth, objects)}}`
            }, { expectStatus: (status) => status >= 400 && status < 500 })
          }),
          runs(20)
        )
      }), timeoutFor(20))

    defect(knownDefects.loneSurrogates)("(2) a lone surrogate in any string is a 422, never a 500 or a silent U+FFFD", () =>
      Effect.gen(function*() {
        const env = yield* setup
        const { fixture } = env
        const surrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((code) => `\\u${code.toString(16)}`)
        const request = fc.record({
          endpoint: fc.constantFrom(...jsonEndpoints),
          escape: surrogate,
          seed: fc.integer({ min: 1, max: 1_000_000 })
        })
        yield* assertProperty(
          fc.asyncProperty(request, async ({ endpoint, escape, seed }) => {
            // The endpoint's plausible body with its first string value carrying the escape.
            const withEscape = plausibleBody(endpoint, fixture, seed).replace(/":"/, `":"${escape}`)
            await checkRequest(env, {
              method: endpoint.method,
              target: rightPath(endpoint, fixture),
              headers: headersFor(`Bearer ${tokenFor(endpoint, fixture)}`, "application/json"),
              body: withEscape
            }, { expectStatus: (status) => status === 422 || status === 401 || status === 404 })
          }),
          runs(30)
        )
      }), timeoutFor(30))

    defect(knownDefects.chunkedBodyLimit)("(8) a chunked body over the limit is answered 413 {detail}", () =>
      Effect.gen(function*() {
        const env = yield* setup
        const { fixture } = env
        const request = fc.record({
          endpoint: fc.constantFrom(...jsonEndpoints),
          extra: fc.integer({ min: 1, max: 200_000 })
        })
        yield* assertProperty(
          fc.asyncProperty(request, async ({ endpoint, extra }) => {
            await checkRequest(env, {
              method: endpoint.method,
              target: rightPath(endpoint, fixture),
              headers: headersFor(`Bearer ${tokenFor(endpoint, fixture)}`, "application/json"),
              body: `{"name":"${"z".repeat(BODY_LIMIT + extra)}"}`,
              chunked: true
            }, { expectStatus: (status) => status === 413 })
          }),
          runs(10)
        )
      }), timeoutFor(10))

    defect(knownDefects.nodeOwnErrors)("(9) Node's own 431 and 400 answers carry {detail}", () =>
      Effect.gen(function*() {
        const env = yield* setup
        const { fixture } = env
        const request = fc.oneof(
          fc.integer({ min: 17_000, max: 40_000 }).map((size): RawRequest => ({
            method: "GET",
            target: "/v1/integration/list",
            headers: [["Authorization", `Bearer ${fixture.token}`], ["X-Big", "b".repeat(size)]]
          })),
          fc.constantFrom(
            "GET /v1/integration/list HTTP/9.9\r\n\r\n",
            "GET\r\n\r\n",
            "GET /v1 integration/list HTTP/1.1\r\nHost: x\r\n\r\n",
            "G\u00e9T / HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"
          ).map((head): RawRequest => ({ method: "GET", target: "/", head }))
        )
        yield* assertProperty(
          fc.asyncProperty(request, async (raw) => {
            await checkRequest(env, raw, { expectStatus: (status) => status >= 400 && status < 500 })
          }),
          runs(10)
        )
      }), timeoutFor(10))
  })
})
