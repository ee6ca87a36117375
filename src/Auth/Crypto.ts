/**
 * Credentials at rest. API tokens are random (32 bytes) and stored only as SHA-256 hashes: with that
 * much entropy a slow hash adds nothing, and a fast one lets every request look its token up by index.
 * Webhook secrets must be readable (Parley signs with them), so they are sealed with AES-256-GCM when
 * `PARLEY_ENCRYPTION_KEY` is set.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as crypto from "node:crypto"
import * as AppConfig from "../Config.js"

const SEALED_PREFIX = "aes256gcm:v1:"

export const generateToken = (prefix: string): string => `${prefix}_${crypto.randomBytes(32).toString("base64url")}`

/** `whsec_` + base64, the Standard Webhooks secret format: its base64 part is the HMAC key there. */
export const generateWebhookSecret = (): string => `whsec_${crypto.randomBytes(32).toString("base64")}`

export const hashToken = (token: string): string => crypto.createHash("sha256").update(token, "utf8").digest("hex")

export const constantTimeEqual = (a: string, b: string): boolean => {
  const left = Buffer.from(a, "utf8")
  const right = Buffer.from(b, "utf8")
  return left.length === right.length && crypto.timingSafeEqual(left, right)
}

/** Reads a 32-byte key given as 64 hex characters or as base64. */
const parseKey = (raw: string): Buffer | undefined => {
  const trimmed = raw.trim()
  const key = /^[0-9a-fA-F]{64}$/.test(trimmed) ? Buffer.from(trimmed, "hex") : Buffer.from(trimmed, "base64")
  return key.length === 32 ? key : undefined
}

export class Crypto extends Effect.Service<Crypto>()("Parley/Crypto", {
  effect: Effect.gen(function*() {
    // An empty value (e.g. `PARLEY_ENCRYPTION_KEY=` from a compose file) means no key.
    const configured = Option.filter(yield* AppConfig.EncryptionKey, (raw) => Redacted.value(raw).trim() !== "")
    const key = yield* Option.match(configured, {
      onNone: () => Effect.succeed(undefined),
      onSome: (raw) => {
        const key = parseKey(Redacted.value(raw))
        return key
          ? Effect.succeed(key)
          : Effect.dieMessage("PARLEY_ENCRYPTION_KEY must be 32 bytes, as 64 hex characters or base64")
      }
    })

    /** The value to store: sealed when a key is configured, as is otherwise. */
    const seal = (plaintext: string): string => {
      if (key === undefined) return plaintext
      const iv = crypto.randomBytes(12)
      const cipher = crypto.createCipheriv("aes-256-gcm", key, iv)
      const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()])
      return `${SEALED_PREFIX}${iv.toString("base64")}:${cipher.getAuthTag().toString("base64")}:${body.toString("base64")}`
    }

    /** The plaintext of a stored value; a sealed value with no (or the wrong) key is a defect. */
    const open = (stored: string): Effect.Effect<string> => {
      if (!stored.startsWith(SEALED_PREFIX)) return Effect.succeed(stored)
      if (key === undefined) {
        return Effect.dieMessage("A webhook secret is encrypted but PARLEY_ENCRYPTION_KEY is not set")
      }
      return Effect.try({
        try: () => {
          const [iv, tag, body] = stored.slice(SEALED_PREFIX.length).split(":")
          const decipher = crypto.createDecipheriv("aes-256-gcm", key, Buffer.from(iv ?? "", "base64"))
          decipher.setAuthTag(Buffer.from(tag ?? "", "base64"))
          return Buffer.concat([decipher.update(Buffer.from(body ?? "", "base64")), decipher.final()]).toString("utf8")
        },
        catch: () => new Error("A webhook secret could not be decrypted: is PARLEY_ENCRYPTION_KEY the key it was sealed with?")
      }).pipe(Effect.orDie)
    }

    return { seal, open, encrypting: key !== undefined } as const
  })
}) {}
