import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Effect from "effect/Effect"
import { Api } from "../Api.js"
import { CurrentWorkspace } from "../Auth/Api.js"
import { Customers } from "./Customers.js"

export const CustomersHttpLive = HttpApiBuilder.group(Api, "customers", (handlers) =>
  Effect.gen(function*() {
    const customers = yield* Customers
    return handlers.handle("getByExternalId", ({ path }) =>
      Effect.flatMap(CurrentWorkspace, ({ workspaceId }) => customers.findByExternalId(workspaceId, path.external_id)))
  }))
