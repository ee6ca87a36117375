/**
 * The customer's language in Parley's own texts (src/Ai/Texts.ts): detection without a model, the
 * integration's override, the bundled hand-over, fallback and "More in" line, and the language stored on
 * the conversation. Through the reply step (`Replies.generate` called directly) with the embedded
 * responder and with a model that cannot be reached.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import { detectLanguage, replyLanguage, texts } from "../../src/Ai/Texts.js"
import { ConversationsRepo } from "../../src/Conversations/Repo.js"
import type { ConversationId } from "../../src/Domain/Ids.js"
import type { FeatureName } from "../../src/Domain/Integration.js"
import { Integrations } from "../../src/Integrations/Integrations.js"
import { Workspaces } from "../../src/Workspaces/Workspaces.js"
import { serverError } from "../support/LlmServers.js"
import { anIntegration as setup, Llm, replyServices, withModel } from "../support/ReplySetup.js"
import { layerTest } from "../support/Services.js"

describe("detectLanguage", () => {
  it("tells the five languages apart from a support message", () => {
    expect(detectLanguage(["Hello, where is my order? It has not arrived yet."])).toBe("en")
    expect(detectLanguage(["Hola, ¿dónde está mi pedido? Todavía no ha llegado."])).toBe("es")
    expect(detectLanguage(["Bonjour, où est ma commande ? Elle n'est pas encore arrivée."])).toBe("fr")
    expect(detectLanguage(["Hallo, wo ist meine Bestellung? Sie ist noch nicht angekommen."])).toBe("de")
    expect(detectLanguage(["Olá, onde está o meu pedido? Ainda não chegou."])).toBe("pt")
    expect(detectLanguage(["¿Cuánto tarda el envío a Canadá?"])).toBe("es")
  })

  it("says nothing when a message says too little", () => {
    expect(detectLanguage(["ok"])).toBeNull()
    expect(detectLanguage(["#5512"])).toBeNull()
    expect(detectLanguage([])).toBeNull()
  })

  it("the override wins, then the detected language, then the stored one, then English", () => {
    expect(replyLanguage({ override: "fr", customerMessages: ["Hola, ¿dónde está mi pedido?"], stored: "de" })).toBe("fr")
    expect(replyLanguage({ override: null, customerMessages: ["Hola, ¿dónde está mi pedido?"], stored: "de" })).toBe("es")
    expect(replyLanguage({ override: null, customerMessages: ["ok"], stored: "de" })).toBe("de")
    expect(replyLanguage({ override: null, customerMessages: ["ok"], stored: null })).toBe("en")
  })

  it("every bundle has every text, and each is the language's own", () => {
    for (const bundle of Object.values(texts)) {
      for (const text of [bundle.handover, bundle.fallback, bundle.unavailable, bundle.closing, bundle.noAnswer,
        bundle.escalation, bundle.guardrail.abuse, bundle.guardrail.prompt_injection, bundle.inactivity.prompt,
        bundle.inactivity.goodbye]) {
        expect(text.trim()).not.toBe("")
      }
    }
    for (const language of ["es", "fr", "de", "pt"] as const) {
      expect(detectLanguage([texts[language].handover, texts[language].noAnswer])).toBe(language)
      expect(texts[language].handover).not.toBe(texts.en.handover)
    }
  })
})

/** A model that cannot be reached: one attempt, no retry budget. */
const Unreachable = withModel({ AI_MAX_RETRIES: "0", AI_RETRY_BUDGET: "0 seconds" })

const EscalateBody = Schema.Struct({ data: Schema.Struct({ reason: Schema.String, summary: Schema.String }) })

/** A new integration with a Spanish shipping article and `typing` off. */
const anIntegration = (features: Partial<Record<FeatureName, boolean>>, channelsSettings: Record<string, unknown> = {}) =>
  setup({
    features,
    channelsSettings,
    article: { title: "Envíos", url: "https://help.example.com/envios", body: "El envío a Canadá tarda de 3 a 5 días hábiles." }
  })

const aiTexts = (conversationId: ConversationId) =>
  Effect.flatMap(ConversationsRepo, (r) => r.listMessages(conversationId)).pipe(
    Effect.map((messages) => messages.filter((m) => m.role === "ai").map((m) => m.text)),
    Effect.orDie
  )

const languageOf = (conversationId: ConversationId) =>
  Effect.flatMap(ConversationsRepo, (r) => r.findById(conversationId)).pipe(
    Effect.map(Option.map((c) => c.language)),
    Effect.orDie
  )

describe("Parley's texts in the customer's language, embedded responder", () => {
  layer(layerTest(replyServices))((it) => {
    it.effect("a Spanish answer ends with the Spanish 'More in' line; the language is stored on the conversation", () =>
      Effect.gen(function*() {
        const { ask } = yield* anIntegration({})
        const id = yield* ask("m1", "¿Cuánto tarda el envío a Canadá?")
        const [answer] = yield* aiTexts(id)
        expect(answer).toContain("de 3 a 5 días hábiles")
        expect(answer).toContain("Más información en “Envíos”: https://help.example.com/envios.")
        expect(yield* languageOf(id)).toEqual(Option.some("es"))
        // A message too short to tell keeps the stored language.
        const again = yield* ask("m2", "ok")
        expect((yield* aiTexts(again)).at(-1)).toBe(texts.es.escalation)
      }))

    it.effect("a German question nobody answers gets the German hand-over", () =>
      Effect.gen(function*() {
        const { ask } = yield* anIntegration({ escalation: true })
        const id = yield* ask("m1", "Kann ich mit Goldbarren bezahlen? Ich habe keine Karte.")
        expect(yield* aiTexts(id)).toEqual([texts.de.escalation])
      }))

    it.effect("channelsSettings.language overrides the detection", () =>
      Effect.gen(function*() {
        const { ask } = yield* anIntegration({ escalation: false }, { language: "fr" })
        const id = yield* ask("m1", "Can I pay with gold bars? I don't have a card.")
        expect(yield* aiTexts(id)).toEqual([texts.fr.noAnswer])
        expect(yield* languageOf(id)).toEqual(Option.some("fr"))
      }))

    it.effect("a language Parley has no texts for is a 422 at channelsSettings.language", () =>
      Effect.gen(function*() {
        const { workspace } = yield* Effect.flatMap(Workspaces, (w) => w.create("Languages")).pipe(Effect.orDie)
        const error = yield* Effect.flatMap(Integrations, (i) =>
          i.create(workspace.id, {
            name: "Languages",
            integration: "api",
            webhook: { url: "https://receiver.example/hook", headers: {}, metadata: {} },
            supportedFeatures: {},
            channelsSettings: { language: "klingon" }
          })).pipe(Effect.flip)
        expect(error._tag === "InvalidInput" ? error.problems : error).toMatchObject([
          { path: ["channelsSettings", "language"] }
        ])
      }))
  })
})

describe("Parley's texts in the customer's language, when the model cannot be reached", () => {
  layer(Unreachable, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("a Spanish customer gets the Spanish hand-over, and the summary's lead-in is Spanish", () =>
      Effect.gen(function*() {
        const llm = yield* Llm
        llm.enqueue(serverError("openai-chat"))
        const { ask } = yield* anIntegration({ escalation: true, messageInEscalation: true })
        const id = yield* ask("m1", "Hola, ¿dónde está mi pedido? No ha llegado todavía.")
        expect(yield* aiTexts(id)).toEqual([texts.es.handover])
        const sql = yield* SqlClient.SqlClient
        const [escalate] = yield* sql<{ readonly body: string }>`
          SELECT body FROM events WHERE conversation_id = ${id} AND kind = 'escalate'`.pipe(Effect.orDie)
        const data = yield* Schema.decodeUnknownEffect(Schema.fromJsonString(EscalateBody))(escalate!.body).pipe(Effect.orDie)
        expect(data.data).toMatchObject({
          reason: "ai_unavailable",
          summary: "El cliente preguntó: Hola, ¿dónde está mi pedido? No ha llegado todavía."
        })
      }))

    it.effect("without escalation a Portuguese customer gets the bundled Portuguese fallback", () =>
      Effect.gen(function*() {
        const llm = yield* Llm
        llm.enqueue(serverError("openai-chat"))
        const { ask } = yield* anIntegration({ escalation: false })
        const id = yield* ask("m1", "Olá, onde está o meu pedido? Ainda não chegou.")
        expect(yield* aiTexts(id)).toEqual([texts.pt.unavailable])
      }))
  })
})
