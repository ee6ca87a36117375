import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // The dashboard's reads (docs/dashboard.md): an integration's conversations, newest first, a page at a
  // time; a conversation's messages in order (its page, and its live updates every second); the last
  // hour's delivery attempts (the charts); and an article's passages (removing or editing one).
  yield* sql`CREATE INDEX conversations_integration_created_idx ON conversations (integration_id, created_at DESC, id DESC)`
  yield* sql`CREATE INDEX messages_conversation_seq_idx ON messages (conversation_id, seq)`
  yield* sql`CREATE INDEX delivery_attempts_started_idx ON delivery_attempts (started_at)`
  yield* sql`CREATE INDEX kb_chunks_article_idx ON kb_chunks (article_id)`
})
