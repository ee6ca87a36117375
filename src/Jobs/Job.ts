/**
 * Typed jobs. A kind of job is defined once, with its payload schema and its ordering:
 *
 * ```ts
 * export const DeliverEvent = Job.define("deliver_event", {
 *   payload: Schema.Struct({ eventId: EventId }),
 *   orderedBy: "conversation",
 *   key: ({ eventId }) => eventId
 * })
 * ```
 *
 * `JobQueue.enqueue(DeliverEvent, payload, …)` encodes the payload; a handler made with `Job.handle`
 * receives it decoded, and a payload that does not decode makes the job dead with the reason. Which
 * handler runs which kind is decided by the composition root (`App.ts`): this folder knows no feature.
 */
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import * as SchemaParser from "effect/SchemaParser"
import type * as Tracer from "effect/Tracer"
import { ConversationId, JobId } from "../Domain/Ids.js"

export interface Definition<A, I> {
  readonly name: string
  readonly payload: Schema.Codec<A, I>
  /**
   * `"conversation"`: jobs of this kind for one conversation run one at a time, in the order their
   * transactions committed (see `JobQueue.enqueue`).
   */
  readonly orderedBy: "conversation" | undefined
  /** At most one live (pending or running) job per key: the queue refuses a second one. */
  readonly key: ((payload: A) => string) | undefined
  /**
   * `"handler"`: the handler settles its own failures (as the delivery policy does); only failures it
   * cannot settle (the database) reach the worker, which retries them until they pass. Otherwise a job
   * that keeps failing is dead after `JOB_MAX_ATTEMPTS`.
   */
  readonly retries: "bounded" | "handler"
}

export const define = <A, I>(
  name: string,
  options: {
    readonly payload: Schema.Codec<A, I>
    readonly orderedBy?: "conversation"
    readonly key?: (payload: A) => string
    readonly retries?: "bounded" | "handler"
  }
): Definition<A, I> => ({
  name,
  payload: options.payload,
  orderedBy: options.orderedBy,
  key: options.key,
  retries: options.retries ?? "bounded"
})

/** How a run ended: done, to be retried after a delay, or given up. */
export type Outcome = Data.TaggedEnum<{
  Done: {}
  Retry: { readonly delay: Duration.Input; readonly error: string }
  Dead: { readonly error: string }
}>
export const Outcome = Data.taggedEnum<Outcome>()

/** A claimed job, as its handler sees it. */
export const Claimed = Schema.Struct({
  id: JobId,
  kind: Schema.String,
  payload: Schema.Unknown,
  attempts: Schema.Number,
  traceContext: Schema.NullOr(Schema.Struct({ traceparent: Schema.String })),
  conversationId: Schema.NullOr(ConversationId),
  /** Whose work it is (a workspace, an integration): the lane's share, and what a batch keeps together. */
  groupKey: Schema.NullOr(Schema.String)
})
export type Claimed = typeof Claimed.Type

/** A claimed job in a batch, with its own span (its request's trace): its part of the work runs under it. */
export interface BatchItem {
  readonly job: Claimed
  readonly span: Tracer.Span
}

export interface Handler {
  readonly name: string
  readonly retries: "bounded" | "handler"
  /**
   * One job at a time, each in a fiber of its own; or (`batch`) the jobs of one claim and one group
   * together, so that each step is one statement for all of them. Failures and defects are the
   * worker's to retry (see `Definition.retries`).
   */
  readonly run:
    | { readonly _tag: "single"; readonly run: (job: Claimed) => Effect.Effect<Outcome, unknown> }
    | {
      readonly _tag: "batch"
      /** Each job's outcome, in the items' order. */
      readonly run: (items: ReadonlyArray<BatchItem>) => Effect.Effect<ReadonlyArray<Outcome>, unknown>
    }
}

const formatIssue = SchemaIssue.makeFormatterDefault()

const undecodable = (issue: SchemaIssue.Issue) =>
  Outcome.Dead({
    error: `Payload does not decode: ${formatIssue(issue)}`.slice(0, 1000)
  })

/** Runs `run` with the decoded payload; a payload that does not decode is dead at once. */
export const handle = <A, I, E>(
  definition: Definition<A, I>,
  run: (payload: A, job: Claimed) => Effect.Effect<Outcome, E>
): Handler => {
  const decode = SchemaParser.decodeUnknownEffect(definition.payload, { errors: "all" })
  return {
    name: definition.name,
    retries: definition.retries,
    run: {
      _tag: "single",
      run: (job) =>
        decode(job.payload).pipe(
          Effect.matchEffect({
            onFailure: (issue) => Effect.succeed(undecodable(issue)),
            onSuccess: (payload) => run(payload, job)
          })
        )
    }
  }
}

/**
 * Runs `run` once for the claimed jobs of one group, with their decoded payloads (each with its job's
 * span); a payload that does not decode is dead at once. For kinds whose jobs are short and alike (a
 * webhook POST): their slots free together, and the next claim takes them together again.
 */
export const handleBatch = <A, I, E>(
  definition: Definition<A, I>,
  run: (
    items: ReadonlyArray<{ readonly payload: A; readonly span: Tracer.Span }>
  ) => Effect.Effect<ReadonlyArray<Outcome>, E>
): Handler => {
  const decode = SchemaParser.decodeUnknownResult(definition.payload, { errors: "all" })
  return {
    name: definition.name,
    retries: definition.retries,
    run: {
      _tag: "batch",
      run: (items) =>
        Effect.gen(function*() {
          const decoded = items.map((item) => ({ item, payload: decode(item.job.payload) }))
          const runnable = decoded.flatMap(({ item, payload }) =>
            Result.isSuccess(payload) ? [{ payload: payload.success, span: item.span }] : []
          )
          const outcomes = runnable.length === 0 ? [] : yield* run(runnable)
          let next = 0
          return decoded.map(({ payload }) =>
            Result.isFailure(payload) ? undecodable(payload.failure) : outcomes[next++] ?? Outcome.Dead({ error: "No outcome" })
          )
        })
    }
  }
}

/**
 * A lane of the worker pool: the kinds it runs, how many at once in this instance, and how many of one
 * group (a workspace, an integration: what `enqueue` was told) at once across all instances — so that
 * no group's backlog, or its slow receiver, takes the lane from the others. Lanes do not wait for each
 * other: replies are never queued behind deliveries.
 */
export interface Lane {
  readonly name: string
  readonly kinds: ReadonlyArray<string>
  readonly concurrency: number
  readonly perGroup: number
}

/** The pool's lanes; built by the composition root. */
export class Lanes extends Context.Service<Lanes, ReadonlyArray<Lane>>()("Parley/JobLanes") {}

/** The handler of each kind, by name; built by the composition root. */
export class Handlers extends Context.Service<Handlers, ReadonlyMap<string, Handler>>()("Parley/JobHandlers") {}

export const handlers = (list: ReadonlyArray<Handler>): ReadonlyMap<string, Handler> =>
  new Map(list.map((handler) => [handler.name, handler]))
