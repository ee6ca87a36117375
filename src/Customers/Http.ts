import * as Effect from "effect/Effect"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import { Api } from "../Api.js"
import { CurrentWorkspace } from "../Auth/Api.js"
import { Customers } from "./Customers.js"

export const CustomersHttpLive = HttpApiBuilder.group(Api, "customers", (handlers) =>
  Effect.gen(function*() {
    const customers = yield* Customers
    return handlers.handle("getByExternalId", ({ params }) =>
      Effect.flatMap(CurrentWorkspace, ({ workspaceId }) => customers.findByExternalId(workspaceId, params.external_id)))
  }))
