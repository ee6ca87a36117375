/**
 * The verifier step of a reply (`verifier`, `verifierResolution`, `verifierEscalation`; docs/ai.md,
 * "The verifier"). Before an answer is sent, `AiReplies.verify` checks that each claim of the draft is
 * supported by the passages it cites: the lexical check without a model (`Verifier.ts`), the model's
 * judgement (strict JSON) with one. A draft that fails is redrafted once with the reason (a model only:
 * the embedded responder's answer would be the same again); when the redraft fails too, the
 * conversation is handed over with `verifierEscalation` (reason `unverified`), otherwise the safe
 * fallback message goes out. With `verifierResolution`, a close stands only when the customer's problem
 * is confirmed solved; otherwise its message goes out as an answer and the conversation stays open.
 * Hand-overs are not verified (they state nothing to check). A verifier that cannot reach the model
 * counts as a failed check: nothing unverified goes out.
 */
import * as Effect from "effect/Effect"
import type { Message } from "../Domain/Conversation.js"
import type { SupportedFeatures } from "../Domain/Integration.js"
import type { VerificationRecord } from "../Domain/Reply.js"
import type { AiReplies, Reply, ReplyRequest, Verification } from "./AiReplies.js"
import { noUsage } from "./AiReplies.js"
import { addUsage, type Usage } from "./Llm/Contract.js"
import type { AiUnavailable } from "./Llm/Errors.js"
import * as Prompts from "./Llm/Prompt.js"
import type { ReplyModel } from "./ModelSettingsFor.js"
import type { Texts } from "./Texts.js"

export interface Verified {
  /**
   * What goes out: the draft, the redraft, a hand-over or the fallback. Its `usage` and `turns` are both
   * drafts' when there was a redraft, whichever went out.
   */
  readonly reply: Reply
  readonly record: VerificationRecord | null
  /** The verifier's own model calls and their tokens (the drafts' are the reply's). */
  readonly calls: number
  readonly usage: Usage
}


/** Whether the reply is one the verifier checks at all. */
export const verifies = (features: SupportedFeatures, reply: Reply): boolean =>
  (features.verifier && reply.action._tag !== "Escalate") ||
  (features.verifierResolution && reply.action._tag === "Close")

export const verify = (input: {
  readonly ai: AiReplies["Service"]
  readonly model: ReplyModel
  readonly features: SupportedFeatures
  readonly request: ReplyRequest
  readonly reply: Reply
  readonly unanswered: ReadonlyArray<Message>
  readonly fallbackMessage: string
  /** Parley's own texts in the customer's language (the hand-over). */
  readonly texts: Texts
}): Effect.Effect<Verified, AiUnavailable> =>
  Effect.gen(function*() {
    const { ai, features, model } = input
    const customer = input.unanswered.map((m) => m.text)
    let usage = noUsage
    let calls = 0
    const method = model === "embedded" ? "lexical" as const : "model" as const
    const check = (reply: Reply) =>
      ai.verify({
        model,
        draft: reply.draft,
        sources: reply.sources,
        customer,
        resolution: features.verifierResolution && reply.action._tag === "Close"
      }).pipe(
        Effect.map((verdict) => {
          usage = addUsage(usage, verdict.usage)
          if (verdict.method === "model") calls += 1
          return verdict
        }),
        // A verifier that cannot be reached cannot vouch for the draft.
        Effect.catch((error) =>
          Effect.as(
            Effect.logWarning("The verifier is unavailable; the draft counts as unverified").pipe(
              Effect.annotateLogs({ reason: error.message })
            ),
            {
              method,
              supported: false,
              reason: `The verifier could not be reached: ${error.message}`,
              resolved: null,
              usage: noUsage
            } satisfies Verification
          )
        )
      )

    const drafts: Array<{ readonly supported: boolean; readonly reason: string | null }> = []
    let reply = input.reply
    let outcome: VerificationRecord["outcome"] = "unchecked"
    let verdict = yield* check(reply)
    if (features.verifier && reply.action._tag !== "Escalate") {
      drafts.push({ supported: verdict.supported, reason: verdict.reason })
      outcome = "passed"
      if (!verdict.supported) {
        let redrafted: Reply | null = null
        if (model !== "embedded") {
          const again = yield* ai.reply({ ...input.request, correction: verdict.reason ?? undefined })
          // Both drafts were billed, whichever goes out.
          const both = { usage: addUsage(reply.usage, again.usage), turns: reply.turns + again.turns }
          const second = yield* check(again)
          drafts.push({ supported: second.supported, reason: second.reason })
          if (second.supported) {
            redrafted = { ...again, ...both }
            verdict = second
          } else {
            reply = { ...reply, ...both }
          }
        }
        if (redrafted !== null) {
          reply = redrafted
          outcome = "redrafted"
        } else if (features.verifierEscalation) {
          reply = {
            ...reply,
            text: input.texts.handover,
            citations: [],
            action: {
              _tag: "Escalate",
              reason: "unverified",
              // Neutral words on the webhook; each draft's reason is in the replies record.
              detail: Prompts.UNVERIFIED_DETAIL,
              summary: Prompts.fallbackSummary(input.unanswered, input.texts)
            }
          }
          outcome = "escalated"
        } else {
          reply = { ...reply, text: input.fallbackMessage, citations: [], action: { _tag: "Answer" } }
          outcome = "fallback"
        }
      }
    }
    let resolution: VerificationRecord["resolution"] = null
    if (features.verifierResolution && reply.action._tag === "Close") {
      const confirmed = verdict.resolved === true
      resolution = { confirmed }
      if (!confirmed) reply = { ...reply, action: { _tag: "Answer" } }
    }
    const record: VerificationRecord = { method, drafts, outcome, resolution }
    yield* Effect.annotateCurrentSpan({
      "parley.verifier.method": method,
      "parley.verifier.outcome": outcome,
      "parley.verifier.supported": drafts.every((d) => d.supported),
      "parley.verifier.resolution_confirmed": resolution?.confirmed ?? ""
    })
    return { reply, record, calls, usage }
  })
