/** The operators' API (`/admin/v1`), authenticated by the admin token. The CLI drives it. */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import * as Schema from "effect/Schema"
import { AdminAuth } from "../Auth/Api.js"
import { NotFoundBody } from "../Domain/Errors.js"
import { ArticleId, TokenId, ToneId, WorkspaceId } from "../Domain/Ids.js"
import { Integration, NewIntegration } from "../Domain/Integration.js"
import { HttpUrl, nonEmptyString, Timestamp } from "../Domain/Primitives.js"


export const NewWorkspace = Schema.Struct({ name: nonEmptyString(200) }).annotations({ identifier: "NewWorkspace" })

export const CreatedWorkspace = Schema.Struct({
  id: WorkspaceId,
  name: Schema.String,
  apiToken: Schema.String,
  webhookSecret: Schema.String
}).annotations({ identifier: "CreatedWorkspace", description: "The API token is shown only here." })

export const WorkspaceSummary = Schema.Struct({
  id: WorkspaceId,
  name: Schema.String,
  createdAt: Timestamp
}).annotations({ identifier: "WorkspaceSummary" })

export const WorkspaceDetail = Schema.Struct({
  id: WorkspaceId,
  name: Schema.String,
  createdAt: Timestamp,
  webhookSecret: Schema.String,
  webhookSecretEncryptedAtRest: Schema.Boolean
}).annotations({ identifier: "WorkspaceDetail" })

export const NewToken = Schema.Struct({
  name: Schema.optionalWith(Schema.NullOr(nonEmptyString(200)), { default: () => null })
}).annotations({ identifier: "NewToken" })

export const CreatedToken = Schema.Struct({
  id: TokenId,
  token: Schema.String
}).annotations({ identifier: "CreatedToken", description: "The token is shown only here." })

export const TokenSummary = Schema.Struct({
  id: TokenId,
  name: Schema.NullOr(Schema.String),
  createdAt: Timestamp,
  revokedAt: Schema.NullOr(Timestamp)
}).annotations({ identifier: "TokenSummary" })

export const RotatedSecret = Schema.Struct({
  webhookSecret: Schema.String,
  previousSecretExpiresAt: Timestamp
}).annotations({
  identifier: "RotatedSecret",
  description: "Until previousSecretExpiresAt, webhooks are signed with both the new and the previous secret."
})

export const NewTone = Schema.Struct({
  name: nonEmptyString(200),
  instructions: nonEmptyString(8000)
}).annotations({ identifier: "NewTone" })

export const Tone = Schema.Struct({
  id: ToneId,
  name: Schema.String,
  instructions: Schema.String
}).annotations({ identifier: "Tone" })

export const NewArticle = Schema.Struct({
  title: nonEmptyString(500),
  body: nonEmptyString(200_000),
  url: Schema.optionalWith(Schema.NullOr(HttpUrl), { default: () => null })
}).annotations({ identifier: "NewArticle" })

export const Article = Schema.Struct({
  id: ArticleId,
  title: Schema.String,
  url: Schema.NullOr(Schema.String),
  createdAt: Timestamp
}).annotations({ identifier: "Article" })

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
      .addSuccess(Integration, { status: 201 })
      .addError(NotFoundBody)
  )
  .add(
    HttpApiEndpoint.get("listIntegrations", "/workspaces/:workspaceId/integrations")
      .setPath(WorkspacePath)
      .addSuccess(Schema.Array(Integration))
      .addError(NotFoundBody)
  )
  .add(
    HttpApiEndpoint.post("createTone", "/workspaces/:workspaceId/tones")
      .setPath(WorkspacePath)
      .setPayload(NewTone)
      .addSuccess(Tone, { status: 201 })
      .addError(NotFoundBody)
  )
  .add(
    HttpApiEndpoint.get("listTones", "/workspaces/:workspaceId/tones")
      .setPath(WorkspacePath)
      .addSuccess(Schema.Array(Tone))
      .addError(NotFoundBody)
  )
  .add(
    HttpApiEndpoint.post("createArticle", "/workspaces/:workspaceId/articles")
      .setPath(WorkspacePath)
      .setPayload(NewArticle)
      .addSuccess(Article, { status: 201 })
      .addError(NotFoundBody)
      .annotate(OpenApi.Summary, "Add a knowledge-base article (the embedded responder answers from these)")
  )
  .add(
    HttpApiEndpoint.get("listArticles", "/workspaces/:workspaceId/articles")
      .setPath(WorkspacePath)
      .addSuccess(Schema.Array(Article))
      .addError(NotFoundBody)
  )
  .middleware(AdminAuth)
  .prefix("/admin/v1")
{}
