/**
 * Which model answers a workspace: the seam between reply generation and where AI settings live. A
 * workspace's own settings (`WorkspaceAiSettings`, set through the admin API and CLI) answer for it;
 * without them, the global configuration (`AI_PROVIDER`, `AI_MODEL`, keys and base URLs:
 * `globalModelSettings` in src/Config.ts).
 *
 * The reply job asks once per run and uses the answer for the reply, the title and the summary, so one
 * run never mixes two models (nor one workspace's key with another's).
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { WorkspaceId } from "../Domain/Ids.js"
import * as AppConfig from "../Config.js"
import type { ModelSettings } from "./Llm/Contract.js"
import { WorkspaceAiSettings } from "./Settings.js"

/** A language model, or the embedded knowledge-base responder. */
export type ReplyModel = ModelSettings | "embedded"

export class ModelSettingsFor extends Context.Service<ModelSettingsFor>()("Parley/Ai/ModelSettingsFor", {
  make: Effect.gen(function*() {
    const global = yield* AppConfig.globalModelSettings
    const settings = yield* WorkspaceAiSettings
    return {
      /** The model that answers `workspaceId`'s customers. */
      forWorkspace: (workspaceId: WorkspaceId): Effect.Effect<ReplyModel> =>
        Effect.map(settings.resolve(workspaceId, global), Option.getOrElse((): ReplyModel => "embedded"))
    }
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
  static readonly layer = this.layerWithoutDependencies.pipe(Layer.provide(WorkspaceAiSettings.layer))
}
