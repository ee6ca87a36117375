/**
 * The `LanguageModel` for one `ModelSettings`, built per call: the client carries that call's key and
 * base URL and nothing is shared between workspaces but the HTTP connection pool (the `HttpClient` in
 * the environment). Building one is a handful of closures, so there is no cache to key or evict.
 *
 * The three adapters are Parley's own (`OpenAiChat.ts`, `OpenAiResponses.ts`, `AnthropicMessages.ts`)
 * and are imported eagerly: they are small, and the `effect/ai` modules they build on are loaded by the
 * agent anyway. (The vendor SDK modules they replace were loaded on first use: their generated API
 * schemas held much of an idle instance's memory; docs/performance.md.)
 */
import type * as LanguageModel from "effect/ai/LanguageModel"
import type * as HttpClient from "effect/http/HttpClient"
import type * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as AnthropicMessages from "./AnthropicMessages.js"
import type { ModelSettings } from "./Contract.js"
import * as OpenAiChat from "./OpenAiChat.js"
import * as OpenAiResponses from "./OpenAiResponses.js"
import type { Endpoint } from "./Wire.js"

export const OPENAI_DEFAULT_URL = "https://api.openai.com/v1"
export const ANTHROPIC_DEFAULT_URL = "https://api.anthropic.com/v1"

/** Anthropic answers with a few paragraphs at most; the API requires a bound. */
const ANTHROPIC_MAX_TOKENS = 2048

const trimSlashes = (url: string): string => url.trim().replace(/\/+$/, "")

/** The OpenAI adapters take the SDK-style base (`…/v1`) and append `/responses` or `/chat/completions`. */
export const openAiApiUrl = (baseUrl: string | undefined): string =>
  baseUrl === undefined || baseUrl.trim() === "" ? OPENAI_DEFAULT_URL : trimSlashes(baseUrl)

/**
 * The Anthropic adapter takes the host (`https://api.anthropic.com`) and appends `/v1/messages`;
 * settings hold the SDK-style base ending in `/v1`, so that suffix is taken off (a base without it is
 * kept).
 */
export const anthropicApiUrl = (baseUrl: string | undefined): string =>
  trimSlashes(baseUrl === undefined || baseUrl.trim() === "" ? ANTHROPIC_DEFAULT_URL : baseUrl).replace(/\/v1$/, "")

/** No credential header at all for an empty key (local servers), rather than an empty one. */
const keyOf = (settings: ModelSettings): string | undefined => {
  const key = Redacted.value(settings.apiKey)
  return key === "" ? undefined : key
}

const openAiEndpoint = (settings: ModelSettings): Endpoint => {
  const key = keyOf(settings)
  return {
    baseUrl: openAiApiUrl(settings.baseUrl),
    headers: key === undefined ? {} : { authorization: `Bearer ${key}` }
  }
}

const anthropicEndpoint = (settings: ModelSettings): Endpoint => {
  const key = keyOf(settings)
  return {
    baseUrl: anthropicApiUrl(settings.baseUrl),
    headers: {
      ...(key === undefined ? {} : { "x-api-key": key }),
      "anthropic-version": AnthropicMessages.ANTHROPIC_VERSION
    }
  }
}

/**
 * `toolNames`: every tool the caller's toolkit can run, offered or not; a call of another one is
 * unreadable output with the tool's name in the reason (`Wire.knownTool`).
 */
export const languageModelLayer = (
  settings: ModelSettings,
  toolNames?: ReadonlyArray<string>
): Layer.Layer<LanguageModel.LanguageModel, never, HttpClient.HttpClient> => {
  switch (settings.provider) {
    case "anthropic":
      return AnthropicMessages.layer({
        model: settings.model,
        maxTokens: ANTHROPIC_MAX_TOKENS,
        endpoint: anthropicEndpoint(settings),
        toolNames
      })
    case "openai":
      return settings.openAiApi === "chat"
        ? OpenAiChat.layer({ model: settings.model, endpoint: openAiEndpoint(settings), toolNames })
        : OpenAiResponses.layer({ model: settings.model, endpoint: openAiEndpoint(settings), toolNames })
  }
}
