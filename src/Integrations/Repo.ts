/**
 * Integrations as stored. Their secrets (helpdesk webhook secrets, custom header values) are sealed
 * here on the way in and opened on the way out, so that nothing else ever sees a sealed value, and
 * nothing is written in clear while a key is configured. `stored*` read and write the sealed form, for
 * `parley secrets reencrypt`.
 */
import * as SqlClient from "effect/sql/SqlClient"
import * as SqlSchema from "effect/sql/SqlSchema"
import * as Cache from "effect/Cache"
import * as Duration from "effect/Duration"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Struct from "effect/Struct"
import { Crypto } from "../Auth/Crypto.js"
import * as AppConfig from "../Config.js"
import { IntegrationId, WorkspaceId } from "../Domain/Ids.js"
import { Integration, IntegrationSettings, mapSecrets, secretsOf } from "../Domain/Integration.js"
import { Workspace } from "../Domain/Workspace.js"
import { Invalidation } from "../Workspaces/Invalidation.js"

/** The workspace's webhook secrets as stored, read with the integration (see `findForDelivery`). */
const SealedWorkspaceSecrets = Schema.Struct(Workspace.fields).mapFields(
  Struct.pick(["webhookSecret", "previousWebhookSecret", "previousSecretExpiresAt"])
)

/** What a delivery attempt needs of its integration: the integration (opened), its workspace's secrets (sealed). */
export interface DeliveryTarget {
  readonly integration: Integration
  readonly secrets: typeof SealedWorkspaceSecrets.Type
}

export class IntegrationsRepo extends Context.Service<IntegrationsRepo>()("Parley/IntegrationsRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const crypto = yield* Crypto
    // The row's columns `id` and `kind` are the model's `integrationId` and `integration` (the API's names).
    const columns = sql.literal("id AS integration_id, kind AS integration, workspace_id, settings, created_at")

    const sealed = (settings: IntegrationSettings) => mapSecrets(settings, crypto.seal)

    const opened = (integration: Integration) =>
      Effect.gen(function*() {
        const plaintexts = new Map<string, string>()
        for (const secret of secretsOf(integration.settings)) plaintexts.set(secret, yield* crypto.open(secret))
        if (plaintexts.size === 0) return integration
        return Integration.make({
          ...integration,
          settings: mapSecrets(integration.settings, (secret) => plaintexts.get(secret) ?? secret)
        })
      })
    const openedOption = Effect.flatMap(Option.match({
      onNone: () => Effect.succeedNone,
      onSome: (integration: Integration) => Effect.asSome(opened(integration))
    }))

    const insertSealed = SqlSchema.findOne({
      Request: Integration.insert,
      Result: Integration,
      execute: (row) =>
        sql`INSERT INTO integrations (workspace_id, kind, settings)
            VALUES (${row.workspaceId}, ${row.integration}, ${row.settings}::jsonb) RETURNING ${columns}`
    })
    const insert = (row: typeof Integration.insert.Type) =>
      insertSealed({ ...row, settings: sealed(row.settings) }).pipe(Effect.flatMap(opened), forget)

    const listByWorkspace = (workspaceId: WorkspaceId) =>
      SqlSchema.findAll({
        Request: WorkspaceId,
        Result: Integration,
        execute: (workspaceId) => sql`SELECT ${columns} FROM integrations WHERE workspace_id = ${workspaceId} ORDER BY created_at, id`
      })(workspaceId).pipe(Effect.flatMap(Effect.forEach(opened)))

    const findInWorkspaceSealed = SqlSchema.findOneOption({
      Request: Schema.Struct({ workspaceId: WorkspaceId, id: IntegrationId }),
      Result: Integration,
      execute: ({ id, workspaceId }) => sql`SELECT ${columns} FROM integrations WHERE id = ${id} AND workspace_id = ${workspaceId}`
    })
    /**
     * The API's look-up, remembered for `PARLEY_INTEGRATION_CACHE_TTL` (found integrations only; a
     * failure or an unknown id is asked again). Every write below empties it.
     */
    const cacheTtl = yield* AppConfig.IntegrationCacheTtl
    const inWorkspace = yield* Cache.makeWith(
      (key: { readonly workspaceId: WorkspaceId; readonly id: IntegrationId }) =>
        findInWorkspaceSealed(key).pipe(openedOption),
      {
        capacity: 10_000,
        timeToLive: (exit) => Exit.isSuccess(exit) && Option.isSome(exit.value) ? cacheTtl : Duration.zero
      }
    )
    // A deleted workspace's integrations are forgotten on every instance at once.
    yield* (yield* Invalidation).register(Cache.invalidateAll(inWorkspace))
    // Keys are compared by value (Effect 4's structural equality).
    const findInWorkspace = (key: { readonly workspaceId: WorkspaceId; readonly id: IntegrationId }) =>
      Cache.get(inWorkspace, { workspaceId: key.workspaceId, id: key.id })
    /** After a write: this instance reads the integration anew. */
    const forget = <A, E, R>(write: Effect.Effect<A, E, R>) => Effect.tap(write, () => Cache.invalidateAll(inWorkspace))

    const findByIdSealed = SqlSchema.findOneOption({
      Request: IntegrationId,
      Result: Integration,
      execute: (id) => sql`SELECT ${columns} FROM integrations WHERE id = ${id}`
    })
    const findById = (id: IntegrationId) => findByIdSealed(id).pipe(openedOption)

    /**
     * What delivery attempts read, in one query for all of them: each integration (opened) with its
     * workspace's webhook secrets as stored (sealed; `Workspaces.openWebhookSecrets` opens them), by id.
     */
    const findForDelivery = (ids: ReadonlyArray<IntegrationId>) =>
      // The workspace's three columns keep their names: no column of `integrations` shares them.
      sql`SELECT i.id AS integration_id, i.kind AS integration, i.workspace_id, i.settings, i.created_at,
                 w.webhook_secret, w.previous_webhook_secret, w.previous_secret_expires_at
          FROM integrations i JOIN workspaces w ON w.id = i.workspace_id
          WHERE i.id IN ${sql.in(ids)}`.pipe(
        Effect.flatMap((rows) =>
          Effect.forEach(rows, (row) =>
            Effect.all({
              integration: Schema.decodeUnknownEffect(Integration)(row).pipe(Effect.flatMap(opened)),
              secrets: Schema.decodeUnknownEffect(SealedWorkspaceSecrets)(row)
            }))
        ),
        Effect.map((targets) => new Map<IntegrationId, DeliveryTarget>(targets.map((target) => [target.integration.integrationId, target])))
      )

    /** The integration, locked for the rest of the transaction: settings updates are read-modify-write. */
    const lockSealed = SqlSchema.findOneOption({
      Request: Schema.Struct({ workspaceId: WorkspaceId, id: IntegrationId }),
      Result: Integration,
      execute: ({ id, workspaceId }) =>
        sql`SELECT ${columns} FROM integrations WHERE id = ${id} AND workspace_id = ${workspaceId} FOR UPDATE`
    })
    const lock = (key: { readonly workspaceId: WorkspaceId; readonly id: IntegrationId }) =>
      lockSealed(key).pipe(openedOption)

    const updateSealed = SqlSchema.findOne({
      Request: Schema.Struct({ id: IntegrationId, settings: Schema.fromJsonString(IntegrationSettings) }),
      Result: Integration,
      execute: ({ id, settings }) =>
        sql`UPDATE integrations SET settings = ${settings}::jsonb, updated_at = now() WHERE id = ${id} RETURNING ${columns}`
    })
    const updateSettings = (update: { readonly id: IntegrationId; readonly settings: IntegrationSettings }) =>
      updateSealed({ id: update.id, settings: sealed(update.settings) }).pipe(Effect.flatMap(opened), forget)

    /** Turns deliveries to the integration's webhook off (a 410 Gone) or back on. */
    const setWebhookEnabled = (id: IntegrationId, enabled: boolean) =>
      sql`UPDATE integrations
          SET settings = jsonb_set(settings, '{webhookEnabled}', ${JSON.stringify(enabled)}::jsonb), updated_at = now()
          WHERE id = ${id}`.pipe(Effect.asVoid, forget)

    /** Every integration's id, for a pass over all of them. */
    const allIds = SqlSchema.findAll({
      Request: Schema.Void,
      Result: Schema.Struct({ id: IntegrationId }),
      execute: () => sql`SELECT id FROM integrations ORDER BY id`
    })

    /** The integration as stored (secrets sealed), locked for the rest of the transaction. */
    const lockStored = SqlSchema.findOneOption({
      Request: IntegrationId,
      Result: Integration,
      execute: (id) => sql`SELECT ${columns} FROM integrations WHERE id = ${id} FOR UPDATE`
    })

    /** Writes settings exactly as given (their secrets already sealed). */
    const writeStored = (update: { readonly id: IntegrationId; readonly settings: IntegrationSettings }) =>
      updateSealed(update).pipe(Effect.asVoid, forget)

    return {
      insert,
      listByWorkspace,
      findInWorkspace,
      findById,
      findForDelivery,
      lock,
      updateSettings,
      setWebhookEnabled,
      allIds,
      lockStored,
      writeStored
    } as const
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
  static readonly layer = this.layerWithoutDependencies.pipe(Layer.provide([Crypto.layer, Invalidation.layer]))
}
