/**
 * Per-workspace AI settings in the reply path, through the real app and workers: a workspace with a
 * model of its own is answered by that model with its own key; a workspace without one by the global
 * default with the global key; a workspace that chose `embedded` by the embedded responder. Each
 * reply's tokens land in that workspace's `ai_usage`. Only the provider's HTTP is doubled (a local
 * chat-completions server that records every request's credential and model).
 */
import { describe, expect, layer } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { AiUsageReport } from "../../src/Domain/AiSettings.js"
import { SendMessagesData } from "../../src/Domain/EventData.js"
import { ADMIN_TOKEN, bodyAs, call, makeTenant, type Tenant, TestAppWithWorkers } from "../support/App.js"
import { jobsSettled } from "../support/Eventually.js"
import { chatBody, credentialOf, type LlmServer, makeLlmServer, turn } from "../support/LlmServers.js"
import { Envelope, makeReceiver, webhookBody } from "../support/Receiver.js"

class Llm extends Context.Service<Llm, LlmServer>()("test/Llm") {}

const GLOBAL_KEY = "sk-global-operator-0000000000000000"
const WORKSPACE_KEY = "sk-workspace-one-1111111111111111"

const App = Layer.unwrap(
  Effect.map(makeLlmServer, (server) =>
    Layer.merge(
      TestAppWithWorkers({
        AI_PROVIDER: "openai",
        AI_MODEL: "global-model",
        OPENAI_BASE_URL: server.baseUrl,
        OPENAI_API_KEY: GLOBAL_KEY,
        OPENAI_API: "chat",
        AI_RETRY_BUDGET: "2 seconds"
      }),
      Layer.succeed(Llm, server)
    ))
)

const sendOf = webhookBody(Envelope(Schema.Literal("send_messages"), SendMessagesData))

const ask = (tenant: Tenant, id: string, text: string) =>
  call("POST", `/v1/webhooks/${tenant.integrationId}/message-received`, {
    token: tenant.token,
    body: { id, role: "human", customerId: "6f1c1f8e-1d7e-4c8e-9a0a-1b2c3d4e5f60", conversationId: `c-${id}`, text }
  }).pipe(Effect.tap((reply) => Effect.sync(() => expect(reply.status).toBe(200))))

const usageOf = (tenant: Tenant) =>
  call("GET", `/admin/v1/workspaces/${tenant.workspaceId}/ai/usage?days=1`, { token: ADMIN_TOKEN }).pipe(
    Effect.flatMap(bodyAs(AiUsageReport)),
    Effect.map((reply) => reply.body)
  )

describe("per-workspace models in replies", () => {
  layer(App, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("each workspace is answered by its own model with its own key, or by the global one; tokens per workspace", () =>
      Effect.gen(function*() {
        const llm = yield* Llm
        const receiver = yield* makeReceiver()
        // typing off: only the reply is delivered, one webhook per question.
        const features = { typing: false }
        const own = yield* makeTenant({ webhookUrl: receiver.url, supportedFeatures: features })
        const plain = yield* makeTenant({ webhookUrl: receiver.url, supportedFeatures: features })
        const offline = yield* makeTenant({ webhookUrl: receiver.url, supportedFeatures: features })
        const set = yield* call("PUT", `/admin/v1/workspaces/${own.workspaceId}/ai`, {
          token: ADMIN_TOKEN,
          body: { provider: "openai", model: "workspace-model", baseUrl: llm.baseUrl, openAiApi: "chat", apiKey: WORKSPACE_KEY }
        })
        expect(set.status).toBe(200)
        expect((yield* call("PUT", `/admin/v1/workspaces/${offline.workspaceId}/ai`, {
          token: ADMIN_TOKEN,
          body: { provider: "embedded" }
        })).status).toBe(200)

        llm.enqueue(turn("openai-chat", { text: "Hello from the workspace's model.", usage: { input: 300, output: 40 } }))
        yield* ask(own, "w-1", "Hi there")
        const [first] = yield* receiver.waitFor(1)
        expect(sendOf(first!).data.messages[0]!.text).toBe("Hello from the workspace's model.")

        llm.enqueue(turn("openai-chat", { text: "Hello from the global model.", usage: { input: 200, output: 10 } }))
        yield* ask(plain, "g-1", "Hi there")
        const second = (yield* receiver.waitFor(2))[1]
        expect(sendOf(second!).data.messages[0]!.text).toBe("Hello from the global model.")

        const requests = llm.requests()
        expect(requests).toHaveLength(2)
        expect(credentialOf("openai-chat", requests[0]!)).toBe(`Bearer ${WORKSPACE_KEY}`)
        expect(chatBody(requests[0]!).model).toBe("workspace-model")
        expect(credentialOf("openai-chat", requests[1]!)).toBe(`Bearer ${GLOBAL_KEY}`)
        expect(chatBody(requests[1]!).model).toBe("global-model")
        for (const request of requests) expect(request.raw).not.toContain("sk-")

        // The embedded responder answers the workspace that chose it: no model request at all.
        yield* ask(offline, "e-1", "Hi there")
        yield* receiver.waitFor(3)
        yield* jobsSettled(offline)
        expect(llm.requests()).toHaveLength(2)

        const ownUsage = yield* usageOf(own)
        expect(ownUsage.perDay).toEqual([{
          day: ownUsage.to,
          provider: "openai",
          model: "workspace-model",
          inputTokens: 300,
          outputTokens: 40,
          requests: 1
        }])
        const plainUsage = yield* usageOf(plain)
        expect(plainUsage.perDay.map((row) => [row.model, row.inputTokens, row.outputTokens, row.requests])).toEqual([
          ["global-model", 200, 10, 1]
        ])
        expect((yield* usageOf(offline)).perDay).toEqual([])
      }))
  })
})
