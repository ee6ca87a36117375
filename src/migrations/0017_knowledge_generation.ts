import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // Bumped in the transaction of every change to a workspace's knowledge base: its search index's
  // version (src/Ai/KnowledgeRepo.ts). Its row lock orders those transactions, so a later commit always
  // shows a newer generation, which the passages' count and largest id alone do not (an edit and an
  // addition committing out of the order of their ids could leave both unchanged).
  yield* sql`ALTER TABLE workspaces ADD COLUMN kb_generation bigint NOT NULL DEFAULT 0`
})
