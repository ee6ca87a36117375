-- Parley's SQL for one message end to end — stored, answered, delivered — as Parley sends it (taken from
-- PostgreSQL's log of a `pipeline` run: the `sql` scenario lists the same statements): what PostgreSQL
-- allows for replies delivered per second on this machine, with no Parley in front of it. Run by the
-- deliveries scenario as: pgbench -n -M prepared -c 8 -j 2 -T <s> -f this-file -D workspace_id=...
--   -D integration_id=... -D text=... -D answer=... -D citations=... -D body=...
--
-- One pgbench transaction is one message through the three steps Parley's processes take in turn:
-- 1. message-received (not syncOnly): customer, conversation, message, the reply job (its NOTIFY in
--    the INSERT), the first unread message; the token and integration look-ups are cached by Parley
--    under load, and left out as in message-received.pgbench.sql;
-- 2. the reply job: the claim (parley_claim, one job), the six reads, the transaction that stores the
--    reply and its send_messages event and queues the delivery job, the job settled;
-- 3. the delivery job: the claim, the event and its integration, the attempt recorded, the job settled.
-- Each client's jobs are of kinds of its own (`generate_reply_<client>`, `deliver_event_<client>`), so
-- that its claims find its own message's jobs: eight claims of one kind at once would all choose the
-- same oldest job and all but one come back empty (in Parley one dispatcher per lane claims at a time).
-- A claim that finds nothing skips its step (the `\if`); the scenario counts the events delivered in the
-- database, not pgbench's transactions.
-- Differences from Parley's parameters (pgbench has no UUID or JSON functions of its own): ids are made
-- or read back in SQL, the attempt's JSON is built in SQL, times are now(), a share of 64 per group
-- instead of 4 (replies) and 32 (deliveries) so that 8 clients of one workspace never wait for it, and
-- one job per claim (Parley takes up to 8 replies and 64 deliveries per claim).
\set conv random(1, 1000000000000)
\set msg random(1, 1000000000000000)
BEGIN;
INSERT INTO customers (id, workspace_id) VALUES (lpad(:conv::text, 32, '0')::uuid, :workspace_id) ON CONFLICT (workspace_id, id) DO UPDATE SET updated_at = customers.updated_at RETURNING *;
INSERT INTO conversations ("workspace_id","integration_id","external_id","status","customer_id","channel") VALUES (:workspace_id, :integration_id, :conv, 'open', lpad(:conv::text, 32, '0')::uuid, 'api') ON CONFLICT (integration_id, external_id) DO UPDATE SET updated_at = conversations.updated_at RETURNING id AS c_id \gset
INSERT INTO messages ("conversation_id","integration_id","external_id","role","sent_at","type","text","attachments","is_suggestion","agent_info","sync_only","request_context","reply_to") VALUES (:c_id, :integration_id, :msg, 'human', now(), 'default', :text, '[]'::jsonb, false, NULL::jsonb, false, NULL::jsonb, NULL) ON CONFLICT (integration_id, external_id) DO NOTHING RETURNING id AS m_id \gset
WITH inserted AS (INSERT INTO jobs (kind, payload, conversation_id, ordered, key, group_key, run_at, trace_context, blocked) VALUES ('generate_reply_' || :client_id, jsonb_build_object('messageId', :m_id::text, 'conversationId', :c_id::text), :c_id, false, NULL, :workspace_id, now() + make_interval(secs => 0), '{"traceparent": "00-dafb5a31fab6e220fd6c99b1e8b52b26-ef0b9a51db5a97c1-01"}'::jsonb, false AND EXISTS (SELECT 1 FROM jobs e WHERE e.ordered AND e.conversation_id = :c_id AND e.kind = 'generate_reply_' || :client_id AND e.status IN ('pending', 'running'))) ON CONFLICT (kind, key) WHERE key IS NOT NULL AND status IN ('pending', 'running') DO NOTHING RETURNING id, (extract(epoch FROM run_at) * 1000)::float8 AS due) SELECT id, due, pg_notify('parley_jobs', 'generate_reply_' || :client_id || ' ' || ceil(due)::bigint::text) FROM inserted;
WITH answered AS MATERIALIZED (SELECT r.sent_at, r.created_at FROM messages r WHERE r.conversation_id = :c_id AND r.role IN ('ai', 'agent') AND r.type = 'default' ORDER BY r.sent_at DESC, r.created_at DESC LIMIT 1) SELECT m.id FROM messages m WHERE m.conversation_id = :c_id AND m.role = 'human' AND m.type = 'default' AND (m.sent_at, m.created_at) > (coalesce((SELECT sent_at FROM answered), '-infinity'), coalesce((SELECT created_at FROM answered), '-infinity')) ORDER BY m.sent_at, m.created_at LIMIT 1;
COMMIT;
SELECT count(job)::int AS r_found, coalesce(max(job->>'id'), '') AS r_job, coalesce(max(job->>'attempts'), '0') AS r_attempts, coalesce(max(job->'payload'->>'conversationId'), '') AS r_conv, coalesce(max(job->'payload'->>'messageId'), '') AS r_msg FROM parley_claim('generate_reply_' || :client_id, 'pgbench', 1, 64, 30) \gset
\if :r_found
SELECT * FROM conversations WHERE id = :r_conv::uuid;
SELECT * FROM messages WHERE conversation_id = :r_conv::uuid ORDER BY sent_at, seq;
SELECT 1 FROM reply_metadata WHERE trigger_message_id = :r_msg::uuid;
SELECT * FROM integrations WHERE id = :integration_id;
SELECT * FROM workspace_ai_settings WHERE workspace_id = :workspace_id;
SELECT count(*)::text || ':' || coalesce(max(id), 0)::text AS version FROM kb_chunks WHERE workspace_id = :workspace_id;
BEGIN;
SELECT * FROM conversations WHERE id = :r_conv::uuid FOR UPDATE;
INSERT INTO reply_metadata ("trigger_message_id","conversation_id","workspace_id","message_id","action","reason","provider","model","input_tokens","output_tokens","turns","latency_ms","citations","error","title","summary") VALUES (:r_msg::uuid, :r_conv::uuid, :workspace_id, NULL, 'answer', NULL, 'embedded', NULL, 0, 0, 0, 0, :citations::jsonb, NULL, NULL, NULL) ON CONFLICT (trigger_message_id) DO NOTHING RETURNING *;
INSERT INTO messages ("conversation_id","integration_id","external_id","role","sent_at","type","text","attachments","is_suggestion","agent_info","sync_only","request_context","reply_to") VALUES (:r_conv::uuid, :integration_id, NULL, 'ai', now(), 'default', :answer, '[]'::jsonb, false, NULL::jsonb, false, NULL::jsonb, :r_msg::uuid) ON CONFLICT (reply_to) WHERE reply_to IS NOT NULL DO NOTHING RETURNING id AS a_id \gset
UPDATE reply_metadata SET message_id = :a_id WHERE trigger_message_id = :r_msg::uuid;
INSERT INTO events ("id","workspace_id","kind","integration_id","conversation_id","body","status","attempts","last_status_code","last_error","created_at","delivered_at","dead_at","replayed_at","origin_at","generation") VALUES (gen_random_uuid(), :workspace_id, 'send_messages', :integration_id, :r_conv::uuid, :body, 'pending', 0, NULL, NULL, now(), NULL, NULL, NULL, now(), 0) RETURNING id AS e_id \gset
SELECT pg_advisory_xact_lock(hashtextextended(:r_conv::text, 0));
WITH inserted AS (INSERT INTO jobs (kind, payload, conversation_id, ordered, key, group_key, run_at, trace_context, blocked) VALUES ('deliver_event_' || :client_id, jsonb_build_object('eventId', :e_id::text), :r_conv::uuid, true, :e_id::text, :integration_id, now() + make_interval(secs => 0), '{"traceparent": "00-dafb5a31fab6e220fd6c99b1e8b52b26-4af30cf06e99161d-01"}'::jsonb, true AND EXISTS (SELECT 1 FROM jobs e WHERE e.ordered AND e.conversation_id = :r_conv::uuid AND e.kind = 'deliver_event_' || :client_id AND e.status IN ('pending', 'running'))) ON CONFLICT (kind, key) WHERE key IS NOT NULL AND status IN ('pending', 'running') DO NOTHING RETURNING id, (extract(epoch FROM run_at) * 1000)::float8 AS due) SELECT id, due, pg_notify('parley_jobs', 'deliver_event_' || :client_id || ' ' || ceil(due)::bigint::text) FROM inserted;
COMMIT;
WITH settled AS (UPDATE jobs SET status = CASE WHEN rerun THEN 'pending' ELSE 'done' END, finished_at = CASE WHEN rerun THEN NULL ELSE now() END, run_at = now(), rerun = false, locked_until = NULL, locked_by = CASE WHEN rerun THEN NULL ELSE locked_by END, updated_at = now() WHERE id = :r_job::uuid AND locked_by = 'pgbench' AND status = 'running' AND attempts = :r_attempts::int RETURNING id, status, ordered, conversation_id, kind), unblocked AS (SELECT parley_unblock_next(conversation_id, kind, id) AS freed FROM settled WHERE ordered AND status IN ('done', 'dead') ORDER BY conversation_id) SELECT (SELECT bool_or(freed) FROM unblocked) AS unblocked, (SELECT count(*) FROM settled WHERE status = 'pending')::int AS reruns;
\endif
SELECT count(job)::int AS d_found, coalesce(max(job->>'id'), '') AS d_job, coalesce(max(job->>'attempts'), '0') AS d_attempts, coalesce(max(job->'payload'->>'eventId'), '') AS d_event FROM parley_claim('deliver_event_' || :client_id, 'pgbench', 1, 64, 30) \gset
\if :d_found
SELECT * FROM events WHERE id IN (:d_event::uuid);
SELECT i.*, w.webhook_secret, w.previous_webhook_secret, w.previous_secret_expires_at FROM integrations i JOIN workspaces w ON w.id = i.workspace_id WHERE i.id IN (:integration_id);
WITH attempt AS (SELECT * FROM jsonb_to_recordset(jsonb_build_array(jsonb_build_object('id', :d_event::text, 'generation', 0, 'startedAt', now(), 'latencyMs', 1, 'statusCode', 200, 'error', NULL, 'responseSnippet', '{"ok": true}', 'nextRetryAt', NULL, 'at', now()))) AS a(id uuid, generation integer, "startedAt" timestamptz, "latencyMs" integer, "statusCode" integer, error text, "responseSnippet" text, "nextRetryAt" timestamptz, at timestamptz)), locked AS (SELECT e.id FROM events e JOIN attempt a ON a.id = e.id AND a.generation = e.generation WHERE e.status NOT IN ('delivered', 'dead') ORDER BY e.created_at DESC, e.id FOR UPDATE OF e), recorded AS (UPDATE events e SET status = CASE WHEN a.error IS NULL THEN 'delivered' ELSE 'failed' END, attempts = e.attempts + 1, last_status_code = a."statusCode", last_error = a.error, delivered_at = CASE WHEN a.error IS NULL THEN a.at ELSE e.delivered_at END FROM attempt a WHERE e.id = a.id AND e.generation = a.generation AND e.id IN (SELECT id FROM locked) AND e.status NOT IN ('delivered', 'dead') RETURNING e.id, e.attempts) INSERT INTO delivery_attempts (event_id, attempt, started_at, latency_ms, status_code, error, response_snippet, next_retry_at) SELECT r.id, r.attempts, a."startedAt", a."latencyMs", a."statusCode", a.error, a."responseSnippet", a."nextRetryAt" FROM recorded r JOIN attempt a ON a.id = r.id RETURNING event_id, attempt;
WITH settled AS (UPDATE jobs SET status = CASE WHEN rerun THEN 'pending' ELSE 'done' END, finished_at = CASE WHEN rerun THEN NULL ELSE now() END, run_at = now(), rerun = false, locked_until = NULL, locked_by = CASE WHEN rerun THEN NULL ELSE locked_by END, updated_at = now() WHERE id = :d_job::uuid AND locked_by = 'pgbench' AND status = 'running' AND attempts = :d_attempts::int RETURNING id, status, ordered, conversation_id, kind), unblocked AS (SELECT parley_unblock_next(conversation_id, kind, id) AS freed FROM settled WHERE ordered AND status IN ('done', 'dead') ORDER BY conversation_id) SELECT (SELECT bool_or(freed) FROM unblocked) AS unblocked, (SELECT count(*) FROM settled WHERE status = 'pending')::int AS reruns;
\endif
