import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import { CsatRecord } from "../Domain/Csat.js"
import { ConversationId } from "../Domain/Ids.js"

export class CsatRepo extends Effect.Service<CsatRepo>()("Parley/CsatRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** Stores the answer as the conversation's current one; earlier ones stay, as history. */
    const replace = SqlSchema.single({
      Request: CsatRecord.insert,
      Result: CsatRecord,
      execute: (row) =>
        // The conversation's row lock serializes two answers arriving at once.
        sql`SELECT id FROM conversations WHERE id = ${row.conversationId} FOR UPDATE`.pipe(
          Effect.zipRight(sql`UPDATE csat_responses SET is_current = false
            WHERE conversation_id = ${row.conversationId} AND is_current`),
          Effect.zipRight(sql`INSERT INTO csat_responses ${sql.insert(row)} RETURNING *`)
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
}) {}
