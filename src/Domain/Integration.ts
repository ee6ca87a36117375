import * as Model from "effect/schema/Model"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Internal, InternalCreatedAt, Jsonb } from "./Fields.js"
import { sendableHeaders } from "./HttpHeaders.js"
import { IntegrationId, ToneId, WorkspaceId } from "./Ids.js"
import { HttpUrl, JsonObject, nonEmptyString } from "./Primitives.js"

/** The feature flags (docs/api.md, Resources). */
export const FeatureName = Schema.Literals([
  "typing",
  "escalation",
  "closeTicket",
  "conversationSummary",
  "conversationTimeout",
  "verifierResolution",
  "verifierEscalation",
  "csat",
  "messageInEscalation",
  "messageInEndConversation",
  "getPastConversationsTool",
  "externalCustomerId",
  "inactivityPrompt",
  "streaming",
  "verifier",
  "tone",
  "conversationTitle",
  "customerMessageGuardrails",
  "preemptiveRetrieval"
])
export type FeatureName = typeof FeatureName.Type

export const SupportedFeatures = Schema.Record(FeatureName, Schema.Boolean).annotate({
  identifier: "SupportedFeatures"
})
export type SupportedFeatures = typeof SupportedFeatures.Type

export const SupportedFeaturesPatch = Schema.Record(FeatureName, Schema.optionalKey(Schema.Boolean)).annotate({
  identifier: "SupportedFeaturesPatch"
})
export type SupportedFeaturesPatch = typeof SupportedFeaturesPatch.Type

/** docs/api.md: unset flags are false, except typing, escalation and closeTicket. */
export const defaultFeatures: SupportedFeatures = {
  typing: true,
  escalation: true,
  closeTicket: true,
  conversationSummary: false,
  conversationTimeout: false,
  verifierResolution: false,
  verifierEscalation: false,
  csat: false,
  messageInEscalation: false,
  messageInEndConversation: false,
  getPastConversationsTool: false,
  externalCustomerId: false,
  inactivityPrompt: false,
  streaming: false,
  verifier: false,
  tone: false,
  conversationTitle: false,
  customerMessageGuardrails: false,
  preemptiveRetrieval: false
}

/** Headers Parley sets itself; an integration's custom headers can never replace them. */
export const reservedHeaderNames = [
  "content-type",
  "content-length",
  "host",
  "user-agent",
  "x-parley-webhook-signature",
  "x-parley-webhook-timestamp",
  "x-parley-webhook-signature-previous",
  "webhook-id",
  "webhook-timestamp",
  "webhook-signature"
] as const

/**
 * Custom headers, as integrators send them: only headers that can be sent on every delivery (see
 * `HttpHeaders.ts`), each problem located at its header.
 */
export const webhookHeaderRules = { reserved: reservedHeaderNames, reservedPrefixes: ["x-parley-", "webhook-"] }

export const WebhookHeaders = sendableHeaders(webhookHeaderRules)

/**
 * Custom headers as stored and returned: not re-validated, so rows saved before a rule existed still
 * load (the sender skips what it cannot send).
 */
export const StoredWebhookHeaders = Schema.Record(Schema.String, Schema.String)

export const WebhookConfig = Schema.Struct({
  url: HttpUrl,
  headers: StoredWebhookHeaders,
  metadata: JsonObject
}).annotate({ identifier: "WebhookConfig" })
export type WebhookConfig = typeof WebhookConfig.Type

export const IntegrationSettings = Schema.Struct({
  name: Schema.String,
  supportedFeatures: SupportedFeatures,
  toneId: Schema.NullOr(ToneId),
  firstResponseToneId: Schema.NullOr(ToneId),
  channelsSettings: JsonObject,
  webhook: WebhookConfig,
  webhookEnabled: Schema.Boolean
}).annotate({ identifier: "IntegrationSettings" })
export type IntegrationSettings = typeof IntegrationSettings.Type

const IntegrationName = nonEmptyString(200)

/** docs/api.md, a partial update (docs/api.md): present fields replace, flags merge one by one. */
export const IntegrationSettingsPatch = Schema.Struct({
  name: Schema.optionalKey(IntegrationName),
  supportedFeatures: Schema.optionalKey(SupportedFeaturesPatch),
  toneId: Schema.optionalKey(Schema.NullOr(ToneId)),
  firstResponseToneId: Schema.optionalKey(Schema.NullOr(ToneId)),
  channelsSettings: Schema.optionalKey(JsonObject),
  /** Re-enables deliveries after a receiver answered 410 Gone (or pauses them with false). */
  webhookEnabled: Schema.optionalKey(Schema.Boolean),
  webhook: Schema.optionalKey(Schema.Struct({
    url: Schema.optionalKey(HttpUrl),
    headers: Schema.optionalKey(WebhookHeaders),
    metadata: Schema.optionalKey(JsonObject)
  }))
}).annotate({ identifier: "IntegrationSettingsUpdate" })
export type IntegrationSettingsPatch = typeof IntegrationSettingsPatch.Type

/**
 * An integration (docs/api.md): the model of its row, whose wire view is exactly the API's
 * `{integrationId, integration, settings}`; the row's columns are `id` and `kind`.
 */
export class Integration extends Model.Class<Integration>("Integration")({
  /** The column `id` (the repository reads it `AS integration_id`). */
  integrationId: Model.Field({ select: IntegrationId, update: IntegrationId, json: IntegrationId }),
  workspaceId: Internal(WorkspaceId),
  /** The column `kind` (read `AS integration`). */
  integration: Schema.String,
  settings: Jsonb(IntegrationSettings),
  createdAt: InternalCreatedAt
}) {}

export const IntegrationJson = Integration.json.annotate({
  identifier: "Integration",
  description: "An integration and its settings (a helpdesk's webhook secret shows as ********)"
})

export const NewIntegration = Schema.Struct({
  name: IntegrationName,
  integration: Schema.String.check(
    Schema.isPattern(/^[a-z][a-z0-9_-]{0,39}$/, {
      errorType: "string_pattern_mismatch",
      message: "Integration kind should be a lowercase word such as api or chatwoot"
    })
  ).pipe(Schema.withDecodingDefaultTypeKey(Effect.succeed("api"))),
  webhook: Schema.Struct({
    url: HttpUrl,
    headers: WebhookHeaders.pipe(Schema.withDecodingDefaultTypeKey(Effect.succeed({}))),
    metadata: JsonObject.pipe(Schema.withDecodingDefaultTypeKey(Effect.succeed({})))
  }),
  supportedFeatures: SupportedFeaturesPatch.pipe(Schema.withDecodingDefaultTypeKey(Effect.succeed({}))),
  channelsSettings: JsonObject.pipe(Schema.withDecodingDefaultTypeKey(Effect.succeed({})))
}).annotate({ identifier: "NewIntegration" })
export type NewIntegration = typeof NewIntegration.Type

/** Applies a partial update to stored settings (docs/api.md). */
export const applyPatch = (settings: IntegrationSettings, patch: IntegrationSettingsPatch): IntegrationSettings => ({
  ...settings,
  ...(patch.name !== undefined ? { name: patch.name } : {}),
  ...(patch.toneId !== undefined ? { toneId: patch.toneId } : {}),
  ...(patch.firstResponseToneId !== undefined ? { firstResponseToneId: patch.firstResponseToneId } : {}),
  ...(patch.channelsSettings !== undefined ? { channelsSettings: patch.channelsSettings } : {}),
  ...(patch.webhookEnabled !== undefined ? { webhookEnabled: patch.webhookEnabled } : {}),
  supportedFeatures: { ...settings.supportedFeatures, ...patch.supportedFeatures },
  webhook: { ...settings.webhook, ...patch.webhook }
})

// ---------------------------------------------------------------------------------------------------
// Secrets in settings: every helpdesk's webhook secret (`channelsSettings.<helpdesk>.webhookSecret`,
// e.g. Chatwoot's) and every custom webhook header value. They are sealed at rest; a helpdesk's
// secret is never returned (the mask stands for it), header values are (docs/api.md returns the headers).
// ---------------------------------------------------------------------------------------------------

/** Returned instead of a stored helpdesk webhook secret; sent back in an update, it keeps the stored one. */
export const SECRET_MASK = "********"

/** The helpdesk webhook secrets of `channelsSettings`, by helpdesk name. */
export const helpdeskSecrets = (channelsSettings: JsonObject): ReadonlyArray<readonly [string, string]> =>
  Object.entries(channelsSettings).flatMap(([name, value]) =>
    typeof value === "object" && value !== null && "webhookSecret" in value && typeof value.webhookSecret === "string"
      ? [[name, value.webhookSecret] as const]
      : []
  )

/** `channelsSettings` with each helpdesk webhook secret replaced by `f(name, secret)`. */
export const mapHelpdeskSecrets = (
  channelsSettings: JsonObject,
  f: (name: string, secret: string) => string
): JsonObject =>
  Object.fromEntries(Object.entries(channelsSettings).map(([name, value]) =>
    typeof value === "object" && value !== null && "webhookSecret" in value && typeof value.webhookSecret === "string"
      ? [name, { ...value, webhookSecret: f(name, value.webhookSecret) }]
      : [name, value]
  ))

/** Settings with every secret (helpdesk webhook secrets, header values) replaced by `f(secret)`. */
export const mapSecrets = (settings: IntegrationSettings, f: (secret: string) => string): IntegrationSettings => ({
  ...settings,
  channelsSettings: mapHelpdeskSecrets(settings.channelsSettings, (_, secret) => f(secret)),
  webhook: {
    ...settings.webhook,
    headers: Object.fromEntries(Object.entries(settings.webhook.headers).map(([name, value]) => [name, f(value)]))
  }
})

/** Every secret of the settings, in the order `mapSecrets` visits them. */
export const secretsOf = (settings: IntegrationSettings): ReadonlyArray<string> => {
  const found: Array<string> = []
  mapSecrets(settings, (secret) => {
    found.push(secret)
    return secret
  })
  return found
}

/** The integration as a client may see it: helpdesk webhook secrets masked. */
export const masked = (integration: Integration): Integration =>
  Integration.make({
    ...integration,
    settings: {
      ...integration.settings,
      channelsSettings: mapHelpdeskSecrets(integration.settings.channelsSettings, () => SECRET_MASK)
    }
  })
