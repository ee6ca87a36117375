import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { WorkspaceAuth } from "../Auth/Api.js"
import { CustomerJson } from "../Domain/Customer.js"
import { Text } from "../Domain/Primitives.js"

export class CustomersApi extends HttpApiGroup.make("customers")
  .add(
    HttpApiEndpoint.get("getByExternalId", "/v1/customer/external-id/:external_id")
      .setPath(Schema.Struct({ external_id: Text }))
      .addSuccess(Schema.NullOr(CustomerJson))
      .annotate(OpenApi.Summary, "Get customer by external id")
      .annotate(OpenApi.Description, "The workspace's customer whose userId is external_id, or null when none.")
  )
  .middleware(WorkspaceAuth)
{}
