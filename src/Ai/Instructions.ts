/**
 * Standing instructions for the AI (docs/ai.md, "Business instructions"): set by operators for a
 * workspace or one of its integrations (the admin API, `parley instructions set`), versioned (every set
 * is a new row), the newest of each scope in force. A reply reads both scopes' (`inForce`): the
 * workspace's first, then the integration's.
 */
import * as SqlClient from "effect/sql/SqlClient"
import * as SqlSchema from "effect/sql/SqlSchema"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { IntegrationId, WorkspaceId } from "../Domain/Ids.js"
import { Instructions, type NewInstructions } from "../Domain/Instructions.js"
import { Integrations } from "../Integrations/Integrations.js"
import { orDieSql } from "../Sql.js"
import { Workspaces } from "../Workspaces/Workspaces.js"

/** The instructions a reply follows: the workspace's and the integration's versions in force. */
export interface InForce {
  readonly workspace: Instructions | null
  readonly integration: Instructions | null
}

export class InstructionsService extends Context.Service<InstructionsService>()("Parley/Instructions", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const workspaces = yield* Workspaces
    const integrations = yield* Integrations

    const insert = SqlSchema.findOne({
      Request: Instructions.insert,
      Result: Instructions,
      execute: (row) => sql`INSERT INTO instructions ${sql.insert(row)} RETURNING *`
    })

    const listAll = SqlSchema.findAll({
      Request: WorkspaceId,
      Result: Instructions,
      execute: (workspaceId) =>
        sql`SELECT * FROM instructions WHERE workspace_id = ${workspaceId} ORDER BY created_at DESC, id`
    })

    /** The newest version of the workspace's scope and of the integration's, with text or not. */
    const newest = SqlSchema.findAll({
      Request: Schema.Struct({ workspaceId: WorkspaceId, integrationId: IntegrationId }),
      Result: Instructions,
      execute: ({ integrationId, workspaceId }) =>
        sql`SELECT DISTINCT ON (integration_id) * FROM instructions
            WHERE workspace_id = ${workspaceId} AND (integration_id IS NULL OR integration_id = ${integrationId})
            ORDER BY integration_id, created_at DESC`
    })

    /** A new version for the workspace (no `integrationId`) or one of its integrations (404 otherwise). */
    const set = Effect.fn("Instructions.set")(function*(workspaceId: WorkspaceId, input: NewInstructions) {
      yield* workspaces.get(workspaceId)
      const integrationId = input.integrationId ?? null
      if (integrationId !== null) yield* integrations.find(workspaceId, integrationId)
      return yield* insert({ workspaceId, integrationId, text: input.text.trim() })
    }, orDieSql)

    /** Every version, newest first. */
    const list = Effect.fn("Instructions.list")(function*(workspaceId: WorkspaceId) {
      yield* workspaces.get(workspaceId)
      return yield* listAll(workspaceId)
    }, orDieSql)

    const inForce = Effect.fn("Instructions.inForce")(function*(workspaceId: WorkspaceId, integrationId: IntegrationId) {
      const rows = yield* newest({ workspaceId, integrationId })
      const withText = (row: Instructions | undefined) => row === undefined || row.text === "" ? null : row
      return {
        workspace: withText(rows.find((row) => row.integrationId === null)),
        integration: withText(rows.find((row) => row.integrationId !== null))
      } satisfies InForce
    }, orDieSql)

    return { set, list, inForce } as const
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
  static readonly layer = this.layerWithoutDependencies.pipe(Layer.provide([Workspaces.layer, Integrations.layer]))
}
