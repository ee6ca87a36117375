import * as Effect from "effect/Effect"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import { Api } from "../Api.js"
import { CurrentWorkspace } from "../Auth/Api.js"
import { inputFromBody } from "../Handlers.js"
import { Integrations } from "./Integrations.js"

export const IntegrationsHttpLive = HttpApiBuilder.group(Api, "integrations", (handlers) =>
  Effect.gen(function*() {
    const integrations = yield* Integrations
    return handlers
      .handle("list", () => Effect.flatMap(CurrentWorkspace, ({ workspaceId }) => integrations.list(workspaceId)))
      .handle("updateSettings", ({ params, payload }) =>
        Effect.flatMap(CurrentWorkspace, ({ workspaceId }) =>
          integrations.updateSettings(workspaceId, params.integration_id, payload)).pipe(inputFromBody))
  }))
