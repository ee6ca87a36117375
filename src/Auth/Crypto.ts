/**
 * Credentials at rest. API tokens are random (32 bytes) and stored only as SHA-256 hashes: with that
 * much entropy a slow hash adds nothing, and a fast one lets every request look its token up by index.
 * Secrets Parley must read back (workspace webhook secrets, helpdesk webhook secrets, custom webhook
 * header values, workspaces' AI provider keys) are sealed with AES-256-GCM when `PARLEY_ENCRYPTION_KEY` is set. After a key
 * rotation, `PARLEY_ENCRYPTION_KEY_PREVIOUS` still opens what the old key sealed (GCM's tag tells the
 * keys apart), until `parley secrets reencrypt` has re-sealed everything with the new one.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as crypto from "node:crypto"
import * as AppConfig from "../Config.js"

export const SEALED_PREFIX = "aes256gcm:v1:"

/** Whether a stored value is sealed (values stored while no key was configured are not). */
export const isSealed = (stored: string): boolean => stored.startsWith(SEALED_PREFIX)

export const generateToken = (prefix: string): string => `${prefix}_${crypto.randomBytes(32).toString("base64url")}`

/** `whsec_` + base64, the Standard Webhooks secret format: its base64 part is the HMAC key there. */
export const generateWebhookSecret = (): string => `whsec_${crypto.randomBytes(32).toString("base64")}`

export const hashToken = (token: string): string => crypto.createHash("sha256").update(token, "utf8").digest("hex")

export const constantTimeEqual = (a: string, b: string): boolean => {
  const left = Buffer.from(a, "utf8")
  const right = Buffer.from(b, "utf8")
  return left.length === right.length && crypto.timingSafeEqual(left, right)
}

const sealWith = (key: Buffer, plaintext: string): string => {
  const iv = crypto.randomBytes(12)
  const cipher = crypto.createCipheriv("aes-256-gcm", key, iv)
  const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()])
  return `${SEALED_PREFIX}${iv.toString("base64")}:${cipher.getAuthTag().toString("base64")}:${body.toString("base64")}`
}

/** The plaintext of a sealed value, or undefined when `key` is not the key that sealed it. */
const openWith = (key: Buffer, stored: string): string | undefined => {
  try {
    const [iv, tag, body] = stored.slice(SEALED_PREFIX.length).split(":")
    const decipher = crypto.createDecipheriv("aes-256-gcm", key, Buffer.from(iv ?? "", "base64"))
    decipher.setAuthTag(Buffer.from(tag ?? "", "base64"))
    return Buffer.concat([decipher.update(Buffer.from(body ?? "", "base64")), decipher.final()]).toString("utf8")
  } catch {
    return undefined
  }
}

/** What a stored secret is, for `reencrypt`: plain text, sealed by the current key, by the previous one, or by neither. */
export type SealState = "plain" | "current" | "previous" | "unreadable"

export class Crypto extends Context.Service<Crypto>()("Parley/Crypto", {
  make: Effect.gen(function*() {
    const key = Option.getOrUndefined(yield* AppConfig.EncryptionKey)
    const previous = Option.getOrUndefined(yield* AppConfig.EncryptionKeyPrevious)
    if (previous !== undefined && key === undefined) {
      return yield* Effect.die("PARLEY_ENCRYPTION_KEY_PREVIOUS is set but PARLEY_ENCRYPTION_KEY is not")
    }

    /** The value to store: sealed when a key is configured, as is otherwise. */
    const seal = (plaintext: string): string => key === undefined ? plaintext : sealWith(key, plaintext)

    /**
     * What `stored` should be under the current key, and what it was: plain text is sealed, what the
     * previous key sealed is re-sealed, the rest is left as it is.
     */
    const reseal = (stored: string): { readonly state: SealState; readonly value: string } => {
      if (!isSealed(stored)) return { state: "plain", value: seal(stored) }
      if (key === undefined) return { state: "unreadable", value: stored }
      if (openWith(key, stored) !== undefined) return { state: "current", value: stored }
      const plaintext = previous !== undefined ? openWith(previous, stored) : undefined
      return plaintext !== undefined
        ? { state: "previous", value: sealWith(key, plaintext) }
        : { state: "unreadable", value: stored }
    }

    /**
     * The plaintext of a stored value; a sealed value that neither key opens is a defect. `what` names
     * the value in that defect's message.
     */
    const open = (stored: string, what = "A secret"): Effect.Effect<string> => {
      if (!isSealed(stored)) return Effect.succeed(stored)
      if (key === undefined) return Effect.die(`${what} is encrypted but PARLEY_ENCRYPTION_KEY is not set`)
      const plaintext = openWith(key, stored) ?? (previous !== undefined ? openWith(previous, stored) : undefined)
      return plaintext !== undefined ? Effect.succeed(plaintext) : Effect.die(
        `${what} could not be decrypted: was it sealed with PARLEY_ENCRYPTION_KEY (or PARLEY_ENCRYPTION_KEY_PREVIOUS)?`
      )
    }

    return { seal, open, reseal, encrypting: key !== undefined } as const
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
  static readonly layer = this.layerWithoutDependencies
}
