/**
 * The `LanguageModel` for one `ModelSettings`, built per call: the client carries that call's key and
 * base URL and nothing is shared between workspaces but the HTTP connection pool (the `HttpClient` in
 * the environment). Building one is a handful of closures, so there is no cache to key or evict.
 */
import * as LanguageModel from "@effect/ai/LanguageModel"
import type * as HttpClient from "@effect/platform/HttpClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type { ModelSettings } from "./Contract.js"

export const OPENAI_DEFAULT_URL = "https://api.openai.com/v1"
export const ANTHROPIC_DEFAULT_URL = "https://api.anthropic.com/v1"

/** Anthropic answers with a few paragraphs at most; the API requires a bound. */
const ANTHROPIC_MAX_TOKENS = 2048

const trimSlashes = (url: string): string => url.trim().replace(/\/+$/, "")

/** `OpenAiClient` takes the SDK-style base (`…/v1`) and appends `/responses` or `/chat/completions`. */
export const openAiApiUrl = (baseUrl: string | undefined): string =>
  baseUrl === undefined || baseUrl.trim() === "" ? OPENAI_DEFAULT_URL : trimSlashes(baseUrl)

/**
 * `AnthropicClient` takes the host (`https://api.anthropic.com`) and appends `/v1/messages`; settings
 * hold the SDK-style base ending in `/v1`, so that suffix is taken off (a base without it is kept).
 */
export const anthropicApiUrl = (baseUrl: string | undefined): string =>
  trimSlashes(baseUrl === undefined || baseUrl.trim() === "" ? ANTHROPIC_DEFAULT_URL : baseUrl).replace(/\/v1$/, "")

/** No credential header at all for an empty key (local servers), rather than an empty one. */
const keyOf = (settings: ModelSettings): Redacted.Redacted<string> | undefined =>
  Redacted.value(settings.apiKey) === "" ? undefined : settings.apiKey

/**
 * The vendors' modules are loaded on first use: their generated API schemas cost ~70 MB of memory,
 * which an instance answering with the embedded responder (the default) never needs.
 */
const anthropicModules = Effect.promise(() =>
  Promise.all([import("@effect/ai-anthropic/AnthropicClient"), import("@effect/ai-anthropic/AnthropicLanguageModel")])
)
const openAiModules = Effect.promise(() =>
  Promise.all([
    import("@effect/ai-openai/OpenAiClient"),
    import("@effect/ai-openai/OpenAiLanguageModel"),
    import("./OpenAiChat.js")
  ])
)

/** Loads a provider's modules ahead of its first call (at start-up, for the configured default). */
export const preload = (provider: ModelSettings["provider"]): Effect.Effect<void> =>
  provider === "anthropic" ? Effect.asVoid(anthropicModules) : Effect.asVoid(openAiModules)

export const languageModelLayer = (
  settings: ModelSettings
): Layer.Layer<LanguageModel.LanguageModel, never, HttpClient.HttpClient> => {
  switch (settings.provider) {
    case "anthropic":
      return Layer.unwrapEffect(Effect.map(anthropicModules, ([AnthropicClient, AnthropicLanguageModel]) =>
        AnthropicLanguageModel.layer({ model: settings.model, config: { max_tokens: ANTHROPIC_MAX_TOKENS } }).pipe(
          Layer.provide(AnthropicClient.layer({ apiKey: keyOf(settings), apiUrl: anthropicApiUrl(settings.baseUrl) }))
        )
      ))
    case "openai":
      return Layer.unwrapEffect(Effect.map(openAiModules, ([OpenAiClient, OpenAiLanguageModel, OpenAiChat]) => {
        const client = OpenAiClient.layer({ apiKey: keyOf(settings), apiUrl: openAiApiUrl(settings.baseUrl) })
        const model = settings.openAiApi === "chat"
          ? OpenAiChat.layer({ model: settings.model })
          // store: false — customers' messages are not kept on OpenAI's side for later retrieval.
          : OpenAiLanguageModel.layer({ model: settings.model, config: { store: false } })
        return model.pipe(Layer.provide(client))
      }))
  }
}
