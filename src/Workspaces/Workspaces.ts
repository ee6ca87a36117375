/** Workspaces and their credentials: API tokens, the webhook secret, tones. */
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { Crypto, generateToken, generateWebhookSecret, hashToken } from "../Auth/Crypto.js"
import * as AppConfig from "../Config.js"
import { NotFound } from "../Domain/Errors.js"
import type { TokenId, WorkspaceId } from "../Domain/Ids.js"
import type { ToneId } from "../Domain/Ids.js"
import { type WorkspaceRow, WorkspacesRepo } from "./Repo.js"

export interface WebhookSecrets {
  readonly current: string
  /** The secret before the last rotation, while its grace period lasts. */
  readonly previous: Option.Option<string>
}

const workspaceNotFound = new NotFound({ detail: "Workspace not found" })

export class Workspaces extends Effect.Service<Workspaces>()("Parley/Workspaces", {
  dependencies: [WorkspacesRepo.Default, Crypto.Default],
  effect: Effect.gen(function*() {
    const repo = yield* WorkspacesRepo
    const crypto = yield* Crypto
    const rotationGrace = yield* AppConfig.SecretRotationGrace

    const issueToken = Effect.fn("Workspaces.issueToken")(function*(workspaceId: WorkspaceId, name: string | null) {
      const token = generateToken("prl")
      const row = yield* repo.insertToken({ workspaceId, tokenHash: hashToken(token), name }).pipe(Effect.orDie)
      return { id: row.id, token, name: row.name, createdAt: row.createdAt }
    })

    const create = Effect.fn("Workspaces.create")(function*(name: string) {
      const webhookSecret = generateWebhookSecret()
      const row = yield* repo.insert({ name, webhookSecret: crypto.seal(webhookSecret) }).pipe(Effect.orDie)
      const token = yield* issueToken(row.id, "default")
      return { id: row.id, name: row.name, apiToken: token.token, webhookSecret, createdAt: row.createdAt }
    })

    const get = Effect.fn("Workspaces.get")(function*(id: WorkspaceId) {
      return yield* repo.findById(id).pipe(
        Effect.orDie,
        Effect.flatMap(Option.match({ onNone: () => Effect.fail(workspaceNotFound), onSome: Effect.succeed }))
      )
    })

    const list = Effect.fn("Workspaces.list")(function*() {
      return yield* repo.list().pipe(Effect.orDie)
    })

    const count = repo.count.pipe(Effect.orDie)

    const secretsOf = (row: WorkspaceRow) =>
      Effect.gen(function*() {
        const now = yield* DateTime.now
        const current = yield* crypto.open(row.webhookSecret)
        const previousValid = row.previousWebhookSecret !== null && row.previousSecretExpiresAt !== null &&
          DateTime.lessThan(now, row.previousSecretExpiresAt)
        const previous = previousValid && row.previousWebhookSecret !== null
          ? Option.some(yield* crypto.open(row.previousWebhookSecret))
          : Option.none()
        return { current, previous } satisfies WebhookSecrets
      })

    const webhookSecrets = Effect.fn("Workspaces.webhookSecrets")(function*(id: WorkspaceId) {
      return yield* secretsOf(yield* get(id))
    })

    const rotateSecret = Effect.fn("Workspaces.rotateSecret")(function*(id: WorkspaceId) {
      const webhookSecret = generateWebhookSecret()
      const previousExpiresAt = DateTime.addDuration(yield* DateTime.now, rotationGrace)
      const row = yield* repo.rotateSecret({ id, webhookSecret: crypto.seal(webhookSecret), previousExpiresAt }).pipe(
        Effect.orDie,
        Effect.flatMap(Option.match({ onNone: () => Effect.fail(workspaceNotFound), onSome: Effect.succeed }))
      )
      return { webhookSecret, previousSecretExpiresAt: row.previousSecretExpiresAt ?? previousExpiresAt }
    })

    const createToken = Effect.fn("Workspaces.createToken")(function*(id: WorkspaceId, name: string | null) {
      yield* get(id)
      return yield* issueToken(id, name)
    })

    const listTokens = Effect.fn("Workspaces.listTokens")(function*(id: WorkspaceId) {
      yield* get(id)
      return yield* repo.listTokens(id).pipe(Effect.orDie)
    })

    const revokeToken = Effect.fn("Workspaces.revokeToken")(function*(id: TokenId) {
      yield* repo.revokeToken(id).pipe(
        Effect.orDie,
        Effect.flatMap(Option.match({
          onNone: () => Effect.fail(new NotFound({ detail: "Token not found" })),
          onSome: Effect.succeed
        }))
      )
    })

    /** The workspace a presented API token belongs to, if it is known and not revoked. */
    const authenticate = Effect.fn("Workspaces.authenticate")(function*(token: string) {
      const row = yield* repo.findActiveToken(hashToken(token)).pipe(Effect.orDie)
      return Option.map(row, (row) => ({ workspaceId: row.workspaceId, tokenId: row.id }))
    })

    const createTone = Effect.fn("Workspaces.createTone")(
      function*(workspaceId: WorkspaceId, tone: { readonly name: string; readonly instructions: string }) {
        yield* get(workspaceId)
        return yield* repo.insertTone({ workspaceId, ...tone }).pipe(Effect.orDie)
      }
    )

    const listTones = Effect.fn("Workspaces.listTones")(function*(workspaceId: WorkspaceId) {
      yield* get(workspaceId)
      return yield* repo.listTones(workspaceId).pipe(Effect.orDie)
    })

    const findTone = (workspaceId: WorkspaceId, id: ToneId) => repo.findTone({ workspaceId, id }).pipe(Effect.orDie)

    return {
      create,
      get,
      list,
      count,
      webhookSecrets,
      rotateSecret,
      createToken,
      listTokens,
      revokeToken,
      authenticate,
      createTone,
      listTones,
      findTone
    } as const
  })
}) {}
