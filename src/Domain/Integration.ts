import * as Schema from "effect/Schema"
import { sendableHeaders } from "./HttpHeaders.js"
import { IntegrationId, ToneId } from "./Ids.js"
import { HttpUrl, JsonObject, nonEmptyString } from "./Primitives.js"
import { ErrorType } from "./Validation.js"

export const featureNames = [
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
] as const
export type FeatureName = (typeof featureNames)[number]

/** PRODUCT.md §4: unset flags are false, except typing, escalation and closeTicket. */
export const defaultFeatures: { readonly [K in FeatureName]: boolean } = Object.fromEntries(
  featureNames.map((name) => [name, name === "typing" || name === "escalation" || name === "closeTicket"])
) as { readonly [K in FeatureName]: boolean }

export const SupportedFeatures = Schema.Struct(
  Object.fromEntries(featureNames.map((name) => [name, Schema.Boolean])) as {
    readonly [K in FeatureName]: typeof Schema.Boolean
  }
).annotations({ identifier: "SupportedFeatures" })
export type SupportedFeatures = typeof SupportedFeatures.Type

export const SupportedFeaturesPatch = Schema.Struct(
  Object.fromEntries(featureNames.map((name) => [name, Schema.optionalWith(Schema.Boolean, { exact: true })])) as {
    readonly [K in FeatureName]: Schema.optionalWith<typeof Schema.Boolean, { exact: true }>
  }
).annotations({ identifier: "SupportedFeaturesPatch" })
export type SupportedFeaturesPatch = typeof SupportedFeaturesPatch.Type

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
export const WebhookHeaders = sendableHeaders({
  reserved: reservedHeaderNames,
  reservedPrefixes: ["x-parley-", "webhook-"]
})

/**
 * Custom headers as stored and returned: not re-validated, so rows saved before a rule existed still
 * load (the sender skips what it cannot send).
 */
export const StoredWebhookHeaders = Schema.Record({ key: Schema.String, value: Schema.String })

export const WebhookConfig = Schema.Struct({
  url: HttpUrl,
  headers: StoredWebhookHeaders,
  metadata: JsonObject
}).annotations({ identifier: "WebhookConfig" })
export type WebhookConfig = typeof WebhookConfig.Type

export const IntegrationSettings = Schema.Struct({
  name: Schema.String,
  supportedFeatures: SupportedFeatures,
  toneId: Schema.NullOr(ToneId),
  firstResponseToneId: Schema.NullOr(ToneId),
  channelsSettings: JsonObject,
  webhook: WebhookConfig,
  webhookEnabled: Schema.Boolean
}).annotations({ identifier: "IntegrationSettings" })
export type IntegrationSettings = typeof IntegrationSettings.Type

const IntegrationName = nonEmptyString(200)

/** Spec 2.4, a partial update (PRODUCT.md §4): present fields replace, flags merge one by one. */
export const IntegrationSettingsPatch = Schema.Struct({
  name: Schema.optionalWith(IntegrationName, { exact: true }),
  supportedFeatures: Schema.optionalWith(SupportedFeaturesPatch, { exact: true }),
  toneId: Schema.optionalWith(Schema.NullOr(ToneId), { exact: true }),
  firstResponseToneId: Schema.optionalWith(Schema.NullOr(ToneId), { exact: true }),
  channelsSettings: Schema.optionalWith(JsonObject, { exact: true }),
  /** Re-enables deliveries after a receiver answered 410 Gone (or pauses them with false). */
  webhookEnabled: Schema.optionalWith(Schema.Boolean, { exact: true }),
  webhook: Schema.optionalWith(
    Schema.Struct({
      url: Schema.optionalWith(HttpUrl, { exact: true }),
      headers: Schema.optionalWith(WebhookHeaders, { exact: true }),
      metadata: Schema.optionalWith(JsonObject, { exact: true })
    }),
    { exact: true }
  )
}).annotations({ identifier: "IntegrationSettingsUpdate" })
export type IntegrationSettingsPatch = typeof IntegrationSettingsPatch.Type

/** Spec 2.3. */
export const Integration = Schema.Struct({
  integrationId: IntegrationId,
  integration: Schema.String,
  settings: IntegrationSettings
}).annotations({ identifier: "Integration" })
export type Integration = typeof Integration.Type

export const NewIntegration = Schema.Struct({
  name: IntegrationName,
  integration: Schema.optionalWith(
    Schema.String.pipe(
      Schema.pattern(/^[a-z][a-z0-9_-]{0,39}$/, {
        [ErrorType]: "string_pattern_mismatch",
        message: () => "Integration kind should be a lowercase word such as api or chatwoot"
      })
    ),
    { default: () => "api" }
  ),
  webhook: Schema.Struct({
    url: HttpUrl,
    headers: Schema.optionalWith(WebhookHeaders, { default: () => ({}) }),
    metadata: Schema.optionalWith(JsonObject, { default: () => ({}) })
  }),
  supportedFeatures: Schema.optionalWith(SupportedFeaturesPatch, { default: () => ({}) }),
  channelsSettings: Schema.optionalWith(JsonObject, { default: () => ({}) })
}).annotations({ identifier: "NewIntegration" })
export type NewIntegration = typeof NewIntegration.Type

/** Applies a partial update to stored settings (PRODUCT.md §4). */
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
