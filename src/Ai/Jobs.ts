/**
 * The AI's job handlers: the reply job kind, `generate_reply` (docs/ai.md), by `Replies.generate`, and
 * the inactivity timers (`inactivity_prompt`, `conversation_timeout`; src/Ai/Timers.ts). The kinds are
 * declared with the conversation that queues them (src/Conversations/ReplyJob.ts, TimerJobs.ts).
 */
import * as Layer from "effect/Layer"
import * as Effect from "effect/Effect"
import { GenerateReply } from "../Conversations/ReplyJob.js"
import * as Job from "../Jobs/Job.js"
import { Replies } from "./GenerateReply.js"
import { TimersJobsLive } from "./Timers.js"

/** The reply handler, on the configured AI provider. */
const RepliesJobsLive = Job.handlers(
  Effect.gen(function*() {
    const replies = yield* Replies
    return [Job.handle(GenerateReply, replies.generate)]
  })
).pipe(Layer.provide(Replies.layer))

export const AiJobsLive = Layer.mergeAll(RepliesJobsLive, TimersJobsLive)
