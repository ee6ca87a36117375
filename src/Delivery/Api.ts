import * as Effect from "effect/Effect"
import * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import * as HttpApiGroup from "effect/http-api/HttpApiGroup"
import * as OpenApi from "effect/http-api/OpenApi"
import * as Schema from "effect/Schema"
import { WorkspaceAuth } from "../Auth/Api.js"
import { DeliveryDetail, DeliveryJson } from "../Domain/Delivery.js"
import { NotFoundBody } from "../Domain/Errors.js"
import { EventId, IntegrationId } from "../Domain/Ids.js"
import { Timestamp } from "../Domain/Primitives.js"
import { IntegrationPath } from "../Integrations/Api.js"

const StatusFilter = Schema.Literals(["pending", "failed", "delivered", "dead"]).annotate({
  errorType: "literal_error",
  message: "Input should be pending, failed, delivered or dead"
})

const limitProblem = { errorType: "int_range", message: "Input should be an integer from 1 to 500" } as const

const Limit = Schema.NumberFromString.check(
  Schema.isInt(limitProblem),
  Schema.isBetween({ minimum: 1, maximum: 500 }, limitProblem)
).annotate(limitProblem)

const ListQuery = Schema.Struct({
  status: Schema.optionalKey(StatusFilter),
  since: Schema.optionalKey(Timestamp),
  limit: Limit.pipe(Schema.withDecodingDefaultTypeKey(Effect.succeed(100)))
})

const ReplayAllQuery = Schema.Struct({ since: Timestamp })

export const Replayed = Schema.Struct({
  replayed: Schema.Int,
  deliveryIds: Schema.Array(EventId)
}).annotate({ identifier: "Replayed", description: "How many dead or failed deliveries were queued again, and their ids" })

const DeliveryPath = Schema.Struct({ integration_id: IntegrationId, delivery_id: EventId })

export class DeliveriesApi extends HttpApiGroup.make("deliveries")
  .add(
    HttpApiEndpoint.get("list", "/v1/integration/:integration_id/deliveries", {
      params: IntegrationPath,
      query: ListQuery,
      success: Schema.Array(DeliveryJson).annotate({ description: "The integration's deliveries, newest first" }),
      error: NotFoundBody
    }).annotate(OpenApi.Summary, "List deliveries (outbound events), newest first")
  )
  .add(
    HttpApiEndpoint.get("get", "/v1/integration/:integration_id/deliveries/:delivery_id", {
      params: DeliveryPath,
      success: DeliveryDetail,
      error: NotFoundBody
    }).annotate(OpenApi.Summary, "One delivery with its body and every attempt")
  )
  .add(
    HttpApiEndpoint.post("replay", "/v1/integration/:integration_id/deliveries/:delivery_id/replay", {
      params: DeliveryPath,
      success: DeliveryJson,
      error: NotFoundBody
    }).annotate(OpenApi.Summary, "Send a delivery again now (dead, failed or delivered)")
  )
  .add(
    HttpApiEndpoint.post("replayAll", "/v1/integration/:integration_id/deliveries/replay", {
      params: IntegrationPath,
      query: ReplayAllQuery,
      success: Replayed,
      error: NotFoundBody
    }).annotate(OpenApi.Summary, "Send again every dead or failed delivery created since a time")
  )
  .middleware(WorkspaceAuth)
  .annotate(OpenApi.Description, "The events Parley sends to an integration's webhook: their state, attempts, and sending them again.")
{}
