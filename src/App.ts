/** The whole service: database (migrated), demo seed on first start, then the HTTP server. */
import * as Layer from "effect/Layer"
import { ServerLive, ServicesLive } from "./Http.js"
import { SeedLive } from "./Seed.js"
import { SqlLive } from "./Sql.js"

export const AppLive = ServerLive.pipe(
  Layer.provide(SeedLive.pipe(Layer.provide(ServicesLive))),
  Layer.provide(SqlLive)
)
