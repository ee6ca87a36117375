// The bare-stack floor: Parley's SQL for message-received (bench/lib/statements.mjs) served by the stack
// Parley is built on and nothing else: an Effect `HttpApi` endpoint whose body is decoded by a Schema,
// `@effect/sql-pg` with Parley's client options (name transforms, pool of 10, named statements), the
// transaction through `sql.withTransaction`, the answer encoded by a Schema. No middleware, no spans
// exported, no metrics, no logs, no queue. Beside the node:http + pg baseline it splits the ingest ratio
// into what Effect's HTTP and SQL layers cost (floor ÷ baseline) and what Parley adds on top (Parley ÷ floor).
//
//   DATABASE_URL=postgres://… PORT=8091 [DATABASE_POOL_SIZE=10] node bench/floor-server.mjs
import { createHash } from "node:crypto"
import { createServer } from "node:http"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { PgClient } from "@effect/sql-pg"
import * as Effect from "effect/Effect"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpApi from "effect/http-api/HttpApi"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import * as HttpApiError from "effect/http-api/HttpApiError"
import * as HttpApiGroup from "effect/http-api/HttpApiGroup"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import * as String from "effect/String"
import {
  CONVERSATION_UPSERT,
  CUSTOMER_UPSERT,
  FIRST_UNREAD,
  IDEMPOTENCY_CHECK,
  INTEGRATION_LOOKUP,
  MESSAGE_INSERT,
  TOKEN_LOOKUP
} from "./lib/statements.mjs"

const Uuid = Schema.String.check(Schema.isPattern(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i))

const Inbound = Schema.Struct({
  id: Schema.String,
  role: Schema.Literals(["human", "ai", "agent"]),
  customerId: Uuid,
  conversationId: Schema.String,
  text: Schema.String,
  sentAt: Schema.optionalKey(Schema.String),
  attachments: Schema.optionalKey(Schema.Array(Schema.Unknown)),
  syncOnly: Schema.optionalKey(Schema.Boolean),
  requestContext: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown))
})

const Message = Schema.Struct({
  id: Schema.String,
  externalId: Schema.String,
  role: Schema.String,
  sentAt: Schema.String,
  type: Schema.String,
  text: Schema.String,
  attachments: Schema.Unknown,
  isSuggestion: Schema.Boolean,
  agentInfo: Schema.Unknown
})

const Conversation = Schema.Struct({
  id: Schema.String,
  externalId: Schema.String,
  status: Schema.String,
  createdAt: Schema.String,
  customerId: Schema.String,
  channel: Schema.String,
  firstUnreadMessageId: Schema.NullOr(Schema.String)
})

const Received = Schema.Struct({ message: Message, conversation: Conversation })

const Api = HttpApi.make("floor").add(
  HttpApiGroup.make("floor")
    .add(
      HttpApiEndpoint.post("messageReceived", "/v1/webhooks/:integration_id/message-received", {
        params: { integration_id: Uuid },
        payload: Inbound,
        success: Received,
        error: [HttpApiError.Unauthorized, HttpApiError.NotFound]
      })
    )
    .add(HttpApiEndpoint.get("ready", "/health/ready", { success: Schema.Struct({ status: Schema.String }) }))
)

/** A cache of `ttl` ms per key, as Parley keeps its token and integration look-ups (1 s each). */
const cached = (ttl, lookUp) => {
  const entries = new Map()
  return (key, ...args) =>
    Effect.suspend(() => {
      const hit = entries.get(key)
      if (hit !== undefined && hit.until > Date.now()) return Effect.succeed(hit.value)
      return Effect.tap(lookUp(...args), (value) =>
        Effect.sync(() => {
          if (value !== undefined) entries.set(key, { value, until: Date.now() + ttl })
        }))
    })
}

const iso = (value) => (value instanceof Date ? value.toISOString() : String(value))

const toMessage = (row) => ({
  id: row.id,
  externalId: row.externalId,
  role: row.role,
  sentAt: iso(row.sentAt),
  type: row.type,
  text: row.text,
  attachments: row.attachments,
  isSuggestion: row.isSuggestion,
  agentInfo: row.agentInfo
})

const toConversation = (row, firstUnreadMessageId) => ({
  id: row.id,
  externalId: row.externalId,
  status: row.status,
  createdAt: iso(row.createdAt),
  customerId: row.customerId,
  channel: row.channel,
  firstUnreadMessageId
})

const FloorLive = HttpApiBuilder.group(Api, "floor", (handlers) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // A failed statement is a defect (500), as in the baseline: nothing here is a client's mistake.
    const run = (text, params) => Effect.orDie(sql.unsafe(text, params))
    const first = (text, params) => Effect.map(run(text, params), (rows) => rows[0])
    const workspaceOf = cached(1000, (hash) => Effect.map(first(TOKEN_LOOKUP, [hash]), (row) => row?.workspaceId))
    const integrationOf = cached(1000, (id, workspaceId) => first(INTEGRATION_LOOKUP, [id, workspaceId]))
    const unreadOf = (conversationId) =>
      Effect.map(first(FIRST_UNREAD, [conversationId, conversationId]), (row) => row?.id ?? null)

    const store = (message, workspaceId, integrationId, channel) =>
      Effect.gen(function*() {
        yield* run(CUSTOMER_UPSERT, [message.customerId, workspaceId])
        const conversation = yield* first(CONVERSATION_UPSERT, [
          workspaceId,
          integrationId,
          message.conversationId,
          "open",
          message.customerId,
          channel
        ])
        const inserted = yield* first(MESSAGE_INSERT, [
          conversation.id,
          integrationId,
          message.id,
          message.role,
          message.sentAt === undefined ? new Date().toISOString() : new Date(message.sentAt).toISOString(),
          "default",
          message.text,
          JSON.stringify(message.attachments ?? []),
          false,
          null,
          message.syncOnly === true,
          message.requestContext === undefined ? null : JSON.stringify(message.requestContext),
          null
        ])
        // A message id stored before: roll back, as Parley does, and answer the stored one below.
        if (inserted === undefined) return yield* Effect.fail("duplicate")
        const unread = yield* unreadOf(conversation.id)
        return { message: toMessage(inserted), conversation: toConversation(conversation, unread) }
      }).pipe(sql.withTransaction)

    return handlers
      .handle("ready", () => Effect.succeed({ status: "ok" }))
      .handle("messageReceived", ({ params, payload, request }) =>
        Effect.gen(function*() {
          const token = /^Bearer[ ]+(\S+)\s*$/i.exec(request.headers["authorization"] ?? "")?.[1]
          if (token === undefined) return yield* new HttpApiError.Unauthorized()
          const hash = createHash("sha256").update(token, "utf8").digest("hex")
          const workspaceId = yield* workspaceOf(hash, hash)
          if (workspaceId === undefined) return yield* new HttpApiError.Unauthorized()
          const integrationId = params.integration_id
          const integration = yield* integrationOf(`${workspaceId}/${integrationId}`, integrationId, workspaceId)
          if (integration === undefined) return yield* new HttpApiError.NotFound()
          const channel = typeof payload.requestContext?.["channel"] === "string" && payload.requestContext["channel"] !== ""
            ? payload.requestContext["channel"]
            : integration.integration
          return yield* store(payload, workspaceId, integrationId, channel).pipe(
            Effect.catch((error) =>
              error !== "duplicate" ? Effect.die(error) : Effect.gen(function*() {
                const seen = yield* first(IDEMPOTENCY_CHECK, [integrationId, payload.id])
                const stored = yield* first("SELECT * FROM conversations WHERE id = $1", [seen.conversationId])
                return { message: toMessage(seen), conversation: toConversation(stored, yield* unreadOf(stored.id)) }
              })
            )
          )
        }))
  }))

const SqlLive = PgClient.layer({
  url: Redacted.make(process.env.DATABASE_URL),
  maxConnections: Number(process.env.DATABASE_POOL_SIZE ?? 10),
  applicationName: "parley-floor",
  transformResultNames: String.snakeToCamel,
  transformQueryNames: String.camelToSnake,
  transformJson: false
})

const ServerLive = HttpRouter.serve(HttpApiBuilder.layer(Api).pipe(Layer.provide(FloorLive)), {
  disableLogger: true,
  disableListenLog: true
}).pipe(
  Layer.provide(SqlLive),
  Layer.provide(NodeHttpServer.layer(createServer, { port: Number(process.env.PORT ?? 8091), host: process.env.HOST ?? "127.0.0.1" }))
)

NodeRuntime.runMain(Layer.launch(ServerLive))
