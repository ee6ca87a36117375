/** The delivery job kind: one signed attempt at an event, ordered per conversation, one live job per event. */
import * as Schema from "effect/Schema"
import { EventId } from "../Domain/Ids.js"
import * as Job from "../Jobs/Job.js"

export const DeliverEvent = Job.define("deliver_event", {
  payload: Schema.Struct({ eventId: EventId }),
  orderedBy: "conversation",
  key: ({ eventId }) => eventId,
  // The sender turns every failure into the delivery policy (retry within DELIVERY_MAX_AGE, then dead).
  retries: "handler"
})
