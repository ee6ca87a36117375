/**
 * The inactivity timers' settings (`inactivityPrompt`, `conversationTimeout`; docs/features.md):
 * `channelsSettings.timers.inactivityPromptSeconds` (default 240) and
 * `channelsSettings.timers.conversationTimeoutSeconds` (default 1800). Whole seconds from 1 (short
 * timers are how integrators test) to 7 days; the prompt comes before the timeout (compared with the
 * defaults filled in). An integration's update with anything else is a 422 located at the field.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { decodeInput, InvalidInput } from "./Errors.js"
import type { JsonObject } from "./Primitives.js"

export const DEFAULT_INACTIVITY_PROMPT_SECONDS = 240
export const DEFAULT_CONVERSATION_TIMEOUT_SECONDS = 1800
/** 7 days. */
export const MAX_TIMER_SECONDS = 7 * 24 * 60 * 60

const TimerSeconds = Schema.Int.check(
  Schema.isBetween({ minimum: 1, maximum: MAX_TIMER_SECONDS }, {
    message: `Should be whole seconds from 1 to ${MAX_TIMER_SECONDS} (7 days)`
  })
)

/** `channelsSettings.timers` as an integrator sends it. */
export const TimersSettings = Schema.Struct({
  inactivityPromptSeconds: Schema.optionalKey(TimerSeconds),
  conversationTimeoutSeconds: Schema.optionalKey(TimerSeconds)
})

export interface Timers {
  readonly inactivityPromptSeconds: number
  readonly conversationTimeoutSeconds: number
}

const decodeTimers = decodeInput(TimersSettings)
const readTimers = Schema.decodeUnknownOption(TimersSettings)

/**
 * The timers of `channelsSettings`, validated: a 422's problems located under
 * `channelsSettings.timers`. Absent settings are the defaults.
 */
export const checkTimers = (channelsSettings: JsonObject): Effect.Effect<Timers, InvalidInput> =>
  Effect.gen(function*() {
    const raw = channelsSettings["timers"]
    if (raw === undefined) return timersOf(channelsSettings)
    const located = (error: InvalidInput) =>
      new InvalidInput({
        problems: error.problems.map((problem) => ({ ...problem, path: ["channelsSettings", "timers", ...problem.path] }))
      })
    const given = yield* decodeTimers(raw).pipe(Effect.mapError(located))
    const timers: Timers = {
      inactivityPromptSeconds: given.inactivityPromptSeconds ?? DEFAULT_INACTIVITY_PROMPT_SECONDS,
      conversationTimeoutSeconds: given.conversationTimeoutSeconds ?? DEFAULT_CONVERSATION_TIMEOUT_SECONDS
    }
    if (timers.inactivityPromptSeconds >= timers.conversationTimeoutSeconds) {
      return yield* InvalidInput.one(
        ["channelsSettings", "timers", "inactivityPromptSeconds"],
        `The inactivity prompt (${timers.inactivityPromptSeconds} s) should come before the conversation timeout ` +
          `(${timers.conversationTimeoutSeconds} s)`,
        "timer_order"
      )
    }
    return timers
  })

/**
 * The timers in force: stored settings were checked when saved; a value that does not read (a row saved
 * before the check existed) counts as unset.
 */
export const timersOf = (channelsSettings: JsonObject): Timers => {
  const given = readTimers(channelsSettings["timers"] ?? {})
  return {
    inactivityPromptSeconds: given._tag === "Some"
      ? given.value.inactivityPromptSeconds ?? DEFAULT_INACTIVITY_PROMPT_SECONDS
      : DEFAULT_INACTIVITY_PROMPT_SECONDS,
    conversationTimeoutSeconds: given._tag === "Some"
      ? given.value.conversationTimeoutSeconds ?? DEFAULT_CONVERSATION_TIMEOUT_SECONDS
      : DEFAULT_CONVERSATION_TIMEOUT_SECONDS
  }
}
