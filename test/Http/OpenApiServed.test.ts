/**
 * What the running server answers is what /openapi.json declares for the operation: the status is one
 * of its responses, the body validates against that response's schema (JSON Schema 2020-12, as a
 * client generated from the document reads it) and the headers it declares required are sent. Checked
 * for every operation of the document without a token (401) and over the rate limit (429), and for a
 * defect (500). No CORS: a preflight is a 404 and no `Access-Control-*` header is ever sent, as
 * docs/api.md says. The document itself is checked against the decoders in OpenApiDocument.test.ts.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Ajv2020 } from "ajv/dist/2020.js"
import * as Effect from "effect/Effect"
import { HttpClient, HttpClientRequest } from "effect/http"
import * as OpenApi from "effect/http-api/OpenApi"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import { Api } from "../../src/Api.js"
import { ADMIN_TOKEN, call, makeTenant, type Reply, TestApp } from "../support/App.js"
import { Document, type Operation } from "../support/OpenApiDocument.js"

const DOC = "https://parley.test/openapi.json"

const served = Effect.gen(function*() {
  const reply = yield* call("GET", "/openapi.json")
  expect(reply.status).toBe(200)
  return { raw: reply.body, document: yield* Schema.decodeUnknownEffect(Document)(reply.body).pipe(Effect.orDie) }
})

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** `$ref`s of the document, made absolute for Ajv. */
const rewrite = (value: unknown): unknown =>
  Array.isArray(value)
    ? value.map(rewrite)
    : isRecord(value)
    ? Object.fromEntries(Object.entries(value).map(([key, item]) => [key, key === "$ref" && typeof item === "string" ? `${DOC}${item}` : rewrite(item)]))
    : value

/** Headers a client acts on: when the server sends one, the document must declare it. */
const CONTRACT_HEADERS = ["www-authenticate", "retry-after"]

/**
 * What is wrong with `reply` as an answer of `operation`, by the document (undefined: nothing): its
 * status must be declared, its body valid against the declared schema, the declared required headers
 * sent and valid, and the headers a client acts on declared.
 */
const checkerOf = (document: Document) => {
  const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true })
  ajv.addSchema({ $id: DOC, components: document.components })
  const valid = (schema: unknown, value: unknown): string | undefined => {
    const rewritten = rewrite(schema)
    if (!isRecord(rewritten)) return `no schema: ${JSON.stringify(schema)}`
    const validate = ajv.compile(rewritten)
    return validate(value) ? undefined : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message ?? ""}`).join("; ")
  }
  return (operation: Operation, reply: Reply): string | undefined => {
    const response = operation.responses[String(reply.status)]
    if (response === undefined) return `${reply.status} is not declared: ${Object.keys(operation.responses).join(", ")}`
    const schema = response.content?.["application/json"]?.schema
    const body = schema === undefined ? undefined : valid(schema, reply.body)
    if (body !== undefined) return `${reply.status} body ${JSON.stringify(reply.body)}: ${body}`
    for (const [name, header] of Object.entries(response.headers ?? {})) {
      const value = reply.headers[name]
      if (value === undefined) {
        if (header.required) return `${reply.status} without its ${name} header`
        continue
      }
      const problem = valid(header.schema, value)
      if (problem !== undefined) return `${reply.status} ${name}: ${value}: ${problem}`
    }
    const undeclared = CONTRACT_HEADERS.filter((name) => reply.headers[name] !== undefined && response.headers?.[name] === undefined)
    return undeclared.length === 0 ? undefined : `${reply.status} sends ${undeclared.join(", ")}, not declared`
  }
}

interface Target {
  readonly method: "GET" | "POST" | "PUT" | "DELETE"
  readonly path: string
  readonly operation: Operation
}

const isMethod = (method: string): method is Target["method"] =>
  method === "GET" || method === "POST" || method === "PUT" || method === "DELETE"

/** Every operation, its path parameters filled with values of their schemas' kind (UUIDs where they are). */
const targetsOf = (document: Document): ReadonlyArray<Target> =>
  Object.entries(document.paths).flatMap(([template, item]) =>
    Object.entries(item).flatMap(([method, operation]) => {
      const upper = method.toUpperCase()
      if (!isMethod(upper)) throw new Error(`An operation on ${upper} ${template}`)
      const path = template.replace(/\{([^}]+)\}/g, (_, name: string) => {
        const parameter = operation.parameters.find((p) => p.in === "path" && p.name === name)
        return isRecord(parameter?.schema) && parameter.schema["format"] === "uuid" ? crypto.randomUUID() : "someone"
      })
      return [{ method: upper, path, operation }]
    })
  )

/** A call of `target` (a body where the operation takes one: `{}`, which no required property spares). */
const send = (target: Target, token?: string, headers?: Record<string, string>) =>
  call(target.method, target.path, {
    ...(token === undefined ? {} : { token }),
    ...(headers === undefined ? {} : { headers }),
    ...(target.operation.requestBody === undefined ? {} : { body: {} })
  })

const usesApiToken = (operation: Operation) => operation.security.some((requirement) => "bearer" in requirement)
const usesAdminToken = (operation: Operation) => operation.security.some((requirement) => "adminBearer" in requirement)

/** A raw request with any method (OPTIONS), its status, headers and text. */
const raw = (method: "OPTIONS" | "GET", path: string, headers: Record<string, string>) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const response = yield* client.execute(HttpClientRequest.make(method)(path).pipe(HttpClientRequest.setHeaders(headers)))
    return { status: response.status, headers: response.headers, text: yield* response.text }
  }).pipe(Effect.scoped, Effect.orDie)

const accessControl = (headers: Readonly<Record<string, string>>) =>
  Object.keys(headers).filter((name) => name.toLowerCase().startsWith("access-control-"))

describe("the served document and what the server answers", () => {
  layer(TestApp(), { timeout: 120_000 })((it) => {
    it.effect("/openapi.json is the document generated from the API (what OpenApiDocument.test.ts checks)", () =>
      Effect.gen(function*() {
        const { raw: body } = yield* served
        expect(body).toEqual(JSON.parse(JSON.stringify(OpenApi.fromApi(Api))))
      }))

    it.effect("every operation without a token: 401 as declared (WWW-Authenticate: Bearer) where a token is required, else not a 401", () =>
      Effect.gen(function*() {
        const { document } = yield* served
        const check = checkerOf(document)
        const targets = targetsOf(document)
        expect(targets.length).toBeGreaterThan(25)
        for (const target of targets) {
          const what = `${target.method} ${target.path}`
          const reply = yield* send(target)
          expect(check(target.operation, reply), what).toBeUndefined()
          expect(reply.status === 401, what).toBe(target.operation.security.length > 0)
        }
      }))

    it.effect("a defect answers 500 {detail: \"Internal error\", traceId} as declared", () =>
      Effect.gen(function*() {
        const { document } = yield* served
        const check = checkerOf(document)
        const tenant = yield* makeTenant()
        const sql = yield* SqlClient.SqlClient
        // The database changes under the running app: a real defect, not a test route.
        yield* sql`ALTER TABLE customers RENAME TO customers_elsewhere`
        const reply = yield* call("GET", "/v1/customer/external-id/somebody", { token: tenant.token }).pipe(
          Effect.ensuring(Effect.orDie(sql`ALTER TABLE customers_elsewhere RENAME TO customers`))
        )
        expect(reply.status).toBe(500)
        const operation = document.paths["/v1/customer/external-id/{external_id}"]?.["get"]
        if (operation === undefined) throw new Error("No GET customer operation")
        expect(check(operation, reply)).toBeUndefined()
      }))

    it.effect("no CORS: a browser's preflight is a 404 {detail} and no answer carries an Access-Control-* header", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const origin = { origin: "https://app.example" }
        for (const path of ["/v1/integration/list", `/v1/webhooks/${tenant.integrationId}/message-received`, "/openapi.json"]) {
          const preflight = yield* raw("OPTIONS", path, {
            ...origin,
            "access-control-request-method": "POST",
            "access-control-request-headers": "authorization, content-type"
          })
          expect(preflight.status, path).toBe(404)
          expect(preflight.text, path).toBe(JSON.stringify({ detail: "Not Found" }))
          expect(accessControl(preflight.headers), path).toEqual([])
        }
        const list = yield* call("GET", "/v1/integration/list", { token: tenant.token, headers: origin })
        expect(list.status).toBe(200)
        expect(accessControl(list.headers)).toEqual([])
        const unauthorized = yield* call("GET", "/v1/integration/list", { headers: origin })
        expect(unauthorized.status).toBe(401)
        expect(accessControl(unauthorized.headers)).toEqual([])
      }))
  })
})

describe("the rate limit, where the document declares it (PARLEY_RATE_LIMIT=1)", () => {
  layer(TestApp({ PARLEY_RATE_LIMIT: "1" }), { timeout: 120_000 })((it) => {
    it.effect("every operation of an API token: the second request within the minute is the declared 429 with Retry-After; the admin token is never limited", () =>
      Effect.gen(function*() {
        const { document } = yield* served
        const check = checkerOf(document)
        const tenant = yield* makeTenant()
        const targets = targetsOf(document)
        const limited = targets.filter((target) => usesApiToken(target.operation))
        expect(limited.length).toBeGreaterThanOrEqual(10)
        for (const target of limited) {
          const what = `${target.method} ${target.path}`
          // A token of its own for each operation: its one request a minute.
          const created = yield* call("POST", `/admin/v1/workspaces/${tenant.workspaceId}/tokens`, {
            token: ADMIN_TOKEN,
            body: { name: target.operation.operationId }
          })
          const token = Schema.decodeUnknownSync(Schema.Struct({ token: Schema.String }))(created.body).token
          const first = yield* send(target, token)
          expect(first.status, what).not.toBe(429)
          expect(check(target.operation, first), what).toBeUndefined()
          const second = yield* send(target, token)
          expect(second.status, what).toBe(429)
          expect(check(target.operation, second), what).toBeUndefined()
        }
        // Not limited: nor declared.
        for (const target of targets.filter((t) => !usesApiToken(t.operation))) {
          expect(target.operation.responses["429"], `${target.method} ${target.path}`).toBeUndefined()
        }
        const admin = targets.find((target) => usesAdminToken(target.operation) && target.path === "/admin/v1/workspaces" && target.method === "GET")
        if (admin === undefined) throw new Error("No GET /admin/v1/workspaces operation")
        for (let i = 0; i < 3; i++) {
          const reply = yield* send(admin, ADMIN_TOKEN)
          expect(reply.status).toBe(200)
          expect(check(admin.operation, reply)).toBeUndefined()
        }
      }))
  })
})
