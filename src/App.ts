/**
 * The composition root: the service graph, the features' jobs, and `makeApp`, which puts Parley
 * together on a given HTTP server and database. `main` gives it Node's server and the
 * configured database; the demo and the tests give it their own, and reuse everything else.
 */
import type * as HttpServer from "effect/http/HttpServer"
import type * as SqlClient from "effect/sql/SqlClient"
import type { PgClient } from "@effect/sql-pg"
import * as Layer from "effect/Layer"
import { Admin } from "./Admin/Admin.js"
import { AiJobsLive } from "./Ai/Jobs.js"
import { Knowledge } from "./Ai/Knowledge.js"
import { ReplyHistory } from "./Ai/ReplyHistory.js"
import { WorkspaceAiSettings } from "./Ai/Settings.js"
import { AdminTokenLive } from "./Auth/AdminToken.js"
import { Crypto } from "./Auth/Crypto.js"
import { RateLimiter } from "./Auth/RateLimiter.js"
import { Conversations } from "./Conversations/Conversations.js"
import { Csat } from "./Csat/Csat.js"
import { Customers } from "./Customers/Customers.js"
import { Deliveries } from "./Delivery/Deliveries.js"
import { Events } from "./Delivery/Events.js"
import { DeliveryGaugesLive } from "./Delivery/Gauges.js"
import { DeliveryJobsLive } from "./Delivery/Jobs.js"
import { Helpdesk } from "./Helpdesk/Helpdesk.js"
import { HttpLive, NodeServerLive } from "./Http.js"
import { Integrations } from "./Integrations/Integrations.js"
import * as Job from "./Jobs/Job.js"
import { JobQueue } from "./Jobs/Queue.js"
import { WorkersLive } from "./Jobs/Worker.js"
import { StartedLive, StoppedLive } from "./Observability/Lifecycle.js"
import { LoggingLive } from "./Observability/Logging.js"
import { TelemetryLive } from "./Observability/Telemetry.js"
import { SeedLive } from "./Seed.js"
import { PortsFreeLive, reportStartFailure, SettingsLive } from "./Startup.js"
import { type DatabaseKind, SqlLive } from "./Sql.js"
import { WorkspacesJobsLive } from "./Workspaces/Jobs.js"
import { Workspaces } from "./Workspaces/Workspaces.js"

/** The domain services behind the handlers and the jobs; they need only the database and config. */
export const ServicesLive = Layer.mergeAll(
  Workspaces.layer,
  Integrations.layer,
  Customers.layer,
  Conversations.layer,
  Csat.layer,
  Helpdesk.layer,
  Crypto.layer,
  Knowledge.layer,
  ReplyHistory.layer,
  WorkspaceAiSettings.layer,
  Deliveries.layer,
  Events.layer,
  Admin.layer,
  JobQueue.layer,
  RateLimiter.layer,
  AdminTokenLive
)

/**
 * Every feature's jobs: each registers its kinds' handlers (a kind's lane, order and retries are in its
 * definition, next to its handler). A feature with jobs adds its layer here, and nothing else.
 */
const JobsLive = Layer.mergeAll(DeliveryJobsLive, AiJobsLive, WorkspacesJobsLive)

/**
 * The supervised worker pool running the features' jobs, and the delivery gauges. It refuses to start
 * when a kind Parley defines has no handler in `JobsLive` (a feature's layer left out).
 */
export const WorkerPoolLive = Layer.merge(
  WorkersLive(JobsLive, { expected: Job.definedKinds }),
  DeliveryGaugesLive
).pipe(Layer.provide(JobQueue.layer))

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
 * provides (so that a test or the demo can use them), with its start-up and shutdown log records
 * (`Observability/Lifecycle.ts`). Configuration comes from the `ConfigProvider`.
 */
export const makeApp = <RS, ES, RD, ED>(options: AppOptions<RS, ES, RD, ED>) => {
  const served = HttpLive.pipe(Layer.provideMerge(options.server))
  const running = options.workers === false ? served : Layer.merge(served, WorkerPoolLive)
  const services = options.seed === true ? Layer.provideMerge(SeedLive, ServicesLive) : ServicesLive
  return StartedLive({ workers: options.workers !== false }).pipe(
    Layer.provideMerge(running),
    Layer.provideMerge(services),
    Layer.provideMerge(options.database),
    Layer.provide(StoppedLive),
    // Every setting is validated before anything is built.
    Layer.provide(SettingsLive)
  )
}

/**
 * Parley as `npm start` runs it. Built outermost first: logging, the settings and the ports checked
 * (a bad setting or a port in use fails in a moment, before any work), OpenTelemetry, then the app. A
 * start that fails, at any of these steps, prints one line naming the setting to fix (`Startup.ts`).
 */
export const AppLive = makeApp({ server: NodeServerLive, database: SqlLive, seed: true }).pipe(
  Layer.provide(TelemetryLive),
  Layer.provide(PortsFreeLive),
  Layer.provide(SettingsLive),
  reportStartFailure,
  Layer.provide(LoggingLive)
)
