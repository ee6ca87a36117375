/**
 * Standing instructions for the AI (src/Ai/Instructions.ts): versions per scope, the newest in force, in
 * the model's system prompt and in the replies record; set and listed through the admin API.
 */
import { describe, expect, layer } from "@effect/vitest"
import * as SqlClient from "effect/sql/SqlClient"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Replies } from "../../src/Ai/GenerateReply.js"
import { InstructionsService } from "../../src/Ai/Instructions.js"
import * as Prompts from "../../src/Ai/Llm/Prompt.js"
import { Conversations } from "../../src/Conversations/Conversations.js"
import { Integrations } from "../../src/Integrations/Integrations.js"
import { Workspaces } from "../../src/Workspaces/Workspaces.js"
import { ADMIN_TOKEN, call, makeTenant, TestApp } from "../support/App.js"
import { incoming } from "../support/Incoming.js"
import { type LlmServer, makeLlmServer, systemPromptOf, turn } from "../support/LlmServers.js"
import { layerTest } from "../support/Services.js"

const services = Layer.mergeAll(Replies.layer, Conversations.layer, Integrations.layer, Workspaces.layer, InstructionsService.layer)

class Llm extends Context.Service<Llm, LlmServer>()("test/InstructionsLlm") {}

const WithModel = Layer.unwrap(
  Effect.map(makeLlmServer, (server) =>
    Layer.merge(
      layerTest(services, { AI_PROVIDER: "openai", AI_MODEL: "test-model", OPENAI_BASE_URL: server.baseUrl }),
      Layer.succeed(Llm, server)
    ))
)

let n = 0

describe("standing instructions in replies", () => {
  layer(WithModel, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("the newest version of the workspace's and the integration's are in the prompt and the record; \"\" clears", () =>
      Effect.gen(function*() {
        const llm = yield* Llm
        const instructions = yield* InstructionsService
        const { workspace } = yield* Effect.flatMap(Workspaces, (w) => w.create("Instructions"))
        const integration = yield* Effect.flatMap(Integrations, (i) =>
          i.create(workspace.id, {
            name: "Instructions",
            integration: "api",
            webhook: { url: "https://receiver.example/hook", headers: {}, metadata: {} },
            supportedFeatures: { typing: false },
            channelsSettings: {}
          }))
        yield* instructions.set(workspace.id, { text: "Always offer the returns form." })
        const latest = yield* instructions.set(workspace.id, { text: "Never promise refunds; offer the returns form." })
        const own = yield* instructions.set(workspace.id, {
          integrationId: integration.integrationId,
          text: "Sign every message as the Acme team."
        })
        const ask = (id: string) =>
          Effect.gen(function*() {
            const before = llm.requests().length
            llm.enqueue(turn("openai-chat", { text: "Happy to help." }))
            const { conversation, message } = yield* Effect.flatMap(Conversations, (c) =>
              c.ingest(integration, incoming(`ins-${++n}`, `ins-${n}-${id}`, "Can I get my money back?")))
            yield* Effect.flatMap(Replies, (r) => r.generate({ conversationId: conversation.id, messageId: message.id }))
            const sql = yield* SqlClient.SqlClient
            const [record] = yield* sql<{ readonly instructions: unknown }>`
              SELECT instructions FROM reply_metadata WHERE conversation_id = ${conversation.id}`
            return { system: systemPromptOf("openai-chat", llm.requests()[before]!), record: record!.instructions }
          })
        const first = yield* ask("a")
        expect(first.system).toContain(Prompts.instructionsSection([
          "Never promise refunds; offer the returns form.",
          "Sign every message as the Acme team."
        ]))
        expect(first.system).not.toContain("Always offer the returns form.")
        expect(first.record).toEqual([{ id: latest.id, scope: "workspace" }, { id: own.id, scope: "integration" }])

        yield* instructions.set(workspace.id, { integrationId: integration.integrationId, text: "" })
        const second = yield* ask("b")
        expect(second.system).toContain(Prompts.instructionsSection(["Never promise refunds; offer the returns form."]))
        expect(second.record).toEqual([{ id: latest.id, scope: "workspace" }])
        expect((yield* instructions.list(workspace.id)).map((v) => v.text)).toEqual([
          "",
          "Sign every message as the Acme team.",
          "Never promise refunds; offer the returns form.",
          "Always offer the returns form."
        ])
      }).pipe(Effect.orDie))
  })
})

describe("standing instructions through the admin API", () => {
  layer(TestApp())((it) => {
    it.effect("201 with the version; 422 over 2000 characters; 404 for another workspace's integration", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const other = yield* makeTenant()
        const path = `/admin/v1/workspaces/${tenant.workspaceId}/instructions`
        const created = yield* call("POST", path, { token: ADMIN_TOKEN, body: { text: "Never promise refunds." } })
        expect(created.status).toBe(201)
        expect(created.body).toMatchObject({ integrationId: null, text: "Never promise refunds." })
        const tooLong = yield* call("POST", path, { token: ADMIN_TOKEN, body: { text: "x".repeat(2001) } })
        expect(tooLong.status).toBe(422)
        expect(JSON.stringify(tooLong.body)).toContain("\"text\"")
        const foreign = yield* call("POST", path, {
          token: ADMIN_TOKEN,
          body: { text: "Hi", integrationId: other.integrationId }
        })
        expect(foreign.status).toBe(404)
        const listed = yield* call("GET", path, { token: ADMIN_TOKEN })
        expect(listed.status).toBe(200)
        expect(listed.body).toMatchObject([{ text: "Never promise refunds." }])
        // An integrator's token cannot set them.
        const denied = yield* call("POST", path, { token: tenant.token, body: { text: "Promise everything." } })
        expect(denied.status).toBe(401)
      }))
  })
})
