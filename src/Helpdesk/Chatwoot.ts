/**
 * Chatwoot webhooks (https://www.chatwoot.com/docs/product/features/webhooks): `message_created`
 * (incoming from the contact, outgoing from an agent or a bot) and `conversation_status_changed`.
 * Signature, when configured: `X-Chatwoot-Signature: sha256=<hex HMAC-SHA256 of "<X-Chatwoot-Timestamp>.<body>">`.
 */
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as SchemaGetter from "effect/SchemaGetter"
import * as SchemaIssue from "effect/SchemaIssue"
import * as crypto from "node:crypto"
import { constantTimeEqual } from "../Auth/Crypto.js"
import type { Incoming } from "../Conversations/Conversations.js"
import type { Attachment, AgentInfo } from "../Domain/Conversation.js"
import { decodeInput, InvalidInput, Unauthorized } from "../Domain/Errors.js"
import type { Integration } from "../Domain/Integration.js"
import { Text } from "../Domain/Primitives.js"
import { isRealCalendarDate, isStorableMillis, storableRange } from "../Domain/StorableTime.js"
import type { HelpdeskAdapter, HelpdeskRequest } from "./Adapter.js"

const SIGNATURE_TOLERANCE_SECONDS = 300

const Id = Schema.Union([Schema.Number, Text])
const OptionalText = Schema.optionalKey(Schema.NullOr(Text))

const Contact = Schema.Struct({
  id: Id,
  name: OptionalText,
  email: OptionalText,
  phone_number: OptionalText,
  type: OptionalText,
  avatar_url: OptionalText,
  thumbnail: OptionalText
})
type Contact = typeof Contact.Type

const Meta = Schema.optionalKey(Schema.Struct({ sender: Schema.optionalKey(Contact) }))

const ChatwootConversation = Schema.Struct({
  id: Id,
  display_id: Schema.optionalKey(Id),
  inbox_id: Schema.optionalKey(Id),
  meta: Meta
})

const StorableMillis = Schema.Number.check(
  Schema.makeFilter(isStorableMillis, {
    errorType: "datetime_range",
    message: `Timestamps must lie ${storableRange}`
  })
)

/**
 * Chatwoot sends ISO strings in some events and Unix seconds in others; decoded to epoch milliseconds
 * that PostgreSQL can store (out of range: `datetime_range`; not a date, or not finite: `datetime_parsing`).
 */
const ChatwootTime = Schema.Union([Text, Schema.Number]).pipe(
  Schema.decodeTo(StorableMillis, {
    decode: SchemaGetter.transformEffect((value: string | number) => {
      const millis = typeof value === "number"
        ? (Number.isFinite(value) ? value * 1000 : Number.NaN)
        : (isRealCalendarDate(value) ? Date.parse(value) : Number.NaN)
      return Number.isNaN(millis)
        ? Effect.fail(
          new SchemaIssue.InvalidValue({
            message: "Input should be a valid date-time (ISO 8601 text or Unix seconds)",
            errorType: "datetime_parsing"
          })
        )
        : Effect.succeed(millis)
    }),
    encode: SchemaGetter.transform((millis: number) => millis / 1000)
  })
)

const CreatedAt = Schema.optionalKey(Schema.NullOr(ChatwootTime))

const MessageCreated = Schema.Struct({
  event: Schema.Literal("message_created"),
  id: Id,
  content: OptionalText,
  created_at: CreatedAt,
  message_type: Schema.Literals(["incoming", "outgoing", "template", "activity", 0, 1, 2, 3]),
  private: Schema.Boolean.pipe(Schema.withDecodingDefaultTypeKey(Effect.succeed(false))),
  // Chatwoot sends `sender: null` for messages nobody wrote (activity lines): read as absent.
  sender: Schema.optionalKey(Schema.NullOr(Contact)),
  conversation: ChatwootConversation,
  attachments: Schema.Array(Schema.Struct({ data_url: Text, file_type: OptionalText })).pipe(Schema.withDecodingDefaultTypeKey(Effect.succeed([]))),
  account: Schema.optionalKey(Schema.Struct({ id: Id })),
  inbox: Schema.optionalKey(Schema.Struct({ id: Id }))
})
type MessageCreated = typeof MessageCreated.Type

const StatusChanged = Schema.Struct({
  event: Schema.Literal("conversation_status_changed"),
  id: Id,
  status: Schema.Literals(["open", "resolved", "pending", "snoozed"]),
  meta: Meta,
  contact_inbox: Schema.optionalKey(Schema.Struct({ contact_id: Id })),
  updated_at: CreatedAt,
  timestamp: CreatedAt
})
type StatusChanged = typeof StatusChanged.Type

const supportedEvents = ["message_created", "conversation_status_changed"] as const

const EventName = Schema.Struct({ event: Schema.String })

const messageTypes = ["incoming", "outgoing", "activity", "template"] as const

const toUtc = (millis: number | null | undefined): Option.Option<DateTime.Utc> =>
  millis === null || millis === undefined ? Option.none() : DateTime.make(millis)

const splitName = (name: string | null | undefined) => {
  const parts = (name ?? "").trim().split(/\s+/).filter((p) => p !== "")
  return parts.length === 0
    ? {}
    : { firstName: parts[0] ?? null, lastName: parts.length > 1 ? parts.slice(1).join(" ") : null }
}

const customerOf = (contact: Contact): Incoming["customer"] => ({
  _tag: "UserId",
  userId: String(contact.id),
  facts: {
    email: contact.email ?? null,
    phoneNumber: contact.phone_number ?? null,
    ...splitName(contact.name)
  }
})

const attachmentName = (url: string, index: number): string => {
  try {
    const last = new URL(url).pathname.split("/").pop()
    return last !== undefined && last !== "" ? decodeURIComponent(last) : `attachment-${index + 1}`
  } catch {
    return `attachment-${index + 1}`
  }
}

const isHttpUrl = (value: string) => /^https?:\/\//i.test(value)

const fromMessage = (event: MessageCreated): Effect.Effect<Incoming, InvalidInput> => {
  const kind = typeof event.message_type === "number" ? messageTypes[event.message_type]! : event.message_type
  const sender = event.sender ?? undefined
  const contact = kind === "incoming" && sender !== undefined ? sender : event.conversation.meta?.sender
  if (contact === undefined) {
    return InvalidInput.one(["conversation", "meta", "sender"], "The conversation's contact is required", "missing")
  }
  const isBot = sender?.type === "agent_bot"
  const role = kind === "incoming" ? "human" : kind === "outgoing" ? (isBot ? "ai" : "agent") : "system"
  const type = event.private ? "note" : kind === "activity" || kind === "template" ? "event" : "default"
  const agentInfo: AgentInfo | null = role === "agent" && sender !== undefined
    ? {
      id: String(sender.id),
      name: sender.name ?? "",
      avatar: sender.avatar_url ?? sender.thumbnail ?? ""
    }
    : null
  const attachments: Array<Attachment> = event.attachments
    .filter((a) => isHttpUrl(a.data_url))
    .map((a, index) => ({ name: attachmentName(a.data_url, index), url: a.data_url }))
  return Effect.succeed({
    externalMessageId: `chatwoot:message:${event.id}`,
    externalConversationId: String(event.conversation.id),
    customer: customerOf(contact),
    role,
    type,
    text: event.content ?? "",
    attachments,
    sentAt: toUtc(event.created_at),
    syncOnly: false,
    requestContext: Option.some({
      chatwoot: {
        accountId: event.account?.id ?? null,
        inboxId: event.inbox?.id ?? event.conversation.inbox_id ?? null,
        conversationDisplayId: event.conversation.display_id ?? null
      }
    }),
    agentInfo,
    channel: "chatwoot"
  })
}

/**
 * Chatwoot's statuses: `pending` is the bot's queue, `open` an agent's, `resolved` done. Only a closed
 * conversation is reopened by `open`: an agent taking it over must not hand it back to the AI.
 */
const statusChange = (status: StatusChanged["status"]): Incoming["statusChange"] => {
  const cause = `chatwoot_${status}`
  switch (status) {
    case "resolved":
      return { to: "closed", cause }
    case "pending":
      return { to: "open", cause }
    case "open":
      return { to: "open", cause, from: "closed" }
    case "snoozed":
      return undefined
  }
}

const fromStatus = (event: StatusChanged, rawBody: string): Effect.Effect<Incoming, InvalidInput> => {
  const contact = event.meta?.sender
  const contactId = contact?.id ?? event.contact_inbox?.contact_id
  if (contactId === undefined) {
    return InvalidInput.one(["meta", "sender"], "The conversation's contact is required", "missing")
  }
  const change = statusChange(event.status)
  // The same delivery retried by Chatwoot carries the same body: its hash makes the event idempotent.
  const digest = crypto.createHash("sha256").update(rawBody).digest("hex").slice(0, 24)
  return Effect.succeed({
    externalMessageId: `chatwoot:status:${event.id}:${digest}`,
    externalConversationId: String(event.id),
    customer: contact !== undefined ? customerOf(contact) : { _tag: "UserId", userId: String(contactId) },
    role: "system",
    type: "event",
    text: `Conversation ${event.status} in Chatwoot`,
    attachments: [],
    sentAt: toUtc(event.updated_at ?? event.timestamp),
    syncOnly: false,
    requestContext: Option.some({ chatwoot: { status: event.status } }),
    agentInfo: null,
    channel: "chatwoot",
    ...(change !== undefined ? { statusChange: change } : {})
  })
}

const configuredSecret = (integration: Integration): Option.Option<string> => {
  const chatwoot = integration.settings.channelsSettings["chatwoot"]
  if (typeof chatwoot !== "object" || chatwoot === null || !("webhookSecret" in chatwoot)) return Option.none()
  const secret = chatwoot.webhookSecret
  return typeof secret === "string" && secret !== "" ? Option.some(secret) : Option.none()
}

const badSignature = new Unauthorized({ detail: "Invalid or missing X-Chatwoot-Signature" })

const verify = (integration: Integration, request: HelpdeskRequest) =>
  Option.match(configuredSecret(integration), {
    onNone: () => Effect.void,
    onSome: (secret) =>
      Effect.gen(function*() {
        const signature = request.headers["x-chatwoot-signature"] ?? ""
        const timestamp = request.headers["x-chatwoot-timestamp"] ?? ""
        if (!/^\d+$/.test(timestamp)) return yield* badSignature
        const now = Math.floor((yield* DateTime.now).epochMilliseconds / 1000)
        if (Math.abs(now - Number(timestamp)) > SIGNATURE_TOLERANCE_SECONDS) return yield* badSignature
        const expected = "sha256=" +
          crypto.createHmac("sha256", secret).update(`${timestamp}.${request.rawBody}`).digest("hex")
        if (!constantTimeEqual(signature, expected)) return yield* badSignature
      })
  })

const translate = (request: HelpdeskRequest): Effect.Effect<Incoming, InvalidInput> =>
  Effect.gen(function*() {
    const { event } = yield* decodeInput(EventName)(request.body)
    switch (event) {
      case "message_created":
        return yield* fromMessage(yield* decodeInput(MessageCreated)(request.body))
      case "conversation_status_changed":
        return yield* fromStatus(yield* decodeInput(StatusChanged)(request.body), request.rawBody)
      default:
        return yield* InvalidInput.one(
          ["event"],
          `Unsupported event '${event}'; Parley handles: ${supportedEvents.join(", ")}`,
          "unsupported_event"
        )
    }
  })

export const Chatwoot: HelpdeskAdapter = {
  name: "chatwoot",
  supportedEvents,
  verify,
  translate,
  fieldPaths: { text: ["content"], attachments: ["attachments"] }
}
