/** The reply job kind: answer the customer's messages up to `messageId` (docs/ai.md). */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { ConversationId, MessageId } from "../Domain/Ids.js"
import * as Job from "../Jobs/Job.js"
import * as Lanes from "../Jobs/Lanes.js"
import { AiRepliesLive } from "./AiRepliesLive.js"
import { Replies } from "./GenerateReply.js"
import { ModelSettingsFor } from "./ModelSettingsFor.js"

export const GenerateReply = Job.define("generate_reply", {
  payload: Schema.Struct({ conversationId: ConversationId, messageId: MessageId }),
  lane: Lanes.replies
})

/** The reply handler, on the configured AI provider. */
export const AiJobsLive = Job.handlers(
  Effect.gen(function*() {
    const replies = yield* Replies
    return [Job.handle(GenerateReply, replies.generate)]
  })
).pipe(Layer.provide(Replies.layer.pipe(Layer.provide([AiRepliesLive, ModelSettingsFor.layer]))))
