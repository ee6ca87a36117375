/** What a kind of job does. A new kind is one module providing a `JobHandler` and one line in `Workers.ts`. */
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type { Job } from "./Queue.js"

/** How a run ended: done, to be retried after a delay, or given up. */
export type Outcome = Data.TaggedEnum<{
  Done: {}
  Retry: { readonly delay: Duration.DurationInput; readonly error: string }
  Dead: { readonly error: string }
}>
export const Outcome = Data.taggedEnum<Outcome>()

export interface JobHandler {
  readonly kind: string
  /** Failures and defects are retried with the worker's default backoff, then the job is dead. */
  readonly run: (job: Job) => Effect.Effect<Outcome, unknown>
}

export class JobHandlers extends Context.Tag("Parley/JobHandlers")<JobHandlers, ReadonlyMap<string, JobHandler>>() {}
