-- Parley's message-received transaction (syncOnly), the statements of bench/lib/statements.mjs as
-- Parley sends them: two look-ups outside the transaction, then BEGIN ... COMMIT. Run by the ingest
-- scenario as: pgbench -n -M extended -c 8 -j 2 -T <s> -f this-file -D token_hash=... -D workspace_id=...
--   -D integration_id=... -D channel=api -D status=open -D role=human -D type=default -D text=...
--   -D attachments=[] -D sync_only=true -D is_suggestion=false
-- -M extended: unnamed statements parsed at every execution, with parameters, as Parley sends them.
-- Differences from Parley's parameters (pgbench has no string functions): the customer's UUID is made
-- in SQL from a random integer, sent_at is now(), and the NULL parameters are written as NULL.
\set conv random(1, 100000)
\set msg random(1, 1000000000000000)
SELECT id, workspace_id, name, created_at, revoked_at FROM api_tokens WHERE token_hash = :token_hash AND revoked_at IS NULL;
SELECT id, workspace_id, kind, settings, created_at FROM integrations WHERE id = :integration_id AND workspace_id = :workspace_id;
BEGIN;
SELECT * FROM messages WHERE integration_id = :integration_id AND external_id = :msg;
INSERT INTO customers (id, workspace_id) VALUES (lpad(:conv::text, 32, '0')::uuid, :workspace_id) ON CONFLICT (workspace_id, id) DO UPDATE SET updated_at = customers.updated_at RETURNING *;
INSERT INTO conversations ("workspace_id","integration_id","external_id","customer_id","channel","status") VALUES (:workspace_id, :integration_id, :conv, lpad(:conv::text, 32, '0')::uuid, :channel, :status) ON CONFLICT (integration_id, external_id) DO NOTHING;
SELECT id, workspace_id, integration_id, external_id, customer_id, channel, status, created_at FROM conversations WHERE integration_id = :integration_id AND external_id = :conv FOR UPDATE \gset c_
INSERT INTO messages (conversation_id, integration_id, external_id, role, type, text, attachments, sent_at, sync_only, request_context, is_suggestion, agent_info) VALUES (:c_id, :integration_id, :msg, :role, :type, :text, :attachments::jsonb, now(), :sync_only, NULL::jsonb, :is_suggestion, NULL::jsonb) ON CONFLICT (integration_id, external_id) DO NOTHING RETURNING *;
SELECT m.id FROM messages m WHERE m.conversation_id = :c_id AND m.role = 'human' AND m.type = 'default' AND NOT EXISTS (SELECT 1 FROM messages r WHERE r.conversation_id = m.conversation_id AND r.role IN ('ai', 'agent') AND r.type = 'default' AND (r.sent_at, r.created_at) >= (m.sent_at, m.created_at)) ORDER BY m.sent_at, m.created_at LIMIT 1;
COMMIT;
