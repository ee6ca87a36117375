/**
 * The inactivity timers' job kinds (docs/features.md, `inactivityPrompt` and `conversationTimeout`):
 * keyed by conversation, so each conversation has at most one live timer of each kind. Every new
 * message of an open conversation re-arms them (`ConversationTimers.arm`, in the message's
 * transaction); a hand-over or a close removes them (`disarm`). Their handlers are the AI's
 * (`TimersJobsLive`, src/Ai/Timers.ts), which writes the prompt and the goodbye; declared here, with the
 * conversation that arms them, because imports run from the AI to the conversations and never back.
 */
import * as Schema from "effect/Schema"
import { ConversationId } from "../Domain/Ids.js"
import * as Job from "../Jobs/Job.js"
import * as Lanes from "../Jobs/Lanes.js"

const TimerPayload = Schema.Struct({ conversationId: ConversationId })

/** Asks a silent customer whether they are still there, once per silence. */
export const InactivityPrompt = Job.define("inactivity_prompt", {
  payload: TimerPayload,
  lane: Lanes.replies,
  key: ({ conversationId }) => conversationId
})

/** Closes a conversation whose customer stayed silent. */
export const ConversationTimeout = Job.define("conversation_timeout", {
  payload: TimerPayload,
  lane: Lanes.replies,
  key: ({ conversationId }) => conversationId
})

export type TimerPayload = typeof TimerPayload.Type
