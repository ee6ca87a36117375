/**
 * The services' layers each declare their dependencies: each `X.layer` builds on the database and the
 * configuration alone (`layerTest` accepts nothing else, so a layer that leaves a dependency to the
 * app does not type-check here), and layers merged side by side share one database and one copy of
 * each service they name.
 */
import { describe, expect, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { Admin } from "../../src/Admin/Admin.js"
import { AdminToken, AdminTokenLive } from "../../src/Auth/AdminToken.js"
import { Crypto } from "../../src/Auth/Crypto.js"
import { RateLimiter } from "../../src/Auth/RateLimiter.js"
import { Secrets } from "../../src/Auth/Secrets.js"
import { Customers } from "../../src/Customers/Customers.js"
import { CustomersRepo } from "../../src/Customers/Repo.js"
import { Deliveries } from "../../src/Delivery/Deliveries.js"
import { DeliveriesRepo } from "../../src/Delivery/Repo.js"
import { NewIntegration } from "../../src/Domain/Integration.js"
import { Helpdesk } from "../../src/Helpdesk/Helpdesk.js"
import { Integrations } from "../../src/Integrations/Integrations.js"
import { IntegrationsRepo } from "../../src/Integrations/Repo.js"
import { Invalidation } from "../../src/Workspaces/Invalidation.js"
import { WorkspacesRepo } from "../../src/Workspaces/Repo.js"
import { Workspaces } from "../../src/Workspaces/Workspaces.js"
import { ADMIN_TOKEN } from "../support/App.js"
import { layerTest } from "../support/Services.js"

const Services = layerTest(
  Layer.mergeAll(
    Admin.layer,
    AdminTokenLive,
    Crypto.layer,
    Customers.layer,
    CustomersRepo.layer,
    Deliveries.layer,
    DeliveriesRepo.layer,
    Helpdesk.layer,
    Integrations.layer,
    IntegrationsRepo.layer,
    Invalidation.layer,
    RateLimiter.layer,
    Secrets.layer,
    Workspaces.layer,
    WorkspacesRepo.layer
  ),
  { PARLEY_ENCRYPTION_KEY: "1f".repeat(32) }
)

describe("services' layers", () => {
  layer(Services, { timeout: 120_000 })((it) => {
    it.effect("build on the database alone and share it: what Admin creates, the other services find", () =>
      Effect.gen(function*() {
        const admin = yield* Admin
        const created = yield* admin.createWorkspace("Layers")
        const authenticated = yield* (yield* Workspaces).authenticate(created.apiToken)
        expect(Option.map(authenticated, (workspace) => workspace.workspaceId)).toEqual(Option.some(created.id))

        const input = yield* Schema.decodeUnknownEffect(NewIntegration)({
          name: "Layers",
          webhook: { url: "http://127.0.0.1:9/webhook" }
        })
        const integration = yield* admin.createIntegration(created.id, input)
        const found = yield* (yield* Integrations).find(created.id, integration.integrationId)
        expect(found.integrationId).toBe(integration.integrationId)
        const stored = yield* (yield* IntegrationsRepo).findById(integration.integrationId)
        expect(Option.map(stored, (row) => row.workspaceId)).toEqual(Option.some(created.id))
        expect(yield* (yield* Deliveries).list(integration.integrationId, { limit: 10 })).toEqual([])

        // One Crypto, under the configured key: the secret Admin stored sealed is re-sealed by nothing.
        expect((yield* Crypto).encrypting).toBe(true)
        const resealed = yield* (yield* Secrets).reencrypt()
        expect(resealed).toMatchObject({ sealed: 0, resealed: 0, unreadable: 0 })
        expect(Redacted.value(yield* AdminToken)).toBe(ADMIN_TOKEN)
      }))
  })
})
