/**
 * A workspace's own AI settings (which model answers its customers) and its token use per day. The
 * settings override the global default (`AI_PROVIDER`…) as a whole: a workspace that overrides never
 * borrows the global key. The API key is write-only: stored sealed, never on the wire.
 */
import * as Model from "effect/schema/Model"
import * as Schema from "effect/Schema"
import { OpenAiApi } from "../Ai/Llm/Contract.js"
import { At, InternalCreatedAt } from "./Fields.js"
import { WorkspaceId } from "./Ids.js"
import { HttpUrl, nonEmptyString, optionalNullable, Timestamp } from "./Primitives.js"

/** `embedded` = the offline knowledge-base responder; `openai` / `anthropic` = a language model. */
export const AiProviderName = Schema.Literals(["embedded", "openai", "anthropic"])
export type AiProviderName = typeof AiProviderName.Type

const noSurroundingSpace = Schema.makeFilter((value: string) => value.trim() === value, {
  errorType: "string_pattern_mismatch",
  message: "String should not start or end with whitespace"
})

/** A model name as the provider spells it (`gpt-4.1-mini`, `claude-sonnet-4-5`, `llama3.2:latest`). */
export const ModelName = nonEmptyString(200).check(noSurroundingSpace)

/** A provider's API key: no whitespace anywhere (a pasted line break is a mistake, not part of a key). */
export const ApiKeyText = nonEmptyString(2000).check(Schema.makeFilter((value: string) => !/\s/.test(value), {
  errorType: "string_pattern_mismatch",
  message: "An API key should contain no whitespace"
}))

const isPlainBase = (value: string): boolean => {
  const url = new URL(value)
  return url.username === "" && url.password === "" && url.search === "" && url.hash === "" &&
    !value.includes("?") && !value.includes("#")
}

/**
 * The vendor SDKs' base URL (`https://api.openai.com/v1`, `http://localhost:11434/v1`): http(s), with no
 * credentials, query or fragment (the client appends `/chat/completions`, `/responses`, `/v1/messages`).
 */
export const BaseUrl = HttpUrl.check(
  Schema.isMaxLength(2000, { errorType: "string_too_long", message: "String should have at most 2000 characters" }),
  Schema.makeFilter(isPlainBase, {
    errorType: "url_parsing",
    message: "A base URL has no user name, password, query or fragment"
  })
)

export class AiSettings extends Model.Class<AiSettings>("AiSettings")({
  workspaceId: Model.Field({ select: WorkspaceId, insert: WorkspaceId, update: WorkspaceId, json: WorkspaceId }),
  provider: Model.Field({
    select: AiProviderName,
    insert: AiProviderName,
    update: AiProviderName,
    json: AiProviderName,
    jsonUpdate: AiProviderName
  }),
  model: Model.Field({
    select: Schema.NullOr(Schema.String),
    insert: Schema.NullOr(Schema.String),
    update: Schema.NullOr(Schema.String),
    json: Schema.NullOr(Schema.String),
    jsonUpdate: optionalNullable(ModelName)
  }),
  /** `null` = the vendor's own API. */
  baseUrl: Model.Field({
    select: Schema.NullOr(Schema.String),
    insert: Schema.NullOr(Schema.String),
    update: Schema.NullOr(Schema.String),
    json: Schema.NullOr(Schema.String),
    jsonUpdate: optionalNullable(BaseUrl)
  }),
  /** Only with `openai`: `chat` (OpenAI-compatible servers) or `responses` (OpenAI's Responses API). */
  openAiApi: Model.Field({
    select: Schema.NullOr(OpenAiApi),
    insert: Schema.NullOr(OpenAiApi),
    update: Schema.NullOr(OpenAiApi),
    json: Schema.NullOr(OpenAiApi),
    jsonUpdate: optionalNullable(OpenAiApi)
  }),
  /** Sealed (AES-256-GCM) when an encryption key is configured; written, never read back on the wire. */
  apiKey: Model.Field({
    select: Schema.NullOr(Schema.String),
    insert: Schema.NullOr(Schema.String),
    update: Schema.NullOr(Schema.String),
    jsonUpdate: optionalNullable(ApiKeyText)
  }),
  createdAt: InternalCreatedAt,
  updatedAt: At
}) {}

/**
 * What `PUT /admin/v1/workspaces/{id}/ai` takes: the whole settings. `apiKey` left out keeps the stored
 * key while the provider and base URL stay the same (changing either drops it); `null` removes it.
 */
export const AiSettingsUpdate = AiSettings.jsonUpdate.annotate({ identifier: "AiSettingsUpdate" })
export type AiSettingsUpdate = typeof AiSettingsUpdate.Type

/** The settings a workspace answers with: its own (`source: workspace`) or the global default. */
export const AiSettingsView = Schema.Struct({
  ...AiSettings.json.fields,
  source: Schema.Literals(["workspace", "global"]),
  apiKeySet: Schema.Boolean,
  /** The key's last four characters (keys of 20 characters or more), to tell keys apart. */
  apiKeyHint: Schema.NullOr(Schema.String),
  /** Whether the stored key is sealed (false for a key stored before PARLEY_ENCRYPTION_KEY was set). */
  apiKeyEncryptedAtRest: Schema.Boolean,
  /** `null` for the global default. */
  updatedAt: Schema.NullOr(Timestamp)
}).annotate({
  identifier: "AiSettings",
  description: "The model that answers the workspace and where its settings come from; the API key is never returned."
})
export type AiSettingsView = typeof AiSettingsView.Type

/** A calendar day, UTC: `2026-11-23`. */
export const Day = Schema.String.check(Schema.isPattern(/^\d{4}-\d{2}-\d{2}$/)).annotate({ format: "date" })

/** Token use of one workspace, UTC day, provider and model. */
export const AiUsageDay = Schema.Struct({
  day: Day,
  provider: AiProviderName,
  model: Schema.String,
  inputTokens: Schema.Int,
  outputTokens: Schema.Int,
  /** Model calls (an agent's reply makes one per turn). */
  requests: Schema.Int
}).annotate({ identifier: "AiUsageDay" })
export type AiUsageDay = typeof AiUsageDay.Type

export const AiUsageTotal = Schema.Struct({
  inputTokens: Schema.Int,
  outputTokens: Schema.Int,
  requests: Schema.Int
}).annotate({ identifier: "AiUsageTotal" })

export const AiUsageReport = Schema.Struct({
  workspaceId: WorkspaceId,
  /** First and last day of the window, both included. */
  from: Day,
  to: Day,
  /** Newest day first; days without use are left out. */
  perDay: Schema.Array(AiUsageDay),
  total: AiUsageTotal
}).annotate({
  identifier: "AiUsageReport",
  description: "Tokens the workspace used per UTC day, provider and model, and their total"
})
export type AiUsageReport = typeof AiUsageReport.Type

/** The usage window: 1 to 366 days back from today (UTC), 30 by default. */
export const UsageDays = Schema.NumberFromString.check(
  Schema.isInt({ errorType: "int_parsing", message: "Input should be a valid integer" }).abort(),
  Schema.isBetween({ minimum: 1, maximum: 366 }, { errorType: "value_error", message: "days should be between 1 and 366" })
)
