/**
 * The inactivity timers end to end, as an integrator tries them: short timer settings, a real worker
 * pool, a receiver on loopback. The customer asks, the AI answers, then stays unanswered: the
 * check-in prompt arrives, then the goodbye, the close for inactivity and the CSAT request, each once.
 * The timers run on the database's clock (they are durable jobs), so this test waits for them on the
 * real clock; what each step does is tested on its own in Timers.test.ts.
 */
import { describe, expect, layer } from "@effect/vitest"
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Prompts from "../../src/Ai/Llm/Prompt.js"
import { MessageReceived } from "../../src/Domain/Conversation.js"
import { CloseConversationData } from "../../src/Domain/EventData.js"
import { ADMIN_TOKEN, bodyAs, call, makeTenant, TestAppWithWorkers, ValidationBody } from "../support/App.js"
import { jobsSettled } from "../support/Eventually.js"
import { AnyEvent, Envelope, makeReceiver, SendMessages, webhookBody } from "../support/Receiver.js"

const eventOf = webhookBody(AnyEvent)
const sendOf = webhookBody(SendMessages)
const closeOf = webhookBody(Envelope(Schema.Literal("close_conversation"), CloseConversationData))

describe("inactivity timers, live", () => {
  layer(TestAppWithWorkers(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("answer, then the check-in after 1 s of silence, then goodbye, close (inactivity) and CSAT after 3 s", () =>
      Effect.gen(function*() {
        const receiver = yield* makeReceiver()
        const tenant = yield* makeTenant({
          webhookUrl: receiver.url,
          supportedFeatures: {
            inactivityPrompt: true,
            conversationTimeout: true,
            messageInEndConversation: true,
            csat: true,
            escalation: false
          },
          channelsSettings: { timers: { inactivityPromptSeconds: 1, conversationTimeoutSeconds: 3 } }
        })
        const asked = yield* call("POST", `/v1/webhooks/${tenant.integrationId}/message-received`, {
          token: tenant.token,
          body: { id: "q-1", role: "human", customerId: "6f1c1f8e-1d7e-4c8e-9a0a-1b2c3d4e5f60", conversationId: "silent-1", text: "Hello?" }
        }).pipe(Effect.flatMap(bodyAs(MessageReceived)))
        expect(asked.status).toBe(200)

        const received = yield* receiver.waitFor(5, 30_000)
        yield* jobsSettled(tenant)
        expect(receiver.received().map((r) => eventOf(r).event)).toEqual([
          "send_messages",
          "send_messages",
          "send_messages",
          "close_conversation",
          "send_csat"
        ])
        expect(sendOf(received[1]!).data.messages[0]!.text).toBe(Prompts.INACTIVITY_TEXT.prompt)
        expect(sendOf(received[2]!).data.messages[0]!.text).toBe(Prompts.INACTIVITY_TEXT.goodbye)
        expect(closeOf(received[3]!).data.reason).toBe("inactivity")

        const sql = yield* SqlClient.SqlClient
        const history = yield* sql<{ readonly toStatus: string; readonly cause: string }>`
          SELECT to_status, cause FROM conversation_status_changes WHERE conversation_id = ${asked.body.conversation.id}
          ORDER BY id`
        expect(history.at(-1)).toEqual({ toStatus: "closed", cause: "inactivity_timeout" })
      }))

    it.effect("a timer setting out of range is a 422 located at the field, and the settings stay as they were", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant({
          channelsSettings: { timers: { inactivityPromptSeconds: 120 } }
        })
        const reply = yield* call("POST", `/v1/integration/${tenant.integrationId}/update-settings`, {
          token: tenant.token,
          body: { channelsSettings: { timers: { inactivityPromptSeconds: 120, conversationTimeoutSeconds: 60 } } }
        })
        expect(reply.status).toBe(422)
        const body = yield* bodyAs(ValidationBody)(reply)
        expect(body.body.detail).toMatchObject([
          { loc: ["body", "channelsSettings", "timers", "inactivityPromptSeconds"], type: "timer_order" }
        ])
        const tooLong = yield* call("POST", `/v1/integration/${tenant.integrationId}/update-settings`, {
          token: tenant.token,
          body: { channelsSettings: { timers: { conversationTimeoutSeconds: 700_000 } } }
        })
        expect(tooLong.status).toBe(422)
        const stored = yield* call("GET", `/admin/v1/workspaces/${tenant.workspaceId}/integrations`, { token: ADMIN_TOKEN })
        expect(JSON.stringify(stored.body)).toContain("\"inactivityPromptSeconds\":120")
        expect(JSON.stringify(stored.body)).not.toContain("700000")
      }))
  })
})
