/**
 * Replacing and deleting knowledge-base articles through the admin API
 * (`PUT|DELETE /admin/v1/workspaces/{workspaceId}/articles/{articleId}`): scoped to the workspace
 * (another workspace's article answers 404 and stays as it was), validated like adding one (422), and
 * the AI's search finds the new text at once, never the old.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import { Knowledge } from "../../src/Ai/Knowledge.js"
import { WorkspaceId } from "../../src/Domain/Ids.js"
import { ArticleJson } from "../../src/Domain/Knowledge.js"
import { CreatedWorkspace } from "../../src/Domain/Workspace.js"
import { ADMIN_TOKEN, bodyAs, call, DetailBody, TestApp, ValidationBody } from "../support/App.js"

const UNKNOWN_ARTICLE = "00000000-0000-4000-8000-000000000000"

const SHIPPING = {
  title: "Shipping",
  url: "https://help.example.com/shipping",
  body: "## Delivery times\n\nOrders leave our warehouse within two business days."
}

const admin = (method: "GET" | "POST" | "PUT" | "DELETE", path: string, body?: unknown) =>
  call(method, `/admin/v1${path}`, { token: ADMIN_TOKEN, ...(body === undefined ? {} : { body }) })

const createWorkspace = (name: string) =>
  admin("POST", "/workspaces", { name }).pipe(Effect.flatMap(bodyAs(CreatedWorkspace)), Effect.map((reply) => reply.body.id))

const addArticle = (workspaceId: string) =>
  admin("POST", `/workspaces/${workspaceId}/articles`, SHIPPING).pipe(
    Effect.flatMap(bodyAs(ArticleJson)),
    Effect.map((reply) => reply.body)
  )

const articlesOf = (workspaceId: string) =>
  admin("GET", `/workspaces/${workspaceId}/articles`).pipe(
    Effect.flatMap(bodyAs(Schema.Array(ArticleJson))),
    Effect.map((reply) => reply.body)
  )

const titlesFound = (workspaceId: string, query: string) =>
  Knowledge.use((knowledge) => knowledge.search(WorkspaceId.make(workspaceId), query, 5)).pipe(
    Effect.map((hits) => hits.map((hit) => hit.title))
  )

describe("PUT|DELETE /admin/v1/workspaces/{workspaceId}/articles/{articleId}", () => {
  it.layer(TestApp(), { timeout: 120_000 })((it) => {
    it.effect("PUT replaces the title, body and URL (a URL left out is removed); search finds the new text only", () =>
      Effect.gen(function*() {
        const workspaceId = yield* createWorkspace("Articles")
        const article = yield* addArticle(workspaceId)
        // Searched once, so that the index is cached before the change.
        expect(yield* titlesFound(workspaceId, "warehouse")).toEqual(["Shipping"])

        const replaced = yield* admin("PUT", `/workspaces/${workspaceId}/articles/${article.id}`, {
          title: "Delivery",
          body: "Parcels travel by carrier pigeon."
        })
        expect(replaced.status).toBe(200)
        expect((yield* bodyAs(ArticleJson)(replaced)).body).toEqual({
          id: article.id,
          title: "Delivery",
          url: null,
          createdAt: article.createdAt
        })
        expect(yield* articlesOf(workspaceId)).toEqual([{ id: article.id, title: "Delivery", url: null, createdAt: article.createdAt }])
        expect(yield* titlesFound(workspaceId, "carrier pigeon")).toEqual(["Delivery"])
        expect(yield* titlesFound(workspaceId, "warehouse")).toEqual([])
      }))

    it.effect("PUT validates like adding (422 at the field) and changes nothing", () =>
      Effect.gen(function*() {
        const workspaceId = yield* createWorkspace("Invalid")
        const article = yield* addArticle(workspaceId)
        const reply = yield* admin("PUT", `/workspaces/${workspaceId}/articles/${article.id}`, { title: "", body: "x", url: "help" })
        expect(reply.status).toBe(422)
        const { body } = yield* bodyAs(ValidationBody)(reply)
        expect(body.detail.map((item) => item.loc)).toEqual([["body", "title"], ["body", "url"]])
        const malformed = yield* admin("PUT", `/workspaces/${workspaceId}/articles/not-an-id`, SHIPPING)
        expect(malformed.status).toBe(422)
        expect((yield* bodyAs(ValidationBody)(malformed)).body.detail[0]?.loc).toEqual(["path", "articleId"])
        expect(yield* articlesOf(workspaceId)).toEqual([article])
      }))

    it.effect("DELETE removes the article and its passages (204), then answers 404", () =>
      Effect.gen(function*() {
        const workspaceId = yield* createWorkspace("Delete")
        const article = yield* addArticle(workspaceId)
        expect(yield* titlesFound(workspaceId, "warehouse")).toEqual(["Shipping"])

        const deleted = yield* admin("DELETE", `/workspaces/${workspaceId}/articles/${article.id}`)
        expect(deleted.status).toBe(204)
        expect(deleted.body).toBeUndefined()
        expect(yield* articlesOf(workspaceId)).toEqual([])
        expect(yield* titlesFound(workspaceId, "warehouse")).toEqual([])

        const again = yield* admin("DELETE", `/workspaces/${workspaceId}/articles/${article.id}`)
        expect(again.status).toBe(404)
        expect((yield* bodyAs(DetailBody)(again)).body).toEqual({ detail: "Article not found" })
      }))

    it.effect("another workspace's article, or an unknown one, answers 404 and stays as it was", () =>
      Effect.gen(function*() {
        const owner = yield* createWorkspace("Owner")
        const other = yield* createWorkspace("Other")
        const article = yield* addArticle(owner)

        const put = yield* admin("PUT", `/workspaces/${other}/articles/${article.id}`, { title: "Hijacked", body: "No" })
        expect(put.status).toBe(404)
        expect((yield* bodyAs(DetailBody)(put)).body).toEqual({ detail: "Article not found" })
        expect((yield* admin("DELETE", `/workspaces/${other}/articles/${article.id}`)).status).toBe(404)
        expect((yield* admin("PUT", `/workspaces/${owner}/articles/${UNKNOWN_ARTICLE}`, SHIPPING)).status).toBe(404)
        expect((yield* admin("DELETE", `/workspaces/${owner}/articles/${UNKNOWN_ARTICLE}`)).status).toBe(404)

        expect(yield* articlesOf(owner)).toEqual([article])
        expect(yield* articlesOf(other)).toEqual([])
        expect(yield* titlesFound(owner, "warehouse")).toEqual(["Shipping"])
        expect(yield* titlesFound(other, "Hijacked")).toEqual([])
      }))

    it.effect("every change of the knowledge base bumps its generation in the same transaction, a refused one does not", () =>
      Effect.gen(function*() {
        // The search index's version: an edit and an addition committing out of the order of their
        // passages' ids could leave the count and the largest id as they were; the generation cannot.
        const workspaceId = yield* createWorkspace("Generations")
        const generation = Effect.flatMap(SqlClient.SqlClient, (sql) =>
          sql<{ readonly g: string }>`SELECT kb_generation::text AS g FROM workspaces WHERE id = ${workspaceId}`).pipe(
            Effect.map((rows) => Number(rows[0]?.g)),
            Effect.orDie
          )
        expect(yield* generation).toBe(0)
        const article = yield* addArticle(workspaceId)
        expect(yield* generation).toBe(1)
        expect((yield* admin("PUT", `/workspaces/${workspaceId}/articles/${article.id}`, SHIPPING)).status).toBe(200)
        expect(yield* generation).toBe(2)
        expect((yield* admin("PUT", `/workspaces/${workspaceId}/articles/${UNKNOWN_ARTICLE}`, SHIPPING)).status).toBe(404)
        expect((yield* admin("DELETE", `/workspaces/${workspaceId}/articles/${UNKNOWN_ARTICLE}`)).status).toBe(404)
        expect(yield* generation).toBe(2)
        expect((yield* admin("DELETE", `/workspaces/${workspaceId}/articles/${article.id}`)).status).toBe(204)
        expect(yield* generation).toBe(3)
      }))
  })
})
