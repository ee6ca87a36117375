/**
 * The `streaming` integration flag through the real app: a customer message posted to message-received,
 * the `generate_reply` job on the real workers, the agent streaming from a local chat-completions server
 * (test/support/LlmServers.ts), and every `message_delta` and the final `send_messages` signed and
 * delivered to a receiver on loopback. The stream is paced by the receiver: each chunk is written only
 * once the delta of the one before has arrived, and `DELTA_INTERVAL_MS` later, so which deltas exist
 * and which are delivered does not depend on how fast the machine is.
 */
import { describe, expect, layer } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as SqlClient from "effect/sql/SqlClient"
import * as http from "node:http"
import { DELTA_INTERVAL_MS } from "../../src/Ai/GenerateReply.js"
import { MessageReceived } from "../../src/Domain/Conversation.js"
import { MessageDeltaData, SendMessagesData } from "../../src/Domain/EventData.js"
import { bodyAs, call, makeTenant, type Tenant, TestAppWithWorkers } from "../support/App.js"
import { eventually, jobsSettled } from "../support/Eventually.js"
import {
  chatCompletionStreamFrames,
  type Frame,
  type LlmServer,
  makeLlmServer,
  type RecordedRequest,
  type Scripted,
  turn
} from "../support/LlmServers.js"
import { AnyEvent, Envelope, makeReceiver, type Received, webhookBody } from "../support/Receiver.js"

class Llm extends Context.Service<Llm, LlmServer>()("test/Streaming/Llm") {}

/** Parley with its workers and a model on a local chat-completions server. */
const AppWithModel = Layer.unwrap(
  Effect.map(makeLlmServer, (server) =>
    Layer.merge(
      TestAppWithWorkers({
        AI_PROVIDER: "openai",
        OPENAI_BASE_URL: server.baseUrl,
        OPENAI_API_KEY: "sk-test",
        OPENAI_API: "chat",
        AI_MODEL: "test-model",
        AI_TIMEOUT: "20 seconds",
        // A lease a busy test machine keeps: a run abandoned by a late heartbeat would send typing twice.
        JOB_LEASE: "3 seconds",
        // A delivery held by the test's receiver (the superseded delta) must not time out meanwhile.
        DELIVERY_TIMEOUT: "20 seconds"
      }),
      Layer.succeed(Llm, server)
    ))
)

const customerId = "6f1c1f8e-1d7e-4c8e-9a0a-1b2c3d4e5f60"

const CHUNKS = ["Standard shipping to Canada ", "takes 3 to 5 ", "business days."]
const ANSWER = CHUNKS.join("")

const ask = (tenant: Tenant, message: { readonly id: string; readonly conversationId: string; readonly text: string }) =>
  call("POST", `/v1/webhooks/${tenant.integrationId}/message-received`, {
    token: tenant.token,
    body: { role: "human", customerId, ...message }
  }).pipe(
    Effect.tap((reply) => Effect.sync(() => expect(reply.status, JSON.stringify(reply.body)).toBe(200))),
    Effect.flatMap(bodyAs(MessageReceived)),
    Effect.map((reply) => reply.body)
  )

const kindOf = (request: Received) => webhookBody(AnyEvent)(request).event
const deltaOf = webhookBody(Envelope(Schema.Literal("message_delta"), MessageDeltaData))
const sendOf = webhookBody(Envelope(Schema.Literal("send_messages"), SendMessagesData))

const deltasIn = (received: ReadonlyArray<Received>) =>
  received.filter((request) => kindOf(request) === "message_delta").map((request) => deltaOf(request).data)

/** A promise-like that runs `effect` only when awaited: a stream frame waits on it once it gets there. */
const when = <A>(effect: Effect.Effect<A>): PromiseLike<A> => ({
  then: (onFulfilled, onRejected) => Effect.runPromise(effect).then(onFulfilled, onRejected)
})

/** Settles once `count` `message_delta` requests have reached the receiver (their answers aside). */
const deltasReceived = (received: () => ReadonlyArray<Received>, count: number) =>
  when(eventually(Effect.sync(received), (requests) => deltasIn(requests).length >= count))

/**
 * A streamed chat completion of `chunks` (one text delta each), `DELTA_INTERVAL_MS` + 50 ms between
 * frames. Before the chunk after the n-th (and before the finishing frames, n = all), the stream waits
 * on `gate(n)` when it gives a promise: with a gate on "n deltas received", every chunk makes a delta
 * of its own, since it is read more than `DELTA_INTERVAL_MS` after the delta before was emitted.
 */
const pacedStream = (
  chunks: ReadonlyArray<string>,
  gate: (deltas: number) => PromiseLike<unknown> | undefined
): Scripted => ({
  _tag: "Stream",
  delayMs: DELTA_INTERVAL_MS + 50,
  frames: (request) => {
    const { body, finishing } = chatCompletionStreamFrames(request, { text: chunks.join("") }, chunks)
    const [opening, ...pieces] = body
    const wait = (deltas: number): Array<Frame> => {
      const until = gate(deltas)
      return until === undefined ? [] : [{ _tag: "Wait", until }]
    }
    return [
      ...(opening === undefined ? [] : [opening]),
      ...pieces.flatMap((piece, index) => index === 0 ? [piece] : [...wait(index), piece]),
      ...wait(pieces.length),
      ...finishing
    ]
  }
})

const StreamFields = Schema.Struct({
  stream: Schema.Boolean,
  stream_options: Schema.Struct({ include_usage: Schema.Boolean })
})

/** The chat-completion requests made since `from` (an index into the server's log). */
const requestsSince = (llm: LlmServer, from: number): ReadonlyArray<RecordedRequest> => llm.requests().slice(from)

interface EventRow {
  readonly kind: string
  readonly status: string
  readonly attempts: number
  readonly lastError: string | null
  /** A `message_delta`'s sequence; null for other kinds. */
  readonly sequence: number | null
  /** Rows in `delivery_attempts`. */
  readonly recordedAttempts: number
}

/** The conversation's events in the order they were emitted, with their delivery state. */
const eventsOf = (conversationId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<EventRow>`
      SELECT e.kind, e.status, e.attempts, e.last_error,
             CASE WHEN e.kind = 'message_delta' THEN (e.body::jsonb -> 'data' ->> 'sequence')::int END AS sequence,
             (SELECT count(*)::int FROM delivery_attempts a WHERE a.event_id = e.id) AS recorded_attempts
      FROM events e WHERE e.conversation_id = ${conversationId}
      ORDER BY e.created_at, e.seq`).pipe(Effect.orDie)

/** Whether the message `id` is stored (the final message is stored with the id its deltas announced). */
const messageStored = (id: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM messages WHERE id = ${id}`)
    .pipe(Effect.map((rows) => (rows[0]?.n ?? 0) > 0), Effect.orDie)

/**
 * A webhook receiver that answers 200 to each request once `hold(request)` settles (at once when it
 * gives nothing): what keeps a delivery in flight for as long as a test needs it to be.
 */
const makeHoldingReceiver = (
  hold: (request: Received) => PromiseLike<unknown> | undefined
): Effect.Effect<{ readonly url: string; readonly received: () => ReadonlyArray<Received> }, never, Scope.Scope> =>
  Effect.gen(function*() {
    const requests: Array<Received> = []
    const server = yield* Effect.acquireRelease(
      Effect.callback<http.Server>((resume) => {
        const server = http.createServer((req, res) => {
          const chunks: Array<Buffer> = []
          req.on("data", (chunk: Buffer) => chunks.push(chunk))
          req.on("end", () => {
            const headers: Record<string, string> = {}
            for (const [name, value] of Object.entries(req.headers)) {
              if (typeof value === "string") headers[name] = value
            }
            const received: Received = { headers, body: Buffer.concat(chunks).toString("utf8"), at: Date.now() }
            requests.push(received)
            const answer = () => {
              res.writeHead(200, { "content-type": "application/json" })
              res.end("{}")
            }
            const held = hold(received)
            if (held === undefined) answer()
            else held.then(answer, answer)
          })
        })
        server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
      }),
      (server) =>
        Effect.callback<void>((resume) => {
          server.closeAllConnections()
          server.close(() => resume(Effect.void))
        })
    )
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    return { url: `http://127.0.0.1:${port}/webhook`, received: () => [...requests] }
  })

describe("streaming: message_delta events while a model writes its answer, through the app", () => {
  layer(AppWithModel, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("typing, then a delta per chunk (same message id, sequence from 1, growing prefixes of the text), then the message; the model is asked to stream", () =>
      Effect.gen(function*() {
        const llm = yield* Llm
        const receiver = yield* makeReceiver()
        const tenant = yield* makeTenant({ webhookUrl: receiver.url, supportedFeatures: { streaming: true } })
        const from = llm.requests().length
        llm.enqueue(pacedStream(CHUNKS, (deltas) => deltasReceived(receiver.received, deltas)))
        const { conversation } = yield* ask(tenant, { id: "s-1", conversationId: "streamed", text: "How long does shipping take?" })
        const received = yield* receiver.waitFor(CHUNKS.length + 2)
        yield* jobsSettled(tenant)

        expect(receiver.received().map(kindOf)).toEqual(["typing", ...CHUNKS.map(() => "message_delta"), "send_messages"])
        const [final] = sendOf(received[received.length - 1]!).data.messages
        expect(final!.text).toBe(ANSWER)
        const deltas = deltasIn(received)
        expect(deltas.map((delta) => delta.sequence)).toEqual(CHUNKS.map((_, index) => index + 1))
        for (const delta of deltas) {
          expect(delta.messageId).toBe(final!.id)
          expect(final!.text.startsWith(delta.text), delta.text).toBe(true)
        }
        // Each the text so far, not an increment: it grows, and the last is not longer than the message.
        expect(deltas.map((delta) => delta.text)).toEqual(CHUNKS.map((_, index) => CHUNKS.slice(0, index + 1).join("")))
        expect(deltas[deltas.length - 1]!.text.length).toBeLessThanOrEqual(final!.text.length)

        const requests = requestsSince(llm, from)
        expect(requests).toHaveLength(1)
        expect(Schema.decodeUnknownSync(StreamFields)(requests[0]!.body)).toEqual({
          stream: true,
          stream_options: { include_usage: true }
        })
        expect((yield* eventsOf(conversation.id)).map((event) => [event.kind, event.status])).toEqual([
          ["typing", "delivered"],
          ...CHUNKS.map(() => ["message_delta", "delivered"]),
          ["send_messages", "delivered"]
        ])
      }))

    it.effect("without the flag: the model is not asked to stream and no message_delta is emitted", () =>
      Effect.gen(function*() {
        const llm = yield* Llm
        const receiver = yield* makeReceiver()
        const tenant = yield* makeTenant({ webhookUrl: receiver.url })
        const from = llm.requests().length
        llm.enqueue(turn("openai-chat", { text: ANSWER }))
        const { conversation } = yield* ask(tenant, { id: "p-1", conversationId: "plain", text: "How long does shipping take?" })
        const received = yield* receiver.waitFor(2)
        yield* jobsSettled(tenant)

        expect(receiver.received().map(kindOf)).toEqual(["typing", "send_messages"])
        expect(sendOf(received[1]!).data.messages[0]!.text).toBe(ANSWER)
        const requests = requestsSince(llm, from)
        expect(requests).toHaveLength(1)
        expect(requests[0]!.body).not.toHaveProperty("stream")
        expect(requests[0]!.body).not.toHaveProperty("stream_options")
        expect((yield* eventsOf(conversation.id)).map((event) => event.kind)).toEqual(["typing", "send_messages"])
      }))

    it.effect("with the verifier on too: the draft is not streamed (it is shown only once checked), then verified and sent", () =>
      Effect.gen(function*() {
        const llm = yield* Llm
        const receiver = yield* makeReceiver()
        const tenant = yield* makeTenant({ webhookUrl: receiver.url, supportedFeatures: { streaming: true, verifier: true } })
        const from = llm.requests().length
        llm.enqueue(
          turn("openai-chat", { text: ANSWER }),
          turn("openai-chat", { text: JSON.stringify({ supported: true, unsupportedClaims: [], resolved: null }) })
        )
        const { conversation } = yield* ask(tenant, { id: "v-1", conversationId: "verified", text: "How long does shipping take?" })
        const received = yield* receiver.waitFor(2)
        yield* jobsSettled(tenant)

        expect(receiver.received().map(kindOf)).toEqual(["typing", "send_messages"])
        expect(sendOf(received[1]!).data.messages[0]!.text).toBe(ANSWER)
        // The draft, then the verifier's check: neither streamed.
        const requests = requestsSince(llm, from)
        expect(requests).toHaveLength(2)
        for (const request of requests) expect(request.body).not.toHaveProperty("stream")
        expect(llm.pending()).toBe(0)
        expect((yield* eventsOf(conversation.id)).map((event) => event.kind)).toEqual(["typing", "send_messages"])
      }))

    it.effect("a receiver that fails every delta: each is attempted once and given up, and the message is still delivered", () =>
      Effect.gen(function*() {
        const llm = yield* Llm
        const receiver = yield* makeReceiver((request) => ({ status: kindOf(request) === "message_delta" ? 500 : 200 }))
        const tenant = yield* makeTenant({ webhookUrl: receiver.url, supportedFeatures: { streaming: true } })
        llm.enqueue(pacedStream(CHUNKS, (deltas) => deltasReceived(receiver.received, deltas)))
        const { conversation } = yield* ask(tenant, { id: "f-1", conversationId: "failing", text: "How long does shipping take?" })
        const received = yield* receiver.waitFor(CHUNKS.length + 2)
        yield* jobsSettled(tenant)

        // Each delta reached the receiver once (never again), and the order went on past them.
        expect(receiver.received().map(kindOf)).toEqual(["typing", ...CHUNKS.map(() => "message_delta"), "send_messages"])
        expect(deltasIn(received).map((delta) => delta.sequence)).toEqual([1, 2, 3])
        expect(sendOf(received[received.length - 1]!).data.messages[0]!.text).toBe(ANSWER)

        const events = yield* eventsOf(conversation.id)
        expect(events.map((event) => event.kind)).toEqual(["typing", ...CHUNKS.map(() => "message_delta"), "send_messages"])
        const deltas = events.filter((event) => event.kind === "message_delta")
        expect(deltas.map((event) => event.sequence)).toEqual([1, 2, 3])
        for (const event of deltas) {
          expect(event).toMatchObject({ status: "dead", attempts: 1, recordedAttempts: 1 })
          expect(event.lastError).toContain("not retried")
        }
        expect(events.find((event) => event.kind === "send_messages")).toMatchObject({
          status: "delivered",
          attempts: 1,
          lastError: null
        })
      }))

    it.effect("a delta not yet attempted when the message is stored is given up: superseded, never sent, and the message goes next", () =>
      Effect.gen(function*() {
        const llm = yield* Llm
        // The first delta's answer is held until the final message is stored: the second delta, queued
        // behind it in the conversation's order, is still waiting for its first attempt then.
        const sql = yield* SqlClient.SqlClient
        const receiver = yield* makeHoldingReceiver((request) => {
          if (kindOf(request) !== "message_delta") return undefined
          const delta = deltaOf(request).data
          return delta.sequence === 1
            ? when(eventually(messageStored(delta.messageId), (stored) => stored).pipe(
              Effect.provideService(SqlClient.SqlClient, sql)
            ))
            : undefined
        })
        const tenant = yield* makeTenant({ webhookUrl: receiver.url, supportedFeatures: { streaming: true } })
        const chunks = [CHUNKS[0]!, CHUNKS.slice(1).join("")]
        // The second chunk once the first delta is at the receiver; the stream then ends without waiting.
        llm.enqueue(pacedStream(chunks, (deltas) => deltas === 1 ? deltasReceived(receiver.received, 1) : undefined))
        const { conversation } = yield* ask(tenant, { id: "x-1", conversationId: "superseded", text: "How long does shipping take?" })
        yield* eventually(Effect.sync(receiver.received), (received) => received.some((r) => kindOf(r) === "send_messages"))
        yield* jobsSettled(tenant)

        const received = receiver.received()
        expect(received.map(kindOf)).toEqual(["typing", "message_delta", "send_messages"])
        expect(deltasIn(received).map((delta) => delta.sequence)).toEqual([1])
        const final = sendOf(received[2]!).data.messages[0]!
        expect(final.text).toBe(chunks.join(""))
        expect(deltasIn(received)[0]!.messageId).toBe(final.id)

        const events = yield* eventsOf(conversation.id)
        expect(events.map((event) => [event.kind, event.sequence])).toEqual([
          ["typing", null],
          ["message_delta", 1],
          ["message_delta", 2],
          ["send_messages", null]
        ])
        // The delta being delivered when the message was stored is not superseded: its attempt is recorded.
        expect(events[1]).toMatchObject({ status: "delivered", attempts: 1, recordedAttempts: 1 })
        expect(events[2]).toMatchObject({
          status: "dead",
          attempts: 0,
          recordedAttempts: 0,
          lastError: "Superseded by the final message"
        })
        expect(events[3]).toMatchObject({ status: "delivered", attempts: 1 })
      }))
  })
})
