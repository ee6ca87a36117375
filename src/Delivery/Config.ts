import * as Config from "effect/Config"
import * as Duration from "effect/Duration"

/** Delivery timing (PRODUCT.md §5). Effect duration strings: "5 seconds", "28 hours", "200 millis". */
export const DeliveryConfig = Config.all({
  /** First retry delay; later ones double, with jitter. */
  retryBase: Config.duration("DELIVERY_RETRY_BASE").pipe(Config.withDefault(Duration.seconds(5))),
  /** Cap of one delay. */
  retryMaxDelay: Config.duration("DELIVERY_RETRY_MAX_DELAY").pipe(Config.withDefault(Duration.hours(1))),
  /** When an undelivered event goes dead. */
  maxAge: Config.duration("DELIVERY_MAX_AGE").pipe(Config.withDefault(Duration.hours(28))),
  /** Per attempt. */
  timeout: Config.duration("DELIVERY_TIMEOUT").pipe(Config.withDefault(Duration.seconds(10)))
})
export type DeliveryConfig = Config.Config.Success<typeof DeliveryConfig>
