import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // Standing instructions for the AI, one row per version (docs/ai.md, "Business instructions"); the
  // newest of a workspace's (integration_id null) and of each integration's is in force.
  yield* sql`
    CREATE TABLE instructions (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      workspace_id uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      integration_id uuid REFERENCES integrations(id) ON DELETE CASCADE,
      text text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT clock_timestamp()
    )`
  yield* sql`CREATE INDEX instructions_scope_idx ON instructions (workspace_id, integration_id, created_at DESC)`
  // The versions each reply followed.
  yield* sql`ALTER TABLE reply_metadata ADD COLUMN instructions jsonb`
})
