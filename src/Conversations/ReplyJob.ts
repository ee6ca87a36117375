/**
 * The reply job kind, `generate_reply`: answer the customer's messages up to `messageId` (docs/ai.md).
 * `Conversations.ingest` queues it; its handler is the AI's (`AiJobsLive`, src/Ai/Jobs.ts), which asks
 * the model for an outcome and hands it to `ReplyWorkflow.apply`. It is declared here, with the
 * conversation that queues it, because imports run from the AI to the conversations and never back.
 */
import * as Schema from "effect/Schema"
import { ConversationId, MessageId } from "../Domain/Ids.js"
import * as Job from "../Jobs/Job.js"
import * as Lanes from "../Jobs/Lanes.js"

export const GenerateReply = Job.define("generate_reply", {
  payload: Schema.Struct({ conversationId: ConversationId, messageId: MessageId }),
  lane: Lanes.replies
})

export type GenerateReplyPayload = typeof GenerateReply.payload.Type
