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

/** An article as a list shows it: its size in characters and passages, not its body. */
export const ArticleSummary = Schema.Struct({
  id: ArticleId,
  title: Schema.String,
  url: Schema.NullOr(Schema.String),
  createdAt: Schema.DateTimeUtcFromDate,
  characters: DbNumber,
  passages: DbNumber
})
export type ArticleSummary = typeof ArticleSummary.Type

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

    const findArticle = SqlSchema.findOneOption({
      Request: Schema.Struct({ id: ArticleId, workspaceId: WorkspaceId }),
      Result: Article,
      execute: ({ id, workspaceId }) => sql`SELECT * FROM kb_articles WHERE id = ${id} AND workspace_id = ${workspaceId}`
    })

    /** Replaces the article's title, body and URL, if it is the workspace's. */
    const updateArticle = SqlSchema.findOneOption({
      Request: Schema.Struct({
        id: ArticleId,
        workspaceId: WorkspaceId,
        title: Schema.String,
        body: Schema.String,
        url: Schema.NullOr(Schema.String)
      }),
      Result: Article,
      execute: ({ body, id, title, url, workspaceId }) =>
        sql`UPDATE kb_articles SET title = ${title}, body = ${body}, url = ${url}
            WHERE id = ${id} AND workspace_id = ${workspaceId} RETURNING *`
    })

    /** Deletes the article (its passages with it), if it is the workspace's. */
    const deleteArticle = SqlSchema.findOneOption({
      Request: Schema.Struct({ id: ArticleId, workspaceId: WorkspaceId }),
      Result: Schema.Struct({ id: ArticleId }),
      execute: ({ id, workspaceId }) =>
        sql`DELETE FROM kb_articles WHERE id = ${id} AND workspace_id = ${workspaceId} RETURNING id`
    })

    // By workspace too: kb_chunks is indexed by workspace, not by article.
    const deleteChunks = (workspaceId: WorkspaceId, articleId: ArticleId) =>
      Effect.asVoid(sql`DELETE FROM kb_chunks WHERE workspace_id = ${workspaceId} AND article_id = ${articleId}`)

    const listArticles = SqlSchema.findAll({
      Request: WorkspaceId,
      Result: Article,
      execute: (workspaceId) =>
        sql`SELECT * FROM kb_articles WHERE workspace_id = ${workspaceId} ORDER BY created_at, id`
    })

    /** The workspace's articles without their bodies: sizes and passage counts instead. */
    const listSummaries = SqlSchema.findAll({
      Request: WorkspaceId,
      Result: ArticleSummary,
      execute: (workspaceId) =>
        sql`SELECT a.id, a.title, a.url, a.created_at, char_length(a.body) AS characters, count(c.id) AS passages
            FROM kb_articles a LEFT JOIN kb_chunks c ON c.workspace_id = a.workspace_id AND c.article_id = a.id
            WHERE a.workspace_id = ${workspaceId}
            GROUP BY a.id ORDER BY a.created_at, a.id`
    })

    const chunks = SqlSchema.findAll({
      Request: WorkspaceId,
      Result: ChunkRow,
      execute: (workspaceId) =>
        sql`SELECT c.id::text AS id, c.article_id, a.title, a.url, c.heading, c.text
            FROM kb_chunks c JOIN kb_articles a ON a.id = c.article_id
            WHERE c.workspace_id = ${workspaceId} ORDER BY c.id`
    })

    /**
     * Changes whenever the workspace's passages change: the cache key of its index. Passages are never
     * changed in place (an edited article gets new ones, with new ids), and ids only grow, so the same
     * count and largest id always mean the same passages, with the same titles and links.
     */
    /**
     * The version of the workspace's passages: its knowledge generation (bumped by every change,
     * `bumpGeneration`), with their count and largest id (which also change with a row written another way).
     */
    const version = (workspaceId: WorkspaceId) =>
      sql<{ readonly version: string }>`
        SELECT (SELECT kb_generation FROM workspaces WHERE id = ${workspaceId})::text || ':' ||
               count(*)::text || ':' || coalesce(max(id), 0)::text AS version
        FROM kb_chunks WHERE workspace_id = ${workspaceId}`.pipe(Effect.map((rows) => rows[0]?.version ?? "0:0:0"))

    /** Marks a change of the workspace's knowledge base, in the transaction that makes it. */
    const bumpGeneration = (workspaceId: WorkspaceId) =>
      sql`UPDATE workspaces SET kb_generation = kb_generation + 1 WHERE id = ${workspaceId}`.pipe(Effect.asVoid)

    return {
      insertArticle,
      insertChunks,
      findArticle,
      updateArticle,
      deleteArticle,
      deleteChunks,
      listArticles,
      listSummaries,
      chunks,
      version,
      bumpGeneration
    } as const
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
  static readonly layer = this.layerWithoutDependencies
}
