/** The delivery job kind: one signed attempt at an event, ordered per conversation, one live job per event. */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { EventId } from "../Domain/Ids.js"
import * as Job from "../Jobs/Job.js"
import * as Lanes from "../Jobs/Lanes.js"
import { Sender } from "./Sender.js"

export const DeliverEvent = Job.define("deliver_event", {
  payload: Schema.Struct({ eventId: EventId }),
  lane: Lanes.deliveries,
  // One at a time per conversation, in commit order: the conversation's id is the order key.
  ordered: true,
  key: ({ eventId }) => eventId,
  // The sender turns every failure into the delivery policy (retry within DELIVERY_MAX_AGE, then dead).
  retries: "handler"
})

/** The delivery handler: a claim's deliveries to one integration go out together, a statement per step for all. */
export const DeliveryJobsLive = Job.handlers(
  Effect.gen(function*() {
    const sender = yield* Sender
    return [
      Job.handleBatch(DeliverEvent, (items) =>
        sender.deliverMany(items.map(({ payload, span }) => ({ eventId: payload.eventId, span }))))
    ]
  })
).pipe(Layer.provide(Sender.layer))
