import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  // A workspace's own model, overriding the global default (AI_PROVIDER…). Complete on its own: a
  // workspace that overrides never borrows the global key, so a key only ever goes to the base URL it
  // was stored with. `api_key` is sealed like the webhook secret (AES-256-GCM with PARLEY_ENCRYPTION_KEY).
  yield* sql`
    CREATE TABLE workspace_ai_settings (
      workspace_id uuid PRIMARY KEY REFERENCES workspaces(id) ON DELETE CASCADE,
      provider text NOT NULL CHECK (provider IN ('embedded', 'openai', 'anthropic')),
      model text,
      base_url text,
      open_ai_api text CHECK (open_ai_api IN ('chat', 'responses')),
      api_key text,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      CHECK (provider = 'embedded' OR model IS NOT NULL)
    )`

  // Token use per workspace, UTC day, provider and model: one row per key, summed by upserts.
  yield* sql`
    CREATE TABLE ai_usage (
      workspace_id uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      day date NOT NULL,
      provider text NOT NULL,
      model text NOT NULL,
      input_tokens bigint NOT NULL DEFAULT 0,
      output_tokens bigint NOT NULL DEFAULT 0,
      requests bigint NOT NULL DEFAULT 0,
      PRIMARY KEY (workspace_id, day, provider, model)
    )`
})
