/**
 * The handlers of the inactivity timers (`inactivity_prompt`, `conversation_timeout`; declared with the
 * conversation that arms them, src/Conversations/TimerJobs.ts; docs/features.md).
 *
 * A timer that fires asks `ConversationTimers.silence` whether the customer is still silent (the
 * conversation open, its last message the AI's) and whether its flag is still on; if so the AI writes the
 * text — the check-in, or the goodbye when `messageInEndConversation` is on — in the conversation's tone
 * (`toneId`) and language with the workspace's model, or the bundled text without one or when the model
 * cannot be reached, and `ConversationTimers` applies it under the conversation's lock. A close's summary
 * (`close_conversation`'s, and `conversation_summary`'s with that flag) is the model's with
 * `conversationSummary`, otherwise the embedded extractive one: no model call the integration did not ask
 * for. What a provider billed is recorded as a reply's is.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { ConversationTimeout, InactivityPrompt, type TimerPayload } from "../Conversations/TimerJobs.js"
import { ConversationTimers, type Silence } from "../Conversations/Timers.js"
import { languageSetting } from "../Domain/Language.js"
import * as Job from "../Jobs/Job.js"
import { Outcome } from "../Jobs/Job.js"
import { orDieSql } from "../Sql.js"
import { Workspaces } from "../Workspaces/Workspaces.js"
import { AiReplies, type Generated } from "./AiReplies.js"
import { AiRepliesLive } from "./AiRepliesLive.js"
import type { HistoryMessage } from "./Llm/Contract.js"
import type { AiUnavailable } from "./Llm/Errors.js"
import * as Prompts from "./Llm/Prompt.js"
import { toHistory } from "./ModelReplies.js"
import { ModelSettingsFor, type ReplyModel } from "./ModelSettingsFor.js"
import { WorkspaceAiSettings } from "./Settings.js"
import { replyLanguage, texts } from "./Texts.js"
import { toneFor } from "./Tone.js"

/** Messages of the conversation the model reads to write the check-in or the goodbye. */
const HISTORY = 20

/** What the timers do when they fire; the job handlers (`TimersJobsLive`) call them. */
export class InactivityTimers extends Context.Service<InactivityTimers>()("Parley/InactivityTimers", {
  make: Effect.gen(function*() {
    const timers = yield* ConversationTimers
    const ai = yield* AiReplies
    const modelFor = yield* ModelSettingsFor
    const workspaces = yield* Workspaces
    const aiSettings = yield* WorkspaceAiSettings

    const historyOf = (silence: Silence): ReadonlyArray<HistoryMessage> =>
      silence.messages.filter((m) => m.type === "default" && !m.syncOnly).slice(-HISTORY).map(toHistory)

    /** Records what a provider billed for `generated`, as a reply's usage is recorded. */
    const billed = (silence: Silence, model: ReplyModel, generated: Generated) =>
      model === "embedded"
        ? Effect.void
        : aiSettings.recordUsage(silence.conversation.workspaceId, model.provider, model.model, {
          ...generated.usage,
          requests: 1
        })

    /** The model's text, or `fallback` (logged) when the model cannot be reached. */
    const written = (
      silence: Silence,
      model: ReplyModel,
      what: string,
      generate: Effect.Effect<Generated, AiUnavailable>,
      fallback: string
    ) =>
      generate.pipe(
        Effect.tap((generated) => billed(silence, model, generated)),
        Effect.map((generated) => generated.text),
        Effect.catch((error) =>
          Effect.as(
            Effect.logWarning(`The inactivity ${what} falls back to the bundled text: the model is unavailable`).pipe(
              Effect.annotateLogs({ reason: error.message })
            ),
            fallback
          )
        )
      )

    /** The conversation's language for the bundled texts: as a reply decides it (src/Ai/Texts.ts). */
    const languageOf = (silence: Silence) =>
      replyLanguage({
        override: languageSetting(silence.integration.settings.channelsSettings),
        customerMessages: silence.messages.filter((m) => m.role === "human" && m.type === "default").slice(-3)
          .map((m) => m.text),
        stored: silence.conversation.language
      })

    const inactivityText = (silence: Silence, model: ReplyModel, kind: Prompts.InactivityText) =>
      Effect.gen(function*() {
        const tone = yield* toneFor(workspaces, silence.integration, false)
        const language = languageOf(silence)
        return yield* written(
          silence,
          model,
          kind,
          ai.inactivity({ model, kind, tone, language, history: historyOf(silence) }),
          texts[language].inactivity[kind]
        )
      })

    const prompt = Effect.fn("Timers.inactivityPrompt")(function*(payload: TimerPayload) {
      const silence = yield* timers.silence(payload)
      if (Option.isNone(silence)) return Outcome.Done()
      const seen = silence.value
      if (!seen.integration.settings.supportedFeatures.inactivityPrompt || seen.prompted) return Outcome.Done()
      const model = yield* modelFor.forWorkspace(seen.conversation.workspaceId)
      const text = yield* inactivityText(seen, model, "prompt")
      const sent = yield* timers.prompt(seen, text)
      yield* Effect.annotateCurrentSpan({ "timer.sent": sent })
      return Outcome.Done()
    }, orDieSql)

    const timeout = Effect.fn("Timers.conversationTimeout")(function*(payload: TimerPayload) {
      const silence = yield* timers.silence(payload)
      if (Option.isNone(silence)) return Outcome.Done()
      const seen = silence.value
      const features = seen.integration.settings.supportedFeatures
      if (!features.conversationTimeout) return Outcome.Done()
      const model = yield* modelFor.forWorkspace(seen.conversation.workspaceId)
      const goodbye = features.messageInEndConversation ? yield* inactivityText(seen, model, "goodbye") : null
      const history = historyOf(seen)
      const extractive = ai.summary({ model: "embedded", history }).pipe(Effect.map((generated) => generated.text))
      const summary = features.conversationSummary && model !== "embedded"
        ? yield* ai.summary({ model, history }).pipe(
          Effect.tap((generated) => billed(seen, model, generated)),
          Effect.map((generated) => generated.text),
          Effect.catch((error) =>
            Effect.logWarning("The inactivity close's summary is extractive: the model is unavailable").pipe(
              Effect.annotateLogs({ reason: error.message }),
              Effect.andThen(extractive)
            )
          )
        )
        : yield* extractive.pipe(Effect.orDie)
      const closed = yield* timers.close(seen, { goodbye, summary })
      yield* Effect.annotateCurrentSpan({ "timer.closed": closed })
      return Outcome.Done()
    }, orDieSql)

    return { prompt, timeout } as const
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
  static readonly layer = this.layerWithoutDependencies.pipe(
    Layer.provide([
      ConversationTimers.layer,
      AiRepliesLive,
      ModelSettingsFor.layer,
      Workspaces.layer,
      WorkspaceAiSettings.layer
    ])
  )
}

export const TimersJobsLive = Job.handlers(
  Effect.gen(function*() {
    const timers = yield* InactivityTimers
    return [Job.handle(InactivityPrompt, timers.prompt), Job.handle(ConversationTimeout, timers.timeout)]
  })
).pipe(Layer.provide(InactivityTimers.layer))
