/** Events from helpdesk platforms, through their adapters, into conversations (PRODUCT.md §4). */
import * as Effect from "effect/Effect"
import { Conversations } from "../Conversations/Conversations.js"
import type { IntegrationRow } from "../Integrations/Repo.js"
import type { HelpdeskAdapter, HelpdeskRequest } from "./Adapter.js"
import { Chatwoot } from "./Chatwoot.js"

/** Adapters by platform name; an integration whose kind names none uses the first platform, Chatwoot. */
export const adapters: Readonly<Record<string, HelpdeskAdapter>> = { chatwoot: Chatwoot }

export class Helpdesk extends Effect.Service<Helpdesk>()("Parley/Helpdesk", {
  dependencies: [Conversations.Default],
  effect: Effect.gen(function*() {
    const conversations = yield* Conversations

    const receive = Effect.fn("Helpdesk.receive")(function*(
      integration: IntegrationRow,
      request: HelpdeskRequest,
      platform?: string
    ) {
      const adapter = adapters[platform ?? integration.kind] ?? Chatwoot
      yield* Effect.annotateCurrentSpan({ "helpdesk.platform": adapter.name })
      yield* adapter.verify(integration, request)
      const incoming = yield* adapter.translate(request)
      return yield* conversations.ingest(integration, incoming)
    })

    return { receive } as const
  })
}) {}
