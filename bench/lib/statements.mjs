// Parley's SQL for one message-received with syncOnly, written out for the baselines. Observed on the
// wire (see the `sql` scenario and bench/README.md) after the redesign and the fair queue; the `sql` scenario compares these
// with what Parley sends at every run and reports any difference, so drift after a redesign is visible.
//
// Parley sends the two look-ups outside the transaction (each on whatever pooled connection is free),
// then BEGIN, four statements, COMMIT on one connection. A new message is not looked up first: a
// message id stored before makes MESSAGE_INSERT return nothing, the transaction is rolled back and the
// stored message is read (IDEMPOTENCY_CHECK). The token look-up is cached for PARLEY_TOKEN_CACHE_TTL (1 s) and the integration look-up for PARLEY_INTEGRATION_CACHE_TTL (1 s):
// under load each is one statement per second, not per request; the baseline caches them the same way
// (BASELINE_TOKEN_CACHE_TTL_MS, BASELINE_INTEGRATION_CACHE_TTL_MS), and the `sql` scenario turns the
// caches off so that every request sends the whole list.

export const TOKEN_LOOKUP = `SELECT t.* FROM api_tokens t JOIN workspaces w ON w.id = t.workspace_id
            WHERE t.token_hash = $1 AND t.revoked_at IS NULL AND w.deleted_at IS NULL`

export const INTEGRATION_LOOKUP =
  `SELECT id AS integration_id, kind AS integration, workspace_id, settings, created_at FROM integrations WHERE id = $1 AND workspace_id = $2`

export const IDEMPOTENCY_CHECK = `SELECT * FROM messages WHERE integration_id = $1 AND external_id = $2`

export const CUSTOMER_UPSERT = `INSERT INTO customers (id, workspace_id) VALUES ($1, $2)
            ON CONFLICT (workspace_id, id) DO UPDATE SET updated_at = customers.updated_at RETURNING *`

export const CONVERSATION_UPSERT = `INSERT INTO conversations ("workspace_id","integration_id","external_id","status","customer_id","channel") VALUES ($1,$2,$3,$4,$5,$6)
            ON CONFLICT (integration_id, external_id) DO UPDATE SET updated_at = conversations.updated_at
            RETURNING *`

export const MESSAGE_INSERT = `INSERT INTO messages ("conversation_id","integration_id","external_id","role","sent_at","type","text","attachments","is_suggestion","agent_info","sync_only","request_context","reply_to") VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13)
            ON CONFLICT (integration_id, external_id) DO NOTHING RETURNING *`

export const FIRST_UNREAD = `WITH answered AS MATERIALIZED (
          SELECT r.sent_at, r.created_at FROM messages r
          WHERE r.conversation_id = $1 AND r.role IN ('ai', 'agent') AND r.type = 'default'
          ORDER BY r.sent_at DESC, r.created_at DESC LIMIT 1)
        SELECT m.id FROM messages m
        WHERE m.conversation_id = $2 AND m.role = 'human' AND m.type = 'default'
          AND (m.sent_at, m.created_at) > (
            coalesce((SELECT sent_at FROM answered), '-infinity'),
            coalesce((SELECT created_at FROM answered), '-infinity'))
        ORDER BY m.sent_at, m.created_at LIMIT 1`

/** In the order Parley sends them for a new message (BEGIN and COMMIT included). */
export const MESSAGE_RECEIVED_SEQUENCE = [
  TOKEN_LOOKUP,
  INTEGRATION_LOOKUP,
  "BEGIN",
  CUSTOMER_UPSERT,
  CONVERSATION_UPSERT,
  MESSAGE_INSERT,
  FIRST_UNREAD,
  "COMMIT"
]
