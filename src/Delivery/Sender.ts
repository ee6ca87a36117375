/**
 * One delivery attempt of an event (the `deliver_event` job): a signed POST of the stored body to the
 * integration's webhook, recorded as an attempt. 2xx = delivered; 410 Gone turns the integration's
 * webhook off and the event dead; anything else — a status, a time-out, or a failure before the POST
 * (an integration or a secret that cannot be read) — is retried per `Retry.ts` until the retry window
 * closes, then the event is dead with the reason. When a retry is due is its job's alone (`Jobs.ts`):
 * the sender decides it and returns it (`Outcome.Retry`'s `at`, which the attempt log records too), and
 * the queue stores it. Failures that retrying cannot cure (the integration is gone or disabled, the
 * SSRF guard refused the address) make it dead at once: what an attempt ended with is an `Ending`, and
 * what follows is decided by `decide` (`Decide.ts`), in the batch and in the settlement under the
 * event's lock alike. A dead event no longer holds back the events of its conversation. The attempts
 * of one claim to one integration run as a batch (`deliverMany`): a statement per step for all of them,
 * and only the uncommon outcomes (a 410, giving up, an event replayed meanwhile) settled one by one
 * under the event's lock.
 */
import * as SqlClient from "effect/sql/SqlClient"
import * as Arr from "effect/Array"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import type * as Tracer from "effect/Tracer"
import * as AppConfig from "../Config.js"
import { type Delivery, isBestEffort } from "../Domain/Delivery.js"
import type { EventId, IntegrationId } from "../Domain/Ids.js"
import { headerProblems } from "../Domain/HttpHeaders.js"
import { webhookHeaderRules } from "../Domain/Integration.js"
import { type DeliveryTarget, IntegrationsRepo } from "../Integrations/Repo.js"
import { Outcome } from "../Jobs/Job.js"
import { deliveryAttemptDuration, deliveryAttemptsOf, deliveryDeadOf, deliveryLatency } from "../Observability/Metrics.js"
import { type WebhookSecrets, Workspaces } from "../Workspaces/Workspaces.js"
import { decide, type Decision, Ending, errorOf, outcomeOf, snippetOf, statusCodeOf } from "./Decide.js"
import { DeliveriesRepo } from "./Repo.js"
import { signatureHeaders } from "./Signature.js"
import { internalLiteral, SsrfRefused } from "./Ssrf.js"
import { WebhookClient, WebhookClientLive, WebhookTimeout } from "./WebhookClient.js"

const SNIPPET = 500
/** A batch's attempts settled on their own (failures, replays) at once, at most: a database connection each. */
const SETTLING = 4
const USER_AGENT = "Parley-Webhooks/1"

/** What one attempt came to. */
interface AttemptResult {
  readonly startedAt: DateTime.Utc
  readonly latencyMs: number
  readonly ending: Ending
}

/** Where and how a batch's attempts to one integration are sent. */
interface Route {
  readonly url: string
  readonly host: string
  /** The integration's custom headers and the User-Agent; each attempt adds its signature. */
  readonly headers: Readonly<Record<string, string>>
  readonly secrets: WebhookSecrets
}

/** Why a batch's attempts to one integration are not sent. */
type Unsent = Extract<Ending, { readonly _tag: "NotSent" | "Refused" }>

/** The integration's custom headers that can be sent (rows saved before a rule existed may hold others). */
const sendable = (headers: Readonly<Record<string, string>>): Record<string, string> => {
  const refused = new Set(headerProblems(headers, webhookHeaderRules).map((problem) => problem.name))
  return refused.has(undefined)
    ? {}
    : Object.fromEntries(Object.entries(headers).filter(([name]) => !refused.has(name)))
}

/** The SSRF guard's refusal, wherever it sits in the chain of causes undici wraps it in. */
const refusal = (error: unknown): SsrfRefused | undefined => {
  for (let current = error, depth = 0; current instanceof Error && depth < 5; current = current.cause, depth++) {
    if (current instanceof SsrfRefused) return current
  }
  return undefined
}

const messageOf = (cause: Cause.Cause<unknown>): string => {
  const first = Cause.squash(cause)
  const message = first instanceof Error ? first.message : String(first)
  return first instanceof Error && first.cause instanceof Error ? `${message}: ${first.cause.message}` : message
}

const describeFailure = (cause: Cause.Cause<unknown>): Ending => {
  const refused = refusal(Cause.squash(cause))
  if (refused !== undefined) return Ending.Refused({ reason: refused.message })
  // The POST's own failure and nothing else (what a time-out is).
  const [only, ...others] = cause.reasons
  if (others.length === 0 && only !== undefined && Cause.isFailReason(only) && only.error instanceof WebhookTimeout) {
    return Ending.TimedOut()
  }
  return Ending.TransportFailed({ message: messageOf(cause).slice(0, 1000) })
}

/** Running under a span captures a stack trace unless told not to: it would point into the loop, per event. */
const noStackTrace = { captureStackTrace: false } as const

const hostOf = (url: string) => {
  try {
    return new URL(url).host
  } catch {
    return url
  }
}

export class Sender extends Context.Service<Sender>()("Parley/Sender", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const repo = yield* DeliveriesRepo
    const integrations = yield* IntegrationsRepo
    const workspaces = yield* Workspaces
    const client = yield* WebhookClient
    const config = yield* AppConfig.DeliveryConfig
    const mode = yield* AppConfig.Mode

    const post = (url: string, headers: Record<string, string>, body: string): Effect.Effect<Ending> =>
      client.post({ url, headers, body, keep: SNIPPET, timeout: config.timeout }).pipe(
        Effect.map((answer) =>
          answer.status >= 200 && answer.status < 300
            ? Ending.Delivered({ status: answer.status, body: answer.body })
            : answer.status === 410
            ? Ending.Gone({ body: answer.body })
            : Ending.Rejected({ status: answer.status, body: answer.body, retryAfter: answer.retryAfter })
        ),
        Effect.catchCause((cause) => Effect.succeed(describeFailure(cause)))
      )

    /**
     * What every attempt of a batch to one integration shares, made once for the batch: where to POST,
     * the headers every attempt sends, the workspace's secrets opened; or why nothing can be sent (the
     * integration deleted or disabled, an internal address in production, a secret that cannot be read).
     */
    const route = (target: Option.Option<DeliveryTarget>): Effect.Effect<Route | Unsent> =>
      Effect.gen(function*() {
        if (Option.isNone(target)) return Ending.Refused({ reason: "Integration deleted" })
        const settings = target.value.integration.settings
        if (!settings.webhookEnabled) {
          return Ending.Refused({
            reason: "Webhook disabled (a 410 Gone, or webhookEnabled: false); re-enable it with update-settings, then replay"
          })
        }
        const url = settings.webhook.url
        const literal = mode === "production" ? internalLiteral(url) : undefined
        if (literal !== undefined) {
          return Ending.Refused({ reason: `SSRF guard: ${literal} is internal; refused in production mode` })
        }
        const secrets = yield* workspaces.openWebhookSecrets(target.value.secrets)
        return {
          url,
          host: hostOf(url),
          headers: { ...sendable(settings.webhook.headers), "User-Agent": USER_AGENT },
          secrets
        } satisfies Route
      }).pipe(
        Effect.catchCause((cause) =>
          Cause.hasInterruptsOnly(cause)
            ? Effect.failCause(cause)
            : Effect.succeed(Ending.NotSent({ reason: `Not sent: ${messageOf(cause)}`.slice(0, 1000) }))
        )
      )

    /** The POST of `event` by its integration's route, signed afresh on every attempt: a new timestamp, the same bytes. */
    const attempt = (event: Delivery, to: Route | Unsent): Effect.Effect<AttemptResult> =>
      "url" in to
        ? Effect.gen(function*() {
          const startedAt = yield* DateTime.now
          const headers = {
            ...to.headers,
            ...signatureHeaders({
              secret: to.secrets.current,
              previousSecret: Option.getOrUndefined(to.secrets.previous),
              id: event.id,
              timestamp: Math.floor(startedAt.epochMilliseconds / 1000),
              body: event.body
            })
          }
          yield* Effect.annotateCurrentSpan({ "server.address": to.host })
          const ending = yield* post(to.url, headers, event.body)
          const finished = yield* DateTime.now
          return { ending, startedAt, latencyMs: finished.epochMilliseconds - startedAt.epochMilliseconds }
        })
        : Effect.map(DateTime.now, (startedAt) => ({ startedAt, latencyMs: 0, ending: to }))

    const log = (event: Delivery, number: number, result: AttemptResult) => {
      const statusCode = statusCodeOf(result.ending)
      const error = errorOf(result.ending)
      return Effect.annotateLogs({
        "integration.id": event.integrationId,
        "event.id": event.id,
        "event.kind": event.event,
        "delivery.attempt": number,
        "delivery.latency_ms": result.latencyMs,
        ...(statusCode !== null ? { "http.response.status_code": statusCode } : {}),
        ...(error !== null ? { error } : {})
      })
    }

    /** The attempt's row for `recordAttempts`: delivered when it has no error, else failed until `nextRetryAt`. */
    const attemptRow = (event: Delivery, result: AttemptResult, at: DateTime.Utc, nextRetryAt: DateTime.Utc | null) => ({
      id: event.id,
      generation: event.generation,
      startedAt: result.startedAt,
      latencyMs: result.latencyMs,
      statusCode: statusCodeOf(result.ending),
      error: errorOf(result.ending),
      responseSnippet: snippetOf(result.ending),
      nextRetryAt,
      at
    })

    /** What `event`'s attempt leads to (`decide`), in the retry window its creation or last replay opened. */
    const decision = (event: Delivery, result: AttemptResult, now: DateTime.Utc) =>
      Effect.map(Random.next, (random) =>
        decide(result.ending, event.attempts + 1, config, {
          opened: event.replayedAt ?? event.createdAt,
          now,
          random
        }, isBestEffort(event.event)))

    /** A failed attempt recorded as attempt `number`: its `warn` record, its span's next attempt. */
    const failed = (event: Delivery, number: number, result: AttemptResult, nextRetryAt: DateTime.Utc) =>
      Effect.andThen(
        Effect.logWarning("Delivery attempt failed").pipe(
          log(event, number, result),
          Effect.annotateLogs("delivery.next_attempt_at", DateTime.formatIso(nextRetryAt))
        ),
        Effect.annotateCurrentSpan({ "delivery.next_retry_at": DateTime.formatIso(nextRetryAt) })
      )

    /** A delivery recorded as attempt `number`: its log record and end-to-end latency. */
    const delivered = (event: Delivery, number: number, result: AttemptResult, now: DateTime.Utc) =>
      Effect.gen(function*() {
        // At `info` when it ends earlier failures (each one a `warn`): the recovery is news too.
        yield* (number > 1 ? Effect.logInfo : Effect.logDebug)("Delivered").pipe(log(event, number, result))
        if (event.originAt !== null) {
          yield* Metric.update(deliveryLatency, (now.epochMilliseconds - event.originAt.epochMilliseconds) / 1000)
        }
      })

    /** Records the attempt and moves the event on, under the event's row lock (replays take it too). */
    const settle = (started: Delivery, result: AttemptResult) =>
      Effect.gen(function*() {
        const done = Outcome.Done()
        const event = Option.getOrElse(yield* repo.lock(started.id), () => started)
        const number = event.attempts + 1
        const now = yield* DateTime.now
        /** The event after this attempt, `changes` applied. */
        const write = (
          changes: Partial<Pick<Delivery, "status" | "lastError" | "deliveredAt" | "deadAt">>
        ) =>
          repo.update({
            id: event.id,
            status: event.status,
            attempts: number,
            lastStatusCode: statusCodeOf(result.ending),
            lastError: errorOf(result.ending),
            deliveredAt: event.deliveredAt,
            deadAt: event.deadAt,
            ...changes
          })
        const record = (nextRetryAt: DateTime.Utc | null) =>
          repo.recordAttempt({
            eventId: event.id,
            attempt: number,
            startedAt: result.startedAt,
            latencyMs: result.latencyMs,
            statusCode: statusCodeOf(result.ending),
            error: errorOf(result.ending),
            responseSnippet: snippetOf(result.ending),
            nextRetryAt
          })
        const dead = (error: string) =>
          Effect.all([
            write({ status: "dead", lastError: error, deadAt: now }),
            Effect.logError("Delivery dead-lettered").pipe(
              log(event, number, result),
              Effect.annotateLogs("delivery.dead_reason", error)
            ),
            Metric.update(deliveryDeadOf(event.event), 1)
          ], { discard: true })

        if (event.generation !== started.generation) {
          // Replayed while this attempt was in flight: the replay's own run follows at once.
          yield* record(null)
          yield* write({})
          return done
        }
        const next = yield* decision(event, result, now)
        switch (next._tag) {
          case "Delivered": {
            // Its batch tried this without the lock first; here only if the event row went away since.
            const recorded = yield* repo.recordAttempts([attemptRow(event, result, now, null)])
            for (const { attempt } of recorded) yield* delivered(event, attempt, result, now)
            return done
          }
          case "Disabled": {
            yield* record(null)
            yield* integrations.setWebhookEnabled(event.integrationId, false)
            yield* Effect.logError("Receiver answered 410 Gone: webhook disabled").pipe(log(event, number, result))
            yield* dead("410 Gone: webhook disabled")
            return done
          }
          case "GiveUp": {
            yield* record(null)
            yield* dead(next.error)
            return done
          }
          case "Retry": {
            yield* record(next.at)
            yield* write({ status: "failed" })
            yield* failed(event, number, result, next.at)
            return Outcome.Retry({ delay: next.delay, at: next.at, error: next.error })
          }
        }
      }).pipe(sql.withTransaction, Effect.orDie)

    /** One event's attempt, under its own span; its metrics and span attributes. */
    const attemptOne = (event: Delivery, to: Route | Unsent) =>
      Effect.gen(function*() {
        yield* Effect.annotateCurrentSpan({
          "event.id": event.id,
          "event.kind": event.event,
          "delivery.attempt": event.attempts + 1,
          "integration.id": event.integrationId,
          "workspace.id": event.workspaceId
        })
        const result = yield* attempt(event, to)
        const error = errorOf(result.ending)
        yield* Metric.update(deliveryAttemptsOf(event.event, outcomeOf(result.ending)), 1)
        yield* Metric.update(deliveryAttemptDuration, result.latencyMs / 1000)
        yield* Effect.annotateCurrentSpan({
          "http.response.status_code": statusCodeOf(result.ending) ?? 0,
          ...(error !== null ? { "error.type": error.slice(0, 200) } : {})
        })
        return result
      })

    /**
     * One attempt at each event (the jobs of one claim for one integration), a statement for all of them
     * at each step: the events, their integrations, and the common case — a 2xx for an event no replay
     * touched since it was loaded — recorded without a lock. Each event's own work (its POST, its
     * settlement when it is not that case) runs concurrently, under a `Delivery.attempt` span that is a
     * child of `span` (its job's). Each event's outcome, in the items' order.
     */
    const deliverMany = (items: ReadonlyArray<{ readonly eventId: EventId; readonly span?: Tracer.AnySpan }>) =>
      Effect.gen(function*() {
        const events = new Map((yield* repo.findByIds(items.map((item) => item.eventId))).map((event) => [event.id, event]))
        const live = [...events.values()].filter((event) => event.status !== "delivered" && event.status !== "dead")
        const integrationIds = [...new Set(live.map((event) => event.integrationId))]
        const targets = integrationIds.length === 0
          ? new Map<IntegrationId, DeliveryTarget>()
          : yield* integrations.findForDelivery(integrationIds)
        const routes = new Map(
          yield* Effect.forEach(integrationIds, (id) => Effect.map(route(Option.fromNullishOr(targets.get(id))), (to) => [id, to] as const))
        )
        // Each event's span covers its attempt and its settlement, as a child of its job's.
        const spans = yield* Effect.forEach(items, ({ span }) =>
          // No stack trace (makeSpanScoped takes none): it would point into the sender's loop, and capturing
          // one costs more than the span.
          Effect.makeSpanScoped("Delivery.attempt", span === undefined ? {} : { parent: span }))
        const attempted = yield* Effect.forEach(Arr.zip(items, spans), ([{ eventId }, span]): Effect.Effect<
          Outcome | { readonly event: Delivery; readonly result: AttemptResult; readonly span: Tracer.Span }
        > => {
          const event = events.get(eventId)
          if (event === undefined) return Effect.succeed(Outcome.Dead({ error: `Event ${eventId} not found` }))
          // Settled since this job was queued; a replay sets it pending again.
          if (event.status === "delivered" || event.status === "dead") return Effect.succeed(Outcome.Done())
          const to = routes.get(event.integrationId) ?? Ending.Refused({ reason: "Integration deleted" })
          return attemptOne(event, to).pipe(
            Effect.map((result) => ({ event, result, span })),
            Effect.withParentSpan(span, noStackTrace)
          )
        }, { concurrency: "unbounded" })
        const now = yield* DateTime.now
        // Delivered, or failed with a next attempt: recorded together. A 410, giving up, or an event a
        // replay moved on is settled on its own, under the event's lock.
        const decided = yield* Effect.forEach(attempted, (item): Effect.Effect<{
          readonly item: (typeof attempted)[number]
          readonly row: ReturnType<typeof attemptRow> | undefined
          readonly next: Decision | undefined
        }> => {
          if (!("event" in item)) return Effect.succeed({ item, row: undefined, next: undefined })
          const { event, result } = item
          return Effect.map(decision(event, result, now), (next) => ({
            item,
            row: next._tag === "Delivered"
              ? attemptRow(event, result, now, null)
              : next._tag === "Retry"
              ? attemptRow(event, result, now, next.at)
              : undefined,
            next
          }))
        })
        const rows = decided.flatMap(({ row }) => row === undefined ? [] : [row])
        const recorded = new Map(
          (rows.length === 0 ? [] : yield* repo.recordAttempts(rows)).map((row) => [row.eventId, row.attempt])
        )
        return yield* Effect.forEach(decided, ({ item, next }): Effect.Effect<Outcome> => {
          if (!("event" in item)) return Effect.succeed(item)
          const { event, result, span } = item
          const number = recorded.get(event.id)
          const outcome = number === undefined || next === undefined
            ? settle(event, result)
            : next._tag === "Retry"
            ? Effect.as(
              failed(event, number, result, next.at),
              Outcome.Retry({ delay: next.delay, at: next.at, error: next.error })
            )
            : Effect.as(delivered(event, number, result, now), Outcome.Done())
          return Effect.withParentSpan(outcome, span, noStackTrace)
          // A settlement is a transaction: a batch's must not take the pool from the HTTP requests.
        }, { concurrency: SETTLING })
      }).pipe(Effect.scoped, Effect.orDie)

    /** One event's attempt (a batch of one). */
    const deliver = (eventId: EventId) =>
      Effect.flatMap(Effect.option(Effect.currentSpan), (span) =>
        Effect.map(
          deliverMany([{ eventId, ...(Option.isSome(span) ? { span: span.value } : {}) }]),
          (outcomes) => outcomes[0] ?? Outcome.Dead({ error: `Event ${eventId} not found` })
        ))

    return { deliver, deliverMany } as const
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
  static readonly layer = this.layerWithoutDependencies.pipe(
    Layer.provide([DeliveriesRepo.layer, IntegrationsRepo.layer, Workspaces.layer, WebhookClientLive])
  )
}
