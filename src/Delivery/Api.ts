import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { WorkspaceAuth } from "../Auth/Api.js"
import { DeliveryDetail, DeliveryJson } from "../Domain/Delivery.js"
import { NotFoundBody } from "../Domain/Errors.js"
import { EventId, IntegrationId } from "../Domain/Ids.js"
import { Timestamp } from "../Domain/Primitives.js"
import { IntegrationPath } from "../Integrations/Api.js"
import { ErrorType } from "../Domain/Validation.js"

const StatusFilter = Schema.Literal("pending", "failed", "delivered", "dead").annotations({
  [ErrorType]: "literal_error",
  message: () => "Input should be pending, failed, delivered or dead"
})

const Limit = Schema.NumberFromString.pipe(
  Schema.int(),
  Schema.between(1, 500),
  Schema.annotations({ [ErrorType]: "int_range", message: () => "Input should be an integer from 1 to 500" })
)

const ListQuery = Schema.Struct({
  status: Schema.optionalWith(StatusFilter, { exact: true }),
  since: Schema.optionalWith(Timestamp, { exact: true }),
  limit: Schema.optionalWith(Limit, { default: () => 100 })
})

const ReplayAllQuery = Schema.Struct({ since: Timestamp })

export const Replayed = Schema.Struct({
  replayed: Schema.Number,
  deliveryIds: Schema.Array(EventId)
}).annotations({ identifier: "Replayed" })

const DeliveryPath = Schema.Struct({ integration_id: IntegrationId, delivery_id: EventId })

export class DeliveriesApi extends HttpApiGroup.make("deliveries")
  .add(
    HttpApiEndpoint.get("list", "/v1/integration/:integration_id/deliveries")
      .setPath(IntegrationPath)
      .setUrlParams(ListQuery)
      .addSuccess(Schema.Array(DeliveryJson))
      .addError(NotFoundBody)
      .annotate(OpenApi.Summary, "List deliveries (outbound events), newest first")
  )
  .add(
    HttpApiEndpoint.get("get", "/v1/integration/:integration_id/deliveries/:delivery_id")
      .setPath(DeliveryPath)
      .addSuccess(DeliveryDetail)
      .addError(NotFoundBody)
      .annotate(OpenApi.Summary, "One delivery with its body and every attempt")
  )
  .add(
    HttpApiEndpoint.post("replay", "/v1/integration/:integration_id/deliveries/:delivery_id/replay")
      .setPath(DeliveryPath)
      .addSuccess(DeliveryJson)
      .addError(NotFoundBody)
      .annotate(OpenApi.Summary, "Send a delivery again now (dead, failed or delivered)")
  )
  .add(
    HttpApiEndpoint.post("replayAll", "/v1/integration/:integration_id/deliveries/replay")
      .setPath(IntegrationPath)
      .setUrlParams(ReplayAllQuery)
      .addSuccess(Replayed)
      .addError(NotFoundBody)
      .annotate(OpenApi.Summary, "Send again every dead or failed delivery created since a time")
  )
  .middleware(WorkspaceAuth)
{}
