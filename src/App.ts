/** The whole service: database (migrated), demo seed on first start, then the workers and the HTTP server. */
import * as Layer from "effect/Layer"
import { ServerLive, ServicesLive } from "./Http.js"
import { WorkerPoolLive } from "./Jobs/Workers.js"
import { LoggingLive } from "./Observability/Logging.js"
import { TelemetryLive } from "./Observability/Telemetry.js"
import { SeedLive } from "./Seed.js"
import { SqlLive } from "./Sql.js"

export const AppLive = Layer.mergeAll(ServerLive, WorkerPoolLive).pipe(
  Layer.provide(SeedLive.pipe(Layer.provide(ServicesLive))),
  Layer.provide(SqlLive),
  // Logging and OpenTelemetry first, so everything built and run after them is traced and logged.
  Layer.provide(TelemetryLive),
  Layer.provide(LoggingLive)
)
