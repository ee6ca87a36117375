/**
 * `npm run demo`: the whole loop on one machine. Parley on a fresh embedded database, a local
 * receiver that verifies every signature, a small knowledge base, a customer question, and the signed
 * reply printed as it arrives.
 */
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as HttpApiClient from "effect/http-api/HttpApiClient"
import * as HttpClient from "effect/http/HttpClient"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import * as HttpServer from "effect/http/HttpServer"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as SqlClient from "effect/sql/SqlClient"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as http from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import { Api } from "./Api.js"
import { generateToken } from "./Auth/Crypto.js"
import { verifyWebhook } from "./Delivery/Signature.js"
import { makeApp } from "./App.js"
import { createServer } from "./NodeServer.js"
import { TelemetryLive } from "./Observability/Telemetry.js"
import { SqlLive } from "./Sql.js"

interface Received {
  readonly at: number
  readonly headers: http.IncomingHttpHeaders
  readonly body: string
  readonly verified: string
}

const articles = [
  {
    title: "Shipping times",
    url: "https://help.example.com/shipping",
    body: "# Shipping times\n\nOrders ship within one business day. Standard shipping to Canada and the United States " +
      "takes 3 to 5 business days; express shipping takes 1 to 2 business days.\n\n" +
      "# Tracking\n\nA tracking link is emailed as soon as your parcel leaves our warehouse."
  },
  {
    title: "Returns and refunds",
    url: "https://help.example.com/returns",
    body: "You can return any unused item within 30 days. Start a return from your order page; the refund reaches " +
      "your card within 5 business days after the item arrives back at our warehouse."
  },
  {
    title: "Resetting your password",
    url: "https://help.example.com/password",
    body: "To reset your password, click Forgot password on the sign-in page and follow the link we email you. " +
      "The link expires after one hour."
  }
]

/** What the demo reads of a delivery's body (and the whole of it, to print). */
const decodeEnvelope = (body: string) =>
  Schema.decodeUnknownEffect(Schema.fromJsonString(Schema.Struct({ event: Schema.String, eventId: Schema.String })))(body).pipe(
    Effect.zip(Schema.decodeUnknownEffect(Schema.fromJsonString(Schema.Unknown))(body)),
    Effect.map(([envelope, whole]) => ({ ...envelope, whole })),
    Effect.orDie
  )

/** A webhook receiver on a loopback port; it answers 401 to a bad signature, as the API's reference does. */
const receiver = (secret: () => string, inbox: Queue.Queue<Received>) =>
  Effect.acquireRelease(
    Effect.callback<http.Server>((resume) => {
      const server = http.createServer((req, res) => {
        const chunks: Array<Buffer> = []
        req.on("data", (c: Buffer) => chunks.push(c))
        req.on("end", () => {
          const body = Buffer.concat(chunks).toString("utf8")
          const result = verifyWebhook({ secret: secret(), headers: req.headers, rawBody: body })
          res.writeHead(result.ok ? 200 : 401, { "content-type": "application/json" })
          res.end(JSON.stringify(result.ok ? { received: true } : { error: result.reason }))
          Queue.offerUnsafe(inbox, {
            at: Date.now(),
            headers: req.headers,
            body,
            verified: result.ok ? "signature verified" : `REJECTED: ${result.reason}`
          })
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

const program = (adminToken: string) => Effect.gen(function*() {
  const server = yield* HttpServer.HttpServer
  const sql = yield* SqlClient.SqlClient
  const port = server.address._tag === "UnixPathAddress" ? 0 : server.address.port
  const baseUrl = `http://127.0.0.1:${port}`
  const client = (token: string) =>
    HttpApiClient.make(Api, { baseUrl, transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(token)) })

  let secret = ""
  const inbox = yield* Queue.unbounded<Received>()
  const hook = yield* receiver(() => secret, inbox)
  const hookAddress = hook.address()
  const hookUrl = `http://127.0.0.1:${typeof hookAddress === "object" && hookAddress ? hookAddress.port : 0}/webhook`
  yield* Console.log(`Parley (embedded database) on ${baseUrl}; webhook receiver on ${hookUrl}\n`)

  const admin = yield* client(adminToken)
  const workspace = yield* admin.admin.createWorkspace({ payload: { name: "Demo shop" } })
  secret = workspace.webhookSecret
  const integration = yield* admin.admin.createIntegration({
    params: { workspaceId: workspace.id },
    payload: {
      name: "Demo shop site",
      integration: "api",
      webhook: { url: hookUrl, headers: { "X-Shop": "demo" }, metadata: { shop: "demo" } },
      supportedFeatures: {},
      channelsSettings: {}
    }
  })
  for (const article of articles) {
    yield* admin.admin.createArticle({ params: { workspaceId: workspace.id }, payload: article })
  }
  yield* Console.log(`Workspace ${workspace.id}, integration ${integration.integrationId}, ${articles.length} articles\n`)

  const parley = yield* client(workspace.apiToken)
  const ask = (id: string, conversationId: string, text: string) =>
    Effect.gen(function*() {
      yield* Console.log(`Customer asks: "${text}"`)
      const sentAt = Date.now()
      const { conversation } = yield* parley.webhooks.messageReceived({
        params: { integration_id: integration.integrationId },
        payload: {
          id,
          role: "human",
          customerId: "6f1c1f8e-1d7e-4c8e-9a0a-1b2c3d4e5f60",
          conversationId,
          text,
          attachments: [],
          syncOnly: false
        }
      })
      const first = yield* Queue.take(inbox)
      const deliveries = [first]
      const event = yield* decodeEnvelope(first.body)
      if (event.event === "send_messages") {
        // An escalation follows its reply in order; give it a moment.
        const next = yield* Queue.take(inbox).pipe(Effect.timeout("3 seconds"), Effect.option)
        if (next._tag === "Some") deliveries.push(next.value)
      }
      for (const delivery of deliveries) {
        const parsed = yield* decodeEnvelope(delivery.body)
        const rows = yield* sql<{ readonly createdAt: Date }>`SELECT created_at FROM events WHERE id = ${parsed.eventId}`
        const enqueued = rows[0]?.createdAt.getTime() ?? delivery.at
        yield* Console.log(
          [
            `\nWebhook POST ${hookUrl} — ${delivery.verified}`,
            ...["x-parley-webhook-timestamp", "x-parley-webhook-signature", "webhook-id", "webhook-signature", "x-shop"]
              .map((h) => `  ${h}: ${String(delivery.headers[h])}`),
            JSON.stringify(parsed.whole, null, 2).split("\n").map((l) => `  ${l}`).join("\n"),
            `  event enqueued → delivered: ${delivery.at - enqueued} ms; message received → delivered: ${
              delivery.at - sentAt
            } ms (includes the ${"REPLY_DEBOUNCE"} wait)`
          ].join("\n")
        )
      }
      return conversation
    })

  yield* ask("demo-1", "order-1001", "How long does shipping to Canada take?")
  yield* Console.log("")
  yield* ask("demo-2", "order-1002", "Can I pay with cryptocurrency?")
})

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "parley-demo-"))
const adminToken = generateToken("padm")

const config = ConfigProvider.fromEnvRecord({
  PARLEY_DATA_DIR: dataDir,
  PARLEY_ADMIN_TOKEN: adminToken,
  PARLEY_SEED_DEMO: "false",
  // Only validated (`makeApp` checks every setting): the demo's server listens on a free port of its own
  // (`port: 0` below), whatever PORT says. A PORT of 0 is refused by the validation (1-65535).
  PORT: "8080",
  HOST: "127.0.0.1",
  JOB_POLL_INTERVAL: "200 millis",
  // The demo tells its own story; one access record per request of it would drown it.
  LOG_REQUESTS: "false"
}).pipe(ConfigProvider.orElse(ConfigProvider.fromEnv()))

const DemoLive = makeApp({
  server: NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" }),
  database: SqlLive
}).pipe(
  // With OTEL_EXPORTER_OTLP_ENDPOINT set, the demo's traces are exported like Parley's.
  Layer.provide(TelemetryLive),
  Layer.provide(ConfigProvider.layer(config))
)

export const demo = program(adminToken).pipe(
  Effect.scoped,
  Effect.provide(DemoLive),
  Effect.provide(FetchHttpClient.layer),
  Effect.ensuring(Effect.sync(() => fs.rmSync(dataDir, { recursive: true, force: true })))
)
