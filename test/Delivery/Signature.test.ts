import { describe, expect, it } from "@effect/vitest"
import * as crypto from "node:crypto"
import { Webhook } from "standardwebhooks"
import { generateWebhookSecret } from "../../src/Auth/Crypto.js"
import { signatureHeaders, verifyWebhook } from "../../src/Delivery/Signature.js"

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
const OLD_SECRET = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"
const EVENT_ID = "6b7d1f0e-9c3a-4a53-8a4c-2f1e0d9c8b7a"
const TIMESTAMP = 1_795_000_000
const BODY = JSON.stringify({
  event: "send_messages",
  eventId: EVENT_ID,
  data: { messages: [{ role: "ai", text: "Grüße — your parcel ships today 📦" }] }
})

/** Independent of the module under test: Parley's own scheme, hex HMAC keyed with the secret's UTF-8 text. */
const parleyHex = (secret: string, timestamp: number | string, body: string) =>
  crypto.createHmac("sha256", Buffer.from(secret, "utf8")).update(`${timestamp}.${body}`, "utf8").digest("hex")

/** Independent of the module under test: Standard Webhooks, base64 HMAC keyed with the base64 after `whsec_`. */
const standardBase64 = (secret: string, id: string, timestamp: number | string, body: string) =>
  crypto
    .createHmac("sha256", Buffer.from(secret.replace(/^whsec_/, ""), "base64"))
    .update(`${id}.${timestamp}.${body}`, "utf8")
    .digest("base64")

/** The headers as Node's `IncomingHttpHeaders` has them: lowercase keys. */
const lowercase = (headers: Record<string, string>): Record<string, string> =>
  Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]))

const sign = (overrides: { secret?: string; previousSecret?: string; timestamp?: number; body?: string } = {}) =>
  signatureHeaders({
    secret: overrides.secret ?? SECRET,
    previousSecret: overrides.previousSecret,
    id: EVENT_ID,
    timestamp: overrides.timestamp ?? TIMESTAMP,
    body: overrides.body ?? BODY
  })

const nowSeconds = () => Math.floor(Date.now() / 1000)

describe("signatureHeaders", () => {
  it("signs <timestamp>.<body> as lowercase hex HMAC-SHA256 keyed with the secret's text, plus Standard Webhooks", () => {
    const headers = sign()
    const hex = parleyHex(SECRET, TIMESTAMP, BODY)
    expect(hex).toMatch(/^[0-9a-f]{64}$/)
    expect(headers).toEqual({
      "X-Parley-Webhook-Timestamp": "1795000000",
      "X-Parley-Webhook-Signature": hex,
      "webhook-id": EVENT_ID,
      "webhook-timestamp": "1795000000",
      "webhook-signature": `v1,${standardBase64(SECRET, EVENT_ID, TIMESTAMP, BODY)}`
    })
  })

  it("writes the timestamp as whole Unix seconds and signs that exact value", () => {
    const headers = sign({ timestamp: TIMESTAMP + 0.999 })
    expect(headers["X-Parley-Webhook-Timestamp"]).toBe(String(TIMESTAMP))
    expect(headers["webhook-timestamp"]).toBe(String(TIMESTAMP))
    expect(headers["X-Parley-Webhook-Signature"]).toBe(parleyHex(SECRET, TIMESTAMP, BODY))
  })

  it("a different body, secret or timestamp gives a different signature", () => {
    const base = sign()["X-Parley-Webhook-Signature"]
    expect(sign({ body: `${BODY} ` })["X-Parley-Webhook-Signature"]).not.toBe(base)
    expect(sign({ secret: OLD_SECRET })["X-Parley-Webhook-Signature"]).not.toBe(base)
    expect(sign({ timestamp: TIMESTAMP + 1 })["X-Parley-Webhook-Signature"]).not.toBe(base)
  })

  it("during a rotation signs with both secrets: Signature-Previous and two v1 entries", () => {
    const headers = sign({ previousSecret: OLD_SECRET })
    expect(headers["X-Parley-Webhook-Signature"]).toBe(parleyHex(SECRET, TIMESTAMP, BODY))
    expect(headers["X-Parley-Webhook-Signature-Previous"]).toBe(parleyHex(OLD_SECRET, TIMESTAMP, BODY))
    const entries = headers["webhook-signature"]!.split(" ")
    expect(entries).toEqual([
      `v1,${standardBase64(SECRET, EVENT_ID, TIMESTAMP, BODY)}`,
      `v1,${standardBase64(OLD_SECRET, EVENT_ID, TIMESTAMP, BODY)}`
    ])
  })
})

describe("verifyWebhook", () => {
  it("accepts a correct signature with Node-style (lowercase) headers", () => {
    expect(verifyWebhook({ secret: SECRET, headers: lowercase(sign()), rawBody: BODY, now: TIMESTAMP }))
      .toEqual({ ok: true, timestamp: TIMESTAMP })
  })

  it("accepts a correct signature with a Fetch Headers object", () => {
    expect(verifyWebhook({ secret: SECRET, headers: new Headers(sign()), rawBody: BODY, now: TIMESTAMP }))
      .toEqual({ ok: true, timestamp: TIMESTAMP })
  })

  it("accepts the raw body as bytes (UTF-8)", () => {
    const rawBody = new TextEncoder().encode(BODY)
    expect(verifyWebhook({ secret: SECRET, headers: lowercase(sign()), rawBody, now: TIMESTAMP }))
      .toEqual({ ok: true, timestamp: TIMESTAMP })
  })

  it("accepts headers signed independently with node:crypto (only the X-Parley headers)", () => {
    const headers = {
      "x-parley-webhook-timestamp": String(TIMESTAMP),
      "x-parley-webhook-signature": parleyHex(SECRET, TIMESTAMP, BODY)
    }
    expect(verifyWebhook({ secret: SECRET, headers, rawBody: BODY, now: TIMESTAMP }))
      .toEqual({ ok: true, timestamp: TIMESTAMP })
  })

  it("rejects a tampered body", () => {
    const tampered = BODY.replace("today", "tomorrow")
    expect(tampered).not.toBe(BODY)
    const result = verifyWebhook({ secret: SECRET, headers: lowercase(sign()), rawBody: tampered, now: TIMESTAMP })
    expect(result.ok).toBe(false)
  })

  it("rejects a wrong secret", () => {
    const result = verifyWebhook({ secret: OLD_SECRET, headers: lowercase(sign()), rawBody: BODY, now: TIMESTAMP })
    expect(result.ok).toBe(false)
  })

  it("rejects a signature header that was tampered with", () => {
    const headers = lowercase(sign())
    const signature = headers["x-parley-webhook-signature"]!
    headers["x-parley-webhook-signature"] = `${signature.slice(0, -1)}${signature.endsWith("0") ? "1" : "0"}`
    expect(verifyWebhook({ secret: SECRET, headers, rawBody: BODY, now: TIMESTAMP }).ok).toBe(false)
  })

  it("rejects a timestamp older or newer than the default tolerance of 300 s, accepts one at the edge", () => {
    const headers = lowercase(sign())
    const at = (now: number) => verifyWebhook({ secret: SECRET, headers, rawBody: BODY, now }).ok
    expect(at(TIMESTAMP + 300)).toBe(true)
    expect(at(TIMESTAMP - 300)).toBe(true)
    expect(at(TIMESTAMP + 301)).toBe(false)
    expect(at(TIMESTAMP - 301)).toBe(false)
    expect(at(TIMESTAMP + 86_400)).toBe(false)
  })

  it("honours a custom toleranceSeconds", () => {
    const headers = lowercase(sign())
    const at = (now: number, toleranceSeconds: number) =>
      verifyWebhook({ secret: SECRET, headers, rawBody: BODY, now, toleranceSeconds }).ok
    expect(at(TIMESTAMP + 10, 10)).toBe(true)
    expect(at(TIMESTAMP + 11, 10)).toBe(false)
    expect(at(TIMESTAMP - 11, 10)).toBe(false)
    expect(at(TIMESTAMP + 1000, 3600)).toBe(true)
  })

  it("rejects a tampered timestamp even within tolerance (the timestamp is signed)", () => {
    const headers = lowercase(sign())
    headers["x-parley-webhook-timestamp"] = String(TIMESTAMP + 1)
    headers["webhook-timestamp"] = String(TIMESTAMP + 1)
    expect(verifyWebhook({ secret: SECRET, headers, rawBody: BODY, now: TIMESTAMP }).ok).toBe(false)
  })

  it("rejects a missing or non-numeric timestamp", () => {
    const { "webhook-timestamp": _standard, "x-parley-webhook-timestamp": _parley, ...withoutTimestamp } = lowercase(
      sign()
    )
    expect(verifyWebhook({ secret: SECRET, headers: withoutTimestamp, rawBody: BODY, now: TIMESTAMP }).ok).toBe(false)
    const garbled = { ...lowercase(sign()), "x-parley-webhook-timestamp": "yesterday", "webhook-timestamp": "yesterday" }
    expect(verifyWebhook({ secret: SECRET, headers: garbled, rawBody: BODY, now: TIMESTAMP }).ok).toBe(false)
  })

  it("rejects a request with no signature at all", () => {
    const headers = { "x-parley-webhook-timestamp": String(TIMESTAMP) }
    expect(verifyWebhook({ secret: SECRET, headers, rawBody: BODY, now: TIMESTAMP }).ok).toBe(false)
  })

  it("during a rotation both the new and the previous secret verify; a third does not", () => {
    const rotated = sign({ previousSecret: OLD_SECRET })
    for (const headers of [lowercase(rotated), new Headers(rotated)]) {
      expect(verifyWebhook({ secret: SECRET, headers, rawBody: BODY, now: TIMESTAMP })).toEqual({
        ok: true,
        timestamp: TIMESTAMP
      })
      expect(verifyWebhook({ secret: OLD_SECRET, headers, rawBody: BODY, now: TIMESTAMP })).toEqual({
        ok: true,
        timestamp: TIMESTAMP
      })
      expect(verifyWebhook({ secret: generateWebhookSecret(), headers, rawBody: BODY, now: TIMESTAMP }).ok).toBe(false)
      expect(verifyWebhook({ secret: OLD_SECRET, headers, rawBody: `${BODY}\n`, now: TIMESTAMP }).ok).toBe(false)
    }
  })

  it("falls back to the Standard Webhooks headers when the X-Parley ones are absent, with either rotation secret", () => {
    const {
      "x-parley-webhook-signature": _signature,
      "x-parley-webhook-signature-previous": _previous,
      "x-parley-webhook-timestamp": _timestamp,
      ...standardOnly
    } = lowercase(sign({ previousSecret: OLD_SECRET }))
    expect(Object.keys(standardOnly).sort()).toEqual(["webhook-id", "webhook-signature", "webhook-timestamp"])
    expect(verifyWebhook({ secret: SECRET, headers: standardOnly, rawBody: BODY, now: TIMESTAMP }).ok).toBe(true)
    expect(verifyWebhook({ secret: OLD_SECRET, headers: standardOnly, rawBody: BODY, now: TIMESTAMP }).ok).toBe(true)
    expect(verifyWebhook({ secret: SECRET, headers: standardOnly, rawBody: `${BODY} `, now: TIMESTAMP }).ok).toBe(false)
    expect(verifyWebhook({ secret: SECRET, headers: standardOnly, rawBody: BODY, now: TIMESTAMP + 301 }).ok).toBe(false)
  })
})

describe("Standard Webhooks compatibility (the standardwebhooks package)", () => {
  it("verifies Parley's headers for a secret from generateWebhookSecret()", () => {
    const secret = generateWebhookSecret()
    const headers = signatureHeaders({ secret, id: EVENT_ID, timestamp: nowSeconds(), body: BODY })
    expect(new Webhook(secret).verify(BODY, headers)).toEqual(JSON.parse(BODY))
    // Parley's own verifier agrees with the library on the same headers.
    expect(verifyWebhook({ secret, headers, rawBody: BODY }).ok).toBe(true)
  })

  it("verifies during a rotation with either secret", () => {
    const secret = generateWebhookSecret()
    const previousSecret = generateWebhookSecret()
    const headers = signatureHeaders({ secret, previousSecret, id: EVENT_ID, timestamp: nowSeconds(), body: BODY })
    expect(new Webhook(secret).verify(BODY, headers)).toEqual(JSON.parse(BODY))
    expect(new Webhook(previousSecret).verify(BODY, headers)).toEqual(JSON.parse(BODY))
    expect(() => new Webhook(generateWebhookSecret()).verify(BODY, headers)).toThrow()
  })

  it("rejects a tampered body", () => {
    const secret = generateWebhookSecret()
    const headers = signatureHeaders({ secret, id: EVENT_ID, timestamp: nowSeconds(), body: BODY })
    expect(() => new Webhook(secret).verify(BODY.replace("today", "tomorrow"), headers)).toThrow()
  })

  it("verifyWebhook accepts what standardwebhooks itself signs (Standard Webhooks headers only)", () => {
    const secret = generateWebhookSecret()
    const timestamp = nowSeconds()
    const signature = new Webhook(secret).sign(EVENT_ID, new Date(timestamp * 1000), BODY)
    expect(signature).toBe(`v1,${standardBase64(secret, EVENT_ID, timestamp, BODY)}`)
    const headers = {
      "webhook-id": EVENT_ID,
      "webhook-timestamp": String(timestamp),
      "webhook-signature": signature
    }
    expect(verifyWebhook({ secret, headers, rawBody: BODY })).toEqual({ ok: true, timestamp })
    expect(verifyWebhook({ secret, headers: new Headers(headers), rawBody: BODY, now: timestamp })).toEqual({
      ok: true,
      timestamp
    })
    expect(verifyWebhook({ secret, headers, rawBody: `${BODY} `, now: timestamp }).ok).toBe(false)
    expect(verifyWebhook({ secret: generateWebhookSecret(), headers, rawBody: BODY, now: timestamp }).ok).toBe(false)
    expect(verifyWebhook({ secret, headers: { ...headers, "webhook-id": "other" }, rawBody: BODY, now: timestamp }).ok)
      .toBe(false)
  })
})
