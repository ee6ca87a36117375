/**
 * `@parley/client` (packages/client): Parley for TypeScript integrators. The public API's definition, a
 * typed client checked against the same schemas the server uses, the wire schemas of what it answers
 * and sends to webhooks, and the webhook signature check. The package is compiled from this module and
 * what it imports (packages/client/tsconfig.json), so everything reachable from here ships to
 * integrators and may import only `effect`, `node:crypto` and `node:util` (the package's build refuses
 * anything else).
 *
 * ```ts
 * import { IntegrationId, makeClient } from "@parley/client"
 * const parley = yield* makeClient({ baseUrl: "https://parley.example.com", token: apiToken })
 * const { message, conversation } = yield* parley.webhooks.messageReceived({
 *   params: { integration_id: IntegrationId.make(integrationId) },
 *   payload: { id: "m-1", role: "human", customerId, conversationId: "c-1", text: "Hi", attachments: [], syncOnly: false }
 * })
 * ```
 */
import type * as Effect from "effect/Effect"
import * as HttpClient from "effect/http/HttpClient"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import * as HttpApiClient from "effect/http-api/HttpApiClient"
import { PublicApi } from "./Api.js"

// The public API only. The admin API (`Api`) is the operator's, called with the instance-wide admin
// token (or through the `parley` CLI): a client built from a workspace's API token would offer
// endpoints that answer it 401, and the admin token belongs on the server, not in integrators' code.
export { PublicApi } from "./Api.js"
export { Replayed } from "./Delivery/Api.js"
export { Health, NotReady } from "./Health/Api.js"
export * from "./Domain/Conversation.js"
export * from "./Domain/Csat.js"
export * from "./Domain/Customer.js"
export * from "./Domain/Errors.js"
export * from "./Domain/Ids.js"
export * from "./Domain/Integration.js"
export * from "./Domain/Reply.js"

/** A typed client of the public API, authenticated with a workspace API token. Needs an `HttpClient`. */
export const makeClient = (options: { readonly baseUrl: string; readonly token: string }) =>
  HttpApiClient.make(PublicApi, {
    baseUrl: options.baseUrl,
    transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(options.token))
  })

/** What `makeClient` gives: `parley.webhooks.messageReceived(…)`, `parley.deliveries.list(…)`, … */
export type ParleyClient = Effect.Success<ReturnType<typeof makeClient>>

export { signatureHeaders, verifyWebhook } from "./Delivery/Signature.js"
export type { SignInput, VerifyInput, VerifyResult } from "./Delivery/Signature.js"
export * from "./Domain/Delivery.js"
export * from "./Domain/EventData.js"
export * from "./Domain/WebhookEvent.js"
