import * as Effect from "effect/Effect"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import { Api } from "../Api.js"
import { CurrentIntegration } from "../Handlers.js"
import { Deliveries } from "./Deliveries.js"

export const DeliveriesHttpLive = HttpApiBuilder.group(Api, "deliveries", (handlers) =>
  Effect.gen(function*() {
    const currentIntegration = yield* CurrentIntegration
    const deliveries = yield* Deliveries
    return handlers
      .handle("list", ({ params, query }) =>
        Effect.andThen(
          currentIntegration(params.integration_id),
          deliveries.list(params.integration_id, {
            limit: query.limit,
            ...(query.status !== undefined ? { status: query.status } : {}),
            ...(query.since !== undefined ? { since: query.since } : {})
          })
        ))
      .handle("get", ({ params }) =>
        Effect.andThen(currentIntegration(params.integration_id), deliveries.get(params.integration_id, params.delivery_id)))
      .handle("replay", ({ params }) =>
        Effect.andThen(currentIntegration(params.integration_id), deliveries.replay(params.integration_id, params.delivery_id)))
      .handle("replayAll", ({ params, query }) =>
        Effect.andThen(currentIntegration(params.integration_id), deliveries.replayAll(params.integration_id, query.since)))
  }))
