/**
 * Parley for TypeScript integrators: the API definition and a typed client checked against the same
 * schemas the server uses.
 *
 * ```ts
 * import { makeClient } from "parley"
 * const parley = yield* makeClient({ baseUrl: "https://parley.example.com", token: apiToken })
 * const { message, conversation } = yield* parley.webhooks.messageReceived({
 *   path: { integration_id }, payload: { id: "m-1", role: "human", customerId, conversationId: "c-1", text: "Hi" }
 * })
 * ```
 */
import * as HttpApiClient from "@effect/platform/HttpApiClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { PublicApi } from "./Api.js"

export { Api, PublicApi } from "./Api.js"
export * from "./Domain/Conversation.js"
export * from "./Domain/Csat.js"
export * from "./Domain/Customer.js"
export * from "./Domain/Errors.js"
export * from "./Domain/Ids.js"
export * from "./Domain/Integration.js"

/** A typed client of the public API, authenticated with a workspace API token. Needs an `HttpClient`. */
export const makeClient = (options: { readonly baseUrl: string; readonly token: string }) =>
  HttpApiClient.make(PublicApi, {
    baseUrl: options.baseUrl,
    transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(options.token))
  })

export { signatureHeaders, verifyWebhook } from "./Delivery/Signature.js"
export type { VerifyInput, VerifyResult } from "./Delivery/Signature.js"
export * from "./Domain/Delivery.js"
export * from "./Domain/EventData.js"
export * from "./Domain/WebhookEvent.js"
