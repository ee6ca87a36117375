/**
 * What the AI may know about the customer (`channelsSettings.customerData`): nothing by default; the
 * allowed fields of the customer and of the latest requestContext, as data in their own section of the
 * system prompt; a wrong path is a 422. Through the reply step with a scripted chat-completions server.
 */
import { describe, expect, layer } from "@effect/vitest"
import * as SqlClient from "effect/sql/SqlClient"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Replies } from "../../src/Ai/GenerateReply.js"
import * as Prompts from "../../src/Ai/Llm/Prompt.js"
import { Conversations } from "../../src/Conversations/Conversations.js"
import { ConversationsRepo } from "../../src/Conversations/Repo.js"
import { Integrations } from "../../src/Integrations/Integrations.js"
import { Workspaces } from "../../src/Workspaces/Workspaces.js"
import { incoming, testCustomerId } from "../support/Incoming.js"
import { type LlmServer, makeLlmServer, systemPromptOf, turn } from "../support/LlmServers.js"
import { layerTest } from "../support/Services.js"

const services = Layer.mergeAll(Replies.layer, Conversations.layer, ConversationsRepo.layer, Integrations.layer, Workspaces.layer)

class Llm extends Context.Service<Llm, LlmServer>()("test/CustomerDataLlm") {}

const WithModel = Layer.unwrap(
  Effect.map(makeLlmServer, (server) =>
    Layer.merge(
      layerTest(services, { AI_PROVIDER: "openai", AI_MODEL: "test-model", OPENAI_BASE_URL: server.baseUrl }),
      Layer.succeed(Llm, server)
    ))
)

let n = 0

/** Asks one question for a customer with a name, an email and custom fields; the system prompt the model got. */
const askWith = (channelsSettings: Record<string, unknown>) =>
  Effect.gen(function*() {
    const llm = yield* Llm
    const before = llm.requests().length
    llm.enqueue(turn("openai-chat", { text: "Hello!" }))
    const { workspace } = yield* Effect.flatMap(Workspaces, (w) => w.create("Customer data"))
    const integration = yield* Effect.flatMap(Integrations, (i) =>
      i.create(workspace.id, {
        name: "Customer data",
        integration: "api",
        webhook: { url: "https://receiver.example/hook", headers: {}, metadata: {} },
        supportedFeatures: { typing: false },
        channelsSettings
      })).pipe(Effect.orDie)
    const { conversation, message } = yield* Effect.flatMap(Conversations, (c) =>
      c.ingest(integration, {
        ...incoming(`cd-${++n}`, `cd-${n}-1`, "Hi, can you check my plan?"),
        requestContext: Option.some({ page: "/checkout", sessionToken: "tok-secret" })
      })).pipe(Effect.orDie)
    const sql = yield* SqlClient.SqlClient
    yield* sql`UPDATE customers SET first_name = 'Ana', email = 'ana@example.com',
      custom_fields = ${JSON.stringify({ plan: "gold", nationalId: "12345678Z" })}::jsonb
      WHERE id = ${testCustomerId} AND workspace_id = ${workspace.id}`.pipe(Effect.orDie)
    yield* Effect.flatMap(Replies, (r) => r.generate({ conversationId: conversation.id, messageId: message.id }))
    const [request] = llm.requests().slice(before)
    return { system: systemPromptOf("openai-chat", request!), raw: request!.raw }
  })

describe("what the AI may know about the customer", () => {
  layer(WithModel, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("nothing by default: not the name, not the custom fields, not the requestContext", () =>
      Effect.gen(function*() {
        const { raw, system } = yield* askWith({})
        expect(system).not.toContain(Prompts.CUSTOMER_DATA_HEADING)
        for (const value of ["Ana", "ana@example.com", "gold", "12345678Z", "/checkout", "tok-secret"]) {
          expect(raw).not.toContain(value)
        }
      }))

    it.effect("the allowed fields only, as data in their own section", () =>
      Effect.gen(function*() {
        const { raw, system } = yield* askWith({
          customerData: ["firstName", "customFields.plan", "requestContext.page"]
        })
        expect(system).toContain(Prompts.customerDataSection({
          firstName: "Ana",
          "customFields.plan": "gold",
          "requestContext.page": "/checkout"
        }))
        for (const value of ["ana@example.com", "12345678Z", "tok-secret"]) expect(raw).not.toContain(value)
      }))

    it.effect("a wildcard takes every key of its object", () =>
      Effect.gen(function*() {
        const { system } = yield* askWith({ customerData: ["customFields.*"] })
        expect(system).toContain(Prompts.customerDataSection({ "customFields.plan": "gold", "customFields.nationalId": "12345678Z" }))
      }))

    it.effect("a path that names nothing Parley knows is a 422 at its entry", () =>
      Effect.gen(function*() {
        const { workspace } = yield* Effect.flatMap(Workspaces, (w) => w.create("Customer data")).pipe(Effect.orDie)
        const error = yield* Effect.flatMap(Integrations, (i) =>
          i.create(workspace.id, {
            name: "Customer data",
            integration: "api",
            webhook: { url: "https://receiver.example/hook", headers: {}, metadata: {} },
            supportedFeatures: {},
            channelsSettings: { customerData: ["firstName", "password", 7] }
          })).pipe(Effect.flip)
        expect(error._tag === "InvalidInput" ? error.problems.map((p) => p.path) : error).toEqual([
          ["channelsSettings", "customerData", 1],
          ["channelsSettings", "customerData", 2]
        ])
      }))
  })
})
