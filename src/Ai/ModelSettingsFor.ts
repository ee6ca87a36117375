/**
 * Which model answers a workspace: the seam between reply generation and where AI settings live. A
 * workspace's own settings (`WorkspaceAiSettings`, set through the admin API and CLI) answer for it;
 * without them, the global configuration (`AI_PROVIDER`, `AI_MODEL`, keys and base URLs:
 * `globalModelSettings` in src/Config.ts).
 *
 * The reply job asks once per run and uses the answer for the reply, the title and the summary, so one
 * run never mixes two models (nor one workspace's key with another's).
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { WorkspaceId } from "../Domain/Ids.js"
import * as AppConfig from "../Config.js"
import type { ModelSettings } from "./Llm/Contract.js"
import { preload } from "./Llm/Providers.js"
import { WorkspaceAiSettings } from "./Settings.js"

/** A language model, or the embedded knowledge-base responder. */
export type ReplyModel = ModelSettings | "embedded"

export class ModelSettingsFor extends Effect.Service<ModelSettingsFor>()("Parley/Ai/ModelSettingsFor", {
  dependencies: [WorkspaceAiSettings.Default],
  effect: Effect.gen(function*() {
    const global = yield* AppConfig.globalModelSettings
    const settings = yield* WorkspaceAiSettings
    // The first reply should not wait for the provider's modules to load (a workspace's own provider
    // loads on its first use).
    if (Option.isSome(global)) yield* preload(global.value.provider)
    return {
      /** The model that answers `workspaceId`'s customers. */
      forWorkspace: (workspaceId: WorkspaceId): Effect.Effect<ReplyModel> =>
        Effect.map(settings.resolve(workspaceId, global), Option.getOrElse((): ReplyModel => "embedded"))
    }
  })
}) {}
