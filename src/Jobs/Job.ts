/**
 * Typed jobs. A kind of job is one declaration, in the feature that owns it: its payload schema, its
 * lane, its ordering and key, its retry policy —
 *
 * ```ts
 * export const DeliverEvent = Job.define("deliver_event", {
 *   payload: Schema.Struct({ eventId: EventId }),
 *   lane: Lanes.deliveries,
 *   ordered: true,
 *   key: ({ eventId }) => eventId
 * })
 * ```
 *
 * — and, next to it, the layer that registers its handler, built from the feature's services:
 *
 * ```ts
 * export const DeliveryJobsLive = Job.handlers(Effect.gen(function*() {
 *   const sender = yield* Sender
 *   return [Job.handleBatch(DeliverEvent, (items) => sender.deliverMany(…))]
 * }))
 * ```
 *
 * `JobQueue.enqueue(DeliverEvent, payload, …)` encodes the payload; a handler made with `Job.handle`
 * (or `Job.handleBatch`) receives it decoded, and a payload that does not decode makes the job dead
 * with the reason. The composition root (`App.ts`) only merges the features' job layers and hands them
 * to the pool (`Worker.ts`'s `WorkersLive`): this folder knows no feature.
 *
 * What a pool runs is what was registered with it: the registry is the single source. The pool's lanes
 * are those of the registered kinds (a lane is declared once, `Lanes.ts`, and read from config), each
 * claiming exactly the kinds registered in it, so a kind cannot be without a lane (`define` requires
 * one) and a lane never claims a kind this instance cannot run. The pool refuses to start, naming what
 * is wrong, when a kind is registered twice (two handlers, or two definitions sharing a name), when two
 * different lanes share a name, or when nothing is registered at all (the features' layers were left
 * out). The application's pool (`App.ts`) also refuses when a kind its own code defines (`definedKinds`)
 * has no handler. A kind this instance does not even define is never claimed by it: its jobs wait,
 * pending, for an instance that runs it — as they must while a rolling deploy runs an older instance
 * next to a newer one that queues a kind the older does not know.
 */
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import type * as DateTime from "effect/DateTime"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import * as SchemaParser from "effect/SchemaParser"
import type * as Scope from "effect/Scope"
import type * as Tracer from "effect/Tracer"
import type { WorkerConfig } from "../Config.js"
import { JobId } from "../Domain/Ids.js"

/**
 * A lane of the worker pool, declared once (`Lanes.ts`) and named by each kind that runs in it: how
 * many of its jobs one instance runs at once, and how many of one group's (a workspace, an integration:
 * what `enqueue` was told) at once across all instances — so that no group's backlog, or its slow
 * receiver, takes the lane from the others. Lanes do not wait for each other: replies are never queued
 * behind deliveries. Both figures are read from the settings when the pool starts.
 */
export interface Lane {
  readonly name: string
  readonly concurrency: (config: WorkerConfig) => number
  readonly perGroup: (config: WorkerConfig) => number
}

export const lane = (
  name: string,
  options: {
    readonly concurrency: (config: WorkerConfig) => number
    readonly perGroup: (config: WorkerConfig) => number
  }
): Lane => ({ name, concurrency: options.concurrency, perGroup: options.perGroup })

/**
 * What the jobs of an ordered kind are ordered by (`enqueue`'s `orderKey`): the features give their
 * conversation's id. A UUID, in any version: the column that keeps it (`jobs.conversation_id`, read by
 * the claim's functions of migrations 0007 and 0008) is a `uuid`; another string is refused (a defect
 * naming it) rather than stored as something else.
 */
export const OrderKey = Schema.String.check(
  Schema.isGUID({ message: "A job's order key must be a UUID (jobs.conversation_id is a uuid column)" })
)
export type OrderKey = typeof OrderKey.Type

export interface Definition<A, I> {
  readonly name: string
  readonly payload: Schema.Codec<A, I>
  /** The lane its jobs run in. */
  readonly lane: Lane
  /**
   * Jobs of this kind queued with one `orderKey` run one at a time, in the order their transactions
   * committed (see `JobQueue.enqueue`); jobs queued without one are not ordered.
   */
  readonly ordered: boolean
  /**
   * At most one live (pending or running) job per key: the queue refuses a second one, and the live one
   * can be brought forward (`JobQueue.runNow`), moved (`reschedule`) or cancelled (`cancel`) by its key.
   */
  readonly key: ((payload: A) => string) | undefined
  /**
   * `"handler"`: the handler settles its own failures (as the delivery policy does); only failures it
   * cannot settle (the database) reach the worker, which retries them until they pass. Otherwise a job
   * that keeps failing is dead after `JOB_MAX_ATTEMPTS`.
   */
  readonly retries: "bounded" | "handler"
}

/**
 * The kinds defined in this process, by name: what an application's pool must run (`definedKinds`).
 * Recorded when the defining module loads; a definition is a constant of its feature's module.
 */
const defined = new Set<string>()

/** Every kind `define` has made in this process, sorted: the application's pool runs them all. */
export const definedKinds = (): ReadonlyArray<string> => [...defined].sort()

export const define = <A, I>(
  name: string,
  options: {
    readonly payload: Schema.Codec<A, I>
    readonly lane: Lane
    readonly ordered?: boolean
    readonly key?: (payload: A) => string
    readonly retries?: "bounded" | "handler"
  }
): Definition<A, I> => {
  defined.add(name)
  return {
    name,
    payload: options.payload,
    lane: options.lane,
    ordered: options.ordered ?? false,
    key: options.key,
    retries: options.retries ?? "bounded"
  }
}

/**
 * How a run ended: done, to be retried after a delay, or given up. A retry's `at`, when given, is the
 * instant the handler decided on (`delay` from its own clock's now): the job is due exactly then, so a
 * handler that records the time elsewhere (the delivery's attempt log) records the job's own.
 */
export type Outcome = Data.TaggedEnum<{
  Done: {}
  Retry: { readonly delay: Duration.Input; readonly error: string; readonly at?: DateTime.Utc }
  Dead: { readonly error: string }
}>
export const Outcome = Data.taggedEnum<Outcome>()

/** The W3C trace context of the request that queued a job: its span continues that trace. */
export const TraceContext = Schema.Struct({ traceparent: Schema.String })
export type TraceContext = typeof TraceContext.Type

/** A claimed job, as its handler sees it. */
export const Claimed = Schema.Struct({
  id: JobId,
  kind: Schema.String,
  payload: Schema.Unknown,
  attempts: Schema.Number,
  traceContext: Schema.NullOr(TraceContext),
  /** What it was queued with as its `orderKey` (ordered or not). */
  orderKey: Schema.NullOr(OrderKey),
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
  /** The kind it runs. */
  readonly name: string
  readonly lane: Lane
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
    lane: definition.lane,
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
    lane: definition.lane,
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
 * A lane as a pool runs it: the kinds registered in it, and its figures read from the settings (see
 * `Lane`). What `JobQueue.claim` is given.
 */
export interface PoolLane {
  readonly name: string
  readonly kinds: ReadonlyArray<string>
  readonly concurrency: number
  readonly perGroup: number
}

/**
 * The handlers a pool runs, registered by the features' layers (`handlers`) while the pool is built;
 * one registry per pool (`WorkersLive` makes it), read once its jobs' layers are built.
 */
export class Registry extends Context.Service<Registry>()("Parley/JobRegistry", {
  make: Effect.gen(function*() {
    const registered = yield* Ref.make<ReadonlyArray<Handler>>([])
    return {
      register: (handlers: ReadonlyArray<Handler>) => Ref.update(registered, (all) => [...all, ...handlers]),
      registered: Ref.get(registered)
    } as const
  })
}) {}

/**
 * A layer that registers the handlers `make` builds (from the feature's services) with the pool being
 * built: a feature's jobs.
 */
export const handlers = <E, R>(
  make: Effect.Effect<ReadonlyArray<Handler>, E, R>
): Layer.Layer<never, E, Registry | Exclude<R, Scope.Scope>> =>
  Layer.effectDiscard(Effect.flatMap(Effect.service(Registry), (registry) => Effect.flatMap(make, registry.register)))

/** Why a pool refused to start: its kinds or lanes do not add up (see the module comment). */
export class JobsMisdeclared extends Data.TaggedError("JobsMisdeclared")<{ readonly reason: string }> {
  override get message() {
    return this.reason
  }
}

/**
 * The lanes of a pool running `registered` (by name of their first kind), with their figures from
 * `config`; or why the pool must not start. `expected`: kinds the pool must run (an application's
 * pool: every kind its code defines), each of which must have a handler.
 */
export const lanesOf = (
  registered: ReadonlyArray<Handler>,
  config: WorkerConfig,
  expected: ReadonlyArray<string> = []
): Result.Result<ReadonlyArray<PoolLane>, JobsMisdeclared> => {
  if (registered.length === 0) {
    return Result.fail(new JobsMisdeclared({ reason: "No job handler is registered: the features' job layers are missing" }))
  }
  const byKind = new Map<string, number>()
  for (const handler of registered) byKind.set(handler.name, (byKind.get(handler.name) ?? 0) + 1)
  const twice = [...byKind].filter(([, n]) => n > 1).map(([kind]) => kind).sort()
  if (twice.length > 0) {
    return Result.fail(
      new JobsMisdeclared({ reason: `Job kind ${twice.join(", ")} is registered more than once: one handler per kind` })
    )
  }
  const unhandled = expected.filter((kind) => !byKind.has(kind))
  if (unhandled.length > 0) {
    return Result.fail(
      new JobsMisdeclared({
        reason: `Job kind ${unhandled.join(", ")} is defined but has no handler: add its feature's job layer ` +
          `(Job.handlers) to JobsLive`
      })
    )
  }
  const lanes = new Map<string, { readonly lane: Lane; readonly kinds: Array<string> }>()
  // By name: the features' layers register concurrently, and the lanes (and any refusal) must not vary.
  for (const handler of [...registered].sort((a, b) => a.name < b.name ? -1 : 1)) {
    const known = lanes.get(handler.lane.name)
    if (known === undefined) {
      lanes.set(handler.lane.name, { lane: handler.lane, kinds: [handler.name] })
    } else if (known.lane !== handler.lane) {
      return Result.fail(
        new JobsMisdeclared({
          reason: `Job lane ${handler.lane.name} is declared twice (by ${known.kinds.join(", ")} and by ${handler.name}): declare it once`
        })
      )
    } else {
      known.kinds.push(handler.name)
    }
  }
  return Result.succeed([...lanes.values()].map(({ kinds, lane }) => ({
    name: lane.name,
    kinds,
    concurrency: lane.concurrency(config),
    perGroup: lane.perGroup(config)
  })))
}
