/** The settings the dashboard's pages read, read once with the rest (and validated at start, `Startup.ts`). */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as AppConfig from "../Config.js"

export class DashboardSettings extends Context.Service<DashboardSettings>()("Parley/Dashboard/Settings", {
  make: Effect.gen(function*() {
    return {
      /** Model prices for the AI report's estimated cost (`AI_PRICES`). */
      aiPrices: yield* AppConfig.AiPrices,
      /** The embedded responder's thresholds, to say whether it would answer a search (`PARLEY_KB_MIN_*`). */
      embedded: yield* AppConfig.EmbeddedConfig
    } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
