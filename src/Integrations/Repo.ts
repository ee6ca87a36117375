/**
 * Integrations as stored. Their secrets (helpdesk webhook secrets, custom header values) are sealed
 * here on the way in and opened on the way out, so that nothing else ever sees a sealed value, and
 * nothing is written in clear while a key is configured. `stored*` read and write the sealed form, for
 * `parley secrets reencrypt`.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Cache from "effect/Cache"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { Crypto } from "../Auth/Crypto.js"
import * as AppConfig from "../Config.js"
import { IntegrationId, WorkspaceId } from "../Domain/Ids.js"
import { Integration, IntegrationSettings, mapSecrets, secretsOf } from "../Domain/Integration.js"
import { Workspace } from "../Domain/Workspace.js"
import { Invalidation } from "../Workspaces/Invalidation.js"

/** The workspace's webhook secrets as stored, read with the integration (see `findForDelivery`). */
const SealedWorkspaceSecrets = Workspace.pipe(Schema.pick("webhookSecret", "previousWebhookSecret", "previousSecretExpiresAt"))

/** What a delivery attempt needs of its integration: the integration (opened), its workspace's secrets (sealed). */
export interface DeliveryTarget {
  readonly integration: Integration
  readonly secrets: typeof SealedWorkspaceSecrets.Type
}

export class IntegrationsRepo extends Effect.Service<IntegrationsRepo>()("Parley/IntegrationsRepo", {
  dependencies: [Crypto.Default, Invalidation.Default],
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const crypto = yield* Crypto

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

    const insertSealed = SqlSchema.single({
      Request: Integration.insert,
      Result: Integration,
      execute: (row) => sql`INSERT INTO integrations ${sql.insert(row)} RETURNING *`
    })
    const insert = (row: typeof Integration.insert.Type) =>
      insertSealed({ ...row, settings: sealed(row.settings) }).pipe(Effect.flatMap(opened), forget)

    const listByWorkspace = (workspaceId: WorkspaceId) =>
      SqlSchema.findAll({
        Request: WorkspaceId,
        Result: Integration,
        execute: (workspaceId) => sql`SELECT * FROM integrations WHERE workspace_id = ${workspaceId} ORDER BY created_at, id`
      })(workspaceId).pipe(Effect.flatMap(Effect.forEach(opened)))

    const findInWorkspaceSealed = SqlSchema.findOne({
      Request: Schema.Struct({ workspaceId: WorkspaceId, id: IntegrationId }),
      Result: Integration,
      execute: ({ id, workspaceId }) => sql`SELECT * FROM integrations WHERE id = ${id} AND workspace_id = ${workspaceId}`
    })
    /**
     * The API's look-up, remembered for `PARLEY_INTEGRATION_CACHE_TTL` (found integrations only; a
     * failure or an unknown id is asked again). Every write below empties it.
     */
    const cacheTtl = yield* AppConfig.IntegrationCacheTtl
    const inWorkspace = yield* Cache.makeWith({
      capacity: 10_000,
      lookup: (key: { readonly workspaceId: WorkspaceId; readonly id: IntegrationId }) =>
        findInWorkspaceSealed(key).pipe(openedOption),
      timeToLive: (exit) => Exit.isSuccess(exit) && Option.isSome(exit.value) ? cacheTtl : Duration.zero
    })
    // A deleted workspace's integrations are forgotten on every instance at once.
    yield* (yield* Invalidation).register(inWorkspace.invalidateAll)
    const findInWorkspace = (key: { readonly workspaceId: WorkspaceId; readonly id: IntegrationId }) =>
      inWorkspace.get(Data.struct({ workspaceId: key.workspaceId, id: key.id }))
    /** After a write: this instance reads the integration anew. */
    const forget = <A, E, R>(write: Effect.Effect<A, E, R>) => Effect.zipLeft(write, inWorkspace.invalidateAll)

    const findByIdSealed = SqlSchema.findOne({
      Request: IntegrationId,
      Result: Integration,
      execute: (id) => sql`SELECT * FROM integrations WHERE id = ${id}`
    })
    const findById = (id: IntegrationId) => findByIdSealed(id).pipe(openedOption)

    /**
     * What delivery attempts read, in one query for all of them: each integration (opened) with its
     * workspace's webhook secrets as stored (sealed; `Workspaces.openWebhookSecrets` opens them), by id.
     */
    const findForDelivery = (ids: ReadonlyArray<IntegrationId>) =>
      // The workspace's three columns keep their names: no column of `integrations` shares them.
      sql`SELECT i.*, w.webhook_secret, w.previous_webhook_secret, w.previous_secret_expires_at
          FROM integrations i JOIN workspaces w ON w.id = i.workspace_id
          WHERE i.id IN ${sql.in(ids)}`.pipe(
        Effect.flatMap((rows) =>
          Effect.forEach(rows, (row) =>
            Effect.all({
              integration: Schema.decodeUnknown(Integration)(row).pipe(Effect.flatMap(opened)),
              secrets: Schema.decodeUnknown(SealedWorkspaceSecrets)(row)
            }))
        ),
        Effect.map((targets) => new Map<IntegrationId, DeliveryTarget>(targets.map((target) => [target.integration.integrationId, target])))
      )

    /** The integration, locked for the rest of the transaction: settings updates are read-modify-write. */
    const lockSealed = SqlSchema.findOne({
      Request: Schema.Struct({ workspaceId: WorkspaceId, id: IntegrationId }),
      Result: Integration,
      execute: ({ id, workspaceId }) =>
        sql`SELECT * FROM integrations WHERE id = ${id} AND workspace_id = ${workspaceId} FOR UPDATE`
    })
    const lock = (key: { readonly workspaceId: WorkspaceId; readonly id: IntegrationId }) =>
      lockSealed(key).pipe(openedOption)

    const updateSealed = SqlSchema.single({
      Request: Schema.Struct({ id: IntegrationId, settings: Schema.parseJson(IntegrationSettings) }),
      Result: Integration,
      execute: ({ id, settings }) =>
        sql`UPDATE integrations SET settings = ${settings}::jsonb, updated_at = now() WHERE id = ${id} RETURNING *`
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
    const lockStored = SqlSchema.findOne({
      Request: IntegrationId,
      Result: Integration,
      execute: (id) => sql`SELECT * FROM integrations WHERE id = ${id} FOR UPDATE`
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
}) {}
