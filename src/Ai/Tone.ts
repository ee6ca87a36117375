/**
 * The tone of the AI's next message (`tone` with `toneId` and `firstResponseToneId`; docs/ai.md):
 * `firstResponseToneId` for the first reply (else `toneId`), `toneId` for every later message (the
 * replies, the inactivity check-in and goodbye). None without the flag, or when the tone is gone.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { Integration } from "../Domain/Integration.js"
import type { Workspaces } from "../Workspaces/Workspaces.js"
import type { Tone } from "./Llm/Contract.js"

export const toneFor = (workspaces: Workspaces["Service"], integration: Integration, first: boolean) =>
  Effect.gen(function*() {
    const { firstResponseToneId, supportedFeatures, toneId } = integration.settings
    if (!supportedFeatures.tone) return null
    const id = first ? firstResponseToneId ?? toneId : toneId
    if (id === null) return null
    const tone = yield* workspaces.findTone(integration.workspaceId, id)
    return Option.match(tone, {
      onNone: () => null,
      onSome: (tone): Tone => ({ name: tone.name, instructions: tone.instructions })
    })
  })
