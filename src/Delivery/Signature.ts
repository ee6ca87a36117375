/**
 * Webhook signatures, both sides.
 *
 * Parley's own (docs/webhooks.md): `X-Parley-Webhook-Timestamp` = Unix seconds, `X-Parley-Webhook-Signature` =
 * lowercase hex HMAC-SHA256 of `<timestamp>.<raw body>`, keyed with the webhook secret's text.
 * Standard Webhooks (https://www.standardwebhooks.com): `webhook-id`, `webhook-timestamp`,
 * `webhook-signature: v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`, keyed with the base64
 * part of the `whsec_` secret — so any Standard Webhooks library verifies Parley's deliveries.
 * During a rotation's grace period both secrets sign: `webhook-signature` lists both (space-separated)
 * and `X-Parley-Webhook-Signature-Previous` carries the previous secret's hex signature.
 *
 * This module has no Effect or Parley dependencies: integrators import `verifyWebhook` as it is.
 */
import * as crypto from "node:crypto"

export const HEADER_SIGNATURE = "x-parley-webhook-signature"
export const HEADER_SIGNATURE_PREVIOUS = "x-parley-webhook-signature-previous"
export const HEADER_TIMESTAMP = "x-parley-webhook-timestamp"

const hexSignature = (secret: string, timestamp: string, body: string) =>
  crypto.createHmac("sha256", Buffer.from(secret, "utf8")).update(`${timestamp}.${body}`, "utf8").digest("hex")

/** The Standard Webhooks key: the base64 after `whsec_` (a secret without the prefix is used as base64 too). */
const standardKey = (secret: string) => Buffer.from(secret.startsWith("whsec_") ? secret.slice(6) : secret, "base64")

const standardSignature = (secret: string, id: string, timestamp: string, body: string) =>
  crypto.createHmac("sha256", standardKey(secret)).update(`${id}.${timestamp}.${body}`, "utf8").digest("base64")

export interface SignInput {
  readonly secret: string
  /** The previous secret, while a rotation's grace period lasts. */
  readonly previousSecret?: string | undefined
  /** Unique per event, constant across its attempts (the `eventId`). */
  readonly id: string
  readonly timestamp: number
  readonly body: string
}

/** The headers that sign `body`. */
export const signatureHeaders = (input: SignInput): Record<string, string> => {
  const timestamp = String(Math.floor(input.timestamp))
  const secrets = input.previousSecret === undefined ? [input.secret] : [input.secret, input.previousSecret]
  return {
    "X-Parley-Webhook-Timestamp": timestamp,
    "X-Parley-Webhook-Signature": hexSignature(input.secret, timestamp, input.body),
    ...(input.previousSecret === undefined
      ? {}
      : { "X-Parley-Webhook-Signature-Previous": hexSignature(input.previousSecret, timestamp, input.body) }),
    "webhook-id": input.id,
    "webhook-timestamp": timestamp,
    "webhook-signature": secrets.map((s) => `v1,${standardSignature(s, input.id, timestamp, input.body)}`).join(" ")
  }
}

export type VerifyResult =
  | { readonly ok: true; readonly timestamp: number }
  | { readonly ok: false; readonly reason: string }

const equal = (a: string, b: string) => {
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  return left.length === right.length && crypto.timingSafeEqual(left, right)
}

const header = (headers: VerifyInput["headers"], name: string): string | undefined => {
  if (headers instanceof Headers) return headers.get(name) ?? undefined
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === name) return typeof value === "string" ? value : value?.[0]
  }
  return undefined
}

export interface VerifyInput {
  /** Your webhook secret (`whsec_...`), as shown by `parley workspace show`. */
  readonly secret: string
  /** The request's headers: a Fetch `Headers` or Node's `IncomingHttpHeaders`. */
  readonly headers: Headers | Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
  /** The exact, unparsed request body. */
  readonly rawBody: string | Uint8Array
  /** Largest accepted clock difference, in seconds (replay protection). */
  readonly toleranceSeconds?: number
  /** Now, in Unix seconds (for tests). */
  readonly now?: number
}

/**
 * Verifies a Parley webhook: its `X-Parley-Webhook-*` signature, or else its Standard Webhooks one.
 * Comparisons are constant-time; a timestamp more than `toleranceSeconds` (300) away is rejected.
 */
export const verifyWebhook = (input: VerifyInput): VerifyResult => {
  const body = typeof input.rawBody === "string" ? input.rawBody : Buffer.from(input.rawBody).toString("utf8")
  const tolerance = input.toleranceSeconds ?? 300
  const now = input.now ?? Math.floor(Date.now() / 1000)
  const timestamp = header(input.headers, HEADER_TIMESTAMP) ?? header(input.headers, "webhook-timestamp")
  if (timestamp === undefined || !/^\d+$/.test(timestamp)) return { ok: false, reason: "missing or invalid timestamp" }
  if (Math.abs(now - Number(timestamp)) > tolerance) return { ok: false, reason: "timestamp outside tolerance" }

  const parley = [header(input.headers, HEADER_SIGNATURE), header(input.headers, HEADER_SIGNATURE_PREVIOUS)]
  if (parley[0] !== undefined) {
    const expected = hexSignature(input.secret, timestamp, body)
    return parley.some((candidate) => candidate !== undefined && equal(candidate.toLowerCase(), expected))
      ? { ok: true, timestamp: Number(timestamp) }
      : { ok: false, reason: "signature mismatch" }
  }
  const id = header(input.headers, "webhook-id")
  const signatures = header(input.headers, "webhook-signature")
  if (id === undefined || signatures === undefined) return { ok: false, reason: "missing signature headers" }
  const expected = standardSignature(input.secret, id, timestamp, body)
  return signatures.split(" ").some((entry) => entry.startsWith("v1,") && equal(entry.slice(3), expected))
    ? { ok: true, timestamp: Number(timestamp) }
    : { ok: false, reason: "signature mismatch" }
}
