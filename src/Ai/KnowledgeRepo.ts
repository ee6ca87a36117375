import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { ArticleId, WorkspaceId } from "../Domain/Ids.js"
import { Article } from "../Domain/Knowledge.js"

/** A passage of an article, with the article's title and link: what retrieval returns. */
export const ChunkRow = Schema.Struct({
  id: Schema.NumberFromString,
  articleId: ArticleId,
  title: Schema.String,
  url: Schema.NullOr(Schema.String),
  heading: Schema.NullOr(Schema.String),
  text: Schema.String
})
export type ChunkRow = typeof ChunkRow.Type

export class KnowledgeRepo extends Effect.Service<KnowledgeRepo>()("Parley/KnowledgeRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const insertArticle = SqlSchema.single({
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
    ) => rows.length === 0 ? Effect.void : sql`INSERT INTO kb_chunks ${sql.insert(rows)}`.pipe(Effect.asVoid)

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
}) {}
