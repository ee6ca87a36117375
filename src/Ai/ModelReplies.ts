/**
 * Replies from a language model: the agent (`Llm/Agent.ts`) given the conversation, the integration's
 * flags, the tone, preemptively retrieved passages, and its tools over Parley's data (the workspace's
 * knowledge base, the same customer's earlier conversations). Its answer becomes a `Reply`; cited
 * articles the model did not link are linked after the text, as the embedded responder does.
 */
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { Conversation, Message } from "../Domain/Conversation.js"
import * as AppConfig from "../Config.js"
import { ConversationsRepo } from "../Conversations/Repo.js"
import {
  type Generated,
  noUsage,
  type Reply,
  type ReplyAction,
  type ReplyRequest,
  type Screening,
  type Verification,
  type VerifyRequest
} from "./AiReplies.js"
import * as ContextBudget from "./ContextBudget.js"
import { extractiveSummary, toPassage } from "./Embedded.js"
import { Knowledge } from "./Knowledge.js"
import { Agent, MAX_SEARCH_RESULTS } from "./Llm/Agent.js"
import {
  addUsage,
  type AgentAction,
  type AgentReply,
  type HistoryMessage,
  type ModelSettings,
  type Passage,
  type Tone,
  type Usage
} from "./Llm/Contract.js"
import type { AiUnavailable } from "./Llm/Errors.js"
import * as Prompts from "./Llm/Prompt.js"
import { type Texts, texts } from "./Texts.js"

/** Of the context budget, what the system prompt, passages, tool results and the answer are left. */
const RESERVED_TOKENS = 1_500
/** Images of one customer message passed to the model at most (`imageAttachments`). */
const MAX_IMAGES = 4
/** A cached summary of the earlier conversation is refreshed once this many more messages fell out. */
const SUMMARY_REFRESH = 10


/** Passages put in the prompt before the first model call (`preemptiveRetrieval`). */
export const PREEMPTIVE_PASSAGES = 3
/** Earlier conversations `get_past_conversations` returns at most, and messages of each. */
export const PAST_CONVERSATIONS = 5
export const PAST_MESSAGES = 10
const PAST_MESSAGE_CHARS = 500

/** The reply's articles, linked after the text unless the model already quoted the link. */
export const withLinks = (text: string, citations: ReadonlyArray<Passage>, bundle: Texts = texts.en): string => {
  const links: Array<string> = []
  for (const passage of citations) {
    if (passage.url === null || text.includes(passage.url)) continue
    const link = `“${passage.title}”: ${passage.url}`
    if (!links.includes(link)) links.push(link)
  }
  return links.length === 0 ? text : `${text}\n\n${bundle.moreIn(links)}`
}

export const toHistory = (message: Message): HistoryMessage => ({
  role: message.role,
  text: message.text,
  sentAt: DateTime.formatIso(message.sentAt)
})

const toAction = (action: AgentAction): ReplyAction => {
  switch (action._tag) {
    case "Answer":
      return action
    case "Close":
      return { _tag: "Close", summary: action.summary }
    case "Escalate":
      return {
        _tag: "Escalate",
        // The agent's own endings (turns spent, nothing said, tool calls that never matched) are a failure
        // to answer, not a decision.
        reason: action.reason === Prompts.TURN_LIMIT_REASON || action.reason === Prompts.NO_ANSWER_REASON
          ? "no_answer"
          : action.reason === Prompts.INVALID_TOOL_CALLS_REASON
          ? "invalid_tool_calls"
          : "handover",
        detail: action.reason,
        summary: action.summary
      }
  }
}

/** GenAI semantic-convention attributes of a reply's span: the totals over its model calls. */
const genAiAttributes = (settings: ModelSettings, usage: Usage) => ({
  "gen_ai.system": settings.provider,
  "gen_ai.operation.name": "chat",
  "gen_ai.request.model": settings.model,
  "gen_ai.usage.input_tokens": usage.inputTokens,
  "gen_ai.usage.output_tokens": usage.outputTokens
})

export const makeModelReplies = Effect.gen(function*() {
  const agent = yield* Agent
  const knowledge = yield* Knowledge
  const conversations = yield* ConversationsRepo
  const maxTurns = yield* AppConfig.AiMaxTurns

  const configuredBudget = yield* AppConfig.AiContextTokens

  /**
   * The summary of the messages that no longer fit: the cached one while it covers nearly all of them
   * (it is refreshed once `SUMMARY_REFRESH` more messages have fallen out; not when the context shrinks
   * after a context-length error), else a new one from the model (the extractive one when the model
   * fails: the reply goes on). Marked as a summary for the model.
   */
  const summaryOf = (
    settings: ModelSettings,
    conversationId: Conversation["id"],
    dropped: ReadonlyArray<HistoryMessage>,
    budget: number,
    refresh: boolean
  ) =>
    Effect.gen(function*() {
      const cached = yield* conversations.contextSummary(conversationId).pipe(Effect.orDie)
      const label = (text: string, count: number) => `Summary of the ${count} earlier messages of this conversation: ${text}`
      if (Option.isSome(cached) && (!refresh || dropped.length < cached.value.messages + SUMMARY_REFRESH)) {
        return { text: label(cached.value.summary, cached.value.messages), usage: noUsage, calls: 0 }
      }
      const source = ContextBudget.fitHistory(dropped, budget).kept
      const generated = yield* agent.summary({ settings, history: source }).pipe(
        Effect.map(({ text, usage }) => ({ text, usage, calls: 1 })),
        Effect.catch((error) =>
          Effect.as(
            Effect.logWarning("The earlier conversation's summary is extractive: the model is unavailable").pipe(
              Effect.annotateLogs({ reason: error.message })
            ),
            { text: extractiveSummary(source), usage: error.usage, calls: 0 }
          )
        )
      )
      yield* conversations.setContextSummary(conversationId, generated.text, dropped.length).pipe(Effect.orDie)
      return { ...generated, text: label(generated.text, dropped.length) }
    })

  const reply = (settings: ModelSettings, request: ReplyRequest): Effect.Effect<Reply, AiUnavailable> =>
    Effect.gen(function*() {
      const { conversation, integration } = request
      const features = integration.settings.supportedFeatures
      const bundle = texts[request.language ?? "en"]
      const answering = new Set(request.unanswered.map((m) => m.id))
      const question = request.unanswered.map((m) => m.text).join("\n")
      const retrieved = features.preemptiveRetrieval
        ? (yield* knowledge.search(conversation.workspaceId, question, PREEMPTIVE_PASSAGES)).map(toPassage)
        : []
      const budget = configuredBudget > 0 ? configuredBudget : ContextBudget.contextBudgetFor(settings.model)
      // With `channelsSettings.imageAttachments`, the images of the messages answered go as image parts.
      const withImages = integration.settings.channelsSettings["imageAttachments"] === true
      const unanswered = request.unanswered.map((m) => ({
        text: ContextBudget.cutMessage(Prompts.withAttachments(m.text, m.attachments), Math.floor(budget / 4)),
        ...(withImages ? { images: Prompts.imagesOf(m.attachments, MAX_IMAGES) } : {})
      }))
      const history = request.history.filter((m) => m.type === "default" && !answering.has(m.id)).map((m) => ({
        ...toHistory(m),
        text: Prompts.withAttachments(m.text, m.attachments)
      }))
      // What the model reads of the conversation: within the budget, the older part summarised.
      const within = (share: number) =>
        Effect.gen(function*() {
          const historyBudget = Math.max(
            200,
            Math.floor(budget * share) - RESERVED_TOKENS -
              unanswered.reduce((sum, m) => sum + ContextBudget.messageTokens(m.text), 0)
          )
          const fitted = ContextBudget.fitHistory(history, historyBudget)
          const earlier = fitted.dropped.length === 0
            ? null
            : yield* summaryOf(settings, conversation.id, fitted.dropped, historyBudget, share === 1)
          yield* Effect.annotateCurrentSpan({
            "parley.context.budget_tokens": historyBudget,
            "parley.context.history_tokens": fitted.tokens,
            "parley.context.kept": fitted.kept.length,
            "parley.context.dropped": fitted.dropped.length,
            "parley.context.cut": fitted.cut
          })
          return {
            history: earlier === null
              ? fitted.kept
              : [{ role: "system" as const, text: earlier.text, sentAt: fitted.dropped.at(-1)!.sentAt }, ...fitted.kept],
            usage: earlier?.usage ?? noUsage,
            calls: earlier?.calls ?? 0
          }
        })
      const attempt = (share: number) =>
        Effect.flatMap(within(share), (context) =>
          Effect.map(agentReply(context.history), (result) => ({
            ...result,
            usage: addUsage(result.usage, context.usage),
            turns: result.turns + context.calls
          })))
      const agentReply = (history: ReadonlyArray<HistoryMessage>) => agent.reply({
        settings,
        features: {
          escalation: features.escalation,
          closeTicket: features.closeTicket,
          getPastConversationsTool: features.getPastConversationsTool,
          preemptiveRetrieval: features.preemptiveRetrieval,
          tone: features.tone
        },
        tone: features.tone ? request.tone ?? null : null,
        history,
        unanswered,
        retrieved,
        tools: {
          searchKnowledge: (query) =>
            Effect.map(knowledge.search(conversation.workspaceId, query, MAX_SEARCH_RESULTS), (hits) => hits.map(toPassage)),
          pastConversations: () =>
            conversations.pastConversations({
              workspaceId: conversation.workspaceId,
              customerId: conversation.customerId,
              exclude: conversation.id,
              conversations: PAST_CONVERSATIONS,
              messages: PAST_MESSAGES
            }).pipe(
              Effect.map((past) =>
                past.map((c) => ({
                  ...c,
                  messages: c.messages.map((m) => ({
                    role: m.role,
                    text: m.text.length > PAST_MESSAGE_CHARS ? `${m.text.slice(0, PAST_MESSAGE_CHARS - 1)}…` : m.text
                  }))
                }))
              ),
              Effect.orDie
            )
        },
        maxTurns,
        texts: bundle,
        customerData: request.customerData,
        instructions: request.instructions,
        correction: request.correction,
        onText: request.onText
      }).pipe(
        Effect.tapError((error) => Effect.annotateCurrentSpan(genAiAttributes(settings, error.usage)))
      )
      // A provider that says the request is too long for its window: once more with half the budget.
      const result: AgentReply = yield* attempt(1).pipe(
        Effect.catchIf(
          (error) => error.kind === "rejected" && ContextBudget.isContextLengthError(error.reason),
          (error) =>
            Effect.logWarning("The model's context window was exceeded; the reply shrinks its context once").pipe(
              Effect.annotateLogs({ reason: error.message }),
              Effect.andThen(Effect.annotateCurrentSpan({ "parley.context.shrunk": true })),
              Effect.andThen(attempt(0.5)),
              Effect.map((result) => ({ ...result, usage: addUsage(result.usage, error.usage) }))
            )
        )
      )
      yield* Effect.annotateCurrentSpan(genAiAttributes(settings, result.usage))
      return {
        text: result.action._tag === "Answer" ? withLinks(result.text, result.citations, bundle) : result.text,
        action: toAction(result.action),
        citations: result.citations,
        provider: result.provider,
        model: result.model,
        usage: result.usage,
        turns: result.turns,
        draft: result.draft,
        sources: result.sources
      } satisfies Reply
    }).pipe(Effect.withSpan("AiReplies.reply", { attributes: { "ai.provider": settings.provider, "ai.model": settings.model } }))

  const title = (settings: ModelSettings, history: ReadonlyArray<HistoryMessage>): Effect.Effect<Generated, AiUnavailable> =>
    Effect.map(agent.title({ settings, history }), ({ text, usage }) => ({ text, usage }))

  const summary = (settings: ModelSettings, history: ReadonlyArray<HistoryMessage>): Effect.Effect<Generated, AiUnavailable> =>
    Effect.map(agent.summary({ settings, history }), ({ text, usage }) => ({ text, usage }))

  const inactivity = (
    settings: ModelSettings,
    request: { readonly kind: Prompts.InactivityText; readonly tone: Tone | null; readonly history: ReadonlyArray<HistoryMessage> }
  ): Effect.Effect<Generated, AiUnavailable> =>
    Effect.map(agent.inactivity({ settings, ...request }), ({ text, usage }) => ({ text, usage }))

  /** The model's check of a draft (`verifier`, `verifierResolution`). */
  const verify = (settings: ModelSettings, request: VerifyRequest): Effect.Effect<Verification, AiUnavailable> =>
    Effect.map(
      agent.verify({
        settings,
        draft: request.draft,
        passages: request.sources.map((source) => ({ ...source, url: source.url ?? null })),
        customer: request.customer,
        resolution: request.resolution
      }),
      ({ usage, value }): Verification => ({
        method: "model",
        supported: value.supported,
        reason: value.supported
          ? null
          : value.unsupportedClaims.length > 0
          ? `Not supported by the passages: ${value.unsupportedClaims.map((claim) => `“${claim}”`).join("; ")}`
          : "The model found the draft not supported by the passages",
        resolved: request.resolution ? value.resolved ?? false : null,
        usage
      })
    )

  const screen = (settings: ModelSettings, message: string): Effect.Effect<Screening, AiUnavailable> =>
    Effect.map(agent.screen({ settings, message }), ({ usage, value }): Screening => ({ ...value, usage }))

  return { reply, title, summary, inactivity, verify, screen } as const
})
