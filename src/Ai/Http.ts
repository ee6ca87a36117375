import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Effect from "effect/Effect"
import { Api } from "../Api.js"
import { CurrentWorkspace } from "../Auth/Api.js"
import { Integrations } from "../Integrations/Integrations.js"
import { ReplyHistory } from "./ReplyHistory.js"

export const RepliesHttpLive = HttpApiBuilder.group(Api, "replies", (handlers) =>
  Effect.gen(function*() {
    const integrations = yield* Integrations
    const history = yield* ReplyHistory
    return handlers.handle("list", ({ path }) =>
      Effect.gen(function*() {
        const { workspaceId } = yield* CurrentWorkspace
        const integration = yield* integrations.find(workspaceId, path.integration_id)
        return yield* history.list(integration, path.conversation_id)
      }))
  }))
