import * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import * as HttpApiGroup from "effect/http-api/HttpApiGroup"
import * as OpenApi from "effect/http-api/OpenApi"
import * as Schema from "effect/Schema"
import { WorkspaceAuth } from "../Auth/Api.js"
import { NotFoundBody } from "../Domain/Errors.js"
import { IntegrationId } from "../Domain/Ids.js"
import { IntegrationJson, IntegrationSettingsPatch } from "../Domain/Integration.js"

export const IntegrationPath = Schema.Struct({ integration_id: IntegrationId })

export class IntegrationsApi extends HttpApiGroup.make("integrations")
  .add(
    HttpApiEndpoint.get("list", "/v1/integration/list", {
      success: Schema.Array(IntegrationJson).annotate({ description: "The workspace's integrations" })
    })
      .annotate(OpenApi.Summary, "List integrations")
  )
  .add(
    HttpApiEndpoint.post("updateSettings", "/v1/integration/:integration_id/update-settings", {
      params: IntegrationPath,
      payload: IntegrationSettingsPatch,
      success: IntegrationJson,
      error: NotFoundBody
    })
      .annotate(OpenApi.Summary, "Update integration settings")
      .annotate(
        OpenApi.Description,
        "Partial update: fields present replace those fields, supportedFeatures merges flag by flag, " +
          "webhook fields merge one by one. toneId and firstResponseToneId must name tones of the workspace."
      )
  )
  .middleware(WorkspaceAuth)
  .annotate(OpenApi.Description, "The workspace's integrations and their settings (feature flags, tones, webhook).")
{}
