/**
 * The delivery job kind: one signed attempt at an event, ordered per conversation, one live job per event.
 *
 * The event's job owns its retry schedule: when the next attempt is due is the job's `run_at` and
 * nothing else (the event kept a copy, `events.next_attempt_at`, until migration 0011). A failed
 * attempt's `Outcome.Retry` carries the instant the sender decided on (the one its attempt log
 * records), and settling the job stores it; the deliveries API reads it from the live job
 * (`DeliveriesRepo`); a replay moves only the job (`JobQueue.runNow`, `replaceMany`). Why the job and
 * not the event (an outbox its own dispatcher would read): the queue already gives a delivery what
 * its guarantees need — a lease taken again when an instance dies (at least once), one job at a time
 * per conversation in commit order, each integration's share of the lane, wake-ups at the due time,
 * and a run asked again while one is in flight (`rerun`), whose time a retry's settlement does not
 * overwrite — so an outbox would have to rebuild all of that on `events`, while the job costs no
 * statement more per attempt: a failed attempt is the same 5 statements either way (the claim, the
 * events, their integration, the attempts recorded, the jobs settled), and a replay the same 3 (the
 * event set pending, the job brought forward, the event read back with its job's time). The event
 * keeps its delivery state (status, attempts, last error); its `generation` still keeps an attempt a
 * replay overtook from settling that state.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { EventId } from "../Domain/Ids.js"
import * as Job from "../Jobs/Job.js"
import * as Lanes from "../Jobs/Lanes.js"
import { DELIVER_EVENT } from "./Repo.js"
import { Sender } from "./Sender.js"

export const DeliverEvent = Job.define(DELIVER_EVENT, {
  payload: Schema.Struct({ eventId: EventId }),
  lane: Lanes.deliveries,
  // One at a time per conversation, in commit order: the conversation's id is the order key.
  ordered: true,
  key: ({ eventId }) => eventId,
  // The sender turns every failure into the delivery policy (retry within DELIVERY_MAX_AGE, then dead).
  // The job's `attempts` counts every delivery attempt (dozens in a retry window), so the worker's own
  // bound (JOB_MAX_ATTEMPTS) would make a delivery dead at its first database failure: it stays off.
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
