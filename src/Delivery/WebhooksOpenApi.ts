/**
 * The OpenAPI 3.1 `webhooks` section: one operation per event kind, so that integrators can generate
 * receivers from `/openapi.json`. Bodies and headers are generated from the schemas Parley sends
 * (`WebhookEvents`, `SignatureHeaders`); the envelopes are components (`HttpApi.AdditionalSchemas`),
 * referenced by their identifiers.
 */
import * as OpenApiJsonSchema from "@effect/platform/OpenApiJsonSchema"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as AST from "effect/SchemaAST"
import { EventKind } from "../Domain/Delivery.js"
import { EventId } from "../Domain/Ids.js"
import { WebhookEvents } from "../Domain/WebhookEvent.js"
import { HEADER_SIGNATURE, HEADER_SIGNATURE_PREVIOUS, HEADER_TIMESTAMP } from "./Signature.js"

const UnixSeconds = Schema.String.pipe(Schema.pattern(/^\d+$/))

/** The headers of every webhook request (docs/webhooks.md, "Signatures"). */
export const SignatureHeaders = Schema.Struct({
  [HEADER_TIMESTAMP]: UnixSeconds.annotations({
    description: "Unix seconds of this attempt; reject values more than 5 minutes away (replay)."
  }),
  [HEADER_SIGNATURE]: Schema.String.pipe(Schema.pattern(/^[0-9a-f]{64}$/)).annotations({
    description: "Lowercase hex HMAC-SHA256 of `<timestamp>.<raw body>`, key = the webhook secret (its UTF-8 text, whsec_ included)."
  }),
  [HEADER_SIGNATURE_PREVIOUS]: Schema.optional(Schema.String.pipe(Schema.pattern(/^[0-9a-f]{64}$/))).annotations({
    description: "During a secret rotation's grace period: the same signature with the previous secret."
  }),
  "webhook-id": EventId.annotations({ description: "Standard Webhooks: the eventId." }),
  "webhook-timestamp": UnixSeconds.annotations({ description: "Standard Webhooks: Unix seconds (same as the Parley timestamp)." }),
  "webhook-signature": Schema.String.pipe(Schema.pattern(/^v1,[A-Za-z0-9+/=]+( v1,[A-Za-z0-9+/=]+)*$/)).annotations({
    description: "Standard Webhooks: `v1,<base64 HMAC-SHA256 of \"<id>.<timestamp>.<body>\">`, key = base64-decoded part " +
      "after whsec_; two space-separated signatures during a rotation's grace period."
  })
})

/** The JSON Schema of a schema, `$ref`s pointing at `#/components/schemas/`. */
const jsonSchemaOf = (schema: Schema.Schema.Any) => OpenApiJsonSchema.makeWithDefs(schema, { defs: {} })

const parameters = AST.getPropertySignatures(SignatureHeaders.ast).map((signature) => {
  const type = signature.isOptional && AST.isUnion(signature.type)
    ? AST.Union.make(signature.type.types.filter((member) => !AST.isUndefinedKeyword(member)))
    : signature.type
  const description = Option.getOrUndefined(
    Option.orElse(AST.getDescriptionAnnotation(signature), () => AST.getDescriptionAnnotation(signature.type))
  )
  return {
    name: String(signature.name),
    in: "header",
    required: !signature.isOptional,
    ...(description === undefined ? {} : { description }),
    schema: jsonSchemaOf(Schema.make(type))
  }
})

const responses = {
  "2XX": {
    description: "Delivered. Answer within DELIVERY_TIMEOUT (10 s) and process asynchronously; the body is only " +
      "logged (its first 500 characters)."
  },
  "410": {
    description: "Gone: the event is dead and the integration's webhook is disabled until its webhook.url changes."
  },
  default: {
    description: "Anything else, a time-out or a connection error: retried with exponential backoff and jitter until " +
      "DELIVERY_MAX_AGE (28 h) after the event was created, honouring Retry-After; then the event is dead."
  }
}

const summaries: Record<EventKind, string> = {
  send_messages: "The AI's reply",
  typing: "The AI is writing",
  escalate: "Handed over to a person",
  close_conversation: "Conversation closed",
  conversation_summary: "Summary for the human agent",
  conversation_title: "Conversation title",
  send_csat: "Ask for a rating"
}

/** `webhooks` of the OpenAPI document: `POST` to the integration's `webhook.url`, one per event kind. */
export const webhooksSection = Object.fromEntries(EventKind.literals.map((kind) => {
  const schema = WebhookEvents[kind]
  const description = Option.getOrElse(AST.getDescriptionAnnotation(schema.ast), () => "")
  return [kind, {
    post: {
      operationId: `webhook.${kind}`,
      tags: ["Webhooks"],
      summary: summaries[kind],
      description: `${description} Signed, sent to the integration's webhook.url in order per conversation, at least ` +
        "once (deduplicate on eventId); see docs/webhooks.md.",
      security: [],
      parameters,
      requestBody: { required: true, content: { "application/json": { schema: jsonSchemaOf(schema) } } },
      responses
    }
  }]
}))

/** The envelopes, as components of the document. */
export const webhookSchemas: ReadonlyArray<Schema.Schema.All> = EventKind.literals.map((kind) => WebhookEvents[kind])

/**
 * Effect's JSON Schemas mark some schemas with `$id`s of its own (`/schemas/unknown`, `/schemas/{}`),
 * repeated wherever those schemas occur. They name nothing in an OpenAPI document, and validators that
 * honour `$id` (JSON Schema 2020-12, e.g. Ajv) refuse the document for them; they are taken out.
 */
const withoutEffectIds = (value: unknown): unknown =>
  Array.isArray(value)
    ? value.map(withoutEffectIds)
    : typeof value === "object" && value !== null
    ? Object.fromEntries(
      Object.entries(value)
        .filter(([key, item]) => !(key === "$id" && typeof item === "string" && item.startsWith("/schemas/")))
        .map(([key, item]) => [key, withoutEffectIds(item)])
    )
    : value

/** The finishing touch to the generated document (`OpenApi.Transform`). */
export const finishDocument = (spec: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(Object.entries(spec).map(([key, value]) => [key, withoutEffectIds(value)]))
