/** Workspaces and their credentials: API tokens, the webhook secret, tones (docs/api.md). */
import * as SqlClient from "effect/sql/SqlClient"
import * as Cache from "effect/Cache"
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import { Crypto, generateToken, generateWebhookSecret, hashToken } from "../Auth/Crypto.js"
import * as AppConfig from "../Config.js"
import { NotFound } from "../Domain/Errors.js"
import type { TokenId, ToneId, WorkspaceId } from "../Domain/Ids.js"
import type { Tone, Workspace } from "../Domain/Workspace.js"
import { JobQueue } from "../Jobs/Queue.js"
import { orDieSql } from "../Sql.js"
import { Invalidation } from "./Invalidation.js"
import { PurgeWorkspace } from "./PurgeJob.js"
import { WorkspacesRepo } from "./Repo.js"

export interface WebhookSecrets {
  readonly current: string
  /** The secret before the last rotation, while its grace period lasts. */
  readonly previous: Option.Option<string>
}

const workspaceNotFound = new NotFound({ detail: "Workspace not found" })
const tokenNotFound = new NotFound({ detail: "Token not found" })

const found = <A>(error: NotFound) => (option: Option.Option<A>) =>
  Option.match(option, { onNone: () => Effect.fail(error), onSome: Effect.succeed })

/** Rows one statement of a workspace's purge removes at most (a batch is one short transaction). */
const PURGE_BATCH = 500

/**
 * How long after a workspace is deleted its data is purged: requests that were authenticated before
 * the deletion (on any instance) have finished by then, so none writes into a workspace being removed.
 */
const PURGE_DELAY = Duration.seconds(30)

export class Workspaces extends Context.Service<Workspaces>()("Parley/Workspaces", {
  make: Effect.gen(function*() {
    const repo = yield* WorkspacesRepo
    const crypto = yield* Crypto
    const sql = yield* SqlClient.SqlClient
    const queue = yield* JobQueue
    const invalidation = yield* Invalidation
    const rotationGrace = yield* AppConfig.SecretRotationGrace
    const tokenCacheTtl = yield* AppConfig.TokenCacheTtl

    /**
     * Token hash → its caller, for `PARLEY_TOKEN_CACHE_TTL`: each request authenticates, and the lookup
     * was one of message-received's database round trips. Only found tokens are kept (a failed lookup
     * or an unknown token is asked again), and a revocation empties the cache.
     */
    const tokens = yield* Cache.makeWith(
      (hash: string) =>
        repo.findActiveToken(hash).pipe(
          Effect.map(Option.map((row) => ({ workspaceId: row.workspaceId, tokenId: row.id }))),
          orDieSql
        ),
      {
        capacity: 10_000,
        timeToLive: (exit) => Exit.isSuccess(exit) && Option.isSome(exit.value) ? tokenCacheTtl : Duration.zero
      }
    )

    yield* invalidation.register(Cache.invalidateAll(tokens))

    const issueToken = (workspaceId: WorkspaceId, name: string | null) =>
      Effect.gen(function*() {
        const token = generateToken("prl")
        const row = yield* repo.insertToken({ workspaceId, tokenHash: hashToken(token), name, revokedAt: null })
        return { id: row.id, token }
      })

    /** A new workspace with its first API token and its webhook secret (both shown only now). */
    const create = Effect.fn("Workspaces.create")(function*(name: string) {
      const webhookSecret = generateWebhookSecret()
      const workspace = yield* repo.insert({
        name,
        webhookSecret: crypto.seal(webhookSecret),
        previousWebhookSecret: null,
        previousSecretExpiresAt: null
      })
      const token = yield* issueToken(workspace.id, "default")
      return { workspace, apiToken: token.token, webhookSecret }
    }, orDieSql)

    const get = Effect.fn("Workspaces.get")(function*(id: WorkspaceId) {
      return yield* repo.findById(id).pipe(Effect.flatMap(found(workspaceNotFound)))
    }, orDieSql)

    const list = Effect.fn("Workspaces.list")(function*() {
      return yield* repo.list()
    }, orDieSql)

    const count = orDieSql(repo.count)

    /** The secrets that sign the workspace's webhooks now. */
    /** The current secret and, during its grace period, the previous one, opened from their stored form. */
    const openWebhookSecrets = (stored: Pick<Workspace, "webhookSecret" | "previousWebhookSecret" | "previousSecretExpiresAt">) =>
      Effect.gen(function*() {
        const now = yield* DateTime.now
        const current = yield* crypto.open(stored.webhookSecret)
        const previousValid = stored.previousSecretExpiresAt !== null &&
          DateTime.isLessThan(now, stored.previousSecretExpiresAt)
        const previous = previousValid && stored.previousWebhookSecret !== null
          ? Option.some(yield* crypto.open(stored.previousWebhookSecret))
          : Option.none()
        return { current, previous } satisfies WebhookSecrets
      })

    const webhookSecrets = Effect.fn("Workspaces.webhookSecrets")(function*(id: WorkspaceId) {
      return yield* openWebhookSecrets(yield* get(id))
    })

    const rotateSecret = Effect.fn("Workspaces.rotateSecret")(function*(id: WorkspaceId) {
      const webhookSecret = generateWebhookSecret()
      const previousExpiresAt = DateTime.addDuration(yield* DateTime.now, rotationGrace)
      yield* repo.rotateSecret({ id, webhookSecret: crypto.seal(webhookSecret), previousExpiresAt }).pipe(
        Effect.flatMap(found(workspaceNotFound))
      )
      return { webhookSecret, previousSecretExpiresAt: previousExpiresAt }
    }, orDieSql)

    const createToken = Effect.fn("Workspaces.createToken")(function*(id: WorkspaceId, name: string | null) {
      yield* get(id)
      return yield* issueToken(id, name)
    }, orDieSql)

    const listTokens = Effect.fn("Workspaces.listTokens")(function*(id: WorkspaceId) {
      yield* get(id)
      return yield* repo.listTokens(id)
    }, orDieSql)

    /** Whether the workspace's API token `id` still works (not revoked, the workspace not deleted). */
    const isTokenActive = Effect.fn("Workspaces.isTokenActive")(function*(workspaceId: WorkspaceId, id: TokenId) {
      return Option.isSome(yield* repo.findActiveTokenById({ workspaceId, id }))
    }, orDieSql)

    const revokeToken = Effect.fn("Workspaces.revokeToken")(function*(id: TokenId) {
      yield* repo.revokeToken(id).pipe(Effect.flatMap(found(tokenNotFound)), Effect.tap(() => invalidation.announce), sql.withTransaction)
      yield* Cache.invalidateAll(tokens)
    }, orDieSql)

    /**
     * Deletes a workspace: at once (one transaction) it is gone for every API, its tokens are revoked
     * on every instance and its pending jobs (replies, deliveries) removed; a `purge_workspace` job then
     * removes its data in batches. Deleting it again re-queues the purge (after a crash, say).
     */
    const deleteWorkspace = Effect.fn("Workspaces.delete")(function*(id: WorkspaceId) {
      yield* Effect.gen(function*() {
        const integrations = yield* repo.markDeleted(id).pipe(Effect.flatMap(found(workspaceNotFound)))
        yield* queue.cancelGroups([id, ...integrations])
        yield* queue.enqueue(PurgeWorkspace, { workspaceId: id }, { group: id, delay: PURGE_DELAY })
        yield* invalidation.announce
      }).pipe(sql.withTransaction)
      yield* Cache.invalidateAll(tokens)
      yield* Effect.logInfo("Workspace deleted").pipe(Effect.annotateLogs("workspace.id", id))
    }, orDieSql)

    /** Removes a deleted workspace's data, a batch per transaction, until nothing is left. */
    const purge = Effect.fn("Workspaces.purge")(function*(id: WorkspaceId) {
      const integrations = yield* sql<{ readonly id: string }>`SELECT id FROM integrations WHERE workspace_id = ${id}`
      let removed = 0
      for (;;) {
        const n = yield* repo.purgeBatch(id, PURGE_BATCH).pipe(sql.withTransaction)
        if (n === 0) break
        removed += n
      }
      // Jobs a request queued while the deletion committed (authenticated just before it).
      yield* queue.cancelGroups([id, ...integrations.map((row) => row.id)])
      yield* Effect.logInfo("Workspace purged").pipe(Effect.annotateLogs({ "workspace.id": id, rows: removed }))
    }, orDieSql)

    /** The workspace a presented API token belongs to, if it is known and not revoked. */
    const authenticate = Effect.fn("Workspaces.authenticate")(function*(token: string) {
      return yield* Cache.get(tokens, hashToken(token))
    })

    const createTone = Effect.fn("Workspaces.createTone")(
      function*(workspaceId: WorkspaceId, tone: Pick<Tone, "name" | "instructions">) {
        yield* get(workspaceId)
        return yield* repo.insertTone({ workspaceId, ...tone })
      },
      orDieSql
    )

    const listTones = Effect.fn("Workspaces.listTones")(function*(workspaceId: WorkspaceId) {
      yield* get(workspaceId)
      return yield* repo.listTones(workspaceId)
    }, orDieSql)

    const findTone = Effect.fn("Workspaces.findTone")(function*(workspaceId: WorkspaceId, id: ToneId) {
      return yield* repo.findTone({ workspaceId, id })
    }, orDieSql)

    return {
      create,
      get,
      list,
      count,
      webhookSecrets,
      openWebhookSecrets,
      rotateSecret,
      createToken,
      listTokens,
      isTokenActive,
      revokeToken,
      delete: deleteWorkspace,
      purge,
      authenticate,
      createTone,
      listTones,
      findTone
    } as const
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
  static readonly layer = this.layerWithoutDependencies.pipe(Layer.provide([WorkspacesRepo.layer, Crypto.layer, JobQueue.layer, Invalidation.layer]))
}
