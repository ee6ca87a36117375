/**
 * The OpenAPI document's `webhooks` section (OpenAPI 3.1), as served at /openapi.json: one operation per
 * event kind, whose JSON Schema (checked with a JSON Schema 2020-12 validator, as a receiver generated
 * from the document would) accepts what Parley really delivers, and each kind's bodies only.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Ajv2020 } from "ajv/dist/2020.js"
import * as Arbitrary from "effect/Arbitrary"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { EventKind } from "../../src/Domain/Delivery.js"
import { WebhookEvent, WebhookEvents } from "../../src/Domain/WebhookEvent.js"
import { ADMIN_TOKEN, call, makeTenant, TestAppWithWorkers } from "../support/App.js"
import { eventually } from "../support/Eventually.js"
import { chatCompletionStream, type LlmServer, makeLlmServer, turn } from "../support/LlmServers.js"
import { makeReceiver, type Received } from "../support/Receiver.js"

const DOC = "https://parley.test/openapi.json"

const Parameter = Schema.Struct({
  name: Schema.String,
  in: Schema.Literal("header"),
  required: Schema.Boolean,
  schema: Schema.Record(Schema.String, Schema.Unknown)
})

/** The parts of the document these tests read, decoded (a document of another shape fails here). */
const Document = Schema.Struct({
  openapi: Schema.Literal("3.1.0"),
  components: Schema.Struct({ schemas: Schema.Record(Schema.String, Schema.Unknown) }),
  webhooks: Schema.Record(Schema.String, Schema.Struct({
      post: Schema.Struct({
        operationId: Schema.String,
        summary: Schema.String,
        description: Schema.String,
        parameters: Schema.Array(Parameter),
        requestBody: Schema.Struct({
          required: Schema.Literal(true),
          content: Schema.Struct({ "application/json": Schema.Struct({ schema: Schema.Struct({ $ref: Schema.String }) }) })
        }),
        responses: Schema.Record(Schema.String, Schema.Struct({ description: Schema.String }))
      })
    }))
})
type Document = typeof Document.Type

const served = call("GET", "/openapi.json").pipe(
  Effect.tap((reply) => Effect.sync(() => expect(reply.status).toBe(200))),
  Effect.flatMap((reply) => Schema.decodeUnknownEffect(Document)(reply.body)),
  Effect.orDie
)

/** A validator of the document's own schemas: `check(ref)(value)` is true or the list of errors. */
const validatorOf = (document: Document) => {
  const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true })
  ajv.addSchema({ $id: DOC, components: document.components }, DOC)
  const compiled = new Map<string, ReturnType<typeof ajv.compile>>()
  return (ref: string) => {
    const validate = compiled.get(ref) ?? ajv.compile({ $ref: `${DOC}${ref}` })
    compiled.set(ref, validate)
    return (value: unknown): true | ReadonlyArray<string> =>
      validate(value) ? true : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message ?? ""}`)
  }
}

const bodyRef = (document: Document, kind: string) => {
  const operation = document.webhooks[kind]
  if (operation === undefined) throw new Error(`No webhook operation for ${kind}`)
  return operation.post.requestBody.content["application/json"].schema.$ref
}

const parse = (request: Received): unknown => JSON.parse(request.body)

const kindOf = (body: unknown) => Schema.decodeUnknownSync(Schema.Struct({ event: EventKind }))(body).event

class Llm extends Context.Service<Llm, LlmServer>()("test/Llm") {}

/** Parley answering with a model on a local chat-completions server (only its HTTP is doubled). */
const WithModel = Layer.unwrap(
  Effect.map(makeLlmServer, (server) =>
    Layer.merge(
      TestAppWithWorkers({
        AI_PROVIDER: "openai",
        AI_MODEL: "test-model",
        OPENAI_BASE_URL: server.baseUrl,
        OPENAI_API_KEY: "sk-test",
        OPENAI_API: "chat"
      }),
      Layer.succeed(Llm, server)
    ))
)

const customer = "6f1c1f8e-1d7e-4c8e-9a0a-1b2c3d4e5f60"

describe("OpenAPI webhooks", () => {
  layer(TestAppWithWorkers(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("/openapi.json has a webhooks operation for every event kind, each body a component envelope of that kind", () =>
      Effect.gen(function*() {
        const document = yield* served
        expect(Object.keys(document.webhooks).sort()).toEqual([...EventKind.literals].sort())
        expect(EventKind.literals).toEqual([
          "send_messages",
          "typing",
          "escalate",
          "close_conversation",
          "conversation_summary",
          "conversation_title",
          "send_csat",
          "message_delta"
        ])
        for (const kind of EventKind.literals) {
          const { post } = document.webhooks[kind]!
          expect(post.operationId).toBe(`webhook.${kind}`)
          expect(post.description.length, kind).toBeGreaterThan(40)
          const ref = bodyRef(document, kind)
          expect(ref).toMatch(/^#\/components\/schemas\/[A-Za-z]+Event$/)
          const component = document.components.schemas[ref.split("/").pop() ?? ""]
          expect(component, kind).toMatchObject({
            type: "object",
            required: ["event", "eventId", "integrationId", "conversationId", "customerId", "createdAt", "metadata", "data"],
            properties: { event: { enum: [kind] } }
          })
          expect(post.parameters.filter((p) => p.required).map((p) => p.name)).toEqual([
            "x-parley-webhook-timestamp",
            "x-parley-webhook-signature",
            "webhook-id",
            "webhook-timestamp",
            "webhook-signature"
          ])
          expect(Object.keys(post.responses).sort()).toEqual(["2XX", "410", "default"])
        }
      }))

    it.effect("a send_messages body and headers Parley really delivered validate against the document; altered ones do not", () =>
      Effect.gen(function*() {
        const document = yield* served
        const check = validatorOf(document)
        const receiver = yield* makeReceiver()
        const tenant = yield* makeTenant({ webhookUrl: receiver.url })
        const article = yield* call("POST", `/admin/v1/workspaces/${tenant.workspaceId}/articles`, {
          token: ADMIN_TOKEN,
          body: {
            title: "Shipping times",
            url: "https://help.example.com/shipping",
            body: "Standard shipping to Canada takes 3 to 5 business days. Express shipping takes 1 to 2 business days."
          }
        })
        expect(article.status).toBe(201)
        const asked = yield* call("POST", `/v1/webhooks/${tenant.integrationId}/message-received`, {
          token: tenant.token,
          body: {
            id: "q-1",
            role: "human",
            customerId: "6f1c1f8e-1d7e-4c8e-9a0a-1b2c3d4e5f60",
            conversationId: "order-1",
            text: "How long does shipping to Canada take?"
          }
        })
        expect(asked.status).toBe(200)
        const received = yield* receiver.waitFor(1)
        const headers = new Ajv2020({ strict: false, validateFormats: false })
        // Every delivered body, whatever its kind, validates against its kind's operation.
        for (const request of received) {
          const body = parse(request)
          const kind = kindOf(body)
          expect(check(bodyRef(document, kind))(body), request.body).toBe(true)
          for (const parameter of document.webhooks[kind]!.post.parameters) {
            const value = request.headers[parameter.name]
            if (value === undefined) {
              expect(parameter.required, parameter.name).toBe(false)
              continue
            }
            expect(headers.validate(parameter.schema, value), `${parameter.name}: ${value}`).toBe(true)
          }
        }
        const reply = received.find((request) => request.body.includes("\"send_messages\""))
        expect(reply).toBeDefined()
        const body = parse(reply!)
        const sendMessages = check(bodyRef(document, "send_messages"))
        expect(sendMessages(body)).toBe(true)
        expect(body).toMatchObject({ event: "send_messages", conversationId: "order-1" })

        // The validator can fail: each alteration of the real body is refused.
        const record = Schema.decodeUnknownSync(Schema.Record(Schema.String, Schema.Unknown))(body)
        const altered: ReadonlyArray<readonly [string, unknown]> = [
          ["another kind", { ...record, event: "typing" }],
          ["no eventId", Object.fromEntries(Object.entries(record).filter(([key]) => key !== "eventId"))],
          ["an extra field", { ...record, extra: 1 }],
          ["messages not a list", { ...record, data: { messages: "hello" } }],
          ["a message without text", { ...record, data: { messages: [{ id: "x" }] } }]
        ]
        for (const [what, value] of altered) expect(sendMessages(value), what).not.toBe(true)
        expect(check(bodyRef(document, "typing"))(body)).not.toBe(true)
      }))

    it.effect("every kind's schema in the document accepts what Parley's schema encodes for that kind, and refuses other kinds", () =>
      Effect.gen(function*() {
        const document = yield* served
        const check = validatorOf(document)
        // 30 of each kind: Effect 4's generator of the whole union draws few send_messages (3 in 200).
        const samples: Array<WebhookEvent> = []
        for (const kind of EventKind.literals) {
          samples.push(...yield* Arbitrary.sampleEffect(Arbitrary.schema(WebhookEvents[kind]), { count: 30, seed: 42 }).pipe(Effect.orDie))
        }
        const seen = new Map<string, number>()
        for (const sample of samples) {
          const kind = sample.event
          seen.set(kind, (seen.get(kind) ?? 0) + 1)
          // As a receiver gets it: JSON text, parsed.
          const encoded: unknown = JSON.parse(JSON.stringify(Schema.encodeSync(WebhookEvent)(sample)))
          expect(check(bodyRef(document, kind))(encoded), `${kind}: ${JSON.stringify(encoded)}`).toBe(true)
          for (const other of EventKind.literals.filter((k) => k !== kind)) {
            expect(check(bodyRef(document, other))(encoded), `${kind} as ${other}`).not.toBe(true)
          }
        }
        // Every kind was tried, several times.
        for (const kind of EventKind.literals) expect(seen.get(kind) ?? 0, kind).toBeGreaterThan(10)
      }))
  })
})

describe("OpenAPI webhooks: every kind really delivered", () => {
  layer(WithModel, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("typing, send_messages, conversation_title, close_conversation, conversation_summary, send_csat, escalate and message_delta bodies all validate against the document", () =>
      Effect.gen(function*() {
        const document = yield* served
        const check = validatorOf(document)
        const llm = yield* Llm
        const receiver = yield* makeReceiver()
        const tenant = yield* makeTenant({
          webhookUrl: receiver.url,
          supportedFeatures: {
            messageInEndConversation: true,
            csat: true,
            conversationSummary: true,
            conversationTitle: true,
            streaming: true
          }
        })
        const ask = (id: string, conversationId: string, text: string) =>
          call("POST", `/v1/webhooks/${tenant.integrationId}/message-received`, {
            token: tenant.token,
            body: { id, role: "human", customerId: customer, conversationId, text }
          }).pipe(Effect.tap((reply) => Effect.sync(() => expect(reply.status).toBe(200))))

        // A close: the close tool, then the title and the summary (plain text calls, in either order).
        llm.enqueue(
          turn("openai-chat", {
            toolCalls: [{ name: "close_conversation", args: { summary: "Answered; satisfied.", message: "Goodbye!" } }]
          }),
          turn("openai-chat", { text: "Shipping question" }),
          turn("openai-chat", { text: "Shipping question" })
        )
        yield* ask("c-1", "closed", "Thanks, that solved it!")
        yield* receiver.waitFor(6)
        // A hand-over.
        llm.enqueue(turn("openai-chat", {
          toolCalls: [{ name: "escalate_to_human", args: { reason: "Asked for a person.", summary: "Wants a human.", message: "One moment." } }]
        }), turn("openai-chat", { text: "Wants a human." }), turn("openai-chat", { text: "Wants a human." }))
        yield* ask("e-1", "handover", "Let me talk to a human")
        // The hand-over: typing, its title, escalate and the summary.
        yield* receiver.waitFor(10)
        // A streamed answer (its message_delta, then the message) with the conversation's title. The stream
        // ends once the receiver has had the delta: a delta not yet attempted when the message is ready
        // would be superseded by it.
        const deltaReceived = Effect.runPromise(
          eventually(Effect.sync(() => receiver.received()), (all) => all.some((r) => kindOf(parse(r)) === "message_delta"))
        )
        llm.enqueue(
          chatCompletionStream({ text: "Standard shipping takes 3 to 5 business days." }, { holdFinish: deltaReceived }),
          turn("openai-chat", { text: "Shipping time" })
        )
        yield* ask("s-1", "streamed", "How long does shipping take?")
        const received = yield* receiver.waitFor(14)

        const kinds = new Set<string>()
        for (const request of received) {
          const body = parse(request)
          const kind = kindOf(body)
          kinds.add(kind)
          expect(check(bodyRef(document, kind))(body), request.body).toBe(true)
        }
        expect([...kinds].sort()).toEqual([...EventKind.literals].sort())
      }))
  })
})
