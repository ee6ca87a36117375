/**
 * Replies (the `generate_reply` job, docs/ai.md). It runs `REPLY_DEBOUNCE` after a customer message;
 * when a later customer message arrived meanwhile, that message's job answers both.
 *
 * The AI decides, the conversation applies. One run: `ReplyWorkflow.pending` (src/Conversations) says
 * what the run answers, if anything; the workspace's model is resolved (`ModelSettingsFor`); with a
 * model, `ReplyWorkflow.typing` announces it. `decide` then asks `AiReplies` outside any transaction —
 * when the model cannot be reached within its retry budget the conversation is handed over
 * (`escalation`) or the customer gets the fallback message, never silence — generates the title and
 * summary the flags ask for, and returns all of it as a value (`AiOutcome`): it touches no conversation
 * and emits no event. `ReplyWorkflow.apply` stores the outcome, the message, the status change and the
 * events in one transaction, once per trigger.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as crypto from "node:crypto"
import * as AppConfig from "../Config.js"
import { type Pending, ReplyWorkflow } from "../Conversations/ReplyWorkflow.js"
import type { GenerateReplyPayload } from "../Conversations/ReplyJob.js"
import type { AiOutcome } from "../Domain/AiOutcome.js"
import type { Message } from "../Domain/Conversation.js"
import { CustomersRepo } from "../Customers/Repo.js"
import { allowedCustomerData, customerDataSetting } from "../Domain/CustomerData.js"
import { type ConversationId, MessageId } from "../Domain/Ids.js"
import { languageSetting } from "../Domain/Language.js"
import type { Integration, SupportedFeatures } from "../Domain/Integration.js"
import { Outcome } from "../Jobs/Job.js"
import { aiLatencyOf, aiTokensOf } from "../Observability/Metrics.js"
import { orDieSql } from "../Sql.js"
import { Workspaces } from "../Workspaces/Workspaces.js"
import { AiReplies, type Generated, noUsage, type Reply, type ReplyAction, type ReplyRequest } from "./AiReplies.js"
import { AiRepliesLive } from "./AiRepliesLive.js"
import { InstructionsService } from "./Instructions.js"
import { addUsage, type HistoryMessage, type Usage } from "./Llm/Contract.js"
import { AiUnavailable } from "./Llm/Errors.js"
import * as Prompts from "./Llm/Prompt.js"
import * as ContextBudget from "./ContextBudget.js"
import { toHistory } from "./ModelReplies.js"
import { ModelSettingsFor, type ReplyModel } from "./ModelSettingsFor.js"
import * as Screening from "./Screening.js"
import { WorkspaceAiSettings } from "./Settings.js"
import { replyLanguage, type Texts, texts } from "./Texts.js"
import { toneFor } from "./Tone.js"
import * as Verification from "./Verification.js"

/**
 * The conversation a reply may read: its model fits what it reads to its context budget (src/Ai/Context.ts,
 * the older part summarised); this only bounds what is handed to it.
 */
const HISTORY = 500
/** The title and summary calls read the conversation's latest messages, within this many estimated tokens. */
const TRANSCRIPT_TOKENS = 4_000

/** The shortest time between two `message_delta` events of one message. */
export const DELTA_INTERVAL_MS = 300

/** A streamed reply: the id its deltas announce (the stored message's), and what hears its text. */
interface Streaming {
  readonly messageId: MessageId
  readonly onText: (text: string) => Effect.Effect<void>
}

/**
 * An action the integration does not allow is not taken: its text is then an ordinary answer. A
 * verifier's hand-over is allowed by `verifierEscalation` itself.
 */
const allowed = (action: ReplyAction, features: SupportedFeatures): ReplyAction =>
  (action._tag === "Escalate" && !features.escalation &&
      !(action.reason === "unverified" && features.verifierEscalation)) ||
    (action._tag === "Close" && !features.closeTicket)
    ? { _tag: "Answer" }
    : action

/**
 * The message the customer gets, if any. An answer always; a hand-over note with
 * `messageInEscalation`, a goodbye with `messageInEndConversation`. The embedded responder's
 * hand-over for want of an answer is its honest answer to the question ("I couldn't find an answer…"),
 * so it is always sent.
 */
const customerText = (reply: Reply, action: ReplyAction, features: SupportedFeatures): string | null => {
  switch (action._tag) {
    case "Answer":
      return reply.text
    case "Escalate":
      return features.messageInEscalation || (reply.provider === "embedded" && action.reason === "no_answer")
        ? reply.text
        : null
    case "Close":
      return features.messageInEndConversation ? reply.text : null
  }
}


export class Replies extends Context.Service<Replies>()("Parley/Replies", {
  make: Effect.gen(function*() {
    const workflow = yield* ReplyWorkflow
    const customers = yield* CustomersRepo
    const instructions = yield* InstructionsService
    const workspaces = yield* Workspaces
    const ai = yield* AiReplies
    const modelFor = yield* ModelSettingsFor
    const aiSettings = yield* WorkspaceAiSettings
    const fallbackMessage = yield* AppConfig.AiFallbackMessage
    const replyTimeout = yield* AppConfig.AiReplyTimeout
    yield* Screening.warmUp

    const countUsage = (provider: string, usage: Usage) =>
      Effect.all([
        Metric.update(aiTokensOf(provider, "input"), usage.inputTokens),
        Metric.update(aiTokensOf(provider, "output"), usage.outputTokens)
      ], { discard: true })

    const toneOf = (integration: Integration, first: boolean) => toneFor(workspaces, integration, first)

    /** When the model cannot be reached: a hand-over with `escalation`, else the fallback message. */
    /**
     * What the integration lets the model know about the customer: the allowed fields of the customer
     * and of the latest `requestContext`; nothing (and no lookup) when the allow-list is empty.
     */
    const customerDataFor = (pending: Pending) =>
      Effect.gen(function*() {
        const allowed = customerDataSetting(pending.integration.settings.channelsSettings)
        if (allowed.length === 0) return null
        const customer = allowed.some((path) => !path.startsWith("requestContext."))
          ? Option.getOrNull(
            yield* customers.findById({ id: pending.conversation.customerId, workspaceId: pending.conversation.workspaceId })
          )
          : null
        const requestContext = [...pending.unanswered].reverse().find((m) => m.requestContext !== null)?.requestContext ?? null
        const data = allowedCustomerData({ allowed, customer, requestContext })
        // Which fields the model read, never their values.
        yield* Effect.annotateCurrentSpan({ "parley.ai.customer_data": Object.keys(data ?? {}).join(",") })
        return data
      })

    /** `AI_FALLBACK_MESSAGE` when the operator set one; otherwise the bundled one in the customer's language. */
    const fallbackIn = (bundle: Texts) => fallbackMessage === AppConfig.DEFAULT_FALLBACK_MESSAGE ? bundle.unavailable : fallbackMessage

    const unavailable = (
      error: AiUnavailable,
      features: SupportedFeatures,
      unanswered: ReadonlyArray<Message>,
      bundle: Texts
    ): Reply => ({
      text: features.escalation ? bundle.handover : fallbackIn(bundle),
      action: features.escalation
        ? {
          _tag: "Escalate",
          reason: "ai_unavailable",
          // Neutral words on the webhook; the provider's error is the outcome's `error` (and the log's).
          detail: Prompts.AI_UNAVAILABLE_DETAIL,
          summary: Prompts.fallbackSummary(unanswered, bundle)
        }
        : { _tag: "Answer" },
      citations: [],
      provider: error.provider,
      model: error.model,
      usage: error.usage,
      turns: 0,
      draft: "",
      sources: []
    })

    /** A title or summary: a failure to generate one is logged and costs only that event. */
    const optional = (what: string, generated: Effect.Effect<Generated, AiUnavailable>) =>
      generated.pipe(
        Effect.map(Option.some),
        Effect.catch((error) =>
          Effect.as(
            Effect.logWarning(`No conversation ${what}: the model is unavailable`).pipe(
              Effect.annotateLogs({ reason: error.message })
            ),
            Option.none<Generated>()
          )
        )
      )

    /**
     * The AI's outcome for `pending` with `model`: the reply (or the fallback when the model cannot be
     * reached), limited to what the integration allows, with the title and summary its flags ask for.
     * A value: it records only the AI's own figures (metrics, the workspace's usage).
     */
    const decide = (pending: Pending, model: ReplyModel, stream: Streaming | null = null) =>
      Effect.gen(function*() {
        const { conversation, integration, trigger } = pending
        const features = integration.settings.supportedFeatures
        const firstExchange = !pending.messages.some((m) => m.role === "ai" && m.type === "default")

        const started = yield* Clock.currentTimeMillis
        // What the model may read: with the guardrails, secrets replaced and blocked messages withheld.
        const screenWith = (modelCheck: boolean) =>
          Screening.screen({ ai, model, modelCheck, messages: pending.messages, unanswered: pending.unanswered })
        // The classifier counts in AI_REPLY_TIMEOUT: past it, the rule set's decisions stand.
        const screened = features.customerMessageGuardrails
          ? yield* (model === "embedded" ? screenWith(false) : Effect.timeoutOrElse(
            screenWith(Screening.modelCheckOn(integration.settings.channelsSettings)),
            { duration: replyTimeout, orElse: () => screenWith(false) }
          ))
          : null
        const messages = screened?.messages ?? pending.messages
        const unanswered = screened?.unanswered ?? pending.unanswered
        // Parley's own texts in the customer's language (the model writes its own in it too).
        const language = replyLanguage({
          override: languageSetting(integration.settings.channelsSettings),
          customerMessages: pending.unanswered.map((m) => m.text),
          stored: conversation.language
        })
        const bundle = texts[language]
        yield* Effect.annotateCurrentSpan({ "parley.language": language })
        // The business's standing instructions: a model follows them (the embedded responder cannot).
        const inForce = model === "embedded"
          ? { workspace: null, integration: null }
          : yield* instructions.inForce(conversation.workspaceId, integration.integrationId)
        const followed = [inForce.workspace, inForce.integration].filter((i) => i !== null)
        const request: ReplyRequest = {
          integration,
          conversation,
          language,
          instructions: followed.map((i) => i.text),
          customerData: yield* customerDataFor(pending),
          history: messages.slice(-HISTORY),
          unanswered,
          model,
          tone: yield* toneOf(integration, firstExchange),
          onText: stream?.onText
        }
        const left = Duration.max(
          Duration.millis(1),
          Duration.subtract(replyTimeout, Duration.millis((yield* Clock.currentTimeMillis) - started))
        )
        const { error, reply, verification } = yield* Effect.gen(function*() {
          if (screened?.blocked) {
            return {
              reply: Screening.guardrailReply(screened.blocked, features, unanswered, model, bundle),
              verification: null
            }
          }
          const drafted = yield* ai.reply(request)
          if (!Verification.verifies(features, drafted)) return { reply: drafted, verification: null }
          return yield* Effect.map(
            Verification.verify({
              ai,
              model,
              features,
              request,
              reply: drafted,
              unanswered,
              fallbackMessage: fallbackIn(bundle),
              texts: bundle
            }),
            (verified) => ({
              reply: {
                ...verified.reply,
                usage: addUsage(verified.reply.usage, verified.usage),
                turns: verified.reply.turns + verified.calls
              },
              verification: verified.record
            })
          )
        }).pipe(
          // A bounded wait for the customer, whatever the model does (a hang included).
          (drafting) =>
            model === "embedded" ? drafting : Effect.timeoutOrElse(drafting, {
              // What is left of it after the guardrail classifier.
              duration: left,
              orElse: () =>
                Effect.fail(
                  new AiUnavailable({
                    provider: model.provider,
                    model: model.model,
                    kind: "exhausted",
                    reason: `no reply within AI_REPLY_TIMEOUT (${Duration.format(replyTimeout)})`,
                    attempts: 1,
                    usage: noUsage
                  })
                )
            }),
          Effect.map((decided) => ({ ...decided, error: null })),
          Effect.catch((error) =>
            Effect.as(
              Effect.logWarning("The AI model is unavailable; the reply falls back").pipe(
                Effect.annotateLogs({ reason: error.message, escalation: features.escalation })
              ),
              { reply: unavailable(error, features, unanswered, bundle), error: error.message, verification: null }
            )
          )
        )
        const screening = screened === null ? noUsage : screened.usage
        // Every model call of the reply: its tool loop's, the verifier's and the guardrail classifier's.
        const turns = reply.turns + (screened?.calls ?? 0)
        const latencyMs = (yield* Clock.currentTimeMillis) - started
        const action = allowed(reply.action, features)
        const text = customerText(reply, action, features)

        // The title and the summary read the conversation with this reply's message in it. When the model
        // just proved unreachable they are the embedded responder's (extractive): asking it again would
        // only spend another retry budget before the hand-over reaches anyone.
        const textModel: ReplyModel = error === null ? model : "embedded"
        const transcript: ReadonlyArray<HistoryMessage> = [
          ...ContextBudget.fitHistory(messages.filter((m) => m.type === "default").map(toHistory), TRANSCRIPT_TOKENS).kept,
          ...(text === null ? [] : [{ role: "ai" as const, text, sentAt: DateTime.formatIso(yield* DateTime.now) }])
        ]
        const [title, summary] = yield* Effect.all([
          features.conversationTitle && firstExchange
            ? optional("title", ai.title({ model: textModel, history: transcript }))
            : Effect.succeedNone,
          features.conversationSummary && action._tag !== "Answer"
            ? optional("summary", ai.summary({ model: textModel, history: transcript }))
            : Effect.succeedNone
        ], { concurrency: 2 })
        const usage = [title, summary].reduce(
          (sum, generated) => Option.isSome(generated) ? addUsage(sum, generated.value.usage) : sum,
          addUsage(reply.usage, screening)
        )
        yield* Metric.update(aiLatencyOf(reply.provider), latencyMs / 1000)
        yield* countUsage(reply.provider, usage)
        // Per workspace and day, outside the reply's transaction: what a provider billed counts even when
        // this run then loses the race to store its outcome, or the job runs again.
        if (reply.provider !== "embedded" && reply.model !== null) {
          const textCalls = textModel === "embedded" ? 0 : [title, summary].filter(Option.isSome).length
          const requests = turns + textCalls
          if (requests > 0 || usage.inputTokens > 0 || usage.outputTokens > 0) {
            yield* aiSettings.recordUsage(conversation.workspaceId, reply.provider, reply.model, { ...usage, requests })
          }
        }

        const outcome: AiOutcome = {
          trigger: trigger.id,
          // End-to-end latency starts when the earliest message this reply answers was received.
          originAt: (unanswered[0] ?? trigger).createdAt,
          text,
          streamedAs: stream?.messageId ?? null,
          citations: reply.citations,
          action,
          // A closed conversation is over: the customer may be asked for a rating.
          requestCsat: action._tag === "Close",
          title: Option.getOrNull(Option.map(title, (t) => t.text)),
          summary: Option.getOrNull(Option.map(summary, (s) => s.text)),
          provenance: {
            provider: reply.provider,
            model: reply.model,
            inputTokens: usage.inputTokens,
            outputTokens: usage.outputTokens,
            turns,
            latencyMs,
            error
          },
          guardrails: screened?.decisions ?? null,
          verification,
          instructions: followed.length === 0
            ? null
            : followed.map((i) => ({ id: i.id, scope: i.integrationId === null ? "workspace" as const : "integration" as const })),
          language
        }
        return outcome
      }).pipe(orDieSql)

    /**
     * A streamed reply (`streaming`): the id its `message_delta` events announce, and what hears the text
     * so far: a delta at the first text, then at most one every `DELTA_INTERVAL_MS`.
     */
    const streaming = (integration: Integration, conversationId: ConversationId) =>
      Effect.gen(function*() {
        const messageId = MessageId.make(crypto.randomUUID())
        const sent = yield* Ref.make({ sequence: 0, at: Number.NEGATIVE_INFINITY, text: "" })
        const onText = (text: string) =>
          Effect.gen(function*() {
            const now = yield* Clock.currentTimeMillis
            const last = yield* Ref.get(sent)
            if (now - last.at < DELTA_INTERVAL_MS || text.trim() === "" || text === last.text) return
            const sequence = last.sequence + 1
            yield* Ref.set(sent, { sequence, at: now, text })
            yield* workflow.delta({ integration, conversationId, messageId, sequence, text })
          })
        return { messageId, onText } satisfies Streaming
      })

    /** Answers the customer's messages up to `messageId`, unless a later one will, or it was answered. */
    const generate = Effect.fn("Replies.generate")(function*(job: GenerateReplyPayload) {
      const pending = yield* workflow.pending(job)
      if (Option.isNone(pending)) return Outcome.Done()
      const { conversation, integration, trigger } = pending.value

      const model: ReplyModel = yield* modelFor.forWorkspace(conversation.workspaceId)
      const provider = model === "embedded" ? "embedded" : model.provider
      yield* Effect.annotateCurrentSpan({ "ai.provider": provider, "ai.model": model === "embedded" ? "" : model.model })
      // A model takes seconds; the embedded responder answers at once, so only a model is announced.
      if (model !== "embedded" && integration.settings.supportedFeatures.typing) {
        const open = yield* workflow.typing({ integration, conversationId: conversation.id, trigger: trigger.id })
        if (!open) return Outcome.Done()
      }
      // Streaming: the answer is shown while a model writes it; a verified draft is shown only once checked.
      const features = integration.settings.supportedFeatures
      const stream = model !== "embedded" && features.streaming && !features.verifier
        ? yield* streaming(integration, conversation.id)
        : null
      const outcome = yield* decide(pending.value, model, stream)
      yield* workflow.apply({ integration, conversationId: conversation.id, outcome })
      return Outcome.Done()
    }, orDieSql)

    return { generate, decide } as const
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
  static readonly layer = this.layerWithoutDependencies.pipe(
    Layer.provide([
      ReplyWorkflow.layer,
      CustomersRepo.layer,
      InstructionsService.layer,
      AiRepliesLive,
      ModelSettingsFor.layer,
      Workspaces.layer,
      WorkspaceAiSettings.layer
    ])
  )
}
