/** A workspace's knowledge base: articles, their passages, and BM25 search over them. */
import * as SqlClient from "effect/sql/SqlClient"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { WorkspaceId } from "../Domain/Ids.js"
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

export class Knowledge extends Context.Service<Knowledge>()("Parley/Knowledge", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const repo = yield* KnowledgeRepo
    // Indexes are rebuilt only when the workspace's passages changed (cheap version query first).
    const cache = new Map<WorkspaceId, { readonly version: string; readonly index: Index; readonly chunks: Map<string, ChunkRow> }>()

    const addArticle = Effect.fn("Knowledge.addArticle")(
      function*(workspaceId: WorkspaceId, article: Pick<Article, "title" | "body" | "url">) {
        return yield* Effect.gen(function*() {
          const stored = yield* repo.insertArticle({ workspaceId, ...article })
          yield* repo.insertChunks(
            chunk(article.body).map((passage, ordinal) => ({
              articleId: stored.id,
              workspaceId,
              ordinal,
              heading: passage.heading,
              text: passage.text
            }))
          )
          return stored
        }).pipe(sql.withTransaction)
      },
      orDieSql
    )

    const listArticles = Effect.fn("Knowledge.listArticles")(function*(workspaceId: WorkspaceId) {
      return yield* repo.listArticles(workspaceId)
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

    return { addArticle, listArticles, search } as const
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
  static readonly layer = this.layerWithoutDependencies.pipe(Layer.provide(KnowledgeRepo.layer))
}
