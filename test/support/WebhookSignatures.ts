/**
 * Checks a delivered webhook's signatures the way an integrator's receiver would, independently of
 * Parley's code (docs/webhooks.md, "Signatures"): `X-Parley-Webhook-Signature` is recomputed here with
 * `node:crypto`, and the Standard Webhooks headers are verified by the `standardwebhooks` package.
 * Parley's own `verifyWebhook` shares its HMAC with the signer (src/Delivery/Signature.ts), so a mistake
 * in how a signature is computed would pass it; end-to-end tests check deliveries with this instead.
 */
import { expect } from "@effect/vitest"
import { createHmac } from "node:crypto"
import { Webhook } from "standardwebhooks"
import type { Received } from "./Receiver.js"

/** Lowercase hex HMAC-SHA256 of `<timestamp>.<raw body>`, keyed with the secret's UTF-8 text (`whsec_` included). */
export const parleySignature = (secret: string, timestamp: string, body: string): string =>
  createHmac("sha256", Buffer.from(secret, "utf8")).update(`${timestamp}.${body}`, "utf8").digest("hex")

/** What docs/webhooks.md tells receivers to reject: a timestamp more than 5 minutes away. */
const TOLERANCE_SECONDS = 300

/**
 * Fails the test unless `request` is signed with `secret` as docs/webhooks.md says: the Parley headers
 * (timestamp and hex signature) and the Standard Webhooks ones (`webhook-id`, `webhook-timestamp`,
 * `webhook-signature`), for the same timestamp. With `previousSecret` (a rotation's grace period), both
 * secrets' signatures must be there too; without it, no previous-secret signature may be.
 */
export const expectSignedWebhook = (
  request: Received,
  secret: string,
  options: { readonly previousSecret?: string } = {}
): void => {
  const { body, headers } = request
  const timestamp = headers["x-parley-webhook-timestamp"]
  expect(timestamp, "X-Parley-Webhook-Timestamp").toMatch(/^\d+$/)
  const seconds = Number(timestamp)
  expect(Math.abs(Math.floor(Date.now() / 1000) - seconds), "timestamp within the tolerance").toBeLessThanOrEqual(
    TOLERANCE_SECONDS
  )
  expect(headers["webhook-timestamp"], "webhook-timestamp").toBe(timestamp)
  expect(headers["x-parley-webhook-signature"], "X-Parley-Webhook-Signature").toBe(
    parleySignature(secret, timestamp ?? "", body)
  )
  expect(headers["x-parley-webhook-signature-previous"], "X-Parley-Webhook-Signature-Previous").toBe(
    options.previousSecret === undefined ? undefined : parleySignature(options.previousSecret, timestamp ?? "", body)
  )
  // `verify` throws on a missing header, a bad signature or a timestamp out of its own 5-minute tolerance.
  for (const key of options.previousSecret === undefined ? [secret] : [secret, options.previousSecret]) {
    expect(() => new Webhook(key).verify(body, headers), "standardwebhooks").not.toThrow()
  }
}
