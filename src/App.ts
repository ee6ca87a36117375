/** The whole service: database (migrated), demo seed on first start, then the workers and the HTTP server. */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { EmbeddedRepliesLive } from "./Ai/Embedded.js"
import { Replies } from "./Ai/GenerateReply.js"
import { GenerateReply } from "./Ai/Jobs.js"
import { DeliveryGaugesLive } from "./Delivery/Gauges.js"
import { DeliverEvent } from "./Delivery/Jobs.js"
import { Sender } from "./Delivery/Sender.js"
import { ServerLive, ServicesLive } from "./Http.js"
import * as Job from "./Jobs/Job.js"
import { JobQueue } from "./Jobs/Queue.js"
import { WorkersLive } from "./Jobs/Worker.js"
import { LoggingLive } from "./Observability/Logging.js"
import { TelemetryLive } from "./Observability/Telemetry.js"
import { SeedLive } from "./Seed.js"
import { SqlLive } from "./Sql.js"

/** Which handler runs which kind of job. */
export const JobHandlersLive = Layer.effect(
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

/** The supervised worker pool with every job kind's handler; needs the database. */
export const WorkerPoolLive = Layer.merge(WorkersLive, DeliveryGaugesLive).pipe(
  Layer.provide([JobHandlersLive, JobQueue.Default])
)

export const AppLive = Layer.mergeAll(ServerLive, WorkerPoolLive).pipe(
  Layer.provide(SeedLive.pipe(Layer.provide(ServicesLive))),
  Layer.provide(SqlLive),
  // Logging and OpenTelemetry first, so everything built and run after them is traced and logged.
  Layer.provide(TelemetryLive),
  Layer.provide(LoggingLive)
)
