/** The reply job kind: answer the customer's messages up to `messageId` (docs/ai.md). */
import * as Schema from "effect/Schema"
import { ConversationId, MessageId } from "../Domain/Ids.js"
import * as Job from "../Jobs/Job.js"

export const GenerateReply = Job.define("generate_reply", {
  payload: Schema.Struct({ conversationId: ConversationId, messageId: MessageId })
})
