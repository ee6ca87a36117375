import { HttpApiBuilder } from "@effect/platform"
import * as Effect from "effect/Effect"
import { Api } from "../Api.js"
import { CurrentWorkspace } from "../Auth/Api.js"
import { IntegrationSettingsPatch } from "../Domain/Integration.js"
import { decodeBody } from "../Http/Request.js"
import { Integrations } from "./Integrations.js"

export const IntegrationsHttpLive = HttpApiBuilder.group(Api, "integrations", (handlers) =>
  Effect.gen(function*() {
    const integrations = yield* Integrations
    return handlers
      .handle("list", () => Effect.flatMap(CurrentWorkspace, ({ workspaceId }) => integrations.list(workspaceId)))
      .handleRaw("updateSettings", ({ path }) =>
        Effect.gen(function*() {
          const { workspaceId } = yield* CurrentWorkspace
          yield* integrations.find(workspaceId, path.integration_id)
          const patch = yield* decodeBody(IntegrationSettingsPatch)
          return yield* integrations.updateSettings(workspaceId, path.integration_id, patch)
        }))
  }))
