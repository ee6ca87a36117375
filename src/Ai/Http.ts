import * as Effect from "effect/Effect"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import { Api } from "../Api.js"
import { CurrentWorkspace } from "../Auth/Api.js"
import { Integrations } from "../Integrations/Integrations.js"
import { ReplyHistory } from "./ReplyHistory.js"

export const RepliesHttpLive = HttpApiBuilder.group(Api, "replies", (handlers) =>
  Effect.gen(function*() {
    const integrations = yield* Integrations
    const history = yield* ReplyHistory
    return handlers.handle("list", ({ params }) =>
      Effect.gen(function*() {
        const { workspaceId } = yield* CurrentWorkspace
        const integration = yield* integrations.find(workspaceId, params.integration_id)
        return yield* history.list(integration, params.conversation_id)
      }))
  }))
