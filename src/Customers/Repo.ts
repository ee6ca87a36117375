import * as SqlClient from "effect/sql/SqlClient"
import * as SqlSchema from "effect/sql/SqlSchema"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { Customer, type CustomerFacts } from "../Domain/Customer.js"
import { CustomerId, WorkspaceId } from "../Domain/Ids.js"

export class CustomersRepo extends Context.Service<CustomersRepo>()("Parley/CustomersRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const findByUserId = SqlSchema.findOneOption({
      Request: Schema.Struct({ workspaceId: WorkspaceId, userId: Schema.String }),
      Result: Customer,
      execute: ({ userId, workspaceId }) =>
        sql`SELECT * FROM customers WHERE workspace_id = ${workspaceId} AND user_id = ${userId}`
    })

    /** The customer with this id in the workspace, if there is one. */
    const findById = SqlSchema.findOneOption({
      Request: Schema.Struct({ id: CustomerId, workspaceId: WorkspaceId }),
      Result: Customer,
      execute: ({ id, workspaceId }) => sql`SELECT * FROM customers WHERE workspace_id = ${workspaceId} AND id = ${id}`
    })

    /** The customer with this id in the workspace, created if the integrator names it first. */
    const ensureId = SqlSchema.findOne({
      Request: Schema.Struct({ id: CustomerId, workspaceId: WorkspaceId }),
      Result: Customer,
      execute: ({ id, workspaceId }) =>
        sql`INSERT INTO customers (id, workspace_id) VALUES (${id}, ${workspaceId})
            ON CONFLICT (workspace_id, id) DO UPDATE SET updated_at = customers.updated_at RETURNING *`
    })

    /** Finds or creates the customer known by the integrator's `userId`, filling in what is new. */
    const upsertByUserId = (workspaceId: WorkspaceId, userId: string, facts: CustomerFacts) =>
      SqlSchema.findOne({
        Request: Schema.Void,
        Result: Customer,
        execute: () =>
          sql`INSERT INTO customers (workspace_id, user_id, email, first_name, last_name, phone_number)
              VALUES (${workspaceId}, ${userId}, ${facts.email ?? null}, ${facts.firstName ?? null},
                      ${facts.lastName ?? null}, ${facts.phoneNumber ?? null})
              ON CONFLICT (workspace_id, user_id) DO UPDATE SET
                email = coalesce(EXCLUDED.email, customers.email),
                first_name = coalesce(EXCLUDED.first_name, customers.first_name),
                last_name = coalesce(EXCLUDED.last_name, customers.last_name),
                phone_number = coalesce(EXCLUDED.phone_number, customers.phone_number),
                updated_at = now()
              RETURNING *`
      })(undefined)

    return { findByUserId, findById, ensureId, upsertByUserId } as const
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
  static readonly layer = this.layerWithoutDependencies
}
