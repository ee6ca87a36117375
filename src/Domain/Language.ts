/**
 * The languages Parley writes its own texts in (src/Ai/Texts.ts; docs/ai.md, "Languages"), and the
 * integration's override, `channelsSettings.language`: one of them, or absent (detected per reply).
 * Anything else is a 422 located at the field.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { InvalidInput } from "./Errors.js"
import type { JsonObject } from "./Primitives.js"

export const Language = Schema.Literals(["en", "es", "fr", "de", "pt"])
export type Language = typeof Language.Type

/** Checks `channelsSettings.language` when an integration is saved. */
export const checkLanguageSetting = (channelsSettings: JsonObject): Effect.Effect<void, InvalidInput> => {
  const value = channelsSettings["language"]
  return value === undefined || Schema.is(Language)(value)
    ? Effect.void
    : InvalidInput.one(
      ["channelsSettings", "language"],
      `Should be one of ${Language.literals.join(", ")} (or left out: the language is then detected)`,
      "literal_error"
    )
}

/** `channelsSettings.language`, when set to one of the languages. */
export const languageSetting = (channelsSettings: JsonObject): Language | null => {
  const value = channelsSettings["language"]
  return Schema.is(Language)(value) ? value : null
}
