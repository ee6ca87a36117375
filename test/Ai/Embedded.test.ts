import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { AiReplies, type Reply } from "../../src/Ai/AiReplies.js"
import { EmbeddedRepliesLive, ESCALATION_TEXT, NO_ANSWER_TEXT } from "../../src/Ai/Embedded.js"
import { ConversationsRepo } from "../../src/Conversations/Repo.js"
import { MessageReceived } from "../../src/Domain/Conversation.js"
import { ConversationId, IntegrationId } from "../../src/Domain/Ids.js"
import { ArticleJson } from "../../src/Domain/Knowledge.js"
import { IntegrationsRepo } from "../../src/Integrations/Repo.js"
import { makeApp } from "../../src/App.js"
import { ADMIN_TOKEN, bodyAs, call, makeTenant, type Tenant, TestConfig, TestServer } from "../support/App.js"
import { layerTest } from "../support/Services.js"

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/
const UNKNOWN_WORKSPACE = "00000000-0000-4000-8000-000000000000"

const SHIPPING = {
  title: "Shipping and delivery",
  url: "https://help.example.com/shipping",
  body: `## Delivery times

Orders leave our warehouse within 1–2 business days. Standard delivery takes 3–5 business days; express delivery arrives the next business day.

## Tracking

We email you a tracking number as soon as your parcel leaves the warehouse.`
}
const DELIVERY_PASSAGE =
  "Orders leave our warehouse within 1–2 business days. Standard delivery takes 3–5 business days; express delivery arrives the next business day."

const RETURNS = {
  title: "Returns and refunds",
  url: "https://help.example.com/returns",
  body: `## Returns

You can return any unused item within 30 days. Print the prepaid return label from your account.

## Refunds

Refunds go back to your original payment method within 5 business days after the returned item arrives.`
}
const REFUNDS_PASSAGE =
  "Refunds go back to your original payment method within 5 business days after the returned item arrives."

const PASSWORD = {
  title: "Password reset",
  body:
    "Click “Forgot password” on the sign-in page and enter your email address. We send a reset link that is valid for one hour."
}

const CRYPTO = {
  title: "Paying with cryptocurrency",
  url: "https://help.other.example/crypto",
  body: "You can pay with Bitcoin or another cryptocurrency at checkout."
}

const GIFT_CARDS = {
  title: "Gift cards",
  url: "https://help.other.example/gift-cards",
  body: "Gift cards come in amounts from 10 to 200 euros. They never expire and can be used for several orders."
}

const CRYPTO_QUESTION = "Can I pay with cryptocurrency?"

const admin = (method: "GET" | "POST", path: string, body?: unknown) =>
  call(method, `/admin/v1${path}`, { token: ADMIN_TOKEN, ...(body === undefined ? {} : { body }) })

const addArticle = (workspaceId: string, article: { title: string; body: string; url?: string }) =>
  Effect.gen(function*() {
    const reply = yield* admin("POST", `/workspaces/${workspaceId}/articles`, article)
    expect(reply.status, JSON.stringify(reply.body)).toBe(201)
    return (yield* bodyAs(ArticleJson)(reply)).body
  })

/**
 * Parley's HTTP app (as `TestApp`), whose database also carries the embedded responder under test and
 * the repos the test reads rows with: built by `layerTest`, on the app's one database.
 */
const EmbeddedApp = makeApp({
  server: TestServer,
  database: layerTest(Layer.mergeAll(EmbeddedRepliesLive, ConversationsRepo.layer, IntegrationsRepo.layer)),
  workers: false
}).pipe(Layer.provide(TestConfig()), Layer.orDie)

let counter = 0

/**
 * Posts the customer's messages through message-received, reads the stored rows back and asks the
 * embedded responder for a reply, as the generate_reply job does.
 */
const ask = (tenant: Tenant, ...texts: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const conversationId = `conv-${++counter}`
    let stored: string | undefined
    for (const [i, text] of texts.entries()) {
      const reply = yield* call("POST", `/v1/webhooks/${tenant.integrationId}/message-received`, {
        token: tenant.token,
        body: {
          id: `${conversationId}-msg-${i}`,
          role: "human",
          sentAt: `2026-11-22T10:0${i}:00Z`,
          customerId: "6f1c1f8e-1d7e-4c8e-9a0a-1b2c3d4e5f60",
          conversationId,
          text
        }
      })
      expect(reply.status, JSON.stringify(reply.body)).toBe(200)
      stored = (yield* bodyAs(MessageReceived)(reply)).body.conversation.id
    }
    const conversations = yield* ConversationsRepo
    const integrations = yield* IntegrationsRepo
    const id = ConversationId.make(stored!)
    const conversation = Option.getOrThrow(yield* conversations.findById(id))
    const integration = Option.getOrThrow(yield* integrations.findById(IntegrationId.make(tenant.integrationId)))
    const messages = yield* conversations.listMessages(id)
    expect(messages.map((m) => m.text)).toEqual(texts)
    const ai = yield* AiReplies
    return yield* ai.reply({
      integration,
      conversation,
      history: messages,
      unanswered: messages.filter((m) => m.role === "human")
    })
  })

/** The embedded responder's reply: no model, no tokens, no turns. */
const embedded = { provider: "embedded", model: null, usage: { inputTokens: 0, outputTokens: 0 }, turns: 0 } as const

/** The section heading each passage sits under in its article. */
const headings = new Map([[DELIVERY_PASSAGE, "Delivery times"], [REFUNDS_PASSAGE, "Refunds"]])

const answer = (passage: string, article: { title: string; url?: string }): Reply => {
  const text = `${passage}\n\nMore in “${article.title}”${article.url === undefined ? "" : `: ${article.url}`}.`
  // The passage used, with its article and link.
  const cited = {
    articleId: expect.stringMatching(UUID),
    title: article.title,
    url: article.url ?? null,
    heading: headings.get(passage) ?? null,
    text: passage
  }
  // The verifier checks the answer as written against the passages it quotes.
  return { ...embedded, text, action: { _tag: "Answer" }, citations: [cited], draft: text, sources: [{ ref: 1, ...cited }] }
}

const escalation = (question: string): Reply => ({
  ...embedded,
  text: ESCALATION_TEXT,
  action: {
    _tag: "Escalate",
    reason: "no_answer",
    detail: "No help-center article answers the customer's question.",
    summary: `The customer asked: ${question}`
  },
  citations: [],
  draft: ESCALATION_TEXT,
  sources: []
})
const noAnswer: Reply = {
  ...embedded,
  text: NO_ANSWER_TEXT,
  action: { _tag: "Answer" },
  citations: [],
  draft: NO_ANSWER_TEXT,
  sources: []
}

describe("Embedded knowledge-base responder", () => {
  it.layer(EmbeddedApp, { timeout: 120_000 })((it) => {
    describe("POST/GET /admin/v1/workspaces/{workspaceId}/articles", () => {
      it.effect("creates an article: 201 {id, title, url, createdAt}; url defaults to null; GET lists them in order", () =>
        Effect.gen(function*() {
          const tenant = yield* makeTenant()
          const created = yield* admin("POST", `/workspaces/${tenant.workspaceId}/articles`, SHIPPING)
          expect(created.status).toBe(201)
          expect(created.body).toEqual({
            id: expect.stringMatching(UUID),
            title: SHIPPING.title,
            url: SHIPPING.url,
            createdAt: expect.stringMatching(ISO_UTC)
          })
          // Exactly id, title, url and createdAt: the decode allows no other key.
          yield* bodyAs(ArticleJson)(created)
          const withoutUrl = yield* admin("POST", `/workspaces/${tenant.workspaceId}/articles`, PASSWORD)
          expect(withoutUrl.status).toBe(201)
          expect(withoutUrl.body).toEqual({
            id: expect.stringMatching(UUID),
            title: PASSWORD.title,
            url: null,
            createdAt: expect.stringMatching(ISO_UTC)
          })

          const listed = yield* admin("GET", `/workspaces/${tenant.workspaceId}/articles`)
          expect(listed.status).toBe(200)
          expect(listed.body).toEqual([created.body, withoutUrl.body])

          // Another workspace sees none of them.
          const other = yield* makeTenant()
          const otherList = yield* admin("GET", `/workspaces/${other.workspaceId}/articles`)
          expect(otherList.status).toBe(200)
          expect(otherList.body).toEqual([])
        }))

      it.effect("an unknown workspace answers 404 {detail: Workspace not found}", () =>
        Effect.gen(function*() {
          const post = yield* admin("POST", `/workspaces/${UNKNOWN_WORKSPACE}/articles`, SHIPPING)
          expect(post.status).toBe(404)
          expect(post.body).toEqual({ detail: "Workspace not found" })
          const get = yield* admin("GET", `/workspaces/${UNKNOWN_WORKSPACE}/articles`)
          expect(get.status).toBe(404)
          expect(get.body).toEqual({ detail: "Workspace not found" })
        }))

      it.effect("a missing title is a 422 at [body, title] of type missing; nothing is stored", () =>
        Effect.gen(function*() {
          const tenant = yield* makeTenant()
          const reply = yield* admin("POST", `/workspaces/${tenant.workspaceId}/articles`, {
            body: SHIPPING.body,
            url: SHIPPING.url
          })
          expect(reply.status).toBe(422)
          expect(reply.body).toEqual({ detail: [{ loc: ["body", "title"], msg: "Field required", type: "missing" }] })
          const badUrl = yield* admin("POST", `/workspaces/${tenant.workspaceId}/articles`, { ...SHIPPING, url: "help" })
          expect(badUrl.status).toBe(422)
          expect(badUrl.body).toEqual({
            detail: [{ loc: ["body", "url"], msg: expect.any(String), type: "url_parsing" }]
          })
          expect((yield* admin("GET", `/workspaces/${tenant.workspaceId}/articles`)).body).toEqual([])
        }))

      it.effect("needs the admin token: a workspace's API token is a 401", () =>
        Effect.gen(function*() {
          const tenant = yield* makeTenant()
          const reply = yield* call("POST", `/admin/v1/workspaces/${tenant.workspaceId}/articles`, {
            token: tenant.token,
            body: SHIPPING
          })
          expect(reply.status).toBe(401)
          expect((yield* admin("GET", `/workspaces/${tenant.workspaceId}/articles`)).body).toEqual([])
        }))
    })

    describe("AiReplies.reply", () => {
      it.effect("answers a matching question with the best passage and the article's link", () =>
        Effect.gen(function*() {
          const tenant = yield* makeTenant()
          yield* addArticle(tenant.workspaceId, SHIPPING)
          yield* addArticle(tenant.workspaceId, RETURNS)
          yield* addArticle(tenant.workspaceId, PASSWORD)

          const delivery = yield* ask(tenant, "How long does delivery take?")
          expect(delivery).toEqual(answer(DELIVERY_PASSAGE, SHIPPING))
          expect(delivery.text).toContain(DELIVERY_PASSAGE)
          expect(delivery.text).toContain(SHIPPING.url)

          expect(yield* ask(tenant, "Where is my refund?")).toEqual(answer(REFUNDS_PASSAGE, RETURNS))
          // An article without a URL is named without a link.
          expect(yield* ask(tenant, "I forgot my password")).toEqual(answer(PASSWORD.body, PASSWORD))
        }))

      it.effect("answers all the customer's unanswered messages together", () =>
        Effect.gen(function*() {
          const tenant = yield* makeTenant()
          yield* addArticle(tenant.workspaceId, SHIPPING)
          yield* addArticle(tenant.workspaceId, RETURNS)
          const reply = yield* ask(tenant, "Hello there", "how long does delivery take?")
          expect(reply).toEqual(answer(DELIVERY_PASSAGE, SHIPPING))
        }))

      it.effect("escalates an unrelated question when the integration's escalation flag is on (default)", () =>
        Effect.gen(function*() {
          const tenant = yield* makeTenant()
          yield* addArticle(tenant.workspaceId, SHIPPING)
          yield* addArticle(tenant.workspaceId, RETURNS)
          expect(yield* ask(tenant, CRYPTO_QUESTION)).toEqual(escalation(CRYPTO_QUESTION))
        }))

      it.effect("says it found no answer, without escalating, when the escalation flag is off", () =>
        Effect.gen(function*() {
          const tenant = yield* makeTenant({ supportedFeatures: { escalation: false } })
          yield* addArticle(tenant.workspaceId, SHIPPING)
          yield* addArticle(tenant.workspaceId, RETURNS)
          expect(yield* ask(tenant, CRYPTO_QUESTION)).toEqual(noAnswer)
          // The flag changes nothing for a question it can answer.
          expect(yield* ask(tenant, "How long does delivery take?")).toEqual(answer(DELIVERY_PASSAGE, SHIPPING))
        }))

      it.effect("an empty knowledge base escalates", () =>
        Effect.gen(function*() {
          const tenant = yield* makeTenant()
          expect(yield* ask(tenant, "How long does delivery take?")).toEqual(escalation("How long does delivery take?"))
        }))

      it.effect("never uses another workspace's articles", () =>
        Effect.gen(function*() {
          const shop = yield* makeTenant()
          const other = yield* makeTenant()
          yield* addArticle(shop.workspaceId, SHIPPING)
          yield* addArticle(shop.workspaceId, RETURNS)
          yield* addArticle(other.workspaceId, CRYPTO)
          yield* addArticle(other.workspaceId, GIFT_CARDS)
          yield* addArticle(other.workspaceId, PASSWORD)

          // The other workspace's article answers there...
          expect(yield* ask(other, CRYPTO_QUESTION)).toEqual(answer(CRYPTO.body, CRYPTO))
          // ...but never here, nor do this workspace's articles answer there.
          expect(yield* ask(shop, CRYPTO_QUESTION)).toEqual(escalation(CRYPTO_QUESTION))
          expect(yield* ask(other, "How long does delivery take?")).toEqual(escalation("How long does delivery take?"))
          expect(yield* ask(shop, "How long does delivery take?")).toEqual(answer(DELIVERY_PASSAGE, SHIPPING))
        }))

      it.effect("a workspace with a single article answers a question that article covers", () =>
        Effect.gen(function*() {
          const tenant = yield* makeTenant()
          yield* addArticle(tenant.workspaceId, CRYPTO)
          expect(yield* ask(tenant, CRYPTO_QUESTION)).toEqual(answer(CRYPTO.body, CRYPTO))
          expect(yield* ask(tenant, "How long does delivery take?")).toEqual(escalation("How long does delivery take?"))
        }))

      it.effect("picks up an article added after the first question", () =>
        Effect.gen(function*() {
          const tenant = yield* makeTenant()
          yield* addArticle(tenant.workspaceId, SHIPPING)
          expect(yield* ask(tenant, CRYPTO_QUESTION)).toEqual(escalation(CRYPTO_QUESTION))
          yield* addArticle(tenant.workspaceId, CRYPTO)
          expect(yield* ask(tenant, CRYPTO_QUESTION)).toEqual(answer(CRYPTO.body, CRYPTO))
        }))

      it.effect("is deterministic: the same question twice gives the identical reply", () =>
        Effect.gen(function*() {
          const tenant = yield* makeTenant()
          yield* addArticle(tenant.workspaceId, SHIPPING)
          yield* addArticle(tenant.workspaceId, RETURNS)
          yield* addArticle(tenant.workspaceId, PASSWORD)
          const question = "How long does express delivery take for my parcel?"
          const first = yield* ask(tenant, question)
          const second = yield* ask(tenant, question)
          expect(second).toEqual(first)
          // A fresh responder (its own Knowledge: no cached index) says the same.
          const fresh = yield* ask(tenant, question).pipe(Effect.provide(EmbeddedRepliesLive, { local: true }))
          expect(fresh).toEqual(first)
          expect(first).toEqual(answer(DELIVERY_PASSAGE, SHIPPING))
        }))
    })
  })
})
