/**
 * `parley ai set|show|clear|usage`, run in-process through the CLI's own command runner against Parley
 * on a real port (the CLI talks to the admin API over fetch, as it does from a shell). What it prints is
 * captured from its `Console`.
 */
import { describe, expect, layer } from "@effect/vitest"
import * as SqlClient from "effect/sql/SqlClient"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { WorkspaceAiSettings } from "../../src/Ai/Settings.js"
import { AiSettingsView, AiUsageReport } from "../../src/Domain/AiSettings.js"
import { WorkspaceId } from "../../src/Domain/Ids.js"
import { CreatedWorkspace } from "../../src/Domain/Workspace.js"
import { ADMIN_TOKEN, bodyAs, call, TestApp } from "../support/App.js"
import { parley } from "../support/Cli.js"

const KEY = "sk-cli-test-key-0123456789abcdefLAST"

const createWorkspace = (name: string) =>
  call("POST", "/admin/v1/workspaces", { token: ADMIN_TOKEN, body: { name } }).pipe(
    Effect.flatMap(bodyAs(CreatedWorkspace)),
    Effect.map((reply) => Schema.decodeSync(WorkspaceId)(reply.body.id))
  )

const decodeJson = <S extends Schema.Top>(schema: S) => (text: string) =>
  Schema.decodeUnknownSync(Schema.fromJsonString(Schema.toEncoded(schema)), { onExcessProperty: "error" })(text)

describe("parley ai", () => {
  layer(TestApp(), { timeout: 120_000 })((it) => {
    it.effect("set stores the workspace's model and key, prints the key only as set, and show reads it back", () =>
      Effect.gen(function*() {
        const workspaceId = yield* createWorkspace("CLI")
        const before = yield* parley("ai", "show", workspaceId)
        expect(before.exitCode).toBe(0)
        expect(before.out).toBe([
          `AI settings of workspace ${workspaceId} (the global default)`,
          "  Provider: embedded"
        ].join("\n"))

        const set = yield* parley("ai", "set", workspaceId, "--provider", "openai", "--model", "gpt-4.1-mini", "--api-key", KEY)
        expect(set.exitCode).toBe(0)
        expect(set.err).toBe("")
        expect(set.out.split("\n").slice(0, 6)).toEqual([
          `AI settings of workspace ${workspaceId} (its own)`,
          "  Provider: openai",
          "  Model:    gpt-4.1-mini",
          "  Base URL: (the vendor's)",
          "  API:      responses",
          "  API key:  set (…LAST), NOT encrypted at rest"
        ])
        expect(set.out).toMatch(/ {2}Updated: {2}\d{4}-\d{2}-\d{2}T/)
        expect(set.out).not.toContain(KEY)

        const rows = yield* Effect.flatMap(SqlClient.SqlClient, (sql) =>
          sql<{ readonly provider: string; readonly model: string; readonly apiKey: string }>`
            SELECT provider, model, api_key FROM workspace_ai_settings WHERE workspace_id = ${workspaceId}`)
        expect(rows).toEqual([{ provider: "openai", model: "gpt-4.1-mini", apiKey: KEY }])

        const shown = yield* parley("ai", "show", workspaceId, "--json")
        const view = decodeJson(AiSettingsView)(shown.out)
        expect(view).toMatchObject({ source: "workspace", provider: "openai", model: "gpt-4.1-mini", apiKeySet: true })
        expect(shown.out).not.toContain(KEY)

        // A model change keeps the key; --base-url with no key of its own drops it (it is not sent elsewhere).
        const model = yield* parley("ai", "set", workspaceId, "--provider", "openai", "--model", "gpt-4.1", "--json")
        expect(decodeJson(AiSettingsView)(model.out)).toMatchObject({ model: "gpt-4.1", apiKeySet: true })
        const ollama = yield* parley(
          "ai",
          "set",
          workspaceId,
          "--provider",
          "openai",
          "--model",
          "llama3.2",
          "--base-url",
          "http://localhost:11434/v1"
        )
        expect(ollama.out).toContain("  Base URL: http://localhost:11434/v1")
        expect(ollama.out).toContain("  API:      chat")
        expect(ollama.out).toContain("  API key:  none")
      }))

    it.effect("a refused setting prints the server's 422 as one line and exits 1; nothing is stored", () =>
      Effect.gen(function*() {
        const workspaceId = yield* createWorkspace("CLI refused")
        const missingKey = yield* parley("ai", "set", workspaceId, "--provider", "anthropic", "--model", "claude-sonnet-4-5")
        expect(missingKey.exitCode).toBe(1)
        expect(missingKey.out).toBe("")
        expect(missingKey.err).toMatch(/^Error: body\.apiKey: Field required with provider anthropic/)
        const both = yield* parley("ai", "set", workspaceId, "--provider", "openai", "--model", "m", "--api-key", KEY, "--remove-api-key")
        expect(both.exitCode).toBe(1)
        expect(both.err).toBe("Error: Give --api-key or --remove-api-key, not both")
        // An unknown provider is refused by the CLI itself, before any request.
        const unknown = yield* parley("ai", "set", workspaceId, "--provider", "gemini", "--model", "m")
        expect(unknown.failed).toBe(true)
        const shown = yield* parley("ai", "show", workspaceId, "--json")
        expect(decodeJson(AiSettingsView)(shown.out).source).toBe("global")
        const unknownWorkspace = yield* parley("ai", "show", "00000000-0000-4000-8000-000000000000")
        expect(unknownWorkspace.exitCode).toBe(1)
        expect(unknownWorkspace.err).toBe("Error: Workspace not found")
      }))

    it.effect("clear removes the workspace's settings and shows the default that answers now", () =>
      Effect.gen(function*() {
        const workspaceId = yield* createWorkspace("CLI clear")
        yield* parley("ai", "set", workspaceId, "--provider", "anthropic", "--model", "claude-sonnet-4-5", "--api-key", KEY)
        const cleared = yield* parley("ai", "clear", workspaceId)
        expect(cleared.exitCode).toBe(0)
        expect(cleared.out).toBe([
          "Removed the workspace's own AI settings and key.",
          `AI settings of workspace ${workspaceId} (the global default)`,
          "  Provider: embedded"
        ].join("\n"))
        const rows = yield* Effect.flatMap(SqlClient.SqlClient, (sql) =>
          sql`SELECT 1 FROM workspace_ai_settings WHERE workspace_id = ${workspaceId}`)
        expect(rows).toEqual([])
      }))

    it.effect("usage prints the days, newest first, with totals; --days narrows the window; --json is the report", () =>
      Effect.gen(function*() {
        const settings = yield* WorkspaceAiSettings
        const workspaceId = yield* createWorkspace("CLI usage")
        const empty = yield* parley("ai", "usage", workspaceId)
        expect(empty.out).toBe(`No AI token use for workspace ${workspaceId} from 1969-12-03 to 1970-01-01 (UTC)`)
        // The server's clock is the test clock (the epoch).
        const at = (day: string) => DateTime.makeUnsafe(`${day}T08:00:00Z`)
        yield* settings.recordUsage(workspaceId, "openai", "gpt-4.1-mini", { inputTokens: 1200, outputTokens: 300, requests: 2 }, at("1970-01-01"))
        yield* settings.recordUsage(workspaceId, "openai", "gpt-4.1-mini", { inputTokens: 800, outputTokens: 100 }, at("1970-01-01"))
        yield* settings.recordUsage(workspaceId, "anthropic", "claude-sonnet-4-5", { inputTokens: 50, outputTokens: 5 }, at("1969-12-30"))

        const usage = yield* parley("ai", "usage", workspaceId)
        expect(usage.exitCode).toBe(0)
        expect(usage.out).toBe([
          `AI token use of workspace ${workspaceId}, 1969-12-03 to 1970-01-01 (UTC)`,
          "DAY         PROVIDER   MODEL              INPUT       OUTPUT      REQUESTS",
          "1970-01-01  openai     gpt-4.1-mini       2000        400         3",
          "1969-12-30  anthropic  claude-sonnet-4-5  50          5           1",
          "Total                                     2050        405         4"
        ].join("\n"))

        const today = yield* parley("ai", "usage", workspaceId, "--days", "1", "--json")
        const report = decodeJson(AiUsageReport)(today.out)
        expect(report.from).toBe("1970-01-01")
        expect(report.perDay).toEqual([
          { day: "1970-01-01", provider: "openai", model: "gpt-4.1-mini", inputTokens: 2000, outputTokens: 400, requests: 3 }
        ])
        expect(report.total).toEqual({ inputTokens: 2000, outputTokens: 400, requests: 3 })

        const outside = yield* parley("ai", "usage", workspaceId, "--days", "0")
        expect(outside.exitCode).toBe(1)
        expect(outside.err).toBe("Error: --days should be between 1 and 366")
      }))
  })
})
