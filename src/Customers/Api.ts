import * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import * as HttpApiGroup from "effect/http-api/HttpApiGroup"
import * as OpenApi from "effect/http-api/OpenApi"
import * as Schema from "effect/Schema"
import { WorkspaceAuth } from "../Auth/Api.js"
import { CustomerJson } from "../Domain/Customer.js"
import { Text } from "../Domain/Primitives.js"

export class CustomersApi extends HttpApiGroup.make("customers")
  .add(
    HttpApiEndpoint.get("getByExternalId", "/v1/customer/external-id/:external_id", {
      params: Schema.Struct({ external_id: Text }),
      success: Schema.NullOr(CustomerJson).annotate({
        description: "The customer whose userId is external_id, or null when the workspace has none"
      })
    })
      .annotate(OpenApi.Summary, "Get customer by external id")
      .annotate(OpenApi.Description, "The workspace's customer whose userId is external_id, or null when none.")
  )
  .middleware(WorkspaceAuth)
  .annotate(OpenApi.Description, "The workspace's customers, as Parley knows them from the messages it received.")
{}
