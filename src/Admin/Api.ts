/** The operators' API (`/admin/v1`), authenticated by the admin token. The CLI drives it. */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { AdminAuth } from "../Auth/Api.js"
import { AiSettingsUpdate, AiSettingsView, AiUsageReport, UsageDays } from "../Domain/AiSettings.js"
import { NotFoundBody } from "../Domain/Errors.js"
import { TokenId, WorkspaceId } from "../Domain/Ids.js"
import { IntegrationJson, NewIntegration } from "../Domain/Integration.js"
import { ArticleJson, NewArticle } from "../Domain/Knowledge.js"
import {
  CreatedToken,
  CreatedWorkspace,
  NewToken,
  NewTone,
  NewWorkspace,
  RotatedSecret,
  TokenSummary,
  ToneJson,
  WorkspaceDetail,
  WorkspaceSummary
} from "../Domain/Workspace.js"

const WorkspacePath = Schema.Struct({ workspaceId: WorkspaceId })

export class AdminApi extends HttpApiGroup.make("admin")
  .add(
    HttpApiEndpoint.post("createWorkspace", "/workspaces")
      .setPayload(NewWorkspace)
      .addSuccess(CreatedWorkspace, { status: 201 })
      .annotate(OpenApi.Summary, "Create a workspace, its first API token and its webhook secret")
  )
  .add(HttpApiEndpoint.get("listWorkspaces", "/workspaces").addSuccess(Schema.Array(WorkspaceSummary)))
  .add(
    HttpApiEndpoint.get("getWorkspace", "/workspaces/:workspaceId")
      .setPath(WorkspacePath)
      .addSuccess(WorkspaceDetail)
      .addError(NotFoundBody)
  )
  .add(
    HttpApiEndpoint.del("deleteWorkspace", "/workspaces/:workspaceId")
      .setPath(WorkspacePath)
      .addSuccess(HttpApiSchema.NoContent)
      .addError(NotFoundBody)
      .annotate(OpenApi.Summary, "Delete a workspace and everything it owns")
      .annotate(
        OpenApi.Description,
        "At once, on every instance: its API tokens stop working (401), it and its integrations answer 404, and " +
          "its pending replies and deliveries are dropped. Its data (conversations, messages, customers, deliveries, " +
          "knowledge base, settings) is then removed in the background, in batches. Not reversible."
      )
  )
  .add(
    HttpApiEndpoint.post("createToken", "/workspaces/:workspaceId/tokens")
      .setPath(WorkspacePath)
      .setPayload(NewToken)
      .addSuccess(CreatedToken, { status: 201 })
      .addError(NotFoundBody)
  )
  .add(
    HttpApiEndpoint.get("listTokens", "/workspaces/:workspaceId/tokens")
      .setPath(WorkspacePath)
      .addSuccess(Schema.Array(TokenSummary))
      .addError(NotFoundBody)
  )
  .add(
    HttpApiEndpoint.del("revokeToken", "/tokens/:tokenId")
      .setPath(Schema.Struct({ tokenId: TokenId }))
      .addSuccess(HttpApiSchema.NoContent)
      .addError(NotFoundBody)
      .annotate(OpenApi.Summary, "Revoke an API token; it stops working at once")
  )
  .add(
    HttpApiEndpoint.post("rotateWebhookSecret", "/workspaces/:workspaceId/webhook-secret/rotate")
      .setPath(WorkspacePath)
      .addSuccess(RotatedSecret)
      .addError(NotFoundBody)
  )
  .add(
    HttpApiEndpoint.post("createIntegration", "/workspaces/:workspaceId/integrations")
      .setPath(WorkspacePath)
      .setPayload(NewIntegration)
      .addSuccess(IntegrationJson, { status: 201 })
      .addError(NotFoundBody)
  )
  .add(
    HttpApiEndpoint.get("listIntegrations", "/workspaces/:workspaceId/integrations")
      .setPath(WorkspacePath)
      .addSuccess(Schema.Array(IntegrationJson))
      .addError(NotFoundBody)
  )
  .add(
    HttpApiEndpoint.post("createTone", "/workspaces/:workspaceId/tones")
      .setPath(WorkspacePath)
      .setPayload(NewTone)
      .addSuccess(ToneJson, { status: 201 })
      .addError(NotFoundBody)
  )
  .add(
    HttpApiEndpoint.get("listTones", "/workspaces/:workspaceId/tones")
      .setPath(WorkspacePath)
      .addSuccess(Schema.Array(ToneJson))
      .addError(NotFoundBody)
  )
  .add(
    HttpApiEndpoint.post("createArticle", "/workspaces/:workspaceId/articles")
      .setPath(WorkspacePath)
      .setPayload(NewArticle)
      .addSuccess(ArticleJson, { status: 201 })
      .addError(NotFoundBody)
      .annotate(OpenApi.Summary, "Add a knowledge-base article (the embedded responder answers from these)")
  )
  .add(
    HttpApiEndpoint.get("listArticles", "/workspaces/:workspaceId/articles")
      .setPath(WorkspacePath)
      .addSuccess(Schema.Array(ArticleJson))
      .addError(NotFoundBody)
  )
  .add(
    HttpApiEndpoint.get("getAiSettings", "/workspaces/:workspaceId/ai")
      .setPath(WorkspacePath)
      .addSuccess(AiSettingsView)
      .addError(NotFoundBody)
      .annotate(OpenApi.Summary, "The model that answers the workspace: its own settings, or the global default")
      .annotate(OpenApi.Description, "The API key is never returned: only whether one is set and its last four characters.")
  )
  .add(
    HttpApiEndpoint.put("setAiSettings", "/workspaces/:workspaceId/ai")
      .setPath(WorkspacePath)
      .setPayload(AiSettingsUpdate)
      .addSuccess(AiSettingsView)
      .addError(NotFoundBody)
      .annotate(OpenApi.Summary, "Give the workspace its own provider, model, base URL and API key")
      .annotate(
        OpenApi.Description,
        "Replaces the workspace's settings. The key is stored encrypted (with PARLEY_ENCRYPTION_KEY) and never " +
          "returned. Leaving apiKey out keeps the stored key while provider and baseUrl stay the same; null removes it."
      )
  )
  .add(
    HttpApiEndpoint.del("clearAiSettings", "/workspaces/:workspaceId/ai")
      .setPath(WorkspacePath)
      .addSuccess(HttpApiSchema.NoContent)
      .addError(NotFoundBody)
      .annotate(OpenApi.Summary, "Remove the workspace's own AI settings (and key): the global default answers again")
  )
  .add(
    HttpApiEndpoint.get("getAiUsage", "/workspaces/:workspaceId/ai/usage")
      .setPath(WorkspacePath)
      .setUrlParams(Schema.Struct({ days: Schema.optionalWith(UsageDays, { default: () => 30 }) }))
      .addSuccess(AiUsageReport)
      .addError(NotFoundBody)
      .annotate(OpenApi.Summary, "Tokens the workspace used per day (UTC), provider and model, over the last `days` days")
  )
  .middleware(AdminAuth)
  .prefix("/admin/v1")
{}
