import * as Model from "@effect/sql/Model"
import * as Schema from "effect/Schema"
import { CreatedAt, Internal } from "./Fields.js"
import { ArticleId, WorkspaceId } from "./Ids.js"
import { HttpUrl, nonEmptyString } from "./Primitives.js"

/** A knowledge-base article of a workspace; its passages are what the embedded responder answers with. */
export class Article extends Model.Class<Article>("Article")({
  id: Model.Generated(ArticleId),
  workspaceId: Internal(WorkspaceId),
  title: Model.Field({ select: Schema.String, insert: Schema.String, json: Schema.String, jsonCreate: nonEmptyString(500) }),
  body: Model.Field({ select: Schema.String, insert: Schema.String, jsonCreate: nonEmptyString(200_000) }),
  url: Model.Field({
    select: Schema.NullOr(Schema.String),
    insert: Schema.NullOr(Schema.String),
    json: Schema.NullOr(Schema.String),
    jsonCreate: Schema.optionalWith(Schema.NullOr(HttpUrl), { default: () => null })
  }),
  createdAt: CreatedAt
}) {}

export const ArticleJson = Article.json.annotations({ identifier: "Article" })
export const NewArticle = Article.jsonCreate.annotations({ identifier: "NewArticle" })
