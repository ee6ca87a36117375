/** Events from helpdesk platforms, through their adapters, into conversations (docs/api.md). */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Conversations } from "../Conversations/Conversations.js"
import { InvalidInput } from "../Domain/Errors.js"
import type { Integration } from "../Domain/Integration.js"
import type { HelpdeskAdapter, HelpdeskRequest } from "./Adapter.js"
import { Chatwoot } from "./Chatwoot.js"

/** Adapters by platform name; an integration whose kind names none uses the first platform, Chatwoot. */
const adapters: Readonly<Record<string, HelpdeskAdapter>> = { chatwoot: Chatwoot }

export class Helpdesk extends Context.Service<Helpdesk>()("Parley/Helpdesk", {
  make: Effect.gen(function*() {
    const conversations = yield* Conversations

    const receive = Effect.fn("Helpdesk.receive")(function*(
      integration: Integration,
      request: HelpdeskRequest,
      platform?: string
    ) {
      const adapter = adapters[platform ?? integration.integration] ?? Chatwoot
      yield* Effect.annotateCurrentSpan({ "helpdesk.platform": adapter.name })
      yield* adapter.verify(integration, request)
      const incoming = yield* adapter.translate(request)
      return yield* conversations.ingest(integration, incoming).pipe(
        // A message's limits are checked after translation: locate their problems in the event.
        Effect.mapError((error) =>
          error instanceof InvalidInput
            ? new InvalidInput({
              problems: error.problems.map((problem) => {
                const [field, ...rest] = problem.path
                const path = typeof field === "string" ? adapter.fieldPaths[field] : undefined
                return path === undefined ? problem : { ...problem, path: [...path, ...rest] }
              })
            })
            : error
        )
      )
    })

    return { receive } as const
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
  static readonly layer = this.layerWithoutDependencies.pipe(Layer.provide([Conversations.layer]))
}
