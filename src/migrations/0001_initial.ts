import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  yield* sql`
    CREATE TABLE workspaces (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      name text NOT NULL,
      webhook_secret text NOT NULL,
      previous_webhook_secret text,
      previous_secret_expires_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now()
    )`

  yield* sql`
    CREATE TABLE api_tokens (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      workspace_id uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      token_hash text NOT NULL UNIQUE,
      name text,
      created_at timestamptz NOT NULL DEFAULT now(),
      revoked_at timestamptz
    )`
  yield* sql`CREATE INDEX api_tokens_workspace_idx ON api_tokens (workspace_id)`

  yield* sql`
    CREATE TABLE tones (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      workspace_id uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      name text NOT NULL,
      instructions text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX tones_workspace_idx ON tones (workspace_id)`

  yield* sql`
    CREATE TABLE integrations (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      workspace_id uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      kind text NOT NULL,
      settings jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX integrations_workspace_idx ON integrations (workspace_id, created_at)`

  yield* sql`
    CREATE TABLE customers (
      id uuid NOT NULL DEFAULT gen_random_uuid(),
      workspace_id uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      user_id text,
      email text,
      first_name text,
      last_name text,
      phone_number text,
      location text,
      ip text,
      is_visitor boolean NOT NULL DEFAULT false,
      visitor_id uuid,
      custom_fields jsonb,
      fields jsonb,
      account jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      -- Customer ids are chosen by integrators too: unique per workspace, never across workspaces.
      PRIMARY KEY (workspace_id, id)
    )`
  yield* sql`CREATE UNIQUE INDEX customers_workspace_user_idx ON customers (workspace_id, user_id)`

  yield* sql`
    CREATE TABLE conversations (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      workspace_id uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      integration_id uuid NOT NULL REFERENCES integrations(id) ON DELETE CASCADE,
      external_id text NOT NULL,
      customer_id uuid NOT NULL,
      channel text NOT NULL,
      status text NOT NULL CHECK (status IN ('open', 'escalated', 'closed')),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (integration_id, external_id),
      FOREIGN KEY (workspace_id, customer_id) REFERENCES customers (workspace_id, id)
    )`
  yield* sql`CREATE INDEX conversations_customer_idx ON conversations (workspace_id, customer_id, created_at)`

  yield* sql`
    CREATE TABLE conversation_status_changes (
      id bigserial PRIMARY KEY,
      conversation_id uuid NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
      from_status text,
      to_status text NOT NULL,
      cause text NOT NULL,
      message_id uuid,
      changed_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX conversation_status_changes_conversation_idx ON conversation_status_changes (conversation_id, id)`

  yield* sql`
    CREATE TABLE messages (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      conversation_id uuid NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
      integration_id uuid NOT NULL REFERENCES integrations(id) ON DELETE CASCADE,
      external_id text,
      role text NOT NULL CHECK (role IN ('human', 'ai', 'agent', 'system')),
      type text NOT NULL CHECK (type IN ('default', 'note', 'event')),
      text text NOT NULL,
      attachments jsonb NOT NULL DEFAULT '[]',
      sent_at timestamptz NOT NULL,
      sync_only boolean NOT NULL DEFAULT false,
      request_context jsonb,
      is_suggestion boolean NOT NULL DEFAULT false,
      agent_info jsonb,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE UNIQUE INDEX messages_integration_external_idx ON messages (integration_id, external_id)`
  yield* sql`CREATE INDEX messages_conversation_idx ON messages (conversation_id, sent_at, created_at)`

  yield* sql`
    CREATE TABLE csat_responses (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      conversation_id uuid NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
      rating_style integer NOT NULL,
      rating_answer text NOT NULL,
      csat_comment text,
      score integer NOT NULL CHECK (score BETWEEN 1 AND 5),
      rating text NOT NULL CHECK (rating IN ('good', 'bad')),
      is_current boolean NOT NULL DEFAULT true,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX csat_responses_conversation_idx ON csat_responses (conversation_id, created_at)`
  yield* sql`CREATE UNIQUE INDEX csat_responses_current_idx ON csat_responses (conversation_id) WHERE is_current`

  yield* sql`
    CREATE TABLE jobs (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      kind text NOT NULL,
      payload jsonb NOT NULL,
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'running', 'done', 'dead')),
      run_at timestamptz NOT NULL DEFAULT now(),
      attempts integer NOT NULL DEFAULT 0,
      locked_until timestamptz,
      locked_by text,
      last_error text,
      trace_context jsonb,
      conversation_id uuid,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      finished_at timestamptz
    )`
  yield* sql`CREATE INDEX jobs_claimable_idx ON jobs (run_at) WHERE status IN ('pending', 'running')`
  yield* sql`CREATE INDEX jobs_conversation_idx ON jobs (conversation_id, created_at)`
})
