import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  // What answered each trigger (a customer message the reply job ran for) and what produced it. The
  // primary key is the trigger: a job that runs twice (a retry, a worker that died mid-call) stores
  // one outcome, whether or not the outcome sent a message (a hand-over may send none).
  yield* sql`
    CREATE TABLE reply_metadata (
      trigger_message_id uuid PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
      conversation_id uuid NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
      workspace_id uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      message_id uuid REFERENCES messages(id) ON DELETE SET NULL,
      action text NOT NULL CHECK (action IN ('answer', 'escalate', 'close')),
      reason text,
      provider text NOT NULL,
      model text,
      input_tokens integer NOT NULL DEFAULT 0,
      output_tokens integer NOT NULL DEFAULT 0,
      turns integer NOT NULL DEFAULT 0,
      latency_ms integer NOT NULL,
      citations jsonb NOT NULL DEFAULT '[]',
      error text,
      title text,
      summary text,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX reply_metadata_conversation_idx ON reply_metadata (conversation_id, created_at)`
  // Token use per workspace and day.
  yield* sql`CREATE INDEX reply_metadata_workspace_idx ON reply_metadata (workspace_id, created_at)`
})
