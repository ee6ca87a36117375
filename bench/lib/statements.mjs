// Parley's SQL for one message-received with syncOnly, written out for the baselines. Observed on the
// wire (see the `sql` scenario and bench/README.md) at commit 8cb8b0e; the `sql` scenario compares these
// with what Parley sends at every run and reports any difference, so drift after a redesign is visible.
//
// Parley sends the two look-ups outside the transaction (each on whatever pooled connection is free),
// then BEGIN, five statements, COMMIT on one connection.

export const TOKEN_LOOKUP = `SELECT id, workspace_id, name, created_at, revoked_at FROM api_tokens
            WHERE token_hash = $1 AND revoked_at IS NULL`

export const INTEGRATION_LOOKUP = `SELECT id, workspace_id, kind, settings, created_at FROM integrations
            WHERE id = $1 AND workspace_id = $2`

export const IDEMPOTENCY_CHECK = `SELECT * FROM messages WHERE integration_id = $1 AND external_id = $2`

export const CUSTOMER_UPSERT = `INSERT INTO customers (id, workspace_id) VALUES ($1, $2)
            ON CONFLICT (workspace_id, id) DO UPDATE SET updated_at = customers.updated_at RETURNING *`

export const CONVERSATION_INSERT = `INSERT INTO conversations ("workspace_id","integration_id","external_id","customer_id","channel","status") VALUES ($1,$2,$3,$4,$5,$6)
            ON CONFLICT (integration_id, external_id) DO NOTHING`

export const CONVERSATION_LOCK = `SELECT id, workspace_id, integration_id, external_id, customer_id, channel, status, created_at FROM conversations
              WHERE integration_id = $1 AND external_id = $2 FOR UPDATE`

export const MESSAGE_INSERT = `INSERT INTO messages (conversation_id, integration_id, external_id, role, type, text, attachments,
                                  sent_at, sync_only, request_context, is_suggestion, agent_info)
            VALUES ($1, $2, $3, $4, $5,
                    $6, $7::jsonb, $8, $9,
                    $10::jsonb, $11, $12::jsonb)
            ON CONFLICT (integration_id, external_id) DO NOTHING
            RETURNING *`

export const FIRST_UNREAD = `SELECT m.id FROM messages m
        WHERE m.conversation_id = $1 AND m.role = 'human' AND m.type = 'default'
          AND NOT EXISTS (
            SELECT 1 FROM messages r
            WHERE r.conversation_id = m.conversation_id AND r.role IN ('ai', 'agent') AND r.type = 'default'
              AND (r.sent_at, r.created_at) >= (m.sent_at, m.created_at))
        ORDER BY m.sent_at, m.created_at LIMIT 1`

/** In the order Parley sends them for a new message (BEGIN and COMMIT included). */
export const MESSAGE_RECEIVED_SEQUENCE = [
  TOKEN_LOOKUP,
  INTEGRATION_LOOKUP,
  "BEGIN",
  IDEMPOTENCY_CHECK,
  CUSTOMER_UPSERT,
  CONVERSATION_INSERT,
  CONVERSATION_LOCK,
  MESSAGE_INSERT,
  FIRST_UNREAD,
  "COMMIT"
]
