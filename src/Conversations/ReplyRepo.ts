/**
 * `reply_metadata`: the outcome of each reply job, one row per trigger message (the customer message
 * the job ran for). Its key is what makes a reply happen once per trigger (`ReplyWorkflow.apply`); the
 * rows are also the reply history integrators read (`ReplyHistory`, src/Ai).
 */
import * as SqlClient from "effect/sql/SqlClient"
import * as SqlSchema from "effect/sql/SqlSchema"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { ConversationId, MessageId } from "../Domain/Ids.js"
import { ReplyRecord } from "../Domain/Reply.js"

export class ReplyRepo extends Context.Service<ReplyRepo>()("Parley/ReplyRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** Stores the trigger's outcome; none when it already has one (another run of the same trigger). */
    const insert = SqlSchema.findOneOption({
      Request: ReplyRecord.insert,
      Result: ReplyRecord,
      execute: (row) =>
        sql`INSERT INTO reply_metadata ${sql.insert(row)} ON CONFLICT (trigger_message_id) DO NOTHING RETURNING *`
    })

    const setMessage = (trigger: MessageId, messageId: MessageId) =>
      sql`UPDATE reply_metadata SET message_id = ${messageId} WHERE trigger_message_id = ${trigger}`

    const exists = (trigger: MessageId) =>
      Effect.map(sql`SELECT 1 FROM reply_metadata WHERE trigger_message_id = ${trigger}`, (rows) => rows.length > 0)

    const listByConversation = SqlSchema.findAll({
      Request: ConversationId,
      Result: ReplyRecord,
      execute: (id) => sql`SELECT * FROM reply_metadata WHERE conversation_id = ${id} ORDER BY created_at, trigger_message_id`
    })

    const findByTrigger = SqlSchema.findOneOption({
      Request: MessageId,
      Result: ReplyRecord,
      execute: (id) => sql`SELECT * FROM reply_metadata WHERE trigger_message_id = ${id}`
    })

    return { insert, setMessage, exists, listByConversation, findByTrigger } as const
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
  static readonly layer = this.layerWithoutDependencies
}
