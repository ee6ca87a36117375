// The baseline: a plain node:http + pg server doing Parley's exact SQL for message-received (the
// statements of bench/lib/statements.mjs, as Parley sends them: look-ups outside the transaction, then
// BEGIN … COMMIT on one connection), with the same pool size and the same protocol: named statements,
// each parsed once per connection, as Parley's connections do since 2026-11-25 (observed on the wire
// by the `sql` scenario; before, both sent unnamed statements parsed at every execution).
// No framework, no schema library: what the SQL costs by itself on this machine, an upper bound for Parley.
//
//   DATABASE_URL=postgres://… PORT=8090 [DATABASE_POOL_SIZE=10] [BASELINE_PREPARED=false] node bench/baseline-server.mjs
//
// BASELINE_PREPARED=false sends unnamed statements instead (parsed and planned at every execution), as
// Parley does with DATABASE_PREPARED_STATEMENTS=false.
import { createHash } from "node:crypto"
import { createServer } from "node:http"
import pg from "pg"
import {
  CONVERSATION_UPSERT,
  CUSTOMER_UPSERT,
  FIRST_UNREAD,
  IDEMPOTENCY_CHECK,
  INTEGRATION_LOOKUP,
  MESSAGE_INSERT,
  TOKEN_LOOKUP
} from "./lib/statements.mjs"

const pool = new pg.Pool({
  connectionString: process.env.DATABASE_URL,
  max: Number(process.env.DATABASE_POOL_SIZE ?? 10),
  application_name: "parley-baseline"
})

const PREPARED = process.env.BASELINE_PREPARED !== "false"

const statement = (name, text) => (values, client = pool) =>
  client.query(PREPARED ? { name, text, values } : { text, values })
const findToken = statement("token_lookup", TOKEN_LOOKUP)
const findIntegration = statement("integration_lookup", INTEGRATION_LOOKUP)
const findMessage = statement("idempotency_check", IDEMPOTENCY_CHECK)
const upsertCustomer = statement("customer_upsert", CUSTOMER_UPSERT)
const upsertConversation = statement("conversation_upsert", CONVERSATION_UPSERT)
const insertMessage = statement("message_insert", MESSAGE_INSERT)
const firstUnread = statement("first_unread", FIRST_UNREAD)
const findConversation = statement("conversation_by_id", "SELECT * FROM conversations WHERE id = $1")

/** Token hash → workspace id, kept as long as Parley keeps it (PARLEY_TOKEN_CACHE_TTL, 1 s). */
const TOKEN_CACHE_TTL_MS = Number(process.env.BASELINE_TOKEN_CACHE_TTL_MS ?? 1000)
const tokenCache = new Map()
const workspaceOfToken = async (hash) => {
  const cached = tokenCache.get(hash)
  if (cached !== undefined && cached.until > Date.now()) return cached.workspaceId
  const rows = (await findToken([hash])).rows
  if (rows.length === 0) return undefined
  if (TOKEN_CACHE_TTL_MS > 0) tokenCache.set(hash, { workspaceId: rows[0].workspace_id, until: Date.now() + TOKEN_CACHE_TTL_MS })
  return rows[0].workspace_id
}

/** (workspace, integration) → the integration row, kept as long as Parley keeps it (PARLEY_INTEGRATION_CACHE_TTL, 1 s). */
const INTEGRATION_CACHE_TTL_MS = Number(process.env.BASELINE_INTEGRATION_CACHE_TTL_MS ?? 1000)
const integrationCache = new Map()
const integrationOf = async (integrationId, workspaceId) => {
  const key = `${workspaceId}/${integrationId}`
  const cached = integrationCache.get(key)
  if (cached !== undefined && cached.until > Date.now()) return cached.row
  const rows = (await findIntegration([integrationId, workspaceId])).rows
  if (rows.length === 0) return undefined
  if (INTEGRATION_CACHE_TTL_MS > 0) integrationCache.set(key, { row: rows[0], until: Date.now() + INTEGRATION_CACHE_TTL_MS })
  return rows[0]
}

const ROUTE = /^\/v1\/webhooks\/([0-9a-f-]{36})\/message-received$/
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

const send = (res, status, body) => {
  const text = JSON.stringify(body)
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
  res.end(text)
}

const readBody = (req) =>
  new Promise((resolve, reject) => {
    const chunks = []
    req.on("data", (chunk) => chunks.push(chunk))
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
    req.on("error", reject)
  })

const toMessage = (row) => ({
  id: row.id,
  externalId: row.external_id,
  role: row.role,
  sentAt: row.sent_at.toISOString(),
  type: row.type,
  text: row.text,
  attachments: row.attachments,
  isSuggestion: row.is_suggestion,
  agentInfo: row.agent_info
})

const toConversation = (row, firstUnreadMessageId) => ({
  id: row.id,
  externalId: row.external_id,
  status: row.status,
  createdAt: row.created_at.toISOString(),
  customerId: row.customer_id,
  channel: row.channel,
  firstUnreadMessageId
})

const invalid = (field, msg, type) => ({ status: 422, body: { detail: [{ loc: ["body", field], msg, type }] } })

/** The message's fields, or the 422 of the first problem. */
const decode = (text) => {
  let body
  try {
    body = JSON.parse(text)
  } catch {
    return invalid("body", "Invalid JSON", "json_invalid")
  }
  for (const field of ["id", "role", "customerId", "conversationId", "text"]) {
    if (typeof body?.[field] !== "string") return invalid(field, "Field required", "missing")
  }
  if (!UUID.test(body.customerId)) return invalid("customerId", "Input should be a valid UUID", "uuid_parsing")
  return { message: body }
}

const messageReceived = async (req, res, integrationId) => {
  const token = /^Bearer[ ]+(\S+)\s*$/i.exec(req.headers.authorization ?? "")?.[1]
  if (token === undefined) return send(res, 401, { detail: "Not authenticated" })
  const workspaceId = await workspaceOfToken(createHash("sha256").update(token, "utf8").digest("hex"))
  if (workspaceId === undefined) return send(res, 401, { detail: "Invalid or revoked token" })
  const integration = await integrationOf(integrationId, workspaceId)
  if (integration === undefined) return send(res, 404, { detail: "Integration not found" })
  const decoded = decode(await readBody(req))
  if (decoded.message === undefined) return send(res, decoded.status, decoded.body)
  const message = decoded.message
  const channel = typeof message.requestContext?.channel === "string" && message.requestContext.channel !== ""
    ? message.requestContext.channel
    : integration.integration

  // As Parley: store, and if the message id was stored before (the insert returns nothing), roll back
  // and answer the stored message.
  const client = await pool.connect()
  let inserted
  let conversation
  try {
    await client.query("BEGIN")
    await upsertCustomer([message.customerId, workspaceId], client)
    conversation = (await upsertConversation([workspaceId, integrationId, message.conversationId, "open", message.customerId, channel], client)).rows[0]
    const sentAt = typeof message.sentAt === "string" ? new Date(message.sentAt) : new Date()
    // Parley's column order: conversation, integration, external id, role, sent_at, type, text,
    // attachments, is_suggestion, agent_info, sync_only, request_context, reply_to.
    inserted = (await insertMessage([
      conversation.id,
      integrationId,
      message.id,
      message.role,
      sentAt.toISOString(),
      "default",
      message.text,
      JSON.stringify(message.attachments ?? []),
      false,
      null,
      message.syncOnly === true,
      message.requestContext === undefined ? null : JSON.stringify(message.requestContext),
      null
    ], client)).rows[0]
    if (inserted !== undefined) {
      const unread = await firstUnread([conversation.id, conversation.id], client)
      await client.query("COMMIT")
      return send(res, 200, {
        message: toMessage(inserted),
        conversation: toConversation(conversation, unread.rows[0]?.id ?? null)
      })
    }
    await client.query("ROLLBACK")
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined)
    throw error
  } finally {
    client.release()
  }
  const seen = (await findMessage([integrationId, message.id])).rows[0]
  const stored = (await findConversation([seen.conversation_id])).rows[0]
  const unread = await firstUnread([stored.id, stored.id])
  send(res, 200, { message: toMessage(seen), conversation: toConversation(stored, unread.rows[0]?.id ?? null) })
}

const server = createServer((req, res) => {
  const route = req.method === "POST" ? ROUTE.exec(req.url ?? "") : null
  if (route !== null) {
    messageReceived(req, res, route[1]).catch((error) => {
      process.stderr.write(`${error.stack}\n`)
      if (!res.headersSent) send(res, 500, { detail: "Internal error" })
    })
    return
  }
  if (req.method === "GET" && req.url === "/health/ready") return send(res, 200, { status: "ok" })
  send(res, 404, { detail: "Not found" })
})
server.keepAliveTimeout = 60_000
server.listen(Number(process.env.PORT ?? 8090), process.env.HOST ?? "127.0.0.1")

process.on("SIGTERM", () => {
  server.close()
  pool.end().finally(() => process.exit(0))
})
