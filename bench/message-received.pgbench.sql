-- Parley's message-received transaction (syncOnly), the statements of bench/lib/statements.mjs as
-- Parley sends them: two look-ups outside the transaction, then BEGIN ... COMMIT. Run by the ingest
-- scenario as: pgbench -n -M prepared -c 8 -j 2 -T <s> -f this-file -D token_hash=... -D workspace_id=...
--   -D integration_id=... -D channel=api -D status=open -D role=human -D type=default -D text=...
--   -D attachments=[] -D sync_only=true -D is_suggestion=false
-- -M prepared: named statements, each parsed once per connection, with parameters, as Parley sends them.
-- Differences from Parley's parameters (pgbench has no string functions): the customer's UUID is made
-- in SQL from a random integer, sent_at is now(), and the NULL parameters are written as NULL.
\set conv random(1, 100000)
\set msg random(1, 1000000000000000)
-- (the token and integration look-ups are cached by Parley and the baseline server: once a second
-- under load, left out here)
BEGIN;
INSERT INTO customers (id, workspace_id) VALUES (lpad(:conv::text, 32, '0')::uuid, :workspace_id) ON CONFLICT (workspace_id, id) DO UPDATE SET updated_at = customers.updated_at RETURNING *;
INSERT INTO conversations ("workspace_id","integration_id","external_id","status","customer_id","channel") VALUES (:workspace_id, :integration_id, :conv, :status, lpad(:conv::text, 32, '0')::uuid, :channel) ON CONFLICT (integration_id, external_id) DO UPDATE SET updated_at = conversations.updated_at RETURNING * \gset c_
INSERT INTO messages ("conversation_id","integration_id","external_id","role","sent_at","type","text","attachments","is_suggestion","agent_info","sync_only","request_context","reply_to") VALUES (:c_id, :integration_id, :msg, :role, now(), :type, :text, :attachments::jsonb, :is_suggestion, NULL::jsonb, :sync_only, NULL::jsonb, NULL) ON CONFLICT (integration_id, external_id) DO NOTHING RETURNING *;
WITH answered AS MATERIALIZED (SELECT r.sent_at, r.created_at FROM messages r WHERE r.conversation_id = :c_id AND r.role IN ('ai', 'agent') AND r.type = 'default' ORDER BY r.sent_at DESC, r.created_at DESC LIMIT 1) SELECT m.id FROM messages m WHERE m.conversation_id = :c_id AND m.role = 'human' AND m.type = 'default' AND (m.sent_at, m.created_at) > (coalesce((SELECT sent_at FROM answered), '-infinity'), coalesce((SELECT created_at FROM answered), '-infinity')) ORDER BY m.sent_at, m.created_at LIMIT 1;
COMMIT;
