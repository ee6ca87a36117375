/**
 * The verifier through the reply step (`verifier`, `verifierResolution`, `verifierEscalation`;
 * src/Ai/Verification.ts): `Replies.generate` called directly on the real database, with the embedded
 * responder (the lexical check) and with a scripted OpenAI-compatible model (the model's JSON verdict).
 * Each reply turn and each verify call is one request to the scripted server, in order.
 */
import { describe, expect, layer } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import { Replies } from "../../src/Ai/GenerateReply.js"
import { Knowledge } from "../../src/Ai/Knowledge.js"
import * as Prompts from "../../src/Ai/Llm/Prompt.js"
import { DEFAULT_FALLBACK_MESSAGE } from "../../src/Config.js"
import { Conversations } from "../../src/Conversations/Conversations.js"
import { ReplyRepo } from "../../src/Conversations/ReplyRepo.js"
import { ConversationsRepo } from "../../src/Conversations/Repo.js"
import type { ConversationId } from "../../src/Domain/Ids.js"
import { Integrations } from "../../src/Integrations/Integrations.js"
import { Workspaces } from "../../src/Workspaces/Workspaces.js"
import { incoming } from "../support/Incoming.js"
import {
  chatBody,
  type LlmServer,
  makeLlmServer,
  type RecordedRequest,
  type Scripted,
  systemPromptOf,
  turn
} from "../support/LlmServers.js"
import { layerTest } from "../support/Services.js"

/** What a scripted model says instead of a verified answer it could not stand behind. */
const FALLBACK = "Sorry, I can't confirm that right now. A colleague will follow up."

/** `Replies` as the app builds it, the services the tests set conversations up with, and the reply records. */
const RepliesWith = (config: Record<string, string>) =>
  layerTest(
    Layer.mergeAll(
      Replies.layer,
      Conversations.layer,
      ConversationsRepo.layer,
      ReplyRepo.layer,
      Integrations.layer,
      Workspaces.layer,
      Knowledge.layer
    ),
    config
  )

class Llm extends Context.Service<Llm, LlmServer>()("test/VerifierLlm") {}

/** `Replies` with a model on a local chat-completions server, and a fallback message of its own. */
const ModelRepliesTest = Layer.unwrap(
  Effect.map(makeLlmServer, (server) =>
    Layer.merge(
      RepliesWith({
        AI_PROVIDER: "openai",
        AI_MODEL: "test-model",
        OPENAI_BASE_URL: server.baseUrl,
        AI_FALLBACK_MESSAGE: FALLBACK
      }),
      Layer.succeed(Llm, server)
    ))
)

const ARTICLE_TEXT = "Shipping takes 3 days within the country."

/** A new integration (features as given) with a shipping article, and a function storing its customer's messages. */
const anIntegration = (features: Record<string, boolean> = {}) =>
  Effect.gen(function*() {
    const { workspace } = yield* Effect.flatMap(Workspaces, (w) => w.create("Verifier"))
    yield* Effect.flatMap(Knowledge, (k) =>
      k.addArticle(workspace.id, { title: "Shipping", url: "https://help.example.com/shipping", body: ARTICLE_TEXT }))
    const integration = yield* Effect.flatMap(Integrations, (i) =>
      i.create(workspace.id, {
        name: "Verifier test",
        integration: "api",
        webhook: { url: "https://receiver.example/hook", headers: {}, metadata: {} },
        supportedFeatures: features,
        channelsSettings: {}
      }))
    const say = (id: string, text: string) =>
      Effect.flatMap(Conversations, (c) => c.ingest(integration, incoming("c-1", id, text)))
    return { integration, say }
  }).pipe(Effect.orDie)

/** The customer says `text` in a new conversation, and the reply step runs for it. */
const askAndReply = (features: Record<string, boolean>, text: string) =>
  Effect.gen(function*() {
    const { say } = yield* anIntegration(features)
    const { conversation, message } = yield* say("q-1", text)
    yield* Effect.flatMap(Replies, (r) => r.generate({ conversationId: conversation.id, messageId: message.id }))
    return { conversation, trigger: message }
  })

const EventBody = Schema.fromJsonString(Schema.Struct({ data: Schema.Record(Schema.String, Schema.Unknown) }))

/** The conversation's events in order: kind and `data`. */
const eventsOf = (conversationId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ readonly kind: string; readonly body: string }>`
      SELECT kind, body FROM events WHERE conversation_id = ${conversationId} ORDER BY seq`
    return yield* Effect.forEach(rows, (row) =>
      Effect.map(Schema.decodeUnknownEffect(EventBody)(row.body), ({ data }) => ({ kind: row.kind, data })))
  }).pipe(Effect.orDie)

const kindsOf = (conversationId: string) =>
  Effect.map(eventsOf(conversationId), (events) => events.map((event) => event.kind))

/** The AI's messages in the conversation, oldest first. */
const aiMessagesOf = (conversationId: ConversationId) =>
  Effect.flatMap(ConversationsRepo, (r) => r.listMessages(conversationId)).pipe(
    Effect.map((messages) => messages.filter((m) => m.role === "ai")),
    Effect.orDie
  )

const statusOf = (conversationId: ConversationId) =>
  Effect.flatMap(ConversationsRepo, (r) => r.findById(conversationId)).pipe(
    Effect.map(Option.map((c) => c.status)),
    Effect.orDie
  )

/** The conversation's `reply_metadata` rows, decoded (the verification record included). */
const recordsOf = (conversationId: ConversationId) =>
  Effect.flatMap(ReplyRepo, (r) => r.listByConversation(conversationId)).pipe(Effect.orDie)

/** The model's verdict on a draft, as the JSON object the verify prompt asks for. */
const verdict = (
  value: { readonly supported: boolean; readonly unsupportedClaims?: ReadonlyArray<string>; readonly resolved?: boolean | null },
  usage?: { readonly input: number; readonly output: number }
): Scripted =>
  turn("openai-chat", {
    text: JSON.stringify({
      supported: value.supported,
      unsupportedClaims: value.unsupportedClaims ?? [],
      resolved: value.resolved ?? null
    }),
    ...(usage === undefined ? {} : { usage })
  })

/** The text of the request's user messages (the verify prompt's passages, customer messages and draft). */
const userTextOf = (request: RecordedRequest): string =>
  chatBody(request).messages.filter((m) => m.role === "user").map((m) => m.content ?? "").join("\n")

/** Whether the request is a verify call (its system prompt is the verifier's) rather than a reply turn. */
const isVerify = (request: RecordedRequest): boolean =>
  systemPromptOf("openai-chat", request).includes(Prompts.VERIFY_INSTRUCTIONS)

/**
 * The requests the server received during `effect`: the server is shared by the tests of a layer, and a
 * test must also leave no scripted answer unused.
 */
const requestsDuring = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const llm = yield* Llm
    const before = llm.requests().length
    const result = yield* effect
    expect(llm.pending()).toBe(0)
    return { result, requests: llm.requests().slice(before) }
  })

const LAPTOP_CLAIM = "Every order also comes with a free laptop"
const LAPTOP_REASON = `Not supported by the passages: “${LAPTOP_CLAIM}”`
const INVENTED = `Shipping takes 3 days within the country [1]. ${LAPTOP_CLAIM} [1].`
const QUESTION = "How long does shipping take?"

describe("The verifier with the embedded responder", () => {
  layer(RepliesWith({}))((it) => {
    it.effect("an answer quoted from the article passes the lexical check and is sent", () =>
      Effect.gen(function*() {
        const { conversation, trigger } = yield* askAndReply({ verifier: true }, QUESTION)
        const sent = yield* aiMessagesOf(conversation.id)
        expect(sent).toHaveLength(1)
        expect(sent[0]!.text).toContain(ARTICLE_TEXT)
        expect(yield* kindsOf(conversation.id)).toEqual(["send_messages"])
        expect(yield* statusOf(conversation.id)).toEqual(Option.some("open"))
        const records = yield* recordsOf(conversation.id)
        expect(records).toHaveLength(1)
        expect(records[0]).toMatchObject({ triggerMessageId: trigger.id, action: "answer", provider: "embedded" })
        expect(records[0]!.verification).toEqual({
          method: "lexical",
          drafts: [{ supported: true, reason: null }],
          outcome: "passed",
          resolution: null
        })
      }))

    it.effect("verifierResolution alone checks nothing in an ordinary answer: no verification record", () =>
      Effect.gen(function*() {
        const { conversation } = yield* askAndReply({ verifierResolution: true }, QUESTION)
        const sent = yield* aiMessagesOf(conversation.id)
        expect(sent).toHaveLength(1)
        expect(sent[0]!.text).toContain(ARTICLE_TEXT)
        const records = yield* recordsOf(conversation.id)
        expect(records).toHaveLength(1)
        expect(records[0]!.verification).toBeNull()
      }))

    it.effect("without the verifier flags nothing is recorded either", () =>
      Effect.gen(function*() {
        const { conversation } = yield* askAndReply({}, QUESTION)
        const records = yield* recordsOf(conversation.id)
        expect(records).toHaveLength(1)
        expect(records[0]!.verification).toBeNull()
      }))
  })
})

describe("The verifier with a model", () => {
  layer(ModelRepliesTest, { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("flags off: the model's answer is sent without a verify call, and no verification is recorded", () =>
      Effect.gen(function*() {
        const llm = yield* Llm
        llm.enqueue(turn("openai-chat", { text: INVENTED }))
        const { requests, result: { conversation } } = yield* requestsDuring(askAndReply({}, QUESTION))
        expect(requests).toHaveLength(1)
        expect(isVerify(requests[0]!)).toBe(false)
        const sent = yield* aiMessagesOf(conversation.id)
        expect(sent).toHaveLength(1)
        expect(sent[0]!.text).toContain("free laptop")
        expect(yield* kindsOf(conversation.id)).toEqual(["typing", "send_messages"])
        const records = yield* recordsOf(conversation.id)
        expect(records).toHaveLength(1)
        expect(records[0]).toMatchObject({ action: "answer", provider: "openai", turns: 1, verification: null })
      }))

    it.effect("verifier: an unsupported first draft is redrafted with the reason, and the supported redraft is sent", () =>
      Effect.gen(function*() {
        const llm = yield* Llm
        llm.enqueue(
          turn("openai-chat", { text: INVENTED }),
          verdict({ supported: false, unsupportedClaims: [LAPTOP_CLAIM] }),
          turn("openai-chat", { text: "Shipping takes 3 days within the country [1]." }),
          verdict({ supported: true })
        )
        const { requests, result: { conversation } } = yield* requestsDuring(
          askAndReply({ verifier: true, preemptiveRetrieval: true }, QUESTION)
        )
        // reply, verify, reply, verify
        expect(requests.map(isVerify)).toEqual([false, true, false, true])
        const [draft, check, redraft, recheck] = requests
        expect(systemPromptOf("openai-chat", draft!)).not.toContain("## Correction")
        // The first check: the verifier's instructions (no resolution asked), the passage and the draft.
        const checkSystem = systemPromptOf("openai-chat", check!)
        expect(checkSystem).not.toContain(Prompts.RESOLUTION_INSTRUCTIONS)
        expect(checkSystem).toContain(Prompts.VERDICT_FORMAT)
        expect(userTextOf(check!)).toContain(`[1] Shipping\nhttps://help.example.com/shipping\n${ARTICLE_TEXT}`)
        expect(userTextOf(check!)).toContain(QUESTION)
        expect(userTextOf(check!)).toContain(INVENTED)
        // The redraft: the same reply request, with the correction and the verifier's reason.
        const redraftSystem = systemPromptOf("openai-chat", redraft!)
        expect(redraftSystem).toContain(Prompts.correctionSection(LAPTOP_REASON))
        expect(redraftSystem).toContain(`## Correction\n`)
        expect(redraftSystem).toContain(LAPTOP_REASON)
        // The same prompt otherwise (each request's note mark is its own).
        const unmarked = (prompt: string) => prompt.replace(/#[0-9a-f]{12}/g, "#mark")
        expect(unmarked(redraftSystem.replace(`\n\n${Prompts.correctionSection(LAPTOP_REASON)}`, "")))
          .toBe(unmarked(systemPromptOf("openai-chat", draft!)))
        expect(userTextOf(recheck!)).toContain("Shipping takes 3 days within the country [1].")
        expect(userTextOf(recheck!)).not.toContain("laptop")

        const sent = yield* aiMessagesOf(conversation.id)
        expect(sent).toHaveLength(1)
        expect(sent[0]!.text).toContain(ARTICLE_TEXT)
        expect(sent[0]!.text).not.toContain("laptop")
        expect(sent[0]!.text).not.toContain("[1]")
        expect(yield* kindsOf(conversation.id)).toEqual(["typing", "send_messages"])
        expect(yield* statusOf(conversation.id)).toEqual(Option.some("open"))
        const records = yield* recordsOf(conversation.id)
        expect(records).toHaveLength(1)
        expect(records[0]).toMatchObject({ action: "answer", messageId: sent[0]!.id, reason: null })
        expect(records[0]!.citations.map((c) => c.title)).toEqual(["Shipping"])
        expect(records[0]!.verification).toEqual({
          method: "model",
          drafts: [{ supported: false, reason: LAPTOP_REASON }, { supported: true, reason: null }],
          outcome: "redrafted",
          resolution: null
        })
      }))

    it.effect(
      "a redrafted reply's record counts both drafts' tokens and every model call (drafts and verifications)",
      () =>
        Effect.gen(function*() {
          const llm = yield* Llm
          llm.enqueue(
            turn("openai-chat", { text: INVENTED, usage: { input: 1000, output: 100 } }),
            verdict({ supported: false, unsupportedClaims: [LAPTOP_CLAIM] }, { input: 200, output: 20 }),
            turn("openai-chat", { text: "Shipping takes 3 days within the country [1].", usage: { input: 30, output: 3 } }),
            verdict({ supported: true }, { input: 4, output: 1 })
          )
          const { requests, result: { conversation } } = yield* requestsDuring(
            askAndReply({ verifier: true, preemptiveRetrieval: true }, QUESTION)
          )
          expect(requests).toHaveLength(4)
          const [record] = yield* recordsOf(conversation.id)
          expect(record!.verification?.outcome).toBe("redrafted")
          expect({ turns: record!.turns, inputTokens: record!.inputTokens, outputTokens: record!.outputTokens })
            .toEqual({ turns: 4, inputTokens: 1234, outputTokens: 124 })
        })
    )

    it.effect(
      "a reply whose redraft failed too counts the redraft's model call and tokens",
      () =>
        Effect.gen(function*() {
          const llm = yield* Llm
          llm.enqueue(
            turn("openai-chat", { text: INVENTED, usage: { input: 1000, output: 100 } }),
            verdict({ supported: false, unsupportedClaims: [LAPTOP_CLAIM] }, { input: 200, output: 20 }),
            turn("openai-chat", { text: INVENTED, usage: { input: 30, output: 3 } }),
            verdict({ supported: false, unsupportedClaims: [LAPTOP_CLAIM] }, { input: 4, output: 1 })
          )
          const { requests, result: { conversation } } = yield* requestsDuring(
            askAndReply({ verifier: true, preemptiveRetrieval: true }, QUESTION)
          )
          expect(requests).toHaveLength(4)
          const [record] = yield* recordsOf(conversation.id)
          expect(record!.verification?.outcome).toBe("fallback")
          expect({ turns: record!.turns, inputTokens: record!.inputTokens, outputTokens: record!.outputTokens })
            .toEqual({ turns: 4, inputTokens: 1234, outputTokens: 124 })
        })
    )

    it.effect("verifier + verifierEscalation (escalation off): both drafts fail, handed over as unverified", () =>
      Effect.gen(function*() {
        const llm = yield* Llm
        llm.enqueue(
          turn("openai-chat", { text: INVENTED }),
          verdict({ supported: false, unsupportedClaims: [LAPTOP_CLAIM] }),
          turn("openai-chat", { text: `Yes: ${LAPTOP_CLAIM} [1].` }),
          verdict({ supported: false, unsupportedClaims: [`Yes: ${LAPTOP_CLAIM}`] })
        )
        const secondReason = `Not supported by the passages: “Yes: ${LAPTOP_CLAIM}”`
        const { requests, result: { conversation, trigger } } = yield* requestsDuring(
          askAndReply({ verifier: true, verifierEscalation: true, escalation: false, preemptiveRetrieval: true }, QUESTION)
        )
        expect(requests.map(isVerify)).toEqual([false, true, false, true])
        // No message without messageInEscalation; nothing of the laptop ever stored.
        expect(yield* aiMessagesOf(conversation.id)).toEqual([])
        const events = yield* eventsOf(conversation.id)
        expect(events.map((e) => e.kind)).toEqual(["typing", "escalate"])
        expect(events[1]!.data).toEqual({
          reason: "unverified",
          // Neutral words on the webhook; the reason is in the record.
          detail: Prompts.UNVERIFIED_DETAIL,
          summary: Prompts.fallbackSummary([{ text: QUESTION }]),
          messageId: null
        })
        expect(yield* statusOf(conversation.id)).toEqual(Option.some("escalated"))
        const records = yield* recordsOf(conversation.id)
        expect(records).toHaveLength(1)
        expect(records[0]).toMatchObject({
          triggerMessageId: trigger.id,
          action: "escalate",
          reason: "unverified",
          messageId: null,
          citations: []
        })
        expect(records[0]!.verification).toEqual({
          method: "model",
          drafts: [{ supported: false, reason: LAPTOP_REASON }, { supported: false, reason: secondReason }],
          outcome: "escalated",
          resolution: null
        })
      }))

    it.effect("verifier + verifierEscalation + messageInEscalation: the hand-over note goes out, not the draft", () =>
      Effect.gen(function*() {
        const llm = yield* Llm
        llm.enqueue(
          turn("openai-chat", { text: INVENTED }),
          verdict({ supported: false, unsupportedClaims: [LAPTOP_CLAIM] }),
          turn("openai-chat", { text: INVENTED }),
          verdict({ supported: false, unsupportedClaims: [LAPTOP_CLAIM] })
        )
        const { requests, result: { conversation } } = yield* requestsDuring(
          askAndReply({ verifier: true, verifierEscalation: true, escalation: true, messageInEscalation: true }, QUESTION)
        )
        expect(requests.map(isVerify)).toEqual([false, true, false, true])
        const sent = yield* aiMessagesOf(conversation.id)
        expect(sent.map((m) => m.text)).toEqual([Prompts.HANDOVER_TEXT])
        const events = yield* eventsOf(conversation.id)
        expect(events.map((e) => e.kind)).toEqual(["typing", "send_messages", "escalate"])
        expect(events[2]!.data).toMatchObject({ reason: "unverified", detail: Prompts.UNVERIFIED_DETAIL, messageId: sent[0]!.id })
        expect(yield* statusOf(conversation.id)).toEqual(Option.some("escalated"))
        const [record] = yield* recordsOf(conversation.id)
        expect(record).toMatchObject({ action: "escalate", reason: "unverified", messageId: sent[0]!.id })
        expect(record!.verification?.outcome).toBe("escalated")
      }))

    for (const escalation of [true, false]) {
      const name = `verifier without verifierEscalation (escalation ${escalation ? "on" : "off"})`
      it.effect(`${name}: both drafts fail, the fallback message is sent`, () =>
        Effect.gen(function*() {
          const llm = yield* Llm
          llm.enqueue(
            turn("openai-chat", { text: INVENTED }),
            verdict({ supported: false, unsupportedClaims: [LAPTOP_CLAIM] }),
            turn("openai-chat", { text: INVENTED }),
            verdict({ supported: false, unsupportedClaims: [LAPTOP_CLAIM] })
          )
          const { requests, result: { conversation } } = yield* requestsDuring(
            askAndReply({ verifier: true, escalation, messageInEscalation: true }, QUESTION)
          )
          expect(requests.map(isVerify)).toEqual([false, true, false, true])
          const sent = yield* aiMessagesOf(conversation.id)
          // The configured AI_FALLBACK_MESSAGE, not the default one.
          expect(FALLBACK).not.toBe(DEFAULT_FALLBACK_MESSAGE)
          expect(sent.map((m) => m.text)).toEqual([FALLBACK])
          expect(yield* kindsOf(conversation.id)).toEqual(["typing", "send_messages"])
          expect(yield* statusOf(conversation.id)).toEqual(Option.some("open"))
          const [record] = yield* recordsOf(conversation.id)
          expect(record).toMatchObject({ action: "answer", reason: null, messageId: sent[0]!.id, citations: [] })
          expect(record!.verification).toEqual({
            method: "model",
            drafts: [{ supported: false, reason: LAPTOP_REASON }, { supported: false, reason: LAPTOP_REASON }],
            outcome: "fallback",
            resolution: null
          })
        }))
    }

    it.effect("a verify answer that does not read (prose, then the wrong types) is asked again; the readable one counts", () =>
      Effect.gen(function*() {
        const llm = yield* Llm
        llm.enqueue(
          turn("openai-chat", { text: "Shipping takes 3 days within the country." }),
          turn("openai-chat", { text: "Looks fine to me" }),
          turn("openai-chat", { text: "{\"supported\": \"yes\", \"unsupportedClaims\": [], \"resolved\": null}" }),
          turn("openai-chat", { text: "```json\n{\"supported\": true, \"unsupportedClaims\": [], \"resolved\": null}\n```" })
        )
        const { requests, result: { conversation } } = yield* requestsDuring(askAndReply({ verifier: true }, QUESTION))
        expect(requests.map(isVerify)).toEqual([false, true, true, true])
        // The same question each time.
        expect(requests[2]!.raw).toBe(requests[1]!.raw)
        expect(requests[3]!.raw).toBe(requests[1]!.raw)
        const sent = yield* aiMessagesOf(conversation.id)
        expect(sent.map((m) => m.text)).toEqual(["Shipping takes 3 days within the country."])
        expect(yield* kindsOf(conversation.id)).toEqual(["typing", "send_messages"])
        const [record] = yield* recordsOf(conversation.id)
        expect(record!.verification).toEqual({
          method: "model",
          drafts: [{ supported: true, reason: null }],
          outcome: "passed",
          resolution: null
        })
      }))

    const closing = turn("openai-chat", {
      toolCalls: [{
        name: "close_conversation",
        args: { summary: "Shipping question answered.", message: "Glad I could help, goodbye!" }
      }]
    })

    it.effect("verifierResolution: a close the verifier does not confirm is sent as an answer; the conversation stays open", () =>
      Effect.gen(function*() {
        const llm = yield* Llm
        llm.enqueue(closing, verdict({ supported: true, resolved: false }))
        const { requests, result: { conversation } } = yield* requestsDuring(
          askAndReply({ verifierResolution: true }, "Thanks, but the parcel still hasn't arrived.")
        )
        expect(requests.map(isVerify)).toEqual([false, true])
        const checkSystem = systemPromptOf("openai-chat", requests[1]!)
        expect(checkSystem).toContain(Prompts.RESOLUTION_INSTRUCTIONS)
        expect(userTextOf(requests[1]!)).toContain("Thanks, but the parcel still hasn't arrived.")
        expect(userTextOf(requests[1]!)).toContain("Glad I could help, goodbye!")
        const sent = yield* aiMessagesOf(conversation.id)
        expect(sent.map((m) => m.text)).toEqual(["Glad I could help, goodbye!"])
        expect(yield* kindsOf(conversation.id)).toEqual(["typing", "send_messages"])
        expect(yield* statusOf(conversation.id)).toEqual(Option.some("open"))
        const [record] = yield* recordsOf(conversation.id)
        expect(record).toMatchObject({ action: "answer", messageId: sent[0]!.id })
        expect(record!.verification).toEqual({
          method: "model",
          drafts: [],
          outcome: "unchecked",
          resolution: { confirmed: false }
        })
      }))

    it.effect("verifierResolution: a close the verifier confirms stands; the conversation is closed", () =>
      Effect.gen(function*() {
        const llm = yield* Llm
        llm.enqueue(closing, verdict({ supported: true, resolved: true }))
        const { requests, result: { conversation } } = yield* requestsDuring(
          askAndReply({ verifierResolution: true }, "It arrived today, thank you! That's all.")
        )
        expect(requests.map(isVerify)).toEqual([false, true])
        // No goodbye without messageInEndConversation.
        expect(yield* aiMessagesOf(conversation.id)).toEqual([])
        const events = yield* eventsOf(conversation.id)
        expect(events.map((e) => e.kind)).toEqual(["typing", "close_conversation"])
        expect(events[1]!.data).toMatchObject({ summary: "Shipping question answered.", reason: "resolved" })
        expect(yield* statusOf(conversation.id)).toEqual(Option.some("closed"))
        const [record] = yield* recordsOf(conversation.id)
        expect(record).toMatchObject({ action: "close", messageId: null })
        expect(record!.verification).toEqual({
          method: "model",
          drafts: [],
          outcome: "unchecked",
          resolution: { confirmed: true }
        })
      }))

    it.effect("verifierResolution: a verdict that leaves resolution null does not confirm the close", () =>
      Effect.gen(function*() {
        const llm = yield* Llm
        llm.enqueue(closing, verdict({ supported: true, resolved: null }))
        const { requests, result: { conversation } } = yield* requestsDuring(
          askAndReply({ verifierResolution: true, messageInEndConversation: true }, "It arrived today, thank you!")
        )
        expect(requests).toHaveLength(2)
        expect(yield* kindsOf(conversation.id)).toEqual(["typing", "send_messages"])
        expect(yield* statusOf(conversation.id)).toEqual(Option.some("open"))
        const [record] = yield* recordsOf(conversation.id)
        expect(record!.verification?.resolution).toEqual({ confirmed: false })
      }))
  })
})
