/**
 * A helpdesk platform's webhook, translated into Parley's terms. One module per platform: a second
 * helpdesk is one file implementing this and one line in `Helpdesk.ts`.
 */
import type * as Effect from "effect/Effect"
import type { Incoming } from "../Conversations/Conversations.js"
import type { InvalidInput, Unauthorized } from "../Domain/Errors.js"
import type { Integration } from "../Domain/Integration.js"

export interface HelpdeskRequest {
  readonly headers: Readonly<Record<string, string | undefined>>
  readonly rawBody: string
  readonly body: unknown
}

export interface HelpdeskAdapter {
  readonly name: string
  readonly supportedEvents: ReadonlyArray<string>
  /** Checks the platform's own signature when the integration is configured with its secret. */
  readonly verify: (integration: Integration, request: HelpdeskRequest) => Effect.Effect<void, Unauthorized>
  /** The message (and status change) the event stands for; problems located within the event. */
  readonly translate: (request: HelpdeskRequest) => Effect.Effect<Incoming, InvalidInput>
  /** Where the event carries a message's fields, for problems found after translation (`text` → `content`). */
  readonly fieldPaths: Readonly<Record<string, ReadonlyArray<string | number>>>
}
