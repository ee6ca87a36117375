/** The global default model from the environment (`globalModelSettings` in src/Config.ts). */
import { describe, expect, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { RetryPolicyConfig } from "../../src/Ai/Llm/Agent.js"
import { defaultRetryPolicy } from "../../src/Ai/Llm/Retry.js"
import { AiMaxTurns, globalModelSettings } from "../../src/Config.js"

const withEnv = (env: Record<string, string>) =>
  Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(env))

const settings = (env: Record<string, string>) => globalModelSettings.pipe(withEnv(env))

describe("globalModelSettings", () => {
  it.effect("is none for the embedded responder, the default", () =>
    Effect.gen(function*() {
      expect(yield* settings({})).toEqual(Option.none())
      expect(yield* settings({ AI_PROVIDER: "embedded", AI_MODEL: "ignored" })).toEqual(Option.none())
    }))

  it.effect("OpenAI: the Responses API by default, the vendor's URL", () =>
    Effect.gen(function*() {
      const value = Option.getOrThrow(yield* settings({ AI_PROVIDER: "openai", AI_MODEL: "gpt-4.1-mini", OPENAI_API_KEY: "sk-1" }))
      expect(value).toMatchObject({ provider: "openai", model: "gpt-4.1-mini", baseUrl: undefined, openAiApi: "responses" })
      expect(Redacted.value(value.apiKey)).toBe("sk-1")
    }))

  it.effect("an OpenAI-compatible server: chat completions by default, no key needed", () =>
    Effect.gen(function*() {
      const value = Option.getOrThrow(
        yield* settings({ AI_PROVIDER: "openai", AI_MODEL: "llama3.2", OPENAI_BASE_URL: "http://localhost:11434/v1" })
      )
      expect(value).toMatchObject({ baseUrl: "http://localhost:11434/v1", openAiApi: "chat" })
      expect(Redacted.value(value.apiKey)).toBe("")
      const responses = Option.getOrThrow(
        yield* settings({ AI_PROVIDER: "openai", AI_MODEL: "m", OPENAI_BASE_URL: "https://proxy/v1", OPENAI_API: "responses" })
      )
      expect(responses.openAiApi).toBe("responses")
    }))

  it.effect("Anthropic with its own key and base URL", () =>
    Effect.gen(function*() {
      const value = Option.getOrThrow(yield* settings({
        AI_PROVIDER: "anthropic",
        AI_MODEL: "claude-sonnet-4-5",
        ANTHROPIC_API_KEY: "sk-ant-1",
        OPENAI_API_KEY: "sk-openai-never-used",
        ANTHROPIC_BASE_URL: "https://api.anthropic.com/v1"
      }))
      expect(value).toMatchObject({ provider: "anthropic", baseUrl: "https://api.anthropic.com/v1" })
      expect(Redacted.value(value.apiKey)).toBe("sk-ant-1")
    }))

  it.effect("refuses a provider without a model, or without a key for the vendor's own API", () =>
    Effect.gen(function*() {
      const noModel = yield* Effect.flip(settings({ AI_PROVIDER: "openai", OPENAI_API_KEY: "sk-1" }))
      expect(String(noModel)).toContain("AI_MODEL is required with AI_PROVIDER=openai")
      const noKey = yield* Effect.flip(settings({ AI_PROVIDER: "anthropic", AI_MODEL: "claude", OPENAI_API_KEY: "sk-1" }))
      expect(String(noKey)).toContain("ANTHROPIC_API_KEY is required with AI_PROVIDER=anthropic")
      const unknown = yield* Effect.flip(settings({ AI_PROVIDER: "gemini", AI_MODEL: "x" }))
      expect(String(unknown)).toContain("AI_PROVIDER")
    }))
})

describe("the retry policy and turn limit", () => {
  it.effect("defaults, and durations from the environment", () =>
    Effect.gen(function*() {
      expect(yield* RetryPolicyConfig.pipe(withEnv({}))).toEqual(defaultRetryPolicy)
      expect(yield* AiMaxTurns.pipe(withEnv({}))).toBe(6)
      const policy = yield* RetryPolicyConfig.pipe(
        withEnv({ AI_TIMEOUT: "15 seconds", AI_RETRY_BUDGET: "45 seconds", AI_MAX_RETRIES: "2" })
      )
      expect(Duration.toMillis(policy.timeout)).toBe(15_000)
      expect(Duration.toMillis(policy.retryBudget)).toBe(45_000)
      expect(policy.maxRetries).toBe(2)
    }))
})
