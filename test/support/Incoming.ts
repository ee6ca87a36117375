/** A customer message as the API hands it to `Conversations.ingest`, for tests that store messages directly. */
import * as Option from "effect/Option"
import type { Incoming } from "../../src/Conversations/Conversations.js"

/** The customer every such message is from (Parley's own id). */
export const testCustomerId = "6f1c1f8e-1d7e-4c8e-9a0a-1b2c3d4e5f60"

/** Message `id` with `text` in conversation `conversation` (the integrator's ids), from `role`. */
export const incoming = (
  conversation: string,
  id: string,
  text: string,
  role: Incoming["role"] = "human"
): Incoming => ({
  externalMessageId: id,
  externalConversationId: conversation,
  customer: { _tag: "ParleyId", id: testCustomerId, external: false },
  role,
  type: "default",
  text,
  attachments: [],
  sentAt: Option.none(),
  syncOnly: false,
  requestContext: Option.none(),
  agentInfo: null,
  channel: "api"
})
