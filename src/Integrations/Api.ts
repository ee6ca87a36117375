import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { WorkspaceAuth } from "../Auth/Api.js"
import { NotFoundBody } from "../Domain/Errors.js"
import { IntegrationId } from "../Domain/Ids.js"
import { IntegrationJson, IntegrationSettingsPatch } from "../Domain/Integration.js"

export const IntegrationPath = Schema.Struct({ integration_id: IntegrationId })

export class IntegrationsApi extends HttpApiGroup.make("integrations")
  .add(
    HttpApiEndpoint.get("list", "/v1/integration/list")
      .addSuccess(Schema.Array(IntegrationJson))
      .annotate(OpenApi.Summary, "List integrations")
  )
  .add(
    HttpApiEndpoint.post("updateSettings", "/v1/integration/:integration_id/update-settings")
      .setPath(IntegrationPath)
      .setPayload(IntegrationSettingsPatch)
      .addSuccess(IntegrationJson)
      .addError(NotFoundBody)
      .annotate(OpenApi.Summary, "Update integration settings")
      .annotate(
        OpenApi.Description,
        "Partial update: fields present replace those fields, supportedFeatures merges flag by flag, " +
          "webhook fields merge one by one. toneId and firstResponseToneId must name tones of the workspace."
      )
  )
  .middleware(WorkspaceAuth)
{}
