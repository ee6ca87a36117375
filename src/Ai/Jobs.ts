/**
 * The handler of the reply job kind, `generate_reply` (docs/ai.md): `Replies.generate`. The kind is
 * declared with the conversation that queues it (src/Conversations/ReplyJob.ts).
 */
import * as Layer from "effect/Layer"
import * as Effect from "effect/Effect"
import { GenerateReply } from "../Conversations/ReplyJob.js"
import * as Job from "../Jobs/Job.js"
import { Replies } from "./GenerateReply.js"

/** The reply handler, on the configured AI provider. */
export const AiJobsLive = Job.handlers(
  Effect.gen(function*() {
    const replies = yield* Replies
    return [Job.handle(GenerateReply, replies.generate)]
  })
).pipe(Layer.provide(Replies.layer))
