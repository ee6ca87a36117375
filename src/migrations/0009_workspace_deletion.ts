import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  // A deleted workspace is gone for every API at once (this is set, its tokens revoked, its pending jobs
  // removed, in one transaction); its data is then removed in batches by a `purge_workspace` job.
  yield* sql`ALTER TABLE workspaces ADD COLUMN deleted_at timestamptz`
})
