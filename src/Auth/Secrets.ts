/**
 * `parley secrets reencrypt`: every secret at rest sealed with the current `PARLEY_ENCRYPTION_KEY` —
 * workspace webhook secrets (current and previous), helpdesk webhook secrets and custom webhook header
 * values. Plain text (stored before a key was set) is sealed; what the previous key sealed
 * (`PARLEY_ENCRYPTION_KEY_PREVIOUS`) is re-sealed; what the current key sealed is left alone, so a
 * second run changes nothing. One row per transaction, under its row lock: running instances may go
 * on writing meanwhile.
 */
import * as SqlClient from "effect/sql/SqlClient"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { mapSecrets } from "../Domain/Integration.js"
import { IntegrationsRepo } from "../Integrations/Repo.js"
import { orDieSql } from "../Sql.js"
import { WorkspacesRepo } from "../Workspaces/Repo.js"
import { Crypto, type SealState } from "./Crypto.js"

export class NoEncryptionKey extends Schema.TaggedError<NoEncryptionKey>()("NoEncryptionKey", {
  message: Schema.String
}) {}

/** A stored secret neither key opens: it stays as it is, and the run fails after going over everything. */
export class UnreadableSecrets extends Schema.TaggedError<UnreadableSecrets>()("UnreadableSecrets", {
  message: Schema.String
}) {}

/** What a run did, counted per secret. */
export interface ReencryptCounts {
  /** Were plain text, now sealed. */
  readonly sealed: number
  /** Were sealed by the previous key, now by the current one. */
  readonly resealed: number
  /** Were sealed by the current key already. */
  readonly unchanged: number
  /** Sealed by neither key: left as they were. */
  readonly unreadable: number
}

export class Secrets extends Context.Service<Secrets>()("Parley/Secrets", {
  make: Effect.gen(function*() {
    const crypto = yield* Crypto
    const workspaces = yield* WorkspacesRepo
    const integrations = yield* IntegrationsRepo
    const sql = yield* SqlClient.SqlClient

    const reencrypt = Effect.fn("Secrets.reencrypt")(function*() {
      if (!crypto.encrypting) {
        return yield* new NoEncryptionKey({ message: "PARLEY_ENCRYPTION_KEY is not set: there is no key to seal with" })
      }
      const counts: Record<SealState, number> = { plain: 0, current: 0, previous: 0, unreadable: 0 }
      /** The value to store instead of `stored`, counted. */
      const reseal = (stored: string): string => {
        const { state, value } = crypto.reseal(stored)
        counts[state]++
        return value
      }

      for (const { id } of yield* workspaces.allIds()) {
        yield* Effect.gen(function*() {
          const row = yield* workspaces.lockSecrets(id)
          if (Option.isNone(row)) return
          const { previousWebhookSecret, webhookSecret } = row.value
          const next = {
            id,
            webhookSecret: reseal(webhookSecret),
            previousWebhookSecret: previousWebhookSecret === null ? null : reseal(previousWebhookSecret)
          }
          if (next.webhookSecret !== webhookSecret || next.previousWebhookSecret !== previousWebhookSecret) {
            yield* workspaces.writeSecrets(next)
          }
        }).pipe(sql.withTransaction)
      }

      for (const { id } of yield* integrations.allIds()) {
        yield* Effect.gen(function*() {
          const row = yield* integrations.lockStored(id)
          if (Option.isNone(row)) return
          let changed = false
          const settings = mapSecrets(row.value.settings, (stored) => {
            const next = reseal(stored)
            changed ||= next !== stored
            return next
          })
          if (changed) yield* integrations.writeStored({ id, settings })
        }).pipe(sql.withTransaction)
      }

      // Workspaces' own AI provider keys (docs/ai.md).
      yield* Effect.gen(function*() {
        const keys = yield* sql<{ readonly workspaceId: string; readonly apiKey: string }>`
          SELECT workspace_id, api_key FROM workspace_ai_settings WHERE api_key IS NOT NULL FOR UPDATE`
        for (const { apiKey, workspaceId } of keys) {
          const next = reseal(apiKey)
          if (next !== apiKey) {
            yield* sql`UPDATE workspace_ai_settings SET api_key = ${next}, updated_at = now()
                       WHERE workspace_id = ${workspaceId}`
          }
        }
      }).pipe(sql.withTransaction)

      const result: ReencryptCounts = {
        sealed: counts.plain,
        resealed: counts.previous,
        unchanged: counts.current,
        unreadable: counts.unreadable
      }
      if (result.unreadable > 0) {
        return yield* new UnreadableSecrets({
          message: `${result.unreadable} secret(s) could be opened by neither PARLEY_ENCRYPTION_KEY nor ` +
            `PARLEY_ENCRYPTION_KEY_PREVIOUS and were left as they are (${result.sealed} sealed, ` +
            `${result.resealed} re-sealed, ${result.unchanged} unchanged)`
        })
      }
      return result
    }, orDieSql)

    return { reencrypt } as const
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
  static readonly layer = this.layerWithoutDependencies.pipe(Layer.provide([Crypto.layer, WorkspacesRepo.layer, IntegrationsRepo.layer]))
}
