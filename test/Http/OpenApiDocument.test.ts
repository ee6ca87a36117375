/**
 * The OpenAPI document (/openapi.json, generated here as the server generates it) against the server
 * itself: what it documents as required is what the endpoints' own decoders require, and every
 * operation declares the failures the server can answer there, with their headers. What the running
 * server answers is checked against the same document in OpenApiServed.test.ts.
 */
import { describe, expect, it } from "@effect/vitest"
import { Ajv2020 } from "ajv/dist/2020.js"
import * as Arbitrary from "effect/Arbitrary"
import * as Effect from "effect/Effect"
import * as HttpApi from "effect/http-api/HttpApi"
import * as OpenApi from "effect/http-api/OpenApi"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { Api } from "../../src/Api.js"
import { AdminAuth, HelpdeskAuth, WorkspaceAuth } from "../../src/Auth/Api.js"
import { formatIssue, type ValidationItem } from "../../src/Domain/Validation.js"
import { Document, type Operation } from "../support/OpenApiDocument.js"

// ---------------------------------------------------------------------------------------------------
// The document

/** The document as `/openapi.json` serves it: `HttpApiBuilder` serves `OpenApi.fromApi(Api)`. */
const generated = (): unknown => JSON.parse(JSON.stringify(OpenApi.fromApi(Api)))

const document: Document = Schema.decodeUnknownSync(Document)(generated())

const operations: ReadonlyArray<{ readonly method: string; readonly path: string; readonly operation: Operation }> = Object
  .entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, operation]) => ({ method: method.toUpperCase(), path, operation }))
  )

// ---------------------------------------------------------------------------------------------------
// The server's side: each endpoint's payload decoder and authentication, by operation id

interface Endpoint {
  /** What HttpApi decodes a JSON body with (undefined: the endpoint takes no body). */
  readonly payload: Schema.Top | undefined
  readonly middleware: ReadonlySet<unknown>
}

const endpoints = new Map<string, Endpoint>()
HttpApi.reflect(Api, {
  onGroup: () => {},
  onEndpoint: ({ endpoint, group, middleware }) => {
    const schemas: Array<Schema.Top> = []
    for (const entry of endpoint.payload.values()) {
      if (entry.encoding._tag === "Json") schemas.push(...entry.schemas)
    }
    const [first, ...rest] = schemas
    endpoints.set(`${group.identifier}.${endpoint.identifier}`, {
      payload: first === undefined ? undefined : rest.length === 0 ? first : Schema.Union(schemas),
      middleware
    })
  }
})

const endpointOf = (operationId: string): Endpoint => {
  const endpoint = endpoints.get(operationId)
  if (endpoint === undefined) throw new Error(`No endpoint for the operation ${operationId}`)
  return endpoint
}

/**
 * The problems the server reports for a body, as in its 422 (every problem: the API's parse options);
 * `[]` when the body is accepted. Parley's request schemas need no services to decode.
 */
const problemsOf = (payload: Schema.Top) => {
  const decode = Schema.decodeUnknownResult(Schema.make<Schema.Decoder<unknown>>(payload.ast), { errors: "all" })
  return (body: unknown): ReadonlyArray<ValidationItem> => {
    const result = decode(body)
    return Result.isFailure(result) ? formatIssue("body", result.failure.issue) : []
  }
}

// ---------------------------------------------------------------------------------------------------
// JSON Schemas of the document, read generically

type Path = ReadonlyArray<string | number>

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const stringsOf = (value: unknown): ReadonlyArray<string> =>
  Array.isArray(value) ? value.filter((item): item is string => typeof item === "string") : []

/** The schema `node` stands for, its `$ref`s followed into the document's components. */
const resolve = (node: unknown): Record<string, unknown> => {
  let current = node
  for (let hops = 0; isRecord(current) && typeof current["$ref"] === "string"; hops++) {
    if (hops > 20) throw new Error(`$ref loop at ${String(current["$ref"])}`)
    current = document.components.schemas[current["$ref"].replace("#/components/schemas/", "")]
  }
  return isRecord(current) ? current : {}
}

const jsonType = (value: unknown): string =>
  value === null ? "null" : Array.isArray(value) ? "array" : typeof value === "object" ? "object" : typeof value

/** The schema of `value` at `node`: of a union (`anyOf`, e.g. `NullOr`), the member of the value's type. */
const schemaOf = (node: unknown, value: unknown): Record<string, unknown> => {
  const schema = resolve(node)
  const members = schema["anyOf"]
  if (!Array.isArray(members)) return schema
  const kind = jsonType(value)
  const member = members.map(resolve).find((m) =>
    m["type"] === kind || (kind === "number" && m["type"] === "integer") ||
    (kind === "object" && isRecord(m["properties"]))
  )
  return member ?? schema
}

/** The documented object (properties and required) that `value` is at `node`, if it is one. */
const objectAt = (node: unknown, value: unknown) => {
  const schema = schemaOf(node, value)
  const properties = schema["properties"]
  return isRecord(value) && isRecord(properties)
    ? { properties, required: new Set(stringsOf(schema["required"])) }
    : undefined
}

const itemsAt = (node: unknown, value: unknown): unknown => Array.isArray(value) ? schemaOf(node, value)["items"] : undefined

/** `value` with only what the document says is required, at every depth (array items are kept, each minimal). */
const minimal = (value: unknown, node: unknown): unknown => {
  const object = objectAt(node, value)
  if (object !== undefined && isRecord(value)) {
    return Object.fromEntries(
      [...object.required].filter((key) => key in value).map((key) => [key, minimal(value[key], object.properties[key])])
    )
  }
  const items = itemsAt(node, value)
  return Array.isArray(value) && items !== undefined ? value.map((item) => minimal(item, items)) : value
}

interface Places {
  /** The properties of the value that the document calls required. */
  readonly required: Array<Path>
  /** Those it does not. */
  readonly optional: Array<Path>
  /** The properties the document calls required that the value does not have. */
  readonly absent: Array<Path>
}

/** Every property in `value`, at every depth, by what the document says of it. */
const placesIn = (value: unknown, node: unknown, path: Path = []): Places => {
  const out: Places = { required: [], optional: [], absent: [] }
  const add = (inner: Places) => {
    out.required.push(...inner.required)
    out.optional.push(...inner.optional)
    out.absent.push(...inner.absent)
  }
  const object = objectAt(node, value)
  if (object !== undefined && isRecord(value)) {
    for (const key of object.required) if (!(key in value)) out.absent.push([...path, key])
    for (const [key, item] of Object.entries(value)) {
      ;(object.required.has(key) ? out.required : out.optional).push([...path, key])
      add(placesIn(item, object.properties[key], [...path, key]))
    }
  }
  const items = itemsAt(node, value)
  if (Array.isArray(value) && items !== undefined) value.forEach((item, index) => add(placesIn(item, items, [...path, index])))
  return out
}

/** The minimal form of `value`, plus the value at `path` (itself minimal): one optional property present. */
const minimalWith = (value: unknown, node: unknown, path: Path): unknown => {
  const base = minimal(value, node)
  const [key, ...rest] = path
  if (key === undefined) return base
  if (typeof key === "string" && isRecord(value) && isRecord(base)) {
    return { ...base, [key]: minimalWith(value[key], objectAt(node, value)?.properties[key], rest) }
  }
  if (typeof key === "number" && Array.isArray(value) && Array.isArray(base)) {
    return base.map((item, index) => index === key ? minimalWith(value[key], itemsAt(node, value), rest) : item)
  }
  return base
}

/** `value` without the property at `path`. */
const without = (value: unknown, path: Path): unknown => {
  const [key, ...rest] = path
  if (key === undefined) return value
  if (isRecord(value) && typeof key === "string") {
    if (rest.length === 0) return Object.fromEntries(Object.entries(value).filter(([name]) => name !== key))
    return { ...value, [key]: without(value[key], rest) }
  }
  if (Array.isArray(value) && typeof key === "number") {
    return value.map((item, index) => index === key ? without(item, rest) : item)
  }
  return value
}

const show = (value: unknown) => JSON.stringify(value)?.slice(0, 400)

/** The JSON body of an operation's request, as the document describes it. */
const bodySchemaOf = (operation: Operation): unknown => operation.requestBody?.content["application/json"]?.schema

// ---------------------------------------------------------------------------------------------------
// Request bodies

const SAMPLES = 40
/** Fewer accepted bodies than this would mean the generator, not the document, needs work. */
const ENOUGH = 5

/**
 * Bodies of an operation that its decoder accepts: values of the payload's schema, generated
 * (`Arbitrary`) and encoded as a client sends them, as JSON. The generator works on the decoded side,
 * which does not know every rule of the wire (a timestamp's four-digit year, a header name's
 * characters): the values whose encoding fails or that the decoder refuses are left out.
 */
const bodiesOf = (payload: Schema.Top, accepted: (body: unknown) => boolean) =>
  Effect.gen(function*() {
    const encode = Schema.encodeUnknownResult(Schema.make<Schema.Codec<unknown, unknown>>(payload.ast))
    const values = yield* Arbitrary.sampleEffect(Arbitrary.schema(payload), { count: SAMPLES, seed: 20260 }).pipe(Effect.orDie)
    return values.flatMap((value) => {
      const encoded = encode(value)
      if (Result.isFailure(encoded)) return []
      const body: unknown = JSON.parse(JSON.stringify(encoded.success))
      return accepted(body) ? [body] : []
    })
  })

const withBodies = operations.filter(({ operation }) => bodySchemaOf(operation) !== undefined)

describe("the document's request bodies are what the endpoints' decoders accept", () => {
  it("every operation with a JSON body is an endpoint whose payload is decoded as JSON, and the other way round", () => {
    expect(withBodies.map(({ operation }) => operation.operationId).sort()).toEqual(
      [...endpoints].filter(([, endpoint]) => endpoint.payload !== undefined).map(([id]) => id).sort()
    )
    // The document lists the bodies the code reads: message-received, CSAT, settings, the admin's creations...
    expect(withBodies.length).toBeGreaterThanOrEqual(10)
    for (const { operation } of withBodies) expect(operation.requestBody?.required, operation.operationId).toBe(true)
  })

  it.effect.each(withBodies.map(({ method, path, operation }) => [`${method} ${path}`, operation] as const))(
    "%s: a body with only the required properties is accepted; without any one of them it is a 422 `missing` there; every other property may be left out",
    ([, operation]) =>
      Effect.gen(function*() {
        const node = bodySchemaOf(operation)
        const payload = endpointOf(operation.operationId).payload
        if (payload === undefined) throw new Error(`${operation.operationId} has no payload`)
        const problems = problemsOf(payload)
        const bodies = yield* bodiesOf(payload, (body) => problems(body).length === 0)
        expect(bodies.length, `${operation.operationId}: generated bodies the server accepts`).toBeGreaterThanOrEqual(ENOUGH)
        const checkedRequired = new Set<string>()

        for (const full of bodies) {
          const places = placesIn(full, node)
          // Every property the document requires is in every body the server accepts, at every depth.
          expect(places.absent, `${operation.operationId}: accepted without them: ${show(full)}`).toEqual([])
          const minimalBody = minimal(full, node)
          const probes: Array<readonly [string, unknown]> = [["only the required properties", minimalBody]]
          for (const path of places.optional) {
            probes.push([`the required properties and ${path.join(".")}`, minimalWith(full, node, path)])
          }
          for (const [what, body] of probes) {
            expect(problems(body), `${operation.operationId}: ${what}: ${show(body)}`).toEqual([])
            for (const path of placesIn(body, node).required) {
              const loc = ["body", ...path]
              const missing = problems(without(body, path))
              expect(
                missing.filter((item) => item.type === "missing" && JSON.stringify(item.loc) === JSON.stringify(loc)),
                `${operation.operationId}: ${what}, without ${path.join(".")}: ${show(missing)}`
              ).toHaveLength(1)
              checkedRequired.add(path.filter((key) => typeof key === "string").join("."))
            }
          }
        }
        // Each required property of the top level was taken out at least once.
        for (const name of stringsOf(resolve(node)["required"])) expect(checkedRequired, operation.operationId).toContain(name)
      })
  )

  it.effect("a property the document does not name is ignored, not refused (docs/api.md: a client should not send it)", () =>
    Effect.gen(function*() {
      for (const { operation } of withBodies) {
        const node = bodySchemaOf(operation)
        const payload = endpointOf(operation.operationId).payload
        if (payload === undefined) throw new Error(`${operation.operationId} has no payload`)
        const problems = problemsOf(payload)
        const [full] = yield* bodiesOf(payload, (body) => problems(body).length === 0)
        const body = minimal(full, node)
        if (!isRecord(body)) throw new Error(`${operation.operationId}: not an object body`)
        expect(problems({ ...body, notDocumented: 1 }), operation.operationId).toEqual([])
      }
    }))

  it("message-received documents its camelCase fields as required, and the snake_case spellings as accepted, not required", () => {
    const message = withBodies.find(({ operation }) => operation.operationId === "webhooks.messageReceived")
    const schema = resolve(message === undefined ? undefined : bodySchemaOf(message.operation))
    expect([...stringsOf(schema["required"])].sort()).toEqual(["conversationId", "customerId", "id", "role", "text"])
    expect(Object.keys(isRecord(schema["properties"]) ? schema["properties"] : {})).toEqual(
      expect.arrayContaining(["customer_id", "conversation_id", "sent_at", "sync_only", "request_context"])
    )
  })
})

// ---------------------------------------------------------------------------------------------------
// Responses

const ajv = new Ajv2020({ strict: false, validateFormats: false })
ajv.addSchema({ $id: "https://parley.test/openapi.json", components: document.components })

/** A JSON Schema 2020-12 validator (Ajv, as a client generated from the document) of one schema of the document. */
const validatorOf = (schema: unknown) => {
  const rewritten = rewrite(schema)
  if (!isRecord(rewritten)) throw new Error(`Not a schema: ${show(schema)}`)
  const validate = ajv.compile(rewritten)
  return (value: unknown) => validate(value)
}

/** `$ref`s of the document, made absolute for Ajv. */
const rewrite = (value: unknown): unknown =>
  Array.isArray(value)
    ? value.map(rewrite)
    : isRecord(value)
    ? Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, key === "$ref" && typeof item === "string" ? `https://parley.test/openapi.json${item}` : rewrite(item)])
    )
    : value

const bodyOf = (operation: Operation, status: string) => {
  const response = operation.responses[status]
  return response?.content?.["application/json"]?.schema
}

const headerOf = (operation: Operation, status: string, name: string) => operation.responses[status]?.headers?.[name]

/** Where the server's per-token rate limit is taken: the workspace's API token (and the helpdesk's). */
const rateLimited = (operation: Operation) => {
  const { middleware } = endpointOf(operation.operationId)
  return middleware.has(WorkspaceAuth) || middleware.has(HelpdeskAuth)
}

const authenticated = (operation: Operation) => {
  const { middleware } = endpointOf(operation.operationId)
  return middleware.has(WorkspaceAuth) || middleware.has(HelpdeskAuth) || middleware.has(AdminAuth)
}

describe("every operation declares what the server can answer there", () => {
  it("no 400 anywhere: HttpApi's decoding failure is never answered (the 422 is)", () => {
    expect(JSON.stringify(generated())).not.toContain("HttpApiDecodeError")
    for (const { method, path, operation } of operations) {
      expect(Object.keys(operation.responses), `${method} ${path}`).not.toContain("400")
    }
  })

  it("every operation has a summary, a unique operationId, and a description for every response", () => {
    const ids = operations.map(({ operation }) => operation.operationId)
    expect(new Set(ids).size).toBe(ids.length)
    for (const { method, path, operation } of operations) {
      expect(operation.summary?.length ?? 0, `${method} ${path}`).toBeGreaterThan(5)
      for (const [status, response] of Object.entries(operation.responses)) {
        // Effect's defaults ("Success", "Error") or a bare identifier say nothing to a reader.
        expect(response.description, `${method} ${path} ${status}`).toMatch(/ /)
      }
    }
  })

  it("500 {detail: \"Internal error\", traceId} everywhere, as the server's edge answers a defect", () => {
    for (const { method, path, operation } of operations) {
      const valid = validatorOf(bodyOf(operation, "500"))
      expect(valid({ detail: "Internal error", traceId: "4bf92f3577b34da6a3ce929d0e0e4736" }), `${method} ${path}`).toBe(true)
      expect(valid({ detail: "Internal error" }), `${method} ${path}`).toBe(false)
      expect(valid({ detail: "Boom", traceId: "x" }), `${method} ${path}`).toBe(false)
    }
  })

  it("413 and 422 everywhere: the body limit and the request's validation, checked before any handler", () => {
    for (const { method, path, operation } of operations) {
      expect(validatorOf(bodyOf(operation, "413"))({ detail: "Request body too large" }), `${method} ${path}`).toBe(true)
      const unprocessable = validatorOf(bodyOf(operation, "422"))
      expect(unprocessable({ detail: [{ loc: ["body", "id"], msg: "Field required", type: "missing" }] })).toBe(true)
      expect(unprocessable({ detail: "nope" })).toBe(false)
    }
  })

  it("401 with WWW-Authenticate: Bearer exactly where a token is checked", () => {
    for (const { method, path, operation } of operations) {
      const what = `${method} ${path}`
      expect(operation.security.length > 0, what).toBe(authenticated(operation))
      if (!authenticated(operation)) {
        expect(operation.responses["401"], what).toBeUndefined()
        continue
      }
      expect(validatorOf(bodyOf(operation, "401"))({ detail: "Invalid or revoked token" }), what).toBe(true)
      const challenge = headerOf(operation, "401", "www-authenticate")
      expect(challenge?.required, what).toBe(true)
      expect(validatorOf(challenge?.schema)("Bearer"), what).toBe(true)
    }
  })

  it("429 with Retry-After exactly where the per-token rate limit applies (API tokens; not the admin token)", () => {
    for (const { method, path, operation } of operations) {
      const what = `${method} ${path}`
      if (!rateLimited(operation)) {
        expect(operation.responses["429"], what).toBeUndefined()
        continue
      }
      expect(validatorOf(bodyOf(operation, "429"))({ detail: "Rate limit exceeded" }), what).toBe(true)
      const retryAfter = headerOf(operation, "429", "retry-after")
      expect(retryAfter?.required, what).toBe(true)
      expect(validatorOf(retryAfter?.schema)("17"), what).toBe(true)
      expect(validatorOf(retryAfter?.schema)("soon"), what).toBe(false)
    }
  })

  it("503 {detail} with Retry-After wherever the database is read (every authenticated operation); readiness has its own 503", () => {
    for (const { method, path, operation } of operations) {
      const what = `${method} ${path}`
      if (!authenticated(operation)) {
        // The health checks: liveness never reads the database; readiness answers its own 503, without Retry-After.
        expect(headerOf(operation, "503", "retry-after"), what).toBeUndefined()
        expect(operation.responses["503"] !== undefined, what).toBe(path === "/health/ready")
        continue
      }
      // The body and the header of the server's answer (`databaseUnavailable` in src/Http.ts).
      expect(
        validatorOf(bodyOf(operation, "503"))({ detail: "Service temporarily unavailable: the database cannot be reached" }),
        what
      ).toBe(true)
      const retryAfter = headerOf(operation, "503", "retry-after")
      expect(retryAfter?.required, what).toBe(true)
      expect(validatorOf(retryAfter?.schema)("5"), what).toBe(true)
    }
  })

  it("no operation answers to OPTIONS: no CORS preflight is documented, as none is answered", () => {
    for (const { method } of operations) expect(method).not.toBe("OPTIONS")
  })
})
