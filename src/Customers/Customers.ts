/** Customers of a workspace (docs/api.md). */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { CustomerFacts } from "../Domain/Customer.js"
import { InvalidInput } from "../Domain/Errors.js"
import { CustomerId, type WorkspaceId } from "../Domain/Ids.js"
import { orDieSql } from "../Sql.js"
import { CustomersRepo } from "./Repo.js"

const isCustomerId = Schema.is(CustomerId)

/** How a message names its customer. */
export type CustomerRef =
  /** Parley's customer id (or, with the integration's `externalCustomerId` flag, the integrator's own). */
  | { readonly _tag: "ParleyId"; readonly id: string; readonly external: boolean }
  /** The integrator's (or the helpdesk's) own id, with what the event tells about the customer. */
  | { readonly _tag: "UserId"; readonly userId: string; readonly facts?: CustomerFacts }

export class Customers extends Context.Service<Customers>()("Parley/Customers", {
  make: Effect.gen(function*() {
    const repo = yield* CustomersRepo

    const findByExternalId = Effect.fn("Customers.findByExternalId")(
      function*(workspaceId: WorkspaceId, userId: string) {
        return Option.getOrNull(yield* repo.findByUserId({ workspaceId, userId }))
      },
      orDieSql
    )

    /**
     * The customer a message names. By default `customerId` is Parley's UUID, and an unknown one is
     * created with that id (ids are per workspace: two workspaces may use the same one); with the
     * integration's `externalCustomerId` flag it is the integrator's own id (`userId`) and Parley
     * assigns the UUID. Fails at `customerId` when a Parley id is not a UUID.
     */
    const resolve = Effect.fn("Customers.resolve")(function*(workspaceId: WorkspaceId, ref: CustomerRef) {
      if (ref._tag === "UserId" || ref.external) {
        const userId = ref._tag === "UserId" ? ref.userId : ref.id
        const facts = ref._tag === "UserId" ? ref.facts ?? {} : {}
        return (yield* repo.upsertByUserId(workspaceId, userId, facts)).id
      }
      if (!isCustomerId(ref.id)) {
        return yield* InvalidInput.one(["customerId"], "Input should be a valid UUID (Parley's customer id; turn on the externalCustomerId flag to send your own ids)", "uuid_parsing")
      }
      return (yield* repo.ensureId({ id: ref.id, workspaceId })).id
    }, orDieSql)

    return { findByExternalId, resolve } as const
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
  static readonly layer = this.layerWithoutDependencies.pipe(Layer.provide([CustomersRepo.layer]))
}
