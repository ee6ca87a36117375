/** Customers of a workspace (spec 2.1, PRODUCT.md §4). */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { Customer } from "../Domain/Customer.js"
import { invalid } from "../Domain/Errors.js"
import { CustomerId, type WorkspaceId } from "../Domain/Ids.js"
import { type CustomerFacts, type CustomerRow, CustomersRepo } from "./Repo.js"

export const toCustomer = (row: CustomerRow): Customer => ({
  id: row.id,
  userId: row.userId,
  email: row.email,
  firstName: row.firstName,
  lastName: row.lastName,
  phoneNumber: row.phoneNumber,
  location: row.location,
  ip: row.ip,
  isVisitor: row.isVisitor,
  visitorId: row.visitorId,
  customFields: row.customFields,
  fields: row.fields,
  account: row.account
})

const isCustomerId = Schema.is(CustomerId)

export class Customers extends Effect.Service<Customers>()("Parley/Customers", {
  dependencies: [CustomersRepo.Default],
  effect: Effect.gen(function*() {
    const repo = yield* CustomersRepo

    const findByExternalId = Effect.fn("Customers.findByExternalId")(
      function*(workspaceId: WorkspaceId, userId: string) {
        const row = yield* repo.findByUserId({ workspaceId, userId }).pipe(Effect.orDie)
        return Option.match(row, { onNone: () => null, onSome: toCustomer })
      }
    )

    /**
     * The customer a message names. By default `customerId` is Parley's UUID, and an unknown one is
     * created with that id (ids are per workspace: two workspaces may use the same one); with the integration's `externalCustomerId` flag it is the integrator's own
     * id (`userId`) and Parley assigns the UUID.
     */
    const resolve = Effect.fn("Customers.resolve")(function*(
      workspaceId: WorkspaceId,
      customerId: string,
      options: { readonly external: boolean; readonly loc: ReadonlyArray<string | number>; readonly facts?: CustomerFacts }
    ) {
      if (options.external) {
        const row = yield* repo.upsertByUserId(workspaceId, customerId, options.facts ?? {}).pipe(Effect.orDie)
        return row.id
      }
      if (!isCustomerId(customerId)) {
        return yield* invalid(
          options.loc,
          "Input should be a valid UUID (Parley's customer id; turn on the externalCustomerId flag to send your own ids)",
          "uuid_parsing"
        )
      }
      const row = yield* repo.ensureId({ id: customerId, workspaceId }).pipe(Effect.orDie)
      return row.id
    })

    return { findByExternalId, resolve } as const
  })
}) {}
