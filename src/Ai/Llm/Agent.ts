/**
 * The support agent: a bounded tool loop over an `effect/ai` `LanguageModel` (built per call from the
 * request's `ModelSettings`), plus the plain model calls for a conversation's title and summary.
 *
 * The loop: at most `maxTurns` model calls. A turn that calls `escalate_to_human` or
 * `close_conversation` ends the reply with that action (a hand-over wins over a close). A turn without
 * tool calls ends it with its text as the answer. Other tool calls (search, past conversations) are
 * answered and the model is called again. When the turns run out, or the model answers with nothing,
 * the reply is honest about it: a hand-over when `escalation` is allowed, otherwise `FALLBACK_TEXT`.
 */
import * as AiError from "effect/ai/AiError"
import * as LanguageModel from "effect/ai/LanguageModel"
import * as Prompt from "effect/ai/Prompt"
import * as Response from "effect/ai/Response"
import { CurrentSpanTransformer, type SpanTransformer } from "effect/ai/Telemetry"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as HttpClient from "effect/http/HttpClient"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as AppConfig from "../../Config.js"
import { aiToolCallErrorsOf } from "../../Observability/Metrics.js"
import type {
  AgentAction,
  AgentReply,
  AgentRequest,
  ConversationRequest,
  GeneratedText,
  ModelSettings,
  Passage,
  Tone,
  Usage
} from "./Contract.js"
import { ModelScreening, ModelVerdict } from "./Contract.js"
import type { AiUnavailable } from "./Errors.js"
import { texts } from "../Texts.js"
import * as Prompts from "./Prompt.js"
import { languageModelLayer } from "./Providers.js"
import { defaultRetryPolicy, makeBudget, type RetryBudget, type RetryPolicy, withRetries, withUsage } from "./Retry.js"

export interface AgentService {
  /** One reply to the customer's unanswered messages: an answer, a hand-over or a close. */
  readonly reply: (request: AgentRequest) => Effect.Effect<AgentReply, AiUnavailable>
  /** A short title for the conversation (`conversationTitle`). */
  readonly title: (request: ConversationRequest) => Effect.Effect<GeneratedText, AiUnavailable>
  /** A summary for the human agent who takes the conversation over (`conversationSummary`). */
  readonly summary: (request: ConversationRequest) => Effect.Effect<GeneratedText, AiUnavailable>
  /**
   * The verifier's model check of a draft (`verifier`), and of whether the customer's problem is solved
   * (`verifierResolution`): one JSON object read with a strict schema.
   */
  readonly verify: (
    request: {
      readonly settings: ModelSettings
      readonly draft: string
      readonly passages: ReadonlyArray<Prompts.PassageForModel>
      readonly customer: ReadonlyArray<string>
      readonly resolution: boolean
    }
  ) => Effect.Effect<Judged<ModelVerdict>, AiUnavailable>
  /** The guardrail classifier's verdict on one customer message (`customerMessageGuardrails`). */
  readonly screen: (
    request: { readonly settings: ModelSettings; readonly message: string }
  ) => Effect.Effect<Judged<ModelScreening>, AiUnavailable>
  /** The check-in after a silence or the goodbye of a close for inactivity, in the tone given. */
  readonly inactivity: (
    request: ConversationRequest & { readonly kind: Prompts.InactivityText; readonly tone: Tone | null }
  ) => Effect.Effect<GeneratedText, AiUnavailable>
}

/** A judgement read from a model's JSON answer, and what it cost. */
export interface Judged<A> {
  readonly value: A
  readonly usage: Usage
}

/** Passages a search returns to the model at most. */
export const MAX_SEARCH_RESULTS = 5

/** Numbers every passage the model sees once, given or searched, so that `[n]` means one passage. */
const makeRegistry = () => {
  const byKey = new Map<string, Prompts.PassageForModel>()
  const passages = new Map<number, Passage>()
  return {
    add: (passage: Passage): Prompts.PassageForModel => {
      const key = `${passage.articleId}\u0000${passage.heading ?? ""}\u0000${passage.text}`
      const known = byKey.get(key)
      if (known !== undefined) return known
      const numbered = Prompts.toModelPassage(byKey.size + 1, passage)
      byKey.set(key, numbered)
      passages.set(numbered.ref, passage)
      return numbered
    },
    all: (): ReadonlyArray<Prompts.PassageForModel> => [...byKey.values()],
    byRef: (ref: number): Passage | undefined => passages.get(ref)
  }
}

type RecordedAction =
  | { readonly _tag: "Escalate"; readonly reason: string; readonly summary: string; readonly message: string }
  | { readonly _tag: "Close"; readonly summary: string; readonly message: string }

/**
 * `gen_ai.response.finish_reasons` on the model call's span, where the provider module left it out
 * (the Responses API model sets it only for incomplete answers). Every other GenAI attribute
 * (`gen_ai.system`, `gen_ai.request.model`, `gen_ai.operation.name`, `gen_ai.usage.*`) is set by the
 * provider modules (`Wire.annotate`) and not repeated.
 */
const fillFinishReasons: SpanTransformer = ({ response, span }) => {
  if (span.attributes.has("gen_ai.response.finish_reasons")) return
  const finish = response.find((part) => part.type === "finish")
  if (finish !== undefined) span.attribute("gen_ai.response.finish_reasons", [finish.reason])
}

/** Adds a model call's tokens: every input token (cached ones included) and every output token. */
const addUsage = (total: Ref.Ref<Usage>, usage: Response.Usage) =>
  Ref.update(total, (sum) => ({
    inputTokens: sum.inputTokens + (usage.inputTokens.total ?? 0),
    outputTokens: sum.outputTokens + (usage.outputTokens.total ?? 0)
  }))

/**
 * A tool call's own span, `Toolkit.handle` with the tool's name and arguments, a child of the model
 * call that asked for it (Effect's toolkit runs handlers without a span of their own).
 */
const toolSpan = (tool: Prompts.ToolName, parameters: unknown) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.withSpan(effect, "Toolkit.handle", { attributes: { tool, parameters } })

/** A failed call still reports the tokens its earlier model calls used. */
const reportingUsage = (usage: Ref.Ref<Usage>) => <A>(effect: Effect.Effect<A, AiUnavailable>) =>
  Effect.catch(effect, (error: AiUnavailable) => Effect.flatMap(Ref.get(usage), (used) => Effect.fail(withUsage(error, used))))

/** What the loop reads of one model turn, streamed or not. */
interface Turn {
  readonly text: string
  /** How many tools the turn called. */
  readonly toolCalls: number
  /** The tools whose arguments did not match their parameters (one entry per failed call). */
  readonly failedToolCalls: ReadonlyArray<string>
  readonly usage: Response.Usage
  /** The turn's parts, for the next turn's prompt (`Prompt.fromResponseParts` reads stream parts too). */
  readonly content: ReadonlyArray<Response.AnyPart>
}

/** The tools whose calls failed on their arguments, from a turn's parts (their `tool-result`s). */
const failedToolCalls = (parts: ReadonlyArray<Response.AnyPart>): ReadonlyArray<string> =>
  parts.flatMap((part) =>
    part.type === "tool-result" && part.isFailure && AiError.isAiError(part.result) &&
      part.result.reason._tag === "ToolParameterValidationError"
      ? [part.name]
      : []
  )

/** A turn whose stream ended without a `finish` part (a server that sent no usage). */
const emptyUsage = new Response.Usage({ inputTokens: {}, outputTokens: {} })

/** Citation markers, left out of the text shown while it is written: the final message has none either. */
const MARKERS = /\s?\[\d+(?:\s*,\s*\d+)*\]/g

/**
 * A streamed turn: `onText` hears the text so far at each delta (markers removed), and the turn is read
 * from the stream's parts as `generateText`'s would be. Tool calls are run by the toolkit as they arrive.
 */
const streamedTurn = <E, R>(
  stream: Stream.Stream<Response.AnyPart, E, R>,
  onText: (text: string) => Effect.Effect<void>
): Effect.Effect<Turn, E, R> =>
  Effect.gen(function*() {
    let text = ""
    const parts = yield* stream.pipe(
      Stream.tap((part) => {
        if (part.type !== "text-delta" || part.delta === "") return Effect.void
        text += part.delta
        return onText(text.replace(MARKERS, ""))
      }),
      Stream.runCollect
    )
    const finish = parts.find((part) => part.type === "finish")
    return {
      text,
      toolCalls: parts.filter((part) => part.type === "tool-call").length,
      failedToolCalls: failedToolCalls(parts),
      usage: finish?.type === "finish" ? finish.usage : emptyUsage,
      content: parts
    }
  })

export const makeAgent = (policy: RetryPolicy): Effect.Effect<AgentService, never, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    // Only the HTTP client is kept from construction: the caller's span and services stay the caller's.
    const httpClient = yield* HttpClient.HttpClient

    /**
     * Runs `effect` with the request's own model; never a client built for other settings. `toolNames`:
     * the tools the effect's toolkit can run (a call of another one is unreadable output).
     */
    const withModel = <A, E>(
      settings: ModelSettings,
      effect: Effect.Effect<A, E, LanguageModel.LanguageModel>,
      toolNames?: ReadonlyArray<string>
    ) =>
      effect.pipe(
        Effect.provide(languageModelLayer(settings, toolNames)),
        Effect.provideService(CurrentSpanTransformer, fillFinishReasons),
        Effect.provideService(HttpClient.HttpClient, httpClient)
      )

    const reply = (request: AgentRequest): Effect.Effect<AgentReply, AiUnavailable> => {
      const { features, settings } = request
      return withModel(
        settings,
        Effect.gen(function*() {
          const started = yield* Clock.currentTimeMillis
          const model = yield* LanguageModel.LanguageModel
          const budget = yield* makeBudget(policy)
          const usage = yield* Ref.make<Usage>({ inputTokens: 0, outputTokens: 0 })
          const registry = makeRegistry()
          const bundle = request.texts ?? texts.en
          const retrieved = features.preemptiveRetrieval ? request.retrieved.map(registry.add) : []
          const actions = yield* Ref.make<ReadonlyArray<RecordedAction>>([])
          const record = (action: RecordedAction): Effect.Effect<typeof Prompts.ActionResult.Type> =>
            Ref.update(actions, (recorded) => [...recorded, action]).pipe(Effect.as({ status: "done" } as const))
          const unavailable: Effect.Effect<typeof Prompts.ActionResult.Type> = Effect.succeed({ status: "unavailable" })

          const handlers = Prompts.SupportToolkit.of({
            search_knowledge: (parameters) =>
              request.tools.searchKnowledge(parameters.query).pipe(
                Effect.map((found) => ({ passages: found.slice(0, MAX_SEARCH_RESULTS).map(registry.add) })),
                toolSpan(Prompts.ToolName.searchKnowledge, parameters)
              ),
            // The tools below are only offered with their flag; a model that calls one anyway is told no.
            escalate_to_human: (parameters) =>
              (features.escalation ? record({ _tag: "Escalate", ...parameters }) : unavailable).pipe(
                toolSpan(Prompts.ToolName.escalateToHuman, parameters)
              ),
            close_conversation: (parameters) =>
              (features.closeTicket ? record({ _tag: "Close", ...parameters }) : unavailable).pipe(
                toolSpan(Prompts.ToolName.closeConversation, parameters)
              ),
            get_past_conversations: (parameters) =>
              (features.getPastConversationsTool
                ? request.tools.pastConversations().pipe(Effect.map((conversations) => ({ conversations })))
                : Effect.succeed({ conversations: [] })).pipe(
                  toolSpan(Prompts.ToolName.getPastConversations, parameters)
                )
          })
          const toolkit = yield* Prompts.SupportToolkit.pipe(
            Effect.provideContext(yield* Prompts.SupportToolkit.toHandlers(handlers))
          )
          const offered = Prompts.offeredTools(features)

          const finish = (text: string, action: AgentAction, turns: number) =>
            Effect.gen(function*() {
              const { refs, text: customerText } = Prompts.readCitations(text, registry.all())
              const reply: AgentReply = {
                text: customerText,
                action,
                citations: refs.flatMap((ref) => {
                  const passage = registry.byRef(ref)
                  return passage === undefined ? [] : [passage]
                }),
                usage: yield* Ref.get(usage),
                provider: settings.provider,
                model: settings.model,
                turns,
                latencyMs: (yield* Clock.currentTimeMillis) - started,
                draft: text,
                sources: registry.all()
              }
              yield* Effect.annotateCurrentSpan({
                "parley.ai.turns": turns,
                "parley.ai.action": action._tag,
                "parley.ai.citations": reply.citations.length,
                "parley.ai.usage.input_tokens": reply.usage.inputTokens,
                "parley.ai.usage.output_tokens": reply.usage.outputTokens
              })
              return reply
            })

          const maxTurns = Math.max(1, Math.floor(request.maxTurns))
          let prompt = Prompts.replyPrompt({
            features,
            tone: request.tone,
            history: request.history,
            unanswered: request.unanswered,
            retrieved,
            correction: request.correction,
            noteMark: Prompts.noteMark(),
            customerData: request.customerData,
            instructions: request.instructions
          })
          let turns = 0
          let ending = Prompts.TURN_LIMIT_REASON
          while (turns < maxTurns) {
            const options = { prompt, toolkit, toolChoice: { mode: "auto", oneOf: offered } } as const
            const onText = request.onText
            const response = yield* withRetries(
              Ref.set(actions, []).pipe(
                Effect.andThen(
                  onText === undefined
                    ? Effect.map(model.generateText(options), (response): Turn => ({
                      text: response.text,
                      toolCalls: response.toolCalls.length,
                      failedToolCalls: failedToolCalls(response.content),
                      usage: response.usage,
                      content: response.content
                    }))
                    : streamedTurn(model.streamText(options), onText)
                ),
                Effect.tap((response) => addUsage(usage, response.usage))
              ),
              { settings, policy, budget }
            ).pipe(reportingUsage(usage))
            turns += 1
            // Arguments that did not match a tool's parameters went back to the model as the tool's error
            // (the tools' failureMode): counted, and the model's next turn may correct them.
            yield* Effect.forEach(response.failedToolCalls, (tool) =>
              Metric.update(aiToolCallErrorsOf(settings.provider, tool), 1), { discard: true })
            const recorded = yield* Ref.get(actions)
            const turnText = response.text.trim()
            const escalation = recorded.find((action) => action._tag === "Escalate")
            if (escalation !== undefined) {
              return yield* finish(
                escalation.message.trim() || turnText || bundle.handover,
                { _tag: "Escalate", reason: escalation.reason, summary: escalation.summary },
                turns
              )
            }
            const close = recorded.find((action) => action._tag === "Close")
            if (close !== undefined) {
              return yield* finish(close.message.trim() || turnText || bundle.closing, {
                _tag: "Close",
                summary: close.summary
              }, turns)
            }
            if (response.toolCalls === 0) {
              if (turnText !== "") return yield* finish(turnText, { _tag: "Answer" }, turns)
              ending = Prompts.NO_ANSWER_REASON
              break
            }
            ending = response.failedToolCalls.length === response.toolCalls
              ? Prompts.INVALID_TOOL_CALLS_REASON
              : Prompts.TURN_LIMIT_REASON
            prompt = Prompt.concat(prompt, Prompt.fromResponseParts(response.content))
          }
          yield* Effect.logWarning("The agent ended without an answer").pipe(
            Effect.annotateLogs({ "parley.ai.turns": turns, reason: ending })
          )
          return yield* features.escalation
            ? finish(bundle.handover, {
              _tag: "Escalate",
              reason: ending,
              summary: Prompts.fallbackSummary(request.unanswered, bundle)
            }, turns)
            : finish(bundle.fallback, { _tag: "Answer" }, turns)
        }),
        Object.keys(Prompts.SupportToolkit.tools)
      ).pipe(
        Effect.withSpan("Agent.reply", {
          attributes: { "parley.ai.provider": settings.provider, "parley.ai.model": settings.model }
        })
      )
    }

    /** One model call without tools; an empty answer counts as unreadable and is asked again. */
    const generate = (
      name: "title" | "summary" | "inactivity",
      request: ConversationRequest,
      prompt: Prompt.Prompt,
      clean: (text: string) => string
    ): Effect.Effect<GeneratedText, AiUnavailable> =>
      withModel(
        request.settings,
        Effect.gen(function*() {
          const started = yield* Clock.currentTimeMillis
          const model = yield* LanguageModel.LanguageModel
          const budget: RetryBudget = yield* makeBudget(policy)
          const usage = yield* Ref.make<Usage>({ inputTokens: 0, outputTokens: 0 })
          const text = yield* withRetries(
            model.generateText({ prompt }).pipe(
              Effect.tap((response) => addUsage(usage, response.usage)),
              Effect.map((response) => clean(response.text)),
              Effect.filterOrFail((text) => text !== "", () =>
                AiError.make({
                  module: "Agent",
                  method: name,
                  reason: new AiError.InvalidOutputError({ description: "The model answered with an empty text" })
                }))
            ),
            { settings: request.settings, policy, budget }
          ).pipe(reportingUsage(usage))
          return {
            text,
            usage: yield* Ref.get(usage),
            provider: request.settings.provider,
            model: request.settings.model,
            latencyMs: (yield* Clock.currentTimeMillis) - started
          } satisfies GeneratedText
        })
      ).pipe(
        Effect.withSpan(`Agent.${name}`, {
          attributes: { "parley.ai.provider": request.settings.provider, "parley.ai.model": request.settings.model }
        })
      )

    /**
     * One model call answered with a JSON object, read with `schema`; an answer that does not read is
     * unreadable output, asked again within the retry budget like any other failed attempt.
     */
    const judge = <A>(
      name: "verify" | "screen",
      settings: ModelSettings,
      prompt: Prompt.Prompt,
      schema: Schema.Codec<A, unknown>
    ): Effect.Effect<Judged<A>, AiUnavailable> =>
      withModel(
        settings,
        Effect.gen(function*() {
          const model = yield* LanguageModel.LanguageModel
          const budget: RetryBudget = yield* makeBudget(policy)
          const usage = yield* Ref.make<Usage>({ inputTokens: 0, outputTokens: 0 })
          const decode = Schema.decodeUnknownEffect(Schema.fromJsonString(schema))
          const value = yield* withRetries(
            model.generateText({ prompt }).pipe(
              Effect.tap((response) => addUsage(usage, response.usage)),
              Effect.flatMap((response) =>
                decode(Prompts.unfenced(response.text)).pipe(
                  Effect.mapError((error) =>
                    AiError.make({
                      module: "Agent",
                      method: name,
                      reason: new AiError.InvalidOutputError({
                        description: `The model's ${name} answer does not read: ${error.message.slice(0, 300)}`
                      })
                    })
                  )
                )
              )
            ),
            { settings, policy, budget }
          ).pipe(reportingUsage(usage))
          return { value, usage: yield* Ref.get(usage) }
        })
      ).pipe(
        Effect.withSpan(`Agent.${name}`, {
          attributes: { "parley.ai.provider": settings.provider, "parley.ai.model": settings.model }
        })
      )

    return {
      reply,
      verify: (request) =>
        judge("verify", request.settings, Prompts.verifyPrompt(request), ModelVerdict),
      screen: (request) => judge("screen", request.settings, Prompts.screenPrompt(request.message), ModelScreening),
      title: (request) => generate("title", request, Prompts.titlePrompt(request.history), Prompts.cleanTitle),
      summary: (request) => generate("summary", request, Prompts.summaryPrompt(request.history), (text) => text.trim()),
      inactivity: (request) =>
        generate("inactivity", request, Prompts.inactivityPrompt(request.kind, request.tone, request.history), (text) =>
          text.trim())
    } satisfies AgentService
  })

/** The retry policy from `AI_TIMEOUT`, `AI_RETRY_BUDGET` and `AI_MAX_RETRIES`. */
export const RetryPolicyConfig = Effect.gen(function*() {
  return {
    ...defaultRetryPolicy,
    timeout: yield* AppConfig.AiTimeout,
    retryBudget: yield* AppConfig.AiRetryBudget,
    maxRetries: yield* AppConfig.AiMaxRetries
  } satisfies RetryPolicy
})

export class Agent extends Context.Service<Agent, AgentService>()("Parley/Ai/Agent", {
  make: Effect.flatMap(RetryPolicyConfig, makeAgent)
}) {
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
  static readonly layer = this.layerWithoutDependencies
}
