/**
 * A real webhook receiver on a loopback port, for delivery tests: it records every request (raw body
 * and headers) and answers what the test says, per request.
 */
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as http from "node:http"
import { MessageJson } from "../../src/Domain/Conversation.js"
import { EventKind } from "../../src/Domain/Delivery.js"
import { CustomerId, EventId, IntegrationId } from "../../src/Domain/Ids.js"
import { JsonObject, Timestamp } from "../../src/Domain/Primitives.js"
import { eventually } from "./Eventually.js"

export interface Received {
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
  readonly at: number
}

export interface Answer {
  readonly status: number
  readonly headers?: Record<string, string>
  /** Wait this long before answering (to provoke time-outs). */
  readonly delayMs?: number
}

export type Responder = (request: Received, index: number) => Answer

export interface Receiver {
  readonly url: string
  readonly received: () => ReadonlyArray<Received>
  /** Replaces how later requests are answered. */
  readonly respondWith: (responder: Responder) => void
  /** Waits until `count` requests arrived, failing after `timeoutMs`. */
  readonly waitFor: (count: number, timeoutMs?: number) => Effect.Effect<ReadonlyArray<Received>>
}

export const makeReceiver = (responder: Responder = () => ({ status: 200 })) =>
  Effect.gen(function*() {
    const requests: Array<Received> = []
    let respond = responder
    const server = yield* Effect.acquireRelease(
      Effect.callback<http.Server>((resume) => {
        const server = http.createServer((req, res) => {
          const chunks: Array<Buffer> = []
          req.on("data", (chunk: Buffer) => chunks.push(chunk))
          req.on("end", () => {
            const headers: Record<string, string> = {}
            for (const [name, value] of Object.entries(req.headers)) {
              if (typeof value === "string") headers[name] = value
              else if (Array.isArray(value)) headers[name] = value.join(", ")
            }
            const received: Received = { headers, body: Buffer.concat(chunks).toString("utf8"), at: Date.now() }
            const index = requests.length
            requests.push(received)
            const answer = respond(received, index)
            setTimeout(() => {
              res.writeHead(answer.status, { "content-type": "application/json", ...answer.headers })
              res.end(JSON.stringify({ index }))
            }, answer.delayMs ?? 0)
          })
        })
        server.listen(0, "127.0.0.1", () => {
          resume(Effect.succeed(server))
        })
      }),
      (server) =>
        Effect.callback<void>((resume) => {
          server.closeAllConnections()
          server.close(() => resume(Effect.void))
        })
    )
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    const receiver: Receiver = {
      url: `http://127.0.0.1:${port}/webhook`,
      received: () => [...requests],
      respondWith: (next) => {
        respond = next
      },
      waitFor: (count, timeoutMs = 15_000) =>
        eventually(Effect.sync(() => [...requests]), (received) => received.length >= count, timeoutMs).pipe(
          Effect.map((received) => received)
        )
    }
    return receiver
  })

/**
 * The envelope of every webhook Parley sends (docs/webhooks.md, built in src/Delivery/Events.ts), with
 * the schemas of its `event` and its `data`.
 */
export const Envelope = <E extends Schema.Top, D extends Schema.Top>(event: E, data: D) =>
  Schema.Struct({
    event,
    eventId: EventId,
    integrationId: IntegrationId,
    conversationId: Schema.NullOr(Schema.String),
    customerId: Schema.NullOr(CustomerId),
    createdAt: Timestamp,
    metadata: JsonObject,
    data
  })

/** Any event, its `data` not read. */
export const AnyEvent = Envelope(EventKind, Schema.Unknown)

/** `send_messages`: the messages as the API shows them. */
export const SendMessages = Envelope(Schema.Literal("send_messages"), Schema.Struct({ messages: Schema.Array(MessageJson) }))

/**
 * The body of a received webhook checked against a schema, as `bodyAs` does for replies: `schema`'s
 * encoded side, no other key allowed; a body of another shape fails the test with the body in the message.
 * Synchronous, for responders and filters.
 */
export const webhookBody = <S extends Schema.Codec<unknown, unknown>>(schema: S) => {
  const decode = Schema.decodeUnknownResult(Schema.toEncoded(schema), { onExcessProperty: "error" })
  return (request: Received): S["Encoded"] =>
    Result.getOrThrowWith(
      decode(JSON.parse(request.body)),
      (error) => new Error(`Webhook body does not match: ${error.message}\n${request.body}`)
    )
}
