import * as SqlClient from "effect/sql/SqlClient"
import * as SqlSchema from "effect/sql/SqlSchema"
import * as Arr from "effect/Array"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { ArticleId, WorkspaceId } from "../Domain/Ids.js"
import { Article } from "../Domain/Knowledge.js"
import { DbNumber } from "../Domain/Primitives.js"

/** A passage of an article, with the article's title and link: what retrieval returns. */
export const ChunkRow = Schema.Struct({
  // bigserial, selected as text; `DbNumber` reads either form.
  id: DbNumber,
  articleId: ArticleId,
  title: Schema.String,
  url: Schema.NullOr(Schema.String),
  heading: Schema.NullOr(Schema.String),
  text: Schema.String
})
export type ChunkRow = typeof ChunkRow.Type

export class KnowledgeRepo extends Context.Service<KnowledgeRepo>()("Parley/KnowledgeRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const insertArticle = SqlSchema.findOne({
      Request: Article.insert,
      Result: Article,
      execute: (row) => sql`INSERT INTO kb_articles ${sql.insert(row)} RETURNING *`
    })

    const insertChunks = (
      rows: ReadonlyArray<
        {
          readonly articleId: ArticleId
          readonly workspaceId: WorkspaceId
          readonly ordinal: number
          readonly heading: string | null
          readonly text: string
        }
      >
    ) => Arr.isReadonlyArrayNonEmpty(rows) ? sql`INSERT INTO kb_chunks ${sql.insert(rows)}`.pipe(Effect.asVoid) : Effect.void

    const listArticles = SqlSchema.findAll({
      Request: WorkspaceId,
      Result: Article,
      execute: (workspaceId) =>
        sql`SELECT * FROM kb_articles WHERE workspace_id = ${workspaceId} ORDER BY created_at, id`
    })

    const chunks = SqlSchema.findAll({
      Request: WorkspaceId,
      Result: ChunkRow,
      execute: (workspaceId) =>
        sql`SELECT c.id::text AS id, c.article_id, a.title, a.url, c.heading, c.text
            FROM kb_chunks c JOIN kb_articles a ON a.id = c.article_id
            WHERE c.workspace_id = ${workspaceId} ORDER BY c.id`
    })

    /** Changes whenever the workspace's passages change: the cache key of its index. */
    const version = (workspaceId: WorkspaceId) =>
      sql<{ readonly version: string }>`
        SELECT count(*)::text || ':' || coalesce(max(id), 0)::text AS version
        FROM kb_chunks WHERE workspace_id = ${workspaceId}`.pipe(Effect.map((rows) => rows[0]?.version ?? "0:0"))

    return { insertArticle, insertChunks, listArticles, chunks, version } as const
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
  static readonly layer = this.layerWithoutDependencies
}
