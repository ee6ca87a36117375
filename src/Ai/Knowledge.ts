/** A workspace's knowledge base: articles, their passages, and BM25 search over them. */
import * as SqlClient from "effect/sql/SqlClient"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { NotFound } from "../Domain/Errors.js"
import type { ArticleId, WorkspaceId } from "../Domain/Ids.js"
import type { Article } from "../Domain/Knowledge.js"
import { orDieSql } from "../Sql.js"
import { buildIndex, chunk, type Index, tokenize } from "./Bm25.js"
import { type ChunkRow, KnowledgeRepo } from "./KnowledgeRepo.js"

export interface Hit {
  readonly articleId: string
  readonly title: string
  readonly url: string | null
  readonly heading: string | null
  readonly text: string
  readonly score: number
  readonly relevance: number
  readonly coverage: number
}

/** What an article is made of, as added or replaced. */
export type ArticleInput = Pick<Article, "title" | "body" | "url">

const articleNotFound = new NotFound({ detail: "Article not found" })

export class Knowledge extends Context.Service<Knowledge>()("Parley/Knowledge", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const repo = yield* KnowledgeRepo
    // Indexes are rebuilt only when the workspace's passages changed (cheap version query first).
    const cache = new Map<WorkspaceId, { readonly version: string; readonly index: Index; readonly chunks: Map<string, ChunkRow> }>()

    const passagesOf = (workspaceId: WorkspaceId, articleId: ArticleId, body: string) =>
      chunk(body).map((passage, ordinal) => ({
        articleId,
        workspaceId,
        ordinal,
        heading: passage.heading,
        text: passage.text
      }))

    const addArticle = Effect.fn("Knowledge.addArticle")(
      function*(workspaceId: WorkspaceId, article: ArticleInput) {
        return yield* Effect.gen(function*() {
          yield* repo.bumpGeneration(workspaceId)
          const stored = yield* repo.insertArticle({ workspaceId, ...article })
          yield* repo.insertChunks(passagesOf(workspaceId, stored.id, article.body))
          return stored
        }).pipe(sql.withTransaction)
      },
      orDieSql
    )

    /** The workspace's article `articleId` (404 for an unknown one or another workspace's). */
    const getArticle = Effect.fn("Knowledge.getArticle")(function*(workspaceId: WorkspaceId, articleId: ArticleId) {
      const found = yield* repo.findArticle({ id: articleId, workspaceId })
      return Option.isSome(found) ? found.value : yield* articleNotFound
    }, orDieSql)

    /**
     * Replaces the workspace's article `articleId` (404 for an unknown one or another workspace's). Its
     * passages are cut again, and the knowledge generation bumped in the same transaction (every change
     * does, in commit order): the next search, on any instance, finds the new text.
     */
    const updateArticle = Effect.fn("Knowledge.updateArticle")(
      function*(workspaceId: WorkspaceId, articleId: ArticleId, article: ArticleInput) {
        return yield* Effect.gen(function*() {
          yield* repo.bumpGeneration(workspaceId)
          const updated = yield* repo.updateArticle({ id: articleId, workspaceId, ...article })
          if (Option.isNone(updated)) return yield* articleNotFound
          yield* repo.deleteChunks(workspaceId, articleId)
          yield* repo.insertChunks(passagesOf(workspaceId, articleId, article.body))
          return updated.value
        }).pipe(sql.withTransaction)
      },
      orDieSql
    )

    /** Deletes the workspace's article `articleId` and its passages (404 for an unknown one or another workspace's). */
    const removeArticle = Effect.fn("Knowledge.removeArticle")(
      function*(workspaceId: WorkspaceId, articleId: ArticleId) {
        return yield* Effect.gen(function*() {
          yield* repo.bumpGeneration(workspaceId)
          const deleted = yield* repo.deleteArticle({ id: articleId, workspaceId })
          if (Option.isNone(deleted)) return yield* articleNotFound
        }).pipe(sql.withTransaction)
      },
      orDieSql
    )

    const listArticles = Effect.fn("Knowledge.listArticles")(function*(workspaceId: WorkspaceId) {
      return yield* repo.listArticles(workspaceId)
    }, orDieSql)

    /** The workspace's articles, oldest first, with their sizes instead of their bodies. */
    const listSummaries = Effect.fn("Knowledge.listSummaries")(function*(workspaceId: WorkspaceId) {
      return yield* repo.listSummaries(workspaceId)
    }, orDieSql)

    const indexOf = (workspaceId: WorkspaceId) =>
      Effect.gen(function*() {
        const version = yield* repo.version(workspaceId)
        const cached = cache.get(workspaceId)
        if (cached !== undefined && cached.version === version) return cached
        const rows = yield* repo.chunks(workspaceId)
        const entry = {
          version,
          chunks: new Map(rows.map((row) => [String(row.id), row])),
          index: buildIndex(
            rows.map((row) => ({
              id: String(row.id),
              terms: tokenize(`${row.title} ${row.heading ?? ""} ${row.text}`)
            }))
          )
        }
        cache.set(workspaceId, entry)
        return entry
      }).pipe(Effect.orDie)

    /** The best passages for `query`, best first. */
    const search = Effect.fn("Knowledge.search")(function*(workspaceId: WorkspaceId, query: string, limit = 3) {
      const { chunks, index } = yield* indexOf(workspaceId)
      return index.search(query, limit).flatMap((scored): Array<Hit> => {
        const row = chunks.get(scored.id)
        return row === undefined ? [] : [{
          articleId: row.articleId,
          title: row.title,
          url: row.url,
          heading: row.heading,
          text: row.text,
          score: scored.score,
          relevance: scored.relevance,
          coverage: scored.coverage
        }]
      })
    })

    return { addArticle, getArticle, updateArticle, removeArticle, listArticles, listSummaries, search } as const
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
  static readonly layer = this.layerWithoutDependencies.pipe(Layer.provide(KnowledgeRepo.layer))
}
