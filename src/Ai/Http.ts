import * as Effect from "effect/Effect"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import { Api } from "../Api.js"
import { CurrentIntegration } from "../Handlers.js"
import { ReplyHistory } from "./ReplyHistory.js"

export const RepliesHttpLive = HttpApiBuilder.group(Api, "replies", (handlers) =>
  Effect.gen(function*() {
    const currentIntegration = yield* CurrentIntegration
    const history = yield* ReplyHistory
    return handlers.handle("list", ({ params }) =>
      Effect.flatMap(
        currentIntegration(params.integration_id),
        (integration) => history.list(integration, params.conversation_id)
      ))
  }))
