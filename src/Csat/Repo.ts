import * as SqlClient from "effect/sql/SqlClient"
import * as SqlSchema from "effect/sql/SqlSchema"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { CsatRecord } from "../Domain/Csat.js"
import { ConversationId } from "../Domain/Ids.js"

export class CsatRepo extends Context.Service<CsatRepo>()("Parley/CsatRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** Stores the answer as the conversation's current one; earlier ones stay, as history. */
    const replace = SqlSchema.findOne({
      Request: CsatRecord.insert,
      Result: CsatRecord,
      execute: (row) =>
        // The conversation's row lock serializes two answers arriving at once.
        sql`SELECT id FROM conversations WHERE id = ${row.conversationId} FOR UPDATE`.pipe(
          Effect.andThen(sql`UPDATE csat_responses SET is_current = false
            WHERE conversation_id = ${row.conversationId} AND is_current`),
          Effect.andThen(sql`INSERT INTO csat_responses ${sql.insert(row)} RETURNING *`)
        )
    })

    const history = SqlSchema.findAll({
      Request: ConversationId,
      Result: CsatRecord,
      execute: (conversationId) =>
        sql`SELECT * FROM csat_responses WHERE conversation_id = ${conversationId} ORDER BY created_at, id`
    })

    return { replace, history } as const
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
  static readonly layer = this.layerWithoutDependencies
}
