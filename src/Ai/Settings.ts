/**
 * Per-workspace AI settings: which model answers a workspace's customers, with whose key, and how many
 * tokens it used per day. A workspace's settings replace the global default as a whole — provider,
 * model, base URL and key together — so a key only ever goes to the base URL it was stored with, and
 * one workspace's key is never used for another (`resolve` reads only the asked workspace's row).
 */
import * as SqlClient from "effect/sql/SqlClient"
import * as DateTime from "effect/DateTime"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { Crypto, isSealed } from "../Auth/Crypto.js"
import * as AppConfig from "../Config.js"
import { internalLiteral } from "../Delivery/Ssrf.js"
import type { AiProviderName, AiSettings, AiSettingsUpdate, AiSettingsView, AiUsageReport } from "../Domain/AiSettings.js"
import { InvalidInput } from "../Domain/Errors.js"
import type { WorkspaceId } from "../Domain/Ids.js"
import { orDieSql } from "../Sql.js"
import { Workspaces } from "../Workspaces/Workspaces.js"
import type { ModelSettings, Usage } from "./Llm/Contract.js"
import { AiSettingsRepo } from "./SettingsRepo.js"

const KEY_LABEL = "A workspace's AI API key"

/** Keys this long show their last four characters; shorter ones would give away too much. */
const HINT_MIN_LENGTH = 20

const hintOf = (key: string): string | null => key.length >= HINT_MIN_LENGTH ? `…${key.slice(-4)}` : null

type Problem = InvalidInput["problems"][number]

/** What the global default looks like to an operator (the key is never shown, only whether it is set). */
export const globalView = (workspaceId: WorkspaceId, global: Option.Option<ModelSettings>): AiSettingsView =>
  Option.match(global, {
    onNone: () => ({
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
    }),
    onSome: (settings) => {
      const key = Redacted.value(settings.apiKey)
      return {
        workspaceId,
        source: "global",
        provider: settings.provider,
        model: settings.model,
        baseUrl: settings.baseUrl ?? null,
        openAiApi: settings.provider === "openai" ? settings.openAiApi : null,
        apiKeySet: key !== "",
        apiKeyHint: key === "" ? null : hintOf(key),
        // The global key lives in the environment, not in the database.
        apiKeyEncryptedAtRest: false,
        updatedAt: null
      }
    }
  })

export class WorkspaceAiSettings extends Context.Service<WorkspaceAiSettings>()("Parley/WorkspaceAiSettings", {
  make: Effect.gen(function*() {
    const repo = yield* AiSettingsRepo
    const workspaces = yield* Workspaces
    const crypto = yield* Crypto
    const sql = yield* SqlClient.SqlClient
    const mode = yield* AppConfig.Mode

    const view = (row: AiSettings) =>
      Effect.gen(function*() {
        const key = row.apiKey === null ? null : yield* crypto.open(row.apiKey, KEY_LABEL)
        return {
          workspaceId: row.workspaceId,
          source: "workspace",
          provider: row.provider,
          model: row.model,
          baseUrl: row.baseUrl,
          openAiApi: row.openAiApi,
          apiKeySet: key !== null,
          apiKeyHint: key === null ? null : hintOf(key),
          apiKeyEncryptedAtRest: row.apiKey !== null && isSealed(row.apiKey),
          updatedAt: row.updatedAt
        } satisfies AiSettingsView
      })

    /** The workspace's own settings, if it has any (404 for an unknown workspace). */
    const get = Effect.fn("WorkspaceAiSettings.get")(function*(workspaceId: WorkspaceId) {
      yield* workspaces.get(workspaceId)
      const row = yield* repo.find(workspaceId)
      return Option.isSome(row) ? Option.some(yield* view(row.value)) : Option.none<AiSettingsView>()
    }, orDieSql)

    /**
     * Every problem of `input` against the rules (paths within the input): a model provider needs a
     * model, and a key unless a base URL points at a server that takes none; `embedded` takes nothing
     * else; `openAiApi` is OpenAI's only; in production a base URL may not name an internal address.
     */
    const problemsOf = (input: AiSettingsUpdate, key: string | null): ReadonlyArray<Problem> => {
      const problems: Array<Problem> = []
      if (input.provider === "embedded") {
        for (const field of ["model", "baseUrl", "openAiApi", "apiKey"] as const) {
          const value = input[field]
          if (value !== undefined && value !== null) {
            problems.push({
              path: [field],
              message: `The embedded responder takes no ${field}`,
              type: "extra_forbidden"
            })
          }
        }
        return problems
      }
      if (input.model === undefined || input.model === null) {
        problems.push({ path: ["model"], message: `Field required with provider ${input.provider}`, type: "missing" })
      }
      if (input.provider !== "openai" && input.openAiApi !== undefined && input.openAiApi !== null) {
        problems.push({ path: ["openAiApi"], message: "openAiApi applies to provider openai only", type: "extra_forbidden" })
      }
      const baseUrl = input.baseUrl ?? null
      if (baseUrl !== null && mode === "production") {
        const host = internalLiteral(baseUrl)
        if (host !== undefined) {
          problems.push({
            path: ["baseUrl"],
            message: `The base URL host ${host} is an internal address; refused in production mode`,
            type: "url_internal"
          })
        }
      }
      if (key === null && baseUrl === null) {
        problems.push({
          path: ["apiKey"],
          message: `Field required with provider ${input.provider} (only a baseUrl server may take no key)`,
          type: "missing"
        })
      }
      return problems
    }

    /**
     * Replaces the workspace's settings. The stored key is kept when `apiKey` is left out and the
     * provider and base URL are unchanged (re-sealed, so a key stored before PARLEY_ENCRYPTION_KEY was
     * set is encrypted now); with another provider or base URL it is dropped, never sent elsewhere.
     */
    const set = Effect.fn("WorkspaceAiSettings.set")(function*(workspaceId: WorkspaceId, input: AiSettingsUpdate) {
      yield* workspaces.get(workspaceId)
      return yield* Effect.gen(function*() {
        const stored = yield* repo.lock(workspaceId)
        const baseUrl = input.provider === "embedded" ? null : input.baseUrl ?? null
        const kept = Option.filter(stored, (row) => row.provider === input.provider && row.baseUrl === baseUrl)
        const key = input.apiKey !== undefined
          ? input.apiKey
          : Option.isSome(kept) && kept.value.apiKey !== null
          ? yield* crypto.open(kept.value.apiKey, KEY_LABEL)
          : null
        const problems = problemsOf(input, input.provider === "embedded" ? input.apiKey ?? null : key)
        if (problems.length > 0) return yield* new InvalidInput({ problems })
        const row = yield* repo.upsert({
          workspaceId,
          provider: input.provider,
          model: input.provider === "embedded" ? null : input.model ?? null,
          baseUrl,
          openAiApi: input.provider === "openai" ? input.openAiApi ?? (baseUrl === null ? "responses" : "chat") : null,
          apiKey: input.provider === "embedded" || key === null ? null : crypto.seal(key),
          updatedAt: yield* DateTime.now
        })
        return yield* view(row)
      }).pipe(sql.withTransaction)
    }, orDieSql)

    /** Back to the global default; whether the workspace had settings of its own. */
    const clear = Effect.fn("WorkspaceAiSettings.clear")(function*(workspaceId: WorkspaceId) {
      yield* workspaces.get(workspaceId)
      return Option.isSome(yield* repo.remove(workspaceId))
    }, orDieSql)

    /**
     * The model that answers this workspace: its own settings, else `global` (the configured default).
     * `None` = the embedded responder. Reads only this workspace's row: no other workspace's key can
     * come out of it, and a workspace with settings of its own never gets the global key.
     */
    const resolve = Effect.fn("WorkspaceAiSettings.resolve")(
      function*(workspaceId: WorkspaceId, global: Option.Option<ModelSettings>) {
        const row = yield* repo.find(workspaceId)
        if (Option.isNone(row)) {
          yield* Effect.annotateCurrentSpan("ai.settings.source", "global")
          return global
        }
        yield* Effect.annotateCurrentSpan("ai.settings.source", "workspace")
        const settings = row.value
        if (settings.provider === "embedded") return Option.none<ModelSettings>()
        if (settings.model === null) return yield* Effect.die(new Error(`AI settings of ${workspaceId} have no model`))
        const apiKey = settings.apiKey === null ? "" : yield* crypto.open(settings.apiKey, KEY_LABEL)
        return Option.some<ModelSettings>({
          provider: settings.provider,
          model: settings.model,
          apiKey: Redacted.make(apiKey),
          baseUrl: settings.baseUrl ?? undefined,
          openAiApi: settings.openAiApi ?? (settings.baseUrl === null ? "responses" : "chat")
        })
      },
      orDieSql
    )

    const count = (n: number | undefined, fallback: number) =>
      n === undefined || !Number.isFinite(n) ? fallback : Math.max(0, Math.round(n))

    /**
     * Adds one use to the workspace's row of the day (UTC; `at`, by default now), provider and model:
     * an upsert, so concurrent replies sum. `requests` = model calls (default 1).
     */
    const recordUsage = Effect.fn("WorkspaceAiSettings.recordUsage")(function*(
      workspaceId: WorkspaceId,
      provider: AiProviderName,
      model: string,
      usage: Usage & { readonly requests?: number },
      at?: DateTime.Utc
    ) {
      yield* repo.addUsage({
        workspaceId,
        day: DateTime.formatIsoDateUtc(at ?? (yield* DateTime.now)),
        provider,
        model,
        inputTokens: count(usage.inputTokens, 0),
        outputTokens: count(usage.outputTokens, 0),
        requests: count(usage.requests, 1)
      })
    }, orDieSql)

    /** Token use of the last `days` days (UTC, today included), newest first, with the totals. */
    const usage = Effect.fn("WorkspaceAiSettings.usage")(function*(workspaceId: WorkspaceId, days: number) {
      yield* workspaces.get(workspaceId)
      const now = yield* DateTime.now
      const to = DateTime.formatIsoDateUtc(now)
      const from = DateTime.formatIsoDateUtc(DateTime.subtract(now, { days: days - 1 }))
      const rows = yield* repo.usage({ workspaceId, from, to })
      const total = rows.reduce(
        (sum, row) => ({
          inputTokens: sum.inputTokens + row.inputTokens,
          outputTokens: sum.outputTokens + row.outputTokens,
          requests: sum.requests + row.requests
        }),
        { inputTokens: 0, outputTokens: 0, requests: 0 }
      )
      return { workspaceId, from, to, perDay: rows, total } satisfies AiUsageReport
    }, orDieSql)

    return {
      get,
      set,
      clear,
      resolve,
      recordUsage,
      usage
    } as const
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
  static readonly layer = this.layerWithoutDependencies.pipe(
    Layer.provide([AiSettingsRepo.layer, Workspaces.layer, Crypto.layer])
  )
}
