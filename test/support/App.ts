/**
 * Layers a test composes: Parley's HTTP app on a test server (random port) over the test database,
 * with test configuration, plus helpers to call it raw (exact wire shapes) or through the typed client.
 */
import { HttpApiClient } from "effect/http-api"
import { HttpClient, HttpClientRequest, HttpServer } from "effect/http"
import { NodeHttpClient, NodeHttpServer } from "@effect/platform-node"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Api } from "../../src/Api.js"
import { makeApp } from "../../src/App.js"
import { createServer } from "../../src/NodeServer.js"
import { ValidationItem } from "../../src/Domain/Validation.js"
import { TestDatabase } from "./Database.js"

export const ADMIN_TOKEN = "padm_test-admin-token"

/** Test configuration; `overrides` win, then the process environment. */
export const TestConfig = (overrides: Record<string, string> = {}) =>
  ConfigProvider.layer(
    ConfigProvider.orElse(
      ConfigProvider.fromEnvRecord({
        PARLEY_ADMIN_TOKEN: ADMIN_TOKEN,
        PARLEY_RATE_LIMIT: "0",
        PARLEY_SEED_DEMO: "false",
        // Production mode (tests of the SSRF guard) otherwise requires an encryption key.
        PARLEY_ALLOW_PLAINTEXT_SECRETS: "true",
        // One access record per request would bury what a failing test printed (Logs.test.ts turns them on).
        LOG_REQUESTS: "false",
        PARLEY_DATA_DIR: mkdtempSync(join(tmpdir(), "parley-test-")),
        ...overrides
      }),
      ConfigProvider.fromEnv()
    )
  )

/** Parley's Node server (`src/NodeServer.ts`) on a random port, with an `HttpClient` aimed at it. */
export const TestServer = HttpServer.layerTestClient.pipe(
  Layer.provide(NodeHttpClient.layerNodeHttpOptions({ keepAlive: false })),
  Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0 }))
)

/** Parley's HTTP API on a test server; provides an `HttpClient` aimed at it, the services and the database. */
export const TestApp = (overrides: Record<string, string> = {}) =>
  makeApp({ server: TestServer, database: TestDatabase, workers: false }).pipe(
    Layer.provide(TestConfig(overrides)),
    Layer.orDie
  )

/** Fast timings for tests of the reply and delivery pipeline (all overridable). */
export const fastPipeline: Record<string, string> = {
  REPLY_DEBOUNCE: "300 millis",
  JOB_POLL_INTERVAL: "50 millis",
  JOB_LEASE: "1 second",
  WORKER_CONCURRENCY: "2",
  WORKER_SHUTDOWN_GRACE: "2 seconds",
  DELIVERY_RETRY_BASE: "50 millis",
  DELIVERY_RETRY_MAX_DELAY: "200 millis",
  DELIVERY_MAX_AGE: "30 seconds",
  DELIVERY_TIMEOUT: "2 seconds"
}

/**
 * `TestApp` plus the supervised worker pool. Use it with `layer(..., { excludeTestServices: true })`:
 * workers sleep and poll on the real clock.
 */
export const TestAppWithWorkers = (overrides: Record<string, string> = {}) =>
  makeApp({ server: TestServer, database: TestDatabase }).pipe(
    Layer.provide(TestConfig({ ...fastPipeline, ...overrides })),
    Layer.orDie
  )

export interface Reply {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: unknown
}

export interface CallOptions {
  readonly token?: string
  /** Sent as JSON. */
  readonly body?: unknown
  /** Sent as is, with `Content-Type: application/json`. */
  readonly raw?: string
  readonly headers?: Record<string, string>
}

/** One raw HTTP call: the status, headers and parsed JSON body exactly as the wire has them. */
export const call = (method: "GET" | "POST" | "PUT" | "DELETE", path: string, options: CallOptions = {}) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    let request = HttpClientRequest.make(method)(path).pipe(HttpClientRequest.setHeaders(options.headers ?? {}))
    if (options.token !== undefined) request = HttpClientRequest.bearerToken(request, options.token)
    if (options.raw !== undefined) request = HttpClientRequest.bodyText(request, options.raw, "application/json")
    else if (options.body !== undefined) request = HttpClientRequest.bodyJsonUnsafe(request, options.body)
    const response = yield* client.execute(request)
    const text = yield* response.text
    return {
      status: response.status,
      headers: response.headers,
      body: text === "" ? undefined : JSON.parse(text) as unknown
    } satisfies Reply
  }).pipe(Effect.scoped, Effect.orDie)

/**
 * The body of `reply` checked against a wire schema: `schema`'s encoded side, so that the test reads
 * the JSON exactly as sent (timestamps as strings) with its types, and a body of another shape fails the
 * test with the body in the message. `reply.pipe(bodyAs(MessageReceived))`, or an error shape below.
 */
export const bodyAs = <S extends Schema.Top>(schema: S) => (reply: Reply) =>
  Schema.decodeUnknownEffect(Schema.toEncoded(schema), { onExcessProperty: "error" })(reply.body).pipe(
    Effect.map((body) => ({ ...reply, body })),
    Effect.mapError((error) => new Error(`Body of a ${reply.status} does not match: ${error.message}\n${JSON.stringify(reply.body)}`)),
    Effect.orDie
  )

/** `{"detail": "..."}`: 401, 404, 409, 413, 429, 503. */
export const DetailBody = Schema.Struct({ detail: Schema.String })

/** `{"detail": [{loc, msg, type}]}`: 422. */
export const ValidationBody = Schema.Struct({ detail: Schema.Array(ValidationItem) })

/** `{"detail": "Internal error", "traceId": "..."}`: 500. */
export const InternalBody = Schema.Struct({ detail: Schema.Literal("Internal error"), traceId: Schema.String })

/** The typed client integrators use, authenticated with `token`. */
export const typedClient = (token: string) =>
  HttpApiClient.make(Api, { transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(token)) })

export interface Tenant {
  readonly workspaceId: string
  readonly token: string
  readonly webhookSecret: string
  readonly integrationId: string
}

/** A new workspace with one integration, made through the admin API. */
export const makeTenant = (
  options: {
    readonly webhookUrl?: string
    readonly supportedFeatures?: Record<string, boolean>
    readonly integration?: string
    readonly channelsSettings?: Record<string, unknown>
  } = {}
) =>
  Effect.gen(function*() {
    const admin = yield* HttpApiClient.make(Api, {
      transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(ADMIN_TOKEN))
    })
    const workspace = yield* admin.admin.createWorkspace({ payload: { name: "Test workspace" } })
    const integration = yield* admin.admin.createIntegration({
      params: { workspaceId: workspace.id },
      payload: {
        name: "Test integration",
        integration: options.integration ?? "api",
        webhook: { url: options.webhookUrl ?? "http://127.0.0.1:9/webhook", headers: {}, metadata: {} },
        supportedFeatures: options.supportedFeatures ?? {},
        channelsSettings: options.channelsSettings ?? {}
      }
    })
    return {
      workspaceId: workspace.id,
      token: workspace.apiToken,
      webhookSecret: workspace.webhookSecret,
      integrationId: integration.integrationId
    } satisfies Tenant
  }).pipe(Effect.orDie)
