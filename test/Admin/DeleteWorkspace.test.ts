/**
 * `DELETE /admin/v1/workspaces/{id}`: at once the workspace is gone for every API, its tokens answer 401
 * (never 500) and its pending jobs are dropped; its data is then purged in batches by a job; other
 * workspaces are untouched. A workspace removed behind Parley's back (in SQL) answers 401, not 500.
 */
import { describe, expect, it } from "@effect/vitest"
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import { Workspaces } from "../../src/Workspaces/Workspaces.js"
import { ADMIN_TOKEN, call, makeTenant, type Tenant, TestApp } from "../support/App.js"

const message = (tenant: Tenant, id: string, text = "Where is my parcel?") =>
  call("POST", `/v1/webhooks/${tenant.integrationId}/message-received`, {
    token: tenant.token,
    body: { id, role: "human", customerId: "6f1c1f8e-1d7e-4c8e-9a0a-1b2c3d4e5f60", conversationId: `c-${id}`, text }
  })

/** Rows of the workspace's data, table by table (its integrations' for the tables keyed by integration). */
const rowsOf = (workspaceId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const count = (table: string) =>
      sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM ${sql(table)} WHERE workspace_id = ${workspaceId}`.pipe(
        Effect.map((rows) => rows[0]?.n ?? 0)
      )
    const messages = yield* sql<{ readonly n: number }>`
      SELECT count(*)::int AS n FROM messages m JOIN integrations i ON i.id = m.integration_id WHERE i.workspace_id = ${workspaceId}`
    return {
      workspaces: (yield* sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM workspaces WHERE id = ${workspaceId}`)[0]?.n,
      tokens: yield* count("api_tokens"),
      integrations: yield* count("integrations"),
      customers: yield* count("customers"),
      conversations: yield* count("conversations"),
      messages: messages[0]?.n,
      articles: yield* count("kb_articles")
    }
  }).pipe(Effect.orDie)

const liveJobs = (group: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ readonly kind: string; readonly runInSeconds: number }>`
      SELECT kind, extract(epoch FROM run_at - now())::float8 AS run_in_seconds FROM jobs
      WHERE group_key = ${group} AND status IN ('pending', 'running') ORDER BY kind`).pipe(Effect.orDie)

describe("deleting a workspace", () => {
  it.layer(TestApp(), { timeout: 120_000 })((it) => {
    it.effect("its tokens answer 401 at once on every route, it answers 404, its pending jobs are gone, others untouched", () =>
      Effect.gen(function*() {
        const doomed = yield* makeTenant()
        const kept = yield* makeTenant()
        expect((yield* message(doomed, "m1")).status).toBe(200)
        expect((yield* message(kept, "m1")).status).toBe(200)
        // Authenticated (and remembered by the token cache) just before the deletion.
        expect((yield* call("GET", "/v1/integration/list", { token: doomed.token })).status).toBe(200)
        expect((yield* liveJobs(doomed.workspaceId)).map((j) => j.kind)).toEqual(["generate_reply"])

        const deleted = yield* call("DELETE", `/admin/v1/workspaces/${doomed.workspaceId}`, { token: ADMIN_TOKEN })
        expect(deleted.status).toBe(204)

        const list = yield* call("GET", "/v1/integration/list", { token: doomed.token })
        expect(list.status).toBe(401)
        expect(list.body).toEqual({ detail: "Invalid or revoked token" })
        expect(list.headers["www-authenticate"]).toBe("Bearer")
        expect((yield* message(doomed, "m2")).status).toBe(401)
        expect((yield* call("GET", `/v1/customer/external-id/anyone`, { token: doomed.token })).status).toBe(401)
        expect((yield* call("GET", `/admin/v1/workspaces/${doomed.workspaceId}`, { token: ADMIN_TOKEN })).status).toBe(404)
        const workspaces = yield* call("GET", "/admin/v1/workspaces", { token: ADMIN_TOKEN })
        expect((workspaces.body as Array<{ id: string }>).map((w) => w.id)).not.toContain(doomed.workspaceId)

        // Its reply will never be generated; the purge is queued for later (after in-flight requests).
        const jobs = yield* liveJobs(doomed.workspaceId)
        expect(jobs.map((j) => j.kind)).toEqual(["purge_workspace"])
        expect(jobs[0]!.runInSeconds).toBeGreaterThan(20)

        // The other workspace works as before.
        expect((yield* call("GET", "/v1/integration/list", { token: kept.token })).status).toBe(200)
        expect((yield* message(kept, "m2")).status).toBe(200)
        expect((yield* liveJobs(kept.workspaceId)).map((j) => j.kind)).toEqual(["generate_reply", "generate_reply"])
      }))

    it.effect("the purge removes all of its data in batches and nothing of another workspace's", () =>
      Effect.gen(function*() {
        const doomed = yield* makeTenant()
        const kept = yield* makeTenant()
        for (const id of ["a", "b", "c"]) {
          expect((yield* message(doomed, id)).status).toBe(200)
          expect((yield* message(kept, id)).status).toBe(200)
        }
        yield* call("POST", `/admin/v1/workspaces/${doomed.workspaceId}/articles`, {
          token: ADMIN_TOKEN,
          body: { title: "Shipping", body: "Orders ship in a day." }
        })
        const keptBefore = yield* rowsOf(kept.workspaceId)
        expect(yield* rowsOf(doomed.workspaceId)).toEqual({
          workspaces: 1, tokens: 1, integrations: 1, customers: 1, conversations: 3, messages: 3, articles: 1
        })

        expect((yield* call("DELETE", `/admin/v1/workspaces/${doomed.workspaceId}`, { token: ADMIN_TOKEN })).status).toBe(204)
        // Still stored until the purge, but unreachable.
        expect((yield* rowsOf(doomed.workspaceId)).conversations).toBe(3)
        yield* Effect.flatMap(Workspaces, (w) => w.purge(doomed.workspaceId))

        expect(yield* rowsOf(doomed.workspaceId)).toEqual({
          workspaces: 0, tokens: 0, integrations: 0, customers: 0, conversations: 0, messages: 0, articles: 0
        })
        expect(yield* rowsOf(kept.workspaceId)).toEqual(keptBefore)
        expect((yield* call("DELETE", `/admin/v1/workspaces/${doomed.workspaceId}`, { token: ADMIN_TOKEN })).status).toBe(404)
      }))

    it.effect("an unknown workspace is a 404; deleting needs the admin token", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const unknown = yield* call("DELETE", "/admin/v1/workspaces/00000000-0000-4000-8000-000000000000", { token: ADMIN_TOKEN })
        expect(unknown.status).toBe(404)
        expect(unknown.body).toEqual({ detail: "Workspace not found" })
        const withApiToken = yield* call("DELETE", `/admin/v1/workspaces/${tenant.workspaceId}`, { token: tenant.token })
        expect(withApiToken.status).toBe(401)
        expect((yield* call("GET", "/v1/integration/list", { token: tenant.token })).status).toBe(200)
      }))

    it.effect("a workspace deleted in SQL behind Parley's back: its cached token answers 401, never 500", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const tenant = yield* makeTenant()
        // The token's lookup is now cached (PARLEY_TOKEN_CACHE_TTL), the integration's too.
        expect((yield* message(tenant, "before")).status).toBe(200)
        yield* sql`DELETE FROM workspaces WHERE id = ${tenant.workspaceId}`.pipe(Effect.orDie)
        const after = yield* message(tenant, "after")
        expect(after.status).toBe(401)
        expect(after.body).toEqual({ detail: "Invalid or revoked token" })
        const csat = yield* call("POST", `/v1/webhooks/${tenant.integrationId}/csat-response-received`, {
          token: tenant.token,
          body: { conversationId: "c-before", ratingStyle: 5, ratingAnswer: "5", csatComment: "" }
        })
        expect([401, 404]).toContain(csat.status)
      }))
  })
})
