import * as Model from "effect/schema/Model"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { CreatedAt, Internal } from "./Fields.js"
import { ArticleId, WorkspaceId } from "./Ids.js"
import { HttpUrl, nonEmptyString } from "./Primitives.js"

/** A knowledge-base article of a workspace; its passages are what the embedded responder answers with. */
export class Article extends Model.Class<Article>("Article")({
  id: Model.GeneratedByDb(ArticleId),
  workspaceId: Internal(WorkspaceId),
  title: Model.Field({ select: Schema.String, insert: Schema.String, json: Schema.String, jsonCreate: nonEmptyString(500) }),
  body: Model.Field({ select: Schema.String, insert: Schema.String, jsonCreate: nonEmptyString(200_000) }),
  url: Model.Field({
    select: Schema.NullOr(Schema.String),
    insert: Schema.NullOr(Schema.String),
    json: Schema.NullOr(Schema.String),
    jsonCreate: Schema.NullOr(HttpUrl).pipe(Schema.withDecodingDefaultTypeKey(Effect.succeed(null)))
  }),
  createdAt: CreatedAt
}) {}

export const ArticleJson = Article.json.annotate({
  identifier: "Article",
  description: "A knowledge-base article (its body is not returned)"
})
export const NewArticle = Article.jsonCreate.annotate({ identifier: "NewArticle" })
