/**
 * The OpenAPI 3.1 `webhooks` section: one operation per event kind, so that integrators can generate
 * receivers from `/openapi.json`. Bodies and headers are generated from the schemas Parley sends
 * (`WebhookEvents`, `SignatureHeaders`); the envelopes are components (`HttpApi.AdditionalSchemas`),
 * referenced by their identifiers.
 */
import * as JsonSchema from "effect/JsonSchema"
import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
import { EventKind } from "../Domain/Delivery.js"
import { EventId } from "../Domain/Ids.js"
import { WebhookEvents } from "../Domain/WebhookEvent.js"
import { HEADER_SIGNATURE, HEADER_SIGNATURE_PREVIOUS, HEADER_TIMESTAMP } from "./Signature.js"

// Patterns carry the `u` flag: Effect exports to JSON Schema only patterns that mean the same there
// (JSON Schema's regular expressions are Unicode).
const UnixSeconds = Schema.String.check(Schema.isPattern(/^\d+$/u))
const HexSignature = Schema.String.check(Schema.isPattern(/^[0-9a-f]{64}$/u))

/** The headers of every webhook request (docs/webhooks.md, "Signatures"): name, schema, required. */
const signatureHeaders: ReadonlyArray<readonly [name: string, schema: Schema.Top, required: boolean]> = [
  [HEADER_TIMESTAMP, UnixSeconds.annotate({
    description: "Unix seconds of this attempt; reject values more than 5 minutes away (replay)."
  }), true],
  [HEADER_SIGNATURE, HexSignature.annotate({
    description: "Lowercase hex HMAC-SHA256 of `<timestamp>.<raw body>`, key = the webhook secret (its UTF-8 text, whsec_ included)."
  }), true],
  [HEADER_SIGNATURE_PREVIOUS, HexSignature.annotate({
    description: "During a secret rotation's grace period: the same signature with the previous secret."
  }), false],
  ["webhook-id", EventId.annotate({ description: "Standard Webhooks: the eventId." }), true],
  ["webhook-timestamp", UnixSeconds.annotate({ description: "Standard Webhooks: Unix seconds (same as the Parley timestamp)." }), true],
  ["webhook-signature", Schema.String.check(Schema.isPattern(/^v1,[A-Za-z0-9+/=]+( v1,[A-Za-z0-9+/=]+)*$/u)).annotate({
    description: "Standard Webhooks: `v1,<base64 HMAC-SHA256 of \"<id>.<timestamp>.<body>\">`, key = base64-decoded part " +
      "after whsec_; two space-separated signatures during a rotation's grace period."
  }), true]
]

/**
 * The JSON Schema of a schema as an OpenAPI 3.1 document has it: `$ref`s point at
 * `#/components/schemas/`, whose definitions the document has from `HttpApi.AdditionalSchemas`. Objects
 * refuse properties they do not model, as in the components the document generates.
 */
const jsonSchemaOf = (schema: Schema.Top): JsonSchema.JsonSchema => {
  const document = Schema.toJsonSchemaDocument(schema, { onExcessProperty: "error" })
  const [openApi] = JsonSchema.toMultiDocumentOpenApi3_1({
    dialect: document.dialect,
    schemas: [document.schema],
    definitions: document.definitions
  }).schemas
  return openApi
}

const parameters = signatureHeaders.map(([name, schema, required]) => {
  const description = SchemaAST.resolveDescription(schema.ast)
  return { name, in: "header", required, ...(description === undefined ? {} : { description }), schema: jsonSchemaOf(schema) }
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
  send_csat: "Ask for a rating",
  message_delta: "The AI's message so far, while it is written (streaming)"
}

/** `webhooks` of the OpenAPI document: `POST` to the integration's `webhook.url`, one per event kind. */
export const webhooksSection = Object.fromEntries(EventKind.literals.map((kind) => {
  const schema = WebhookEvents[kind]
  const description = SchemaAST.resolveDescription(schema.ast) ?? ""
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
export const webhookSchemas: ReadonlyArray<Schema.Top> = EventKind.literals.map((kind) => WebhookEvents[kind])

/**
 * Effect 3's JSON Schemas marked some schemas with `$id`s of its own (`/schemas/unknown`, `/schemas/{}`),
 * repeated wherever those schemas occurred. They name nothing in an OpenAPI document, and validators that
 * honour `$id` (JSON Schema 2020-12, e.g. Ajv) refuse the document for them. Effect 4 writes none; this
 * stays as the guarantee that the document has none.
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

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const PROPERTY_KEYWORDS = ["properties", "patternProperties", "additionalProperties"]

/**
 * Effect 4 writes a check's JSON Schema that it cannot merge into its schema's as `allOf: [fragment]`
 * (`{"type":"object","allOf":[{"required":["id"]}]}`). Where merging means the same (no keyword on both
 * sides, `required` lists joined, and no `additionalProperties` moved next to `properties` it would then
 * exempt), the fragment is merged: generated clients read `required` and properties only at the top.
 */
const mergeAllOf = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(mergeAllOf)
  if (!isObject(value)) return value
  const node = Object.fromEntries(Object.entries(value).map(([key, item]) => [key, mergeAllOf(item)]))
  const parts = node["allOf"]
  if (!Array.isArray(parts)) return node
  const { allOf: _, ...merged } = node
  const kept: Array<unknown> = []
  for (const part of parts) {
    const mergeable = isObject(part) && !("$ref" in part) &&
      Object.keys(part).every((key) => key === "required" || !(key in merged)) &&
      !(PROPERTY_KEYWORDS.some((key) => key in part) && PROPERTY_KEYWORDS.some((key) => key in merged))
    if (!mergeable) {
      kept.push(part)
      continue
    }
    for (const [key, item] of Object.entries(part)) {
      const had = merged[key]
      merged[key] = key === "required" && Array.isArray(had) && Array.isArray(item) ? [...new Set([...had, ...item])] : item
    }
  }
  return kept.length === 0 ? merged : { ...merged, allOf: kept }
}

/** The finishing touch to the generated document (`OpenApi.Transform`). */
export const finishDocument = (spec: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(Object.entries(spec).map(([key, value]) => [key, mergeAllOf(withoutEffectIds(value))]))
