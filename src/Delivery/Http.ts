import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Effect from "effect/Effect"
import { Api } from "../Api.js"
import { CurrentWorkspace } from "../Auth/Api.js"
import { Integrations } from "../Integrations/Integrations.js"
import { Deliveries } from "./Deliveries.js"

export const DeliveriesHttpLive = HttpApiBuilder.group(Api, "deliveries", (handlers) =>
  Effect.gen(function*() {
    const integrations = yield* Integrations
    const deliveries = yield* Deliveries
    const integrationOf = (id: Parameters<typeof integrations.find>[1]) =>
      Effect.flatMap(CurrentWorkspace, ({ workspaceId }) => integrations.find(workspaceId, id))
    return handlers
      .handle("list", ({ path, urlParams }) =>
        Effect.zipRight(
          integrationOf(path.integration_id),
          deliveries.list(path.integration_id, {
            limit: urlParams.limit,
            ...(urlParams.status !== undefined ? { status: urlParams.status } : {}),
            ...(urlParams.since !== undefined ? { since: urlParams.since } : {})
          })
        ))
      .handle("get", ({ path }) =>
        Effect.zipRight(integrationOf(path.integration_id), deliveries.get(path.integration_id, path.delivery_id)))
      .handle("replay", ({ path }) =>
        Effect.zipRight(integrationOf(path.integration_id), deliveries.replay(path.integration_id, path.delivery_id)))
      .handle("replayAll", ({ path, urlParams }) =>
        Effect.zipRight(integrationOf(path.integration_id), deliveries.replayAll(path.integration_id, urlParams.since)))
  }))
