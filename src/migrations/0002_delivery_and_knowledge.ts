import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  // Order of jobs within a conversation: deliveries of one conversation go out in `seq` order.
  yield* sql`ALTER TABLE jobs ADD COLUMN seq bigint GENERATED ALWAYS AS IDENTITY`
  yield* sql`CREATE INDEX jobs_event_idx ON jobs ((payload->>'eventId')) WHERE kind = 'deliver_event'`
  yield* sql`CREATE INDEX jobs_deliveries_in_flight_idx ON jobs (conversation_id, seq)
             WHERE kind = 'deliver_event' AND status IN ('pending', 'running')`

  // An AI reply names the message that triggered it: one reply per trigger, however often a job retries.
  yield* sql`ALTER TABLE messages ADD COLUMN reply_to uuid`
  // Arrival order (a client's sentAt may arrive out of order): what the reply debounce goes by.
  yield* sql`ALTER TABLE messages ADD COLUMN seq bigint GENERATED ALWAYS AS IDENTITY`
  yield* sql`CREATE UNIQUE INDEX messages_reply_to_idx ON messages (reply_to) WHERE reply_to IS NOT NULL`

  yield* sql`
    CREATE TABLE events (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      workspace_id uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      integration_id uuid NOT NULL REFERENCES integrations(id) ON DELETE CASCADE,
      conversation_id uuid REFERENCES conversations(id) ON DELETE CASCADE,
      kind text NOT NULL,
      body text NOT NULL,
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'failed', 'delivered', 'dead')),
      attempts integer NOT NULL DEFAULT 0,
      last_status_code integer,
      last_error text,
      next_attempt_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      delivered_at timestamptz,
      dead_at timestamptz,
      -- A replay restarts the retry window (DELIVERY_MAX_AGE) from here.
      replayed_at timestamptz,
      -- When what caused the event happened (the customer's message): end-to-end latency starts here.
      origin_at timestamptz
    )`
  yield* sql`CREATE INDEX events_integration_idx ON events (integration_id, created_at)`
  yield* sql`CREATE INDEX events_integration_status_idx ON events (integration_id, status, created_at)`
  yield* sql`CREATE INDEX events_conversation_idx ON events (conversation_id, created_at)`

  yield* sql`
    CREATE TABLE delivery_attempts (
      id bigserial PRIMARY KEY,
      event_id uuid NOT NULL REFERENCES events(id) ON DELETE CASCADE,
      attempt integer NOT NULL,
      started_at timestamptz NOT NULL,
      latency_ms integer NOT NULL,
      status_code integer,
      error text,
      response_snippet text,
      next_retry_at timestamptz
    )`
  yield* sql`CREATE INDEX delivery_attempts_event_idx ON delivery_attempts (event_id, id)`

  yield* sql`
    CREATE TABLE kb_articles (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      workspace_id uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      title text NOT NULL,
      body text NOT NULL,
      url text,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX kb_articles_workspace_idx ON kb_articles (workspace_id, created_at)`

  yield* sql`
    CREATE TABLE kb_chunks (
      id bigserial PRIMARY KEY,
      article_id uuid NOT NULL REFERENCES kb_articles(id) ON DELETE CASCADE,
      workspace_id uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      ordinal integer NOT NULL,
      heading text,
      text text NOT NULL
    )`
  yield* sql`CREATE INDEX kb_chunks_workspace_idx ON kb_chunks (workspace_id, id)`
})
