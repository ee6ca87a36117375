/**
 * `LOG_LEVEL` takes Effect's level names in any case, the labels its records carry, and Effect 3's
 * `Warning` (configurations written before the move to Effect 4 keep starting); anything else is refused
 * with the setting named.
 */
import { describe, expect, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import { describeConfigError } from "../../src/Config.js"
import { LoggingConfig } from "../../src/Observability/Logging.js"

const levelOf = (value: string) =>
  LoggingConfig.pipe(
    Effect.map((config) => config.level),
    Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord({ LOG_LEVEL: value }))
  )

describe("LOG_LEVEL", () => {
  it.effect("names, labels and Effect 3's Warning", () =>
    Effect.gen(function*() {
      const cases = [["Warn", "Warn"], ["WARN", "Warn"], ["Warning", "Warn"], ["debug", "Debug"], [" Info ", "Info"], ["OFF", "None"]]
      for (const [value, level] of cases) expect(yield* levelOf(value ?? "")).toBe(level)
    }))

  it.effect("another word is refused, naming the setting and the levels", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(levelOf("loud"))
      const { reason, setting } = describeConfigError(error)
      expect(setting).toBe("LOG_LEVEL")
      expect(reason).toContain("LOG_LEVEL=loud is not a log level: All, Trace, Debug, Info, Warn, Error, Fatal or None")
    }))
})
