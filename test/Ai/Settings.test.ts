/**
 * Per-workspace AI settings and token use: the admin API (`/admin/v1/workspaces/{id}/ai`, `…/ai/usage`)
 * on the real app and database, and `WorkspaceAiSettings.resolve` / `recordUsage` as the reply path
 * calls them. The key is write-only: never in a response, sealed in the table when a key is configured.
 * (Top-level `layer`, not `it.layer`, for each block: `it.layer` twice in one file nests the second
 * layer into the first, whose services and server it would then share.)
 */
import { describe, expect, layer } from "@effect/vitest"
import { HttpClient, HttpClientRequest } from "effect/http"
import { HttpApiClient } from "effect/http-api"
import * as SqlClient from "effect/sql/SqlClient"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import type { ModelSettings } from "../../src/Ai/Llm/Contract.js"
import { WorkspaceAiSettings } from "../../src/Ai/Settings.js"
import { Api } from "../../src/Api.js"
import { AiSettingsView, AiUsageReport } from "../../src/Domain/AiSettings.js"
import { WorkspaceId } from "../../src/Domain/Ids.js"
import { CreatedWorkspace } from "../../src/Domain/Workspace.js"
import { validationDetail } from "../Fuzz/Wire.js"
import { ADMIN_TOKEN, bodyAs, call, TestApp } from "../support/App.js"

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/
const OPENAI_KEY = "sk-test-workspace-a-0123456789abcdefWXYZ"
const OTHER_KEY = "sk-test-workspace-b-9876543210fedcbaQRST"
const GLOBAL_KEY = "sk-global-operator-key-000000000000GLOB"
const ENCRYPTION_KEY = "11".repeat(32)
const unknownWorkspace = "00000000-0000-4000-8000-000000000000"

const admin = (method: "GET" | "PUT" | "DELETE" | "POST", path: string, body?: unknown) =>
  call(method, `/admin/v1${path}`, body === undefined ? { token: ADMIN_TOKEN } : { token: ADMIN_TOKEN, body })

const createWorkspace = (name = "Acme") =>
  admin("POST", "/workspaces", { name }).pipe(
    Effect.flatMap(bodyAs(CreatedWorkspace)),
    Effect.map((reply) => Schema.decodeSync(WorkspaceId)(reply.body.id))
  )

const putAi = (workspaceId: string, body: unknown) => admin("PUT", `/workspaces/${workspaceId}/ai`, body)
const getAi = (workspaceId: string) => admin("GET", `/workspaces/${workspaceId}/ai`)

const storedKey = (workspaceId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ readonly apiKey: string | null }>`SELECT api_key FROM workspace_ai_settings WHERE workspace_id = ${workspaceId}`
  ).pipe(Effect.map((rows) => rows.map((row) => row.apiKey)), Effect.orDie)

/** What `resolve` answers, with the key in clear (the comparison is the point). */
const plain = (settings: Option.Option<ModelSettings>) =>
  Option.map(settings, (s) => ({ ...s, apiKey: Redacted.value(s.apiKey) }))

const day = (iso: string) => DateTime.makeUnsafe(`${iso}T12:00:00Z`)

describe("per-workspace AI settings (no PARLEY_ENCRYPTION_KEY, global default embedded)", () => {
  layer(TestApp(), { timeout: 120_000 })((it) => {
    it.effect("GET without settings of its own answers the global default: embedded, no key", () =>
      Effect.gen(function*() {
        const workspaceId = yield* createWorkspace()
        const reply = yield* getAi(workspaceId)
        expect(reply.status).toBe(200)
        const { body } = yield* bodyAs(AiSettingsView)(reply)
        expect(body).toEqual({
          workspaceId,
          source: "global",
          provider: "embedded",
          model: null,
          baseUrl: null,
          openAiApi: null,
          apiKeySet: false,
          apiKeyHint: null,
          apiKeyEncryptedAtRest: false,
          updatedAt: null
        })
      }))

    it.effect("PUT stores provider, model and key; no response ever carries the key; without an encryption key it is stored as is, like webhook secrets", () =>
      Effect.gen(function*() {
        const workspaceId = yield* createWorkspace()
        const reply = yield* putAi(workspaceId, { provider: "openai", model: "gpt-4.1-mini", apiKey: OPENAI_KEY })
        expect(reply.status).toBe(200)
        const { body } = yield* bodyAs(AiSettingsView)(reply)
        expect(body).toEqual({
          workspaceId,
          source: "workspace",
          provider: "openai",
          model: "gpt-4.1-mini",
          baseUrl: null,
          openAiApi: "responses",
          apiKeySet: true,
          apiKeyHint: "…WXYZ",
          apiKeyEncryptedAtRest: false,
          updatedAt: expect.stringMatching(ISO_UTC)
        })
        const shown = yield* getAi(workspaceId)
        expect(shown.body).toEqual(reply.body)
        for (const text of [JSON.stringify(reply.body), JSON.stringify(shown.body)]) {
          expect(text).not.toContain(OPENAI_KEY)
          expect(text).not.toContain("sk-test")
        }
        // No encryption key configured: stored as is (the webhook secret's rule), and said so.
        expect(yield* storedKey(workspaceId)).toEqual([OPENAI_KEY])
      }))

    it.effect("a base URL defaults openAiApi to chat and needs no key; anthropic keeps openAiApi null", () =>
      Effect.gen(function*() {
        const workspaceId = yield* createWorkspace()
        const ollama = yield* putAi(workspaceId, { provider: "openai", model: "llama3.2", baseUrl: "http://localhost:11434/v1" })
        expect(ollama.status).toBe(200)
        expect(ollama.body).toMatchObject({ openAiApi: "chat", apiKeySet: false, baseUrl: "http://localhost:11434/v1" })
        const responses = yield* putAi(workspaceId, {
          provider: "openai",
          model: "gpt-4.1",
          baseUrl: "https://gateway.example.com/v1",
          openAiApi: "responses",
          apiKey: "short-key"
        })
        expect(responses.body).toMatchObject({ openAiApi: "responses", apiKeySet: true, apiKeyHint: null })
        const anthropic = yield* putAi(workspaceId, { provider: "anthropic", model: "claude-sonnet-4-5", apiKey: OTHER_KEY })
        expect(anthropic.status).toBe(200)
        expect(anthropic.body).toMatchObject({ provider: "anthropic", openAiApi: null, baseUrl: null, apiKeyHint: "…QRST" })
      }))

    it.effect("an omitted apiKey keeps the stored key only while provider and base URL stay; null removes it", () =>
      Effect.gen(function*() {
        const workspaceId = yield* createWorkspace()
        yield* putAi(workspaceId, { provider: "openai", model: "gpt-4.1-mini", apiKey: OPENAI_KEY })
        const sameTarget = yield* putAi(workspaceId, { provider: "openai", model: "gpt-4.1" })
        expect(sameTarget.status).toBe(200)
        expect(sameTarget.body).toMatchObject({ model: "gpt-4.1", apiKeySet: true, apiKeyHint: "…WXYZ" })
        expect(yield* storedKey(workspaceId)).toEqual([OPENAI_KEY])

        // Another base URL: the key is not carried to it. With a base URL no key is required.
        const elsewhere = yield* putAi(workspaceId, { provider: "openai", model: "gpt-4.1", baseUrl: "https://other.example.com/v1" })
        expect(elsewhere.status).toBe(200)
        expect(elsewhere.body).toMatchObject({ apiKeySet: false, apiKeyHint: null })
        expect(yield* storedKey(workspaceId)).toEqual([null])

        yield* putAi(workspaceId, { provider: "openai", model: "gpt-4.1", apiKey: OPENAI_KEY })
        // Another provider without a key of its own: 422, and the stored key stays where it was.
        const anthropic = yield* putAi(workspaceId, { provider: "anthropic", model: "claude-sonnet-4-5" })
        expect(anthropic.status).toBe(422)
        expect(validationDetail(anthropic)).toEqual([{ loc: ["body", "apiKey"], msg: expect.any(String), type: "missing" }])
        expect(yield* storedKey(workspaceId)).toEqual([OPENAI_KEY])

        const removed = yield* putAi(workspaceId, {
          provider: "openai",
          model: "gpt-4.1",
          baseUrl: "http://localhost:11434/v1",
          apiKey: null
        })
        expect(removed.body).toMatchObject({ apiKeySet: false })
        expect(yield* storedKey(workspaceId)).toEqual([null])
      }))

    it.effect("invalid settings are a 422 located in the body, and nothing is stored", () =>
      Effect.gen(function*() {
        const workspaceId = yield* createWorkspace()
        const cases: ReadonlyArray<readonly [unknown, ReadonlyArray<readonly [ReadonlyArray<string>, string]>]> = [
          [{}, [[["body", "provider"], "missing"]]],
          [{ provider: "gemini", model: "x", apiKey: "k" }, [[["body", "provider"], "literal_error"]]],
          [{ provider: "openai", apiKey: "k" }, [[["body", "model"], "missing"]]],
          [{ provider: "openai", model: "gpt-4.1" }, [[["body", "apiKey"], "missing"]]],
          [{ provider: "openai", model: "", apiKey: "k" }, [[["body", "model"], "string_too_short"]]],
          [{ provider: "openai", model: " gpt-4.1", apiKey: "k" }, [[["body", "model"], "string_pattern_mismatch"]]],
          [{ provider: "openai", model: "gpt-4.1", apiKey: "sk-one two" }, [[["body", "apiKey"], "string_pattern_mismatch"]]],
          [{ provider: "openai", model: "m", baseUrl: "ftp://models.example.com/v1" }, [[["body", "baseUrl"], "url_parsing"]]],
          [{ provider: "openai", model: "m", baseUrl: "not a url" }, [[["body", "baseUrl"], "url_parsing"]]],
          [{ provider: "openai", model: "m", baseUrl: "https://user:pw@models.example.com/v1" }, [[["body", "baseUrl"], "url_parsing"]]],
          [{ provider: "openai", model: "m", baseUrl: "https://models.example.com/v1?key=1" }, [[["body", "baseUrl"], "url_parsing"]]],
          [{ provider: "openai", model: "m", apiKey: "k", openAiApi: "completions" }, [[["body", "openAiApi"], "literal_error"]]],
          [{ provider: "anthropic", model: "m", apiKey: "k", openAiApi: "chat" }, [[["body", "openAiApi"], "extra_forbidden"]]],
          [{ provider: "embedded", model: "gpt-4.1", apiKey: "k" }, [
            [["body", "model"], "extra_forbidden"],
            [["body", "apiKey"], "extra_forbidden"]
          ]],
          [{ provider: "anthropic" }, [[["body", "model"], "missing"], [["body", "apiKey"], "missing"]]]
        ]
        for (const [body, expected] of cases) {
          const reply = yield* putAi(workspaceId, body)
          const label = JSON.stringify(body)
          expect(reply.status, label).toBe(422)
          expect(validationDetail(reply).map((item) => [item.loc, item.type]), label).toEqual(expected)
        }
        expect((yield* bodyAs(AiSettingsView)(yield* getAi(workspaceId))).body.source).toBe("global")
        expect(yield* storedKey(workspaceId)).toEqual([])
      }))

    it.effect("embedded as a workspace's own choice; DELETE answers 204 and the global default answers again", () =>
      Effect.gen(function*() {
        const workspaceId = yield* createWorkspace()
        const embedded = yield* putAi(workspaceId, { provider: "embedded" })
        expect(embedded.status).toBe(200)
        expect(embedded.body).toMatchObject({ source: "workspace", provider: "embedded", model: null, apiKeySet: false })
        yield* putAi(workspaceId, { provider: "openai", model: "gpt-4.1-mini", apiKey: OPENAI_KEY })
        const cleared = yield* admin("DELETE", `/workspaces/${workspaceId}/ai`)
        expect(cleared.status).toBe(204)
        expect(cleared.body).toBeUndefined()
        expect(yield* storedKey(workspaceId)).toEqual([])
        expect((yield* bodyAs(AiSettingsView)(yield* getAi(workspaceId))).body).toMatchObject({ source: "global", provider: "embedded" })
        // Clearing again is harmless.
        expect((yield* admin("DELETE", `/workspaces/${workspaceId}/ai`)).status).toBe(204)
      }))

    it.effect("an unknown workspace is a 404 on every AI route; a malformed id or days is a 422", () =>
      Effect.gen(function*() {
        const routes: ReadonlyArray<readonly ["GET" | "PUT" | "DELETE", string, unknown?]> = [
          ["GET", `/workspaces/${unknownWorkspace}/ai`],
          ["PUT", `/workspaces/${unknownWorkspace}/ai`, { provider: "embedded" }],
          ["DELETE", `/workspaces/${unknownWorkspace}/ai`],
          ["GET", `/workspaces/${unknownWorkspace}/ai/usage`]
        ]
        for (const [method, path, body] of routes) {
          const reply = yield* admin(method, path, body)
          expect(reply.status, `${method} ${path}`).toBe(404)
          expect(reply.body, `${method} ${path}`).toEqual({ detail: "Workspace not found" })
        }
        const badId = yield* admin("GET", "/workspaces/nope/ai")
        expect(badId.status).toBe(422)
        expect(validationDetail(badId)).toEqual([{ loc: ["path", "workspaceId"], msg: expect.any(String), type: "uuid_parsing" }])
        const workspaceId = yield* createWorkspace()
        for (const days of ["0", "367", "abc", "1.5"]) {
          const reply = yield* admin("GET", `/workspaces/${workspaceId}/ai/usage?days=${days}`)
          expect(reply.status, days).toBe(422)
          expect(validationDetail(reply).map((item) => item.loc), days).toEqual([["query", "days"]])
        }
      }))

    it.effect("only the admin token opens the AI routes", () =>
      Effect.gen(function*() {
        const created = yield* admin("POST", "/workspaces", { name: "Tenant" }).pipe(Effect.flatMap(bodyAs(CreatedWorkspace)))
        const { apiToken, id } = created.body
        for (const token of [apiToken, undefined]) {
          const options = token === undefined ? {} : { token }
          const get = yield* call("GET", `/admin/v1/workspaces/${id}/ai`, options)
          expect(get.status).toBe(401)
          const put = yield* call("PUT", `/admin/v1/workspaces/${id}/ai`, {
            ...options,
            body: { provider: "openai", model: "gpt-4.1", apiKey: OPENAI_KEY }
          })
          expect(put.status).toBe(401)
          expect((yield* call("GET", `/admin/v1/workspaces/${id}/ai/usage`, options)).status).toBe(401)
        }
        expect(yield* storedKey(id)).toEqual([])
      }))

    it.effect("resolve: each workspace gets its own settings and key, never another's; the global default only without settings of its own", () =>
      Effect.gen(function*() {
        const settings = yield* WorkspaceAiSettings
        const a = yield* createWorkspace("A")
        const b = yield* createWorkspace("B")
        const local = yield* createWorkspace("Local")
        const plainWorkspace = yield* createWorkspace("Uses the default")
        const embedded = yield* createWorkspace("Embedded by choice")
        yield* putAi(a, { provider: "openai", model: "gpt-4.1-mini", apiKey: OPENAI_KEY })
        yield* putAi(b, { provider: "anthropic", model: "claude-sonnet-4-5", baseUrl: "https://anthropic.example.com/v1", apiKey: OTHER_KEY })
        yield* putAi(local, { provider: "openai", model: "llama3.2", baseUrl: "http://localhost:11434/v1" })
        yield* putAi(embedded, { provider: "embedded" })
        const global = Option.some<ModelSettings>({
          provider: "openai",
          model: "gpt-4.1",
          apiKey: Redacted.make(GLOBAL_KEY),
          baseUrl: undefined,
          openAiApi: "responses"
        })

        expect(plain(yield* settings.resolve(a, global))).toEqual(Option.some({
          provider: "openai",
          model: "gpt-4.1-mini",
          apiKey: OPENAI_KEY,
          baseUrl: undefined,
          openAiApi: "responses"
        }))
        expect(plain(yield* settings.resolve(b, global))).toEqual(Option.some({
          provider: "anthropic",
          model: "claude-sonnet-4-5",
          apiKey: OTHER_KEY,
          baseUrl: "https://anthropic.example.com/v1",
          // Not read for anthropic; the global config's rule (chat with a base URL).
          openAiApi: "chat"
        }))
        // A keyless local server: an empty key (no credential header), not the global one.
        expect(plain(yield* settings.resolve(local, global))).toEqual(Option.some({
          provider: "openai",
          model: "llama3.2",
          apiKey: "",
          baseUrl: "http://localhost:11434/v1",
          openAiApi: "chat"
        }))
        expect(plain(yield* settings.resolve(plainWorkspace, global))).toEqual(plain(global))
        expect(yield* settings.resolve(plainWorkspace, Option.none())).toEqual(Option.none())
        expect(yield* settings.resolve(embedded, global)).toEqual(Option.none())

        // Interleaved, concurrently: each answer carries only its own workspace's key.
        const answers = yield* Effect.forEach(
          [a, b, a, b, local, plainWorkspace, a],
          (id) => Effect.map(settings.resolve(id, global), (s) => [id, Option.getOrUndefined(plain(s))?.apiKey] as const),
          { concurrency: "unbounded" }
        )
        const expectedKey = (id: string) => id === a ? OPENAI_KEY : id === b ? OTHER_KEY : id === local ? "" : GLOBAL_KEY
        for (const [id, key] of answers) expect(key, id).toBe(expectedKey(id))
      }))

    it.effect("recordUsage sums per UTC day, provider and model; GET usage reports the window newest first, with totals", () =>
      Effect.gen(function*() {
        const settings = yield* WorkspaceAiSettings
        const workspaceId = yield* createWorkspace()
        const other = yield* createWorkspace("Other")
        // The server runs on the test clock (the epoch): the usage window ends on 1970-01-01.
        const today = "1970-01-01"
        yield* settings.recordUsage(workspaceId, "openai", "gpt-4.1-mini", { inputTokens: 100, outputTokens: 20 }, day(today))
        yield* settings.recordUsage(workspaceId, "openai", "gpt-4.1-mini", { inputTokens: 50, outputTokens: 5, requests: 3 }, day(today))
        yield* settings.recordUsage(workspaceId, "anthropic", "claude-sonnet-4-5", { inputTokens: 7, outputTokens: 3 }, day(today))
        yield* settings.recordUsage(workspaceId, "openai", "gpt-4.1-mini", { inputTokens: 1000, outputTokens: 200 }, day("1969-12-31"))
        yield* settings.recordUsage(workspaceId, "openai", "gpt-4.1-mini", { inputTokens: 9, outputTokens: 9 }, day("1969-11-01"))
        yield* settings.recordUsage(other, "openai", "gpt-4.1-mini", { inputTokens: 5000, outputTokens: 5000 }, day(today))
        // Concurrent upserts of one row all count.
        yield* Effect.forEach(
          Array.from({ length: 20 }, (_, i) => i),
          () => settings.recordUsage(workspaceId, "openai", "gpt-4.1", { inputTokens: 10, outputTokens: 1 }, day(today)),
          { concurrency: 10 }
        )

        const reply = yield* admin("GET", `/workspaces/${workspaceId}/ai/usage`)
        expect(reply.status).toBe(200)
        const { body } = yield* bodyAs(AiUsageReport)(reply)
        expect(body).toEqual({
          workspaceId,
          from: "1969-12-03",
          to: today,
          perDay: [
            { day: today, provider: "anthropic", model: "claude-sonnet-4-5", inputTokens: 7, outputTokens: 3, requests: 1 },
            { day: today, provider: "openai", model: "gpt-4.1", inputTokens: 200, outputTokens: 20, requests: 20 },
            { day: today, provider: "openai", model: "gpt-4.1-mini", inputTokens: 150, outputTokens: 25, requests: 4 },
            { day: "1969-12-31", provider: "openai", model: "gpt-4.1-mini", inputTokens: 1000, outputTokens: 200, requests: 1 }
          ],
          total: { inputTokens: 1357, outputTokens: 248, requests: 26 }
        })

        const oneDay = yield* admin("GET", `/workspaces/${workspaceId}/ai/usage?days=1`).pipe(Effect.flatMap(bodyAs(AiUsageReport)))
        expect(oneDay.body.from).toBe(today)
        expect(oneDay.body.perDay.map((row) => row.day)).toEqual([today, today, today])
        expect(oneDay.body.total).toEqual({ inputTokens: 357, outputTokens: 48, requests: 25 })
        const year = yield* admin("GET", `/workspaces/${workspaceId}/ai/usage?days=366`).pipe(Effect.flatMap(bodyAs(AiUsageReport)))
        expect(year.body.total).toEqual({ inputTokens: 1366, outputTokens: 257, requests: 27 })

        const fresh = yield* createWorkspace("Unused")
        const none = yield* admin("GET", `/workspaces/${fresh}/ai/usage`).pipe(Effect.flatMap(bodyAs(AiUsageReport)))
        expect(none.body.perDay).toEqual([])
        expect(none.body.total).toEqual({ inputTokens: 0, outputTokens: 0, requests: 0 })
      }))

    it.effect("the typed client round-trips the AI routes", () =>
      Effect.gen(function*() {
        const client = yield* HttpApiClient.make(Api, {
          transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(ADMIN_TOKEN))
        })
        const workspaceId = yield* createWorkspace("Typed")
        const set = yield* client.admin.setAiSettings({
          params: { workspaceId },
          payload: { provider: "anthropic", model: "claude-sonnet-4-5", apiKey: OTHER_KEY }
        })
        expect(set).toMatchObject({ source: "workspace", provider: "anthropic", apiKeySet: true })
        expect(yield* client.admin.getAiSettings({ params: { workspaceId } })).toEqual(set)
        const usage = yield* client.admin.getAiUsage({ params: { workspaceId }, query: { days: 7 } })
        expect(usage.perDay).toEqual([])
        yield* client.admin.clearAiSettings({ params: { workspaceId } })
        expect((yield* client.admin.getAiSettings({ params: { workspaceId } })).source).toBe("global")
        const invalid = yield* client.admin.setAiSettings({ params: { workspaceId }, payload: { provider: "openai", model: "m" } }).pipe(
          Effect.result
        )
        expect(Result.isFailure(invalid)).toBe(true)
      }))
  })
})

describe("per-workspace AI settings (PARLEY_ENCRYPTION_KEY set, production mode, global default openai)", () => {
  const config = {
    PARLEY_ENCRYPTION_KEY: ENCRYPTION_KEY,
    PARLEY_MODE: "production",
    AI_PROVIDER: "openai",
    AI_MODEL: "gpt-4.1",
    OPENAI_API_KEY: GLOBAL_KEY
  }
  layer(TestApp(config), { timeout: 120_000 })((it) => {
    it.effect("the key is sealed at rest (AES-256-GCM), still never returned, and resolves to the plaintext", () =>
      Effect.gen(function*() {
        const workspaceId = yield* createWorkspace()
        const reply = yield* putAi(workspaceId, { provider: "openai", model: "gpt-4.1-mini", apiKey: OPENAI_KEY })
        expect(reply.status).toBe(200)
        expect(reply.body).toMatchObject({ apiKeySet: true, apiKeyHint: "…WXYZ", apiKeyEncryptedAtRest: true })
        expect(JSON.stringify(reply.body)).not.toContain(OPENAI_KEY)
        const [stored] = yield* storedKey(workspaceId)
        expect(stored).toMatch(/^aes256gcm:v1:/)
        expect(stored).not.toContain(OPENAI_KEY)
        expect(stored).not.toContain(OPENAI_KEY.slice(-8))
        const resolved = yield* Effect.flatMap(WorkspaceAiSettings, (s) => s.resolve(workspaceId, Option.none()))
        expect(Option.getOrUndefined(plain(resolved))?.apiKey).toBe(OPENAI_KEY)
        // Sealed afresh each time: the same key twice is two different ciphertexts.
        yield* putAi(workspaceId, { provider: "openai", model: "gpt-4.1-mini", apiKey: OPENAI_KEY })
        const [again] = yield* storedKey(workspaceId)
        expect(again).toMatch(/^aes256gcm:v1:/)
        expect(again).not.toBe(stored)
      }))

    it.effect("a key stored before the encryption key was set is sealed when kept by the next PUT", () =>
      Effect.gen(function*() {
        const workspaceId = yield* createWorkspace()
        const sql = yield* SqlClient.SqlClient
        yield* sql`INSERT INTO workspace_ai_settings (workspace_id, provider, model, open_ai_api, api_key)
                   VALUES (${workspaceId}, 'openai', 'gpt-4.1', 'responses', ${OPENAI_KEY})`
        expect((yield* getAi(workspaceId)).body).toMatchObject({ apiKeySet: true, apiKeyEncryptedAtRest: false })
        const kept = yield* putAi(workspaceId, { provider: "openai", model: "gpt-4.1-mini" })
        expect(kept.body).toMatchObject({ apiKeySet: true, apiKeyHint: "…WXYZ", apiKeyEncryptedAtRest: true })
        expect((yield* storedKey(workspaceId))[0]).toMatch(/^aes256gcm:v1:/)
      }))

    it.effect("GET without settings of its own shows the global model, its key only as set", () =>
      Effect.gen(function*() {
        const workspaceId = yield* createWorkspace()
        const reply = yield* getAi(workspaceId)
        expect(reply.body).toEqual({
          workspaceId,
          source: "global",
          provider: "openai",
          model: "gpt-4.1",
          baseUrl: null,
          openAiApi: "responses",
          apiKeySet: true,
          apiKeyHint: "…GLOB",
          apiKeyEncryptedAtRest: false,
          updatedAt: null
        })
        expect(JSON.stringify(reply.body)).not.toContain(GLOBAL_KEY)
      }))

    it.effect("in production a base URL naming an internal address is a 422 url_internal; public ones pass", () =>
      Effect.gen(function*() {
        const workspaceId = yield* createWorkspace()
        for (const baseUrl of ["http://127.0.0.1:11434/v1", "http://localhost:11434/v1", "http://169.254.169.254/v1", "http://[::1]/v1", "http://10.0.0.5/v1"]) {
          const reply = yield* putAi(workspaceId, { provider: "openai", model: "llama3.2", baseUrl })
          expect(reply.status, baseUrl).toBe(422)
          expect(validationDetail(reply), baseUrl).toEqual([{ loc: ["body", "baseUrl"], msg: expect.any(String), type: "url_internal" }])
        }
        expect(yield* storedKey(workspaceId)).toEqual([])
        const external = yield* putAi(workspaceId, { provider: "openai", model: "llama3.2", baseUrl: "https://models.example.com/v1" })
        expect(external.status).toBe(200)
      }))
  })
})
