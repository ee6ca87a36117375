/**
 * The composition root: the service graph, which handler runs which job, and `makeApp`, which puts
 * Parley together on a given HTTP server and database. `main` gives it Node's server and the
 * configured database; the demo and the tests give it their own, and reuse everything else.
 */
import type { HttpServer } from "@effect/platform"
import type * as SqlClient from "@effect/sql/SqlClient"
import type { PgClient } from "@effect/sql-pg"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Admin } from "./Admin/Admin.js"
import { EmbeddedRepliesLive } from "./Ai/Embedded.js"
import { Replies } from "./Ai/GenerateReply.js"
import { GenerateReply } from "./Ai/Jobs.js"
import { Knowledge } from "./Ai/Knowledge.js"
import { AdminTokenLive } from "./Auth/AdminToken.js"
import { Crypto } from "./Auth/Crypto.js"
import { RateLimiter } from "./Auth/RateLimiter.js"
import { Conversations } from "./Conversations/Conversations.js"
import { Csat } from "./Csat/Csat.js"
import { Customers } from "./Customers/Customers.js"
import { Deliveries } from "./Delivery/Deliveries.js"
import { Events } from "./Delivery/Events.js"
import { DeliveryGaugesLive } from "./Delivery/Gauges.js"
import { DeliverEvent } from "./Delivery/Jobs.js"
import { Sender } from "./Delivery/Sender.js"
import { Helpdesk } from "./Helpdesk/Helpdesk.js"
import { announce, HttpLive, NodeServerLive } from "./Http.js"
import { Integrations } from "./Integrations/Integrations.js"
import * as Job from "./Jobs/Job.js"
import { JobQueue } from "./Jobs/Queue.js"
import { WorkersLive } from "./Jobs/Worker.js"
import { LoggingLive } from "./Observability/Logging.js"
import { TelemetryLive } from "./Observability/Telemetry.js"
import { SeedLive } from "./Seed.js"
import { type DatabaseKind, SqlLive } from "./Sql.js"
import { Workspaces } from "./Workspaces/Workspaces.js"

/** The domain services behind the handlers and the jobs; they need only the database and config. */
export const ServicesLive = Layer.mergeAll(
  Workspaces.Default,
  Integrations.Default,
  Customers.Default,
  Conversations.Default,
  Csat.Default,
  Helpdesk.Default,
  Crypto.Default,
  Knowledge.Default,
  Deliveries.Default,
  Events.Default,
  Admin.Default,
  JobQueue.Default,
  RateLimiter.Default,
  AdminTokenLive
)

/** Which handler runs which kind of job. */
const JobHandlersLive = Layer.effect(
  Job.Handlers,
  Effect.gen(function*() {
    const sender = yield* Sender
    const replies = yield* Replies
    return Job.handlers([
      Job.handle(DeliverEvent, ({ eventId }) => sender.deliver(eventId)),
      Job.handle(GenerateReply, replies.generate)
    ])
  })
).pipe(Layer.provide([Sender.Default, Replies.Default.pipe(Layer.provide(EmbeddedRepliesLive))]))

/** The supervised worker pool with every kind's handler, and the delivery gauges. */
export const WorkerPoolLive = Layer.merge(WorkersLive, DeliveryGaugesLive).pipe(
  Layer.provide([JobHandlersLive, JobQueue.Default])
)

export interface AppOptions<RS, ES, RD, ED> {
  /**
   * The HTTP server (`HttpServer` and its platform: Node's on `PORT`, or a test server); built last, once
   * everything else is ready.
   */
  readonly server: Layer.Layer<RS | HttpServer.HttpServer, ES>
  /** The database, migrated: a real PostgreSQL, or the embedded one. */
  readonly database: Layer.Layer<RD | SqlClient.SqlClient | PgClient.PgClient | DatabaseKind, ED>
  /** Run the job workers (default: yes). */
  readonly workers?: boolean
  /** Create the demo workspace on the first start of an empty database (when `PARLEY_SEED_DEMO`). */
  readonly seed?: boolean
}

/**
 * Parley on `server` and `database`: the HTTP API, the workers, and the services, which it also
 * provides (so that a test or the demo can use them). Configuration comes from the `ConfigProvider`.
 */
export const makeApp = <RS, ES, RD, ED>(options: AppOptions<RS, ES, RD, ED>) => {
  const served = Layer.mergeAll(HttpLive, announce).pipe(Layer.provideMerge(options.server))
  const running = options.workers === false ? served : Layer.merge(served, WorkerPoolLive)
  const services = options.seed === true ? Layer.provideMerge(SeedLive, ServicesLive) : ServicesLive
  return running.pipe(Layer.provideMerge(services), Layer.provideMerge(options.database))
}

/** Parley as `npm start` runs it. */
export const AppLive = makeApp({ server: NodeServerLive, database: SqlLive, seed: true }).pipe(
  // Logging and OpenTelemetry first, so everything built and run after them is traced and logged.
  Layer.provide(TelemetryLive),
  Layer.provide(LoggingLive)
)
