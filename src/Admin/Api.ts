/** The operators' API (`/admin/v1`), authenticated by the admin token. The CLI drives it. */
import * as Effect from "effect/Effect"
import * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import * as HttpApiGroup from "effect/http-api/HttpApiGroup"
import * as HttpApiSchema from "effect/http-api/HttpApiSchema"
import * as OpenApi from "effect/http-api/OpenApi"
import * as Schema from "effect/Schema"
import { AdminAuth } from "../Auth/Api.js"
import { AiSettingsUpdate, AiSettingsView, AiUsageReport, UsageDays } from "../Domain/AiSettings.js"
import { NotFoundBody } from "../Domain/Errors.js"
import { ArticleId, TokenId, WorkspaceId } from "../Domain/Ids.js"
import { InstructionsJson, NewInstructions } from "../Domain/Instructions.js"
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
const ArticlePath = Schema.Struct({ workspaceId: WorkspaceId, articleId: ArticleId })

export class AdminApi extends HttpApiGroup.make("admin")
  .add(
    HttpApiEndpoint.post("createWorkspace", "/workspaces", {
      payload: NewWorkspace,
      success: CreatedWorkspace.pipe(HttpApiSchema.status(201))
    }).annotate(OpenApi.Summary, "Create a workspace, its first API token and its webhook secret")
  )
  .add(
    HttpApiEndpoint.get("listWorkspaces", "/workspaces", {
      success: Schema.Array(WorkspaceSummary).annotate({ description: "Every workspace" })
    }).annotate(OpenApi.Summary, "List workspaces")
  )
  .add(
    HttpApiEndpoint.get("getWorkspace", "/workspaces/:workspaceId", {
      params: WorkspacePath,
      success: WorkspaceDetail,
      error: NotFoundBody
    }).annotate(OpenApi.Summary, "A workspace and its current webhook secret")
  )
  .add(
    HttpApiEndpoint.delete("deleteWorkspace", "/workspaces/:workspaceId", {
      params: WorkspacePath,
      success: HttpApiSchema.NoContent.annotate({ description: "Deleted: its tokens stop working at once" }),
      error: NotFoundBody
    })
      .annotate(OpenApi.Summary, "Delete a workspace and everything it owns")
      .annotate(
        OpenApi.Description,
        "At once, on every instance: its API tokens stop working (401), it and its integrations answer 404, and " +
          "its pending replies and deliveries are dropped. Its data (conversations, messages, customers, deliveries, " +
          "knowledge base, settings) is then removed in the background, in batches. Not reversible."
      )
  )
  .add(
    HttpApiEndpoint.post("createToken", "/workspaces/:workspaceId/tokens", {
      params: WorkspacePath,
      payload: NewToken,
      success: CreatedToken.pipe(HttpApiSchema.status(201)),
      error: NotFoundBody
    }).annotate(OpenApi.Summary, "Create another API token for a workspace (shown once)")
  )
  .add(
    HttpApiEndpoint.get("listTokens", "/workspaces/:workspaceId/tokens", {
      params: WorkspacePath,
      success: Schema.Array(TokenSummary).annotate({ description: "The workspace's API tokens, revoked ones included" }),
      error: NotFoundBody
    }).annotate(OpenApi.Summary, "List a workspace's API tokens (never their values)")
  )
  .add(
    HttpApiEndpoint.delete("revokeToken", "/tokens/:tokenId", {
      params: Schema.Struct({ tokenId: TokenId }),
      success: HttpApiSchema.NoContent.annotate({ description: "Revoked: the token stops working at once" }),
      error: NotFoundBody
    }).annotate(OpenApi.Summary, "Revoke an API token; it stops working at once")
  )
  .add(
    HttpApiEndpoint.post("rotateWebhookSecret", "/workspaces/:workspaceId/webhook-secret/rotate", {
      params: WorkspacePath,
      success: RotatedSecret,
      error: NotFoundBody
    }).annotate(OpenApi.Summary, "Rotate the workspace's webhook secret (the previous one stays valid for a grace period)")
  )
  .add(
    HttpApiEndpoint.post("createIntegration", "/workspaces/:workspaceId/integrations", {
      params: WorkspacePath,
      payload: NewIntegration,
      success: IntegrationJson.pipe(HttpApiSchema.status(201)),
      error: NotFoundBody
    }).annotate(OpenApi.Summary, "Create an integration: its webhook URL, headers, metadata and settings")
  )
  .add(
    HttpApiEndpoint.get("listIntegrations", "/workspaces/:workspaceId/integrations", {
      params: WorkspacePath,
      success: Schema.Array(IntegrationJson).annotate({ description: "The workspace's integrations" }),
      error: NotFoundBody
    }).annotate(OpenApi.Summary, "List a workspace's integrations")
  )
  .add(
    HttpApiEndpoint.post("createTone", "/workspaces/:workspaceId/tones", {
      params: WorkspacePath,
      payload: NewTone,
      success: ToneJson.pipe(HttpApiSchema.status(201)),
      error: NotFoundBody
    }).annotate(OpenApi.Summary, "Create a tone (instructions an integration's replies follow)")
  )
  .add(
    HttpApiEndpoint.get("listTones", "/workspaces/:workspaceId/tones", {
      params: WorkspacePath,
      success: Schema.Array(ToneJson).annotate({ description: "The workspace's tones" }),
      error: NotFoundBody
    }).annotate(OpenApi.Summary, "List a workspace's tones")
  )
  .add(
    HttpApiEndpoint.post("setInstructions", "/workspaces/:workspaceId/instructions", {
      params: WorkspacePath,
      payload: NewInstructions,
      success: InstructionsJson.pipe(HttpApiSchema.status(201)),
      error: NotFoundBody
    }).annotate(OpenApi.Summary, "Set the AI's standing instructions for the workspace or one integration (a new version)")
  )
  .add(
    HttpApiEndpoint.get("listInstructions", "/workspaces/:workspaceId/instructions", {
      params: WorkspacePath,
      success: Schema.Array(InstructionsJson).annotate({ description: "Every version, newest first" }),
      error: NotFoundBody
    }).annotate(OpenApi.Summary, "List the versions of a workspace's standing instructions")
  )
  .add(
    HttpApiEndpoint.post("createArticle", "/workspaces/:workspaceId/articles", {
      params: WorkspacePath,
      payload: NewArticle,
      success: ArticleJson.pipe(HttpApiSchema.status(201)),
      error: NotFoundBody
    }).annotate(OpenApi.Summary, "Add a knowledge-base article (the embedded responder answers from these)")
  )
  .add(
    HttpApiEndpoint.get("listArticles", "/workspaces/:workspaceId/articles", {
      params: WorkspacePath,
      success: Schema.Array(ArticleJson).annotate({ description: "The workspace's knowledge-base articles" }),
      error: NotFoundBody
    }).annotate(OpenApi.Summary, "List a workspace's knowledge-base articles")
  )
  .add(
    HttpApiEndpoint.put("updateArticle", "/workspaces/:workspaceId/articles/:articleId", {
      params: ArticlePath,
      payload: NewArticle,
      success: ArticleJson,
      error: NotFoundBody
    })
      .annotate(OpenApi.Summary, "Replace a knowledge-base article's title, body and URL")
      .annotate(
        OpenApi.Description,
        "The whole article is replaced (a url left out removes the link) and its passages are cut again: the next " +
          "search, the AI's included, finds the new text. 404 for an unknown article or another workspace's."
      )
  )
  .add(
    HttpApiEndpoint.delete("deleteArticle", "/workspaces/:workspaceId/articles/:articleId", {
      params: ArticlePath,
      success: HttpApiSchema.NoContent.annotate({ description: "Deleted: the AI no longer finds its passages" }),
      error: NotFoundBody
    }).annotate(OpenApi.Summary, "Delete a knowledge-base article (404 for an unknown one or another workspace's)")
  )
  .add(
    HttpApiEndpoint.get("getAiSettings", "/workspaces/:workspaceId/ai", {
      params: WorkspacePath,
      success: AiSettingsView,
      error: NotFoundBody
    })
      .annotate(OpenApi.Summary, "The model that answers the workspace: its own settings, or the global default")
      .annotate(OpenApi.Description, "The API key is never returned: only whether one is set and its last four characters.")
  )
  .add(
    HttpApiEndpoint.put("setAiSettings", "/workspaces/:workspaceId/ai", {
      params: WorkspacePath,
      payload: AiSettingsUpdate,
      success: AiSettingsView,
      error: NotFoundBody
    })
      .annotate(OpenApi.Summary, "Give the workspace its own provider, model, base URL and API key")
      .annotate(
        OpenApi.Description,
        "Replaces the workspace's settings. The key is stored encrypted (with PARLEY_ENCRYPTION_KEY) and never " +
          "returned. Leaving apiKey out keeps the stored key while provider and baseUrl stay the same; null removes it."
      )
  )
  .add(
    HttpApiEndpoint.delete("clearAiSettings", "/workspaces/:workspaceId/ai", {
      params: WorkspacePath,
      success: HttpApiSchema.NoContent.annotate({ description: "Removed: the global default answers again" }),
      error: NotFoundBody
    }).annotate(OpenApi.Summary, "Remove the workspace's own AI settings (and key): the global default answers again")
  )
  .add(
    HttpApiEndpoint.get("getAiUsage", "/workspaces/:workspaceId/ai/usage", {
      params: WorkspacePath,
      query: Schema.Struct({ days: UsageDays.pipe(Schema.withDecodingDefaultTypeKey(Effect.succeed(30))) }),
      success: AiUsageReport,
      error: NotFoundBody
    }).annotate(OpenApi.Summary, "Tokens the workspace used per day (UTC), provider and model, over the last `days` days")
  )
  .middleware(AdminAuth)
  .prefix("/admin/v1")
  .annotate(
    OpenApi.Description,
    "The operator's API, with the admin token (PARLEY_ADMIN_TOKEN): workspaces, API tokens, webhook secrets, " +
      "integrations, tones, knowledge base and AI settings. The parley CLI drives it."
  )
{}
