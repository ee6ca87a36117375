/**
 * The embedded knowledge-base responder: answers with the best passages of the workspace's articles
 * and their links, or says honestly that it is passing the customer to a person when nothing is
 * relevant enough. Offline and deterministic.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as AppConfig from "../Config.js"
import { AiReplies, type Reply, type Source } from "./AiReplies.js"
import { type Hit, Knowledge } from "./Knowledge.js"

export const NO_ANSWER_TEXT =
  "I'm sorry, I couldn't find an answer to that in our help center. Could you rephrase it, or add a detail?"

export const ESCALATION_TEXT =
  "I couldn't find an answer to that in our help center, so I'm passing you to a person on our team. " +
  "They'll reply here shortly."

const MAX_EXCERPT = 600

/** A passage cut at a sentence end near `MAX_EXCERPT` characters. */
const excerpt = (text: string): string => {
  const flat = text.replace(/\s+\n/g, "\n").trim()
  if (flat.length <= MAX_EXCERPT) return flat
  const cut = flat.slice(0, MAX_EXCERPT)
  const end = Math.max(cut.lastIndexOf(". "), cut.lastIndexOf(".\n"), cut.lastIndexOf("? "), cut.lastIndexOf("! "))
  return end > MAX_EXCERPT / 2 ? cut.slice(0, end + 1) : `${cut.trimEnd()}…`
}

const compose = (hits: ReadonlyArray<Hit>): { readonly text: string; readonly sources: Array<Source> } => {
  const sources: Array<Source> = []
  for (const hit of hits) {
    if (!sources.some((s) => s.title === hit.title)) sources.push({ title: hit.title, url: hit.url })
  }
  const passages = hits.map((hit) => excerpt(hit.text)).join("\n\n")
  const links = sources.map((s) => (s.url === null ? `“${s.title}”` : `“${s.title}”: ${s.url}`))
  return { text: `${passages}\n\nMore in ${links.join(" and ")}.`, sources }
}

export const EmbeddedRepliesLive = Layer.effect(
  AiReplies,
  Effect.gen(function*() {
    const knowledge = yield* Knowledge
    const config = yield* AppConfig.EmbeddedConfig
    return AiReplies.of({
      reply: (request) =>
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
          if (best === undefined || best.relevance < config.minRelevance || best.coverage < config.minCoverage) {
            // Honest either way: hand over when the integration allows it, otherwise say so.
            const escalate = request.integration.settings.supportedFeatures.escalation
            return {
              text: escalate ? ESCALATION_TEXT : NO_ANSWER_TEXT,
              escalate,
              sources: [],
              provider: "embedded"
            } satisfies Reply
          }
          // A second passage joins when it is nearly as good and says something else.
          const chosen = hits.filter((hit, i) =>
            i === 0 || (hit.score >= best.score * 0.75 && hit.coverage >= config.minCoverage && hit.text !== best.text)
          ).slice(0, 2)
          const { sources, text } = compose(chosen)
          return { text, escalate: false, sources, provider: "embedded" } satisfies Reply
        }).pipe(Effect.withSpan("AiReplies.reply", { attributes: { "ai.provider": "embedded" } }))
    })
  })
).pipe(Layer.provide(Knowledge.Default))
