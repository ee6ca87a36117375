/** The dead-letter gauge: events given up and not replayed, measured every `JOB_METRICS_INTERVAL`. */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Schedule from "effect/Schedule"
import * as AppConfig from "../Config.js"
import { deadLetters } from "../Observability/Metrics.js"
import { DeliveriesRepo } from "./Repo.js"

export const DeliveryGaugesLive = Layer.effectDiscard(
  Effect.gen(function*() {
    const repo = yield* DeliveriesRepo
    const { depthInterval } = yield* AppConfig.WorkerConfig
    yield* repo.countDead.pipe(
      Effect.flatMap((n) => Metric.update(deadLetters, n)),
      Effect.catchCause((cause) => Effect.logDebug("Dead-letter count unavailable", cause)),
      Effect.repeat(Schedule.spaced(depthInterval)),
      Effect.forkScoped
    )
  })
).pipe(Layer.provide(DeliveriesRepo.layer))
