/**
 * The HTTP server: the API's handlers, auth, error shapes, `/openapi.json` and the docs UI at `/docs`.
 * `HttpLive` has no server of its own: `main` gives it Node's, tests a test server.
 */
import { HttpApiBuilder, HttpApiScalar, HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { createServer } from "node:http"
import { AdminHttpLive } from "./Admin/Http.js"
import { Knowledge } from "./Ai/Knowledge.js"
import { Api } from "./Api.js"
import { AdminTokenLive } from "./Auth/AdminToken.js"
import { Crypto } from "./Auth/Crypto.js"
import { AdminAuthLive, HelpdeskAuthLive, WorkspaceAuthLive } from "./Auth/Http.js"
import { RateLimiter } from "./Auth/RateLimiter.js"
import * as AppConfig from "./Config.js"
import { Conversations } from "./Conversations/Conversations.js"
import { WebhooksHttpLive } from "./Conversations/Http.js"
import { Csat } from "./Csat/Csat.js"
import { Customers } from "./Customers/Customers.js"
import { CustomersHttpLive } from "./Customers/Http.js"
import { Deliveries } from "./Delivery/Deliveries.js"
import { DeliveriesHttpLive } from "./Delivery/Http.js"
import { HealthHttpLive } from "./Health/Http.js"
import { Helpdesk } from "./Helpdesk/Helpdesk.js"
import { HelpdeskHttpLive } from "./Helpdesk/Http.js"
import { ErrorsLive } from "./Http/Errors.js"
import { IntegrationsHttpLive } from "./Integrations/Http.js"
import { Integrations } from "./Integrations/Integrations.js"
import { Workspaces } from "./Workspaces/Workspaces.js"

/** The domain services behind the handlers; they need only a `SqlClient`. */
export const ServicesLive = Layer.mergeAll(
  Workspaces.Default,
  Integrations.Default,
  Customers.Default,
  Conversations.Default,
  Csat.Default,
  Helpdesk.Default,
  Crypto.Default,
  Knowledge.Default,
  Deliveries.Default
)

const AuthLive = Layer.mergeAll(WorkspaceAuthLive, HelpdeskAuthLive, AdminAuthLive).pipe(
  Layer.provide([AdminTokenLive, RateLimiter.Default])
)

export const ApiLive = HttpApiBuilder.api(Api).pipe(
  Layer.provide([
    CustomersHttpLive,
    IntegrationsHttpLive,
    WebhooksHttpLive,
    HelpdeskHttpLive,
    AdminHttpLive,
    HealthHttpLive,
    DeliveriesHttpLive
  ]),
  Layer.provide(AuthLive),
  Layer.provide(ServicesLive)
)

/** Serves the API on whatever `HttpServer` is provided. */
export const HttpLive = HttpApiBuilder.serve().pipe(
  Layer.provide(HttpApiBuilder.middlewareOpenApi({ path: "/openapi.json" })),
  Layer.provide(HttpApiScalar.layer({ path: "/docs" })),
  Layer.provide(ErrorsLive),
  Layer.provide(ApiLive)
)

const announce = Layer.effectDiscard(
  Effect.flatMap(HttpServer.HttpServer, (server) =>
    server.address._tag === "TcpAddress"
      ? Console.log(`Parley is listening on http://localhost:${server.address.port} (API docs at /docs)`)
      : Effect.void)
)

/**
 * Node's HTTP server on `HOST`:`PORT`. It opens the port as soon as it is built, so it is provided
 * innermost: built last, after the database, migrations and handlers are ready.
 */
export const NodeServerLive = Layer.unwrapEffect(
  Effect.gen(function*() {
    const port = yield* AppConfig.Port
    const host = yield* AppConfig.Host
    return NodeHttpServer.layer(createServer, { port, host })
  })
)

export const ServerLive = Layer.mergeAll(HttpLive, announce).pipe(Layer.provide(NodeServerLive))
