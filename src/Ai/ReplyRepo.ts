/**
 * `reply_metadata` is written where the AI's outcome is applied, on the conversation's side
 * (src/Conversations/ReplyRepo.ts); the AI's reply history reads it through the same repo.
 */
export { ReplyRepo } from "../Conversations/ReplyRepo.js"
