/**
 * The embedded knowledge-base responder: answers with the best passages of the workspace's articles
 * and their links, or says honestly that it is passing the customer to a person when nothing is
 * relevant enough. Offline and deterministic; its titles and summaries are extractive (the
 * customer's own words), never invented.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as AppConfig from "../Config.js"
import { aiRequestsOf } from "../Observability/Metrics.js"
import * as Metric from "effect/Metric"
import {
  AiReplies,
  type Generated,
  noUsage,
  type Reply,
  type ReplyRequest,
  type Verification,
  type VerifyRequest
} from "./AiReplies.js"
import { type Hit, Knowledge } from "./Knowledge.js"
import type { HistoryMessage, Passage } from "./Llm/Contract.js"
import * as Prompts from "./Llm/Prompt.js"
import { type Language, type Texts, texts } from "./Texts.js"
import { checkSupport, confirmsResolution } from "./Verifier.js"

export const NO_ANSWER_TEXT = texts.en.noAnswer

export const ESCALATION_TEXT = texts.en.escalation

export const NO_ANSWER_DETAIL = "No help-center article answers the customer's question."

const MAX_EXCERPT = 600

/** A passage cut at a sentence end near `MAX_EXCERPT` characters. */
const excerpt = (text: string): string => {
  const flat = text.replace(/\s+\n/g, "\n").trim()
  if (flat.length <= MAX_EXCERPT) return flat
  const cut = flat.slice(0, MAX_EXCERPT)
  const end = Math.max(cut.lastIndexOf(". "), cut.lastIndexOf(".\n"), cut.lastIndexOf("? "), cut.lastIndexOf("! "))
  return end > MAX_EXCERPT / 2 ? cut.slice(0, end + 1) : `${cut.trimEnd()}…`
}

export const toPassage = (hit: Hit): Passage => ({
  articleId: hit.articleId,
  title: hit.title,
  url: hit.url,
  heading: hit.heading,
  text: hit.text
})

const compose = (hits: ReadonlyArray<Hit>, bundle: Texts): string => {
  const sources: Array<{ readonly title: string; readonly url: string | null }> = []
  for (const hit of hits) {
    if (!sources.some((s) => s.title === hit.title)) sources.push({ title: hit.title, url: hit.url })
  }
  const passages = hits.map((hit) => excerpt(hit.text)).join("\n\n")
  const links = sources.map((s) => (s.url === null ? `“${s.title}”` : `“${s.title}”: ${s.url}`))
  return `${passages}\n\n${bundle.moreIn(links)}`
}

const TITLE_WORDS = 10
const SUMMARY_LINES = 6
const SUMMARY_LINE_CHARS = 200

/**
 * The customer's first message that says something (three words or more, else the first one), cut to
 * its first sentence and `TITLE_WORDS` words.
 */
export const extractiveTitle = (history: ReadonlyArray<HistoryMessage>): string => {
  const asked = history.filter((m) => m.role === "human" && m.text.trim() !== "")
  const words = (text: string) => text.trim().split(/\s+/)
  const chosen = asked.find((m) => words(m.text).length >= 3) ?? asked[0]
  if (chosen === undefined) return "Conversation"
  const sentence = chosen.text.trim().split(/(?<=[.?!])\s|\n/)[0] ?? chosen.text
  const cut = words(sentence)
  const title = Prompts.cleanTitle(cut.slice(0, TITLE_WORDS).join(" ") + (cut.length > TITLE_WORDS ? "…" : ""))
  return title === "" ? "Conversation" : title
}

/** The conversation's last lines, each cut short, as a transcript. */
export const extractiveSummary = (history: ReadonlyArray<HistoryMessage>): string =>
  Prompts.transcript(
    history.filter((m) => m.text.trim() !== "").slice(-SUMMARY_LINES).map((m) => ({
      ...m,
      text: m.text.trim().length > SUMMARY_LINE_CHARS ? `${m.text.trim().slice(0, SUMMARY_LINE_CHARS - 1)}…` : m.text
    }))
  )

export const makeEmbedded = Effect.gen(function*() {
  const knowledge = yield* Knowledge
  const config = yield* AppConfig.EmbeddedConfig

  const reply = (request: ReplyRequest): Effect.Effect<Reply> =>
    Effect.gen(function*() {
      const question = request.unanswered.map((m) => m.text).join("\n")
      const hits = yield* knowledge.search(request.conversation.workspaceId, question, 3)
      const best = hits[0]
      yield* Effect.annotateCurrentSpan({
        "ai.provider": "embedded",
        "ai.kb.best_score": best?.score ?? 0,
        "ai.kb.best_relevance": best?.relevance ?? 0,
        "ai.kb.best_coverage": best?.coverage ?? 0
      })
      yield* Metric.update(aiRequestsOf("embedded", "success"), 1)
      const base = { provider: "embedded", model: null, usage: noUsage, turns: 0 } as const
      const bundle = texts[request.language ?? "en"]
      if (best === undefined || best.relevance < config.minRelevance || best.coverage < config.minCoverage) {
        // Honest either way: hand over when the integration allows it, otherwise say so.
        return request.integration.settings.supportedFeatures.escalation
          ? {
            ...base,
            text: bundle.escalation,
            draft: bundle.escalation,
            sources: [],
            action: {
              _tag: "Escalate",
              reason: "no_answer",
              detail: NO_ANSWER_DETAIL,
              summary: Prompts.fallbackSummary(request.unanswered, bundle)
            },
            citations: []
          } satisfies Reply
          : {
            ...base,
            text: bundle.noAnswer,
            action: { _tag: "Answer" },
            citations: [],
            draft: bundle.noAnswer,
            sources: []
          } satisfies Reply
      }
      // A second passage joins when it is nearly as good and says something else.
      const chosen = hits.filter((hit, i) =>
        i === 0 || (hit.score >= best.score * 0.75 && hit.coverage >= config.minCoverage && hit.text !== best.text)
      ).slice(0, 2)
      const text = compose(chosen, bundle)
      return {
        ...base,
        text,
        action: { _tag: "Answer" },
        citations: chosen.map(toPassage),
        // The answer quotes its passages: checked against all of them (it carries no markers).
        draft: text,
        sources: chosen.map((hit, i) => ({ ref: i + 1, ...toPassage(hit) }))
      } satisfies Reply
    }).pipe(Effect.withSpan("AiReplies.reply", { attributes: { "ai.provider": "embedded" } }))

  const title = (history: ReadonlyArray<HistoryMessage>): Effect.Effect<Generated> =>
    Effect.succeed({ text: extractiveTitle(history), usage: noUsage })

  const summary = (history: ReadonlyArray<HistoryMessage>): Effect.Effect<Generated> =>
    Effect.succeed({ text: extractiveSummary(history), usage: noUsage })

  /** The lexical check (`Verifier.ts`): each claim against the passages, and the customer's own words. */
  const verify = (request: VerifyRequest): Effect.Effect<Verification> =>
    Effect.sync(() => {
      const verdict = checkSupport(request.draft, request.sources)
      return {
        method: "lexical",
        supported: verdict.supported,
        reason: verdict.reason,
        resolved: request.resolution ? confirmsResolution(request.customer) : null,
        usage: noUsage
      } satisfies Verification
    })

  const inactivity = (kind: Prompts.InactivityText, language: Language): Effect.Effect<Generated> =>
    Effect.succeed({ text: texts[language].inactivity[kind], usage: noUsage })

  return { reply, title, summary, verify, inactivity } as const
})

/** The embedded responder as the only provider, whatever the request's model. */
export const EmbeddedRepliesLive = Layer.effect(
  AiReplies,
  Effect.map(makeEmbedded, (embedded) =>
    AiReplies.of({
      reply: embedded.reply,
      title: (request) => embedded.title(request.history),
      summary: (request) => embedded.summary(request.history),
      inactivity: (request) => embedded.inactivity(request.kind, request.language),
      verify: embedded.verify,
      // Without a model the rule set is the whole guardrail: nothing to ask.
      screen: () => Effect.succeed({ verdict: "safe", reason: "No model configured", usage: noUsage })
    }))
).pipe(Layer.provide(Knowledge.layer))
