/**
 * The `deliver_event` job: one signed POST of the stored body to the integration's webhook, recorded
 * as an attempt. 2xx = delivered; 410 Gone turns the integration's webhook off and the event dead;
 * anything else (or a time-out) is retried per `Retry.ts` until the retry window closes.
 */
import { HttpClientRequest } from "@effect/platform"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Cause from "effect/Cause"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as AppConfig from "../Config.js"
import { EventId } from "../Domain/Ids.js"
import { reservedHeaderNames } from "../Domain/Integration.js"
import { IntegrationsRepo } from "../Integrations/Repo.js"
import { type JobHandler, Outcome } from "../Jobs/Handler.js"
import { DELIVER_EVENT, type Job } from "../Jobs/Queue.js"
import { deliveryAttemptDuration, deliveryAttempts, deliveryLatency } from "../Observability/Metrics.js"
import { Workspaces } from "../Workspaces/Workspaces.js"
import { DeliveryConfig } from "./Config.js"
import { DeliveriesRepo, type EventRow } from "./Repo.js"
import { nextAttempt, parseRetryAfter } from "./Retry.js"
import { signatureHeaders } from "./Signature.js"
import { internalLiteral } from "./Ssrf.js"
import { WebhookClient } from "./WebhookClient.js"

const Payload = Schema.Struct({ eventId: EventId })

const SNIPPET = 500
const USER_AGENT = "Parley-Webhooks/1"

interface AttemptResult {
  readonly statusCode: number | null
  readonly error: string | null
  readonly snippet: string | null
  readonly retryAfter: string | undefined
  /** Never worth retrying (the SSRF guard refused the address). */
  readonly refused: boolean
}

const describeFailure = (cause: Cause.Cause<unknown>): { readonly error: string; readonly refused: boolean } => {
  const text = Cause.pretty(cause)
  if (text.includes("SSRF guard")) {
    const line = text.split("\n").find((l) => l.includes("SSRF guard")) ?? "SSRF guard"
    return { error: line.replace(/^.*?(SSRF guard)/, "$1").trim(), refused: true }
  }
  if (Cause.isFailType(cause) && cause.error instanceof Cause.TimeoutException) {
    return { error: "Timed out", refused: false }
  }
  const first = Cause.squash(cause)
  const message = first instanceof Error ? first.message : String(first)
  const reason = typeof first === "object" && first !== null && "cause" in first && first.cause instanceof Error
    ? `${message}: ${first.cause.message}`
    : message
  return { error: reason.slice(0, 1000), refused: false }
}

export const makeSender = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const repo = yield* DeliveriesRepo
  const integrations = yield* IntegrationsRepo
  const workspaces = yield* Workspaces
  const client = yield* WebhookClient
  const config = yield* DeliveryConfig
  const mode = yield* AppConfig.Mode

  const post = (url: string, headers: Record<string, string>, body: string) =>
    HttpClientRequest.post(url).pipe(
      HttpClientRequest.setHeaders(headers),
      HttpClientRequest.bodyText(body, "application/json"),
      client.execute,
      Effect.flatMap((response) =>
        // Only the first characters are kept: a receiver streaming megabytes is not read to the end.
        Stream.decodeText(response.stream).pipe(
          Stream.runFoldWhile("", (text) => text.length < SNIPPET, (text, chunk) => text + chunk),
          Effect.orElseSucceed(() => ""),
          Effect.map((text): AttemptResult => ({
          statusCode: response.status,
          error: response.status >= 200 && response.status < 300 ? null : `HTTP ${response.status}`,
          snippet: text.slice(0, SNIPPET),
          retryAfter: response.headers["retry-after"],
          refused: false
        }))
        )
      ),
      Effect.scoped,
      Effect.timeout(config.timeout),
      Effect.catchAllCause((cause) =>
        Effect.succeed<AttemptResult>({ statusCode: null, snippet: null, retryAfter: undefined, ...describeFailure(cause) })
      )
    )

  const giveUp = (event: EventRow, attempts: number, statusCode: number | null, error: string) =>
    Effect.as(repo.markDead(event.id, { attempts, statusCode, error }), Outcome.Done())

  const attempt = Effect.fn("Delivery.attempt")(function*(event: EventRow) {
    const integration = yield* integrations.findById(event.integrationId)
    if (Option.isNone(integration)) return yield* giveUp(event, event.attempts, null, "Integration deleted")
    const settings = integration.value.settings
    if (!settings.webhookEnabled) {
      return yield* giveUp(
        event,
        event.attempts,
        null,
        "Webhook disabled (a 410 Gone, or webhookEnabled: false); re-enable it with update-settings, then replay"
      )
    }
    const url = settings.webhook.url
    const literal = mode === "production" ? internalLiteral(url) : undefined
    if (literal !== undefined) {
      return yield* giveUp(event, event.attempts, null, `SSRF guard: ${literal} is internal; refused in production mode`)
    }

    const number = event.attempts + 1
    const secrets = yield* workspaces.webhookSecrets(event.workspaceId)
    const started = yield* DateTime.now
    const custom = Object.fromEntries(
      Object.entries(settings.webhook.headers).filter(([name]) =>
        !(reservedHeaderNames as ReadonlyArray<string>).includes(name.toLowerCase()) &&
        !name.toLowerCase().startsWith("x-parley-")
      )
    )
    // Signed afresh on every attempt: a new timestamp, the same bytes.
    const headers = {
      ...custom,
      "User-Agent": USER_AGENT,
      ...signatureHeaders({
        secret: secrets.current,
        previousSecret: Option.getOrUndefined(secrets.previous),
        id: event.id,
        timestamp: Math.floor(started.epochMillis / 1000),
        body: event.body
      })
    }
    const host = (() => {
      try {
        return new URL(url).host
      } catch {
        return url
      }
    })()
    yield* Effect.annotateCurrentSpan({
      "event.id": event.id,
      "event.kind": event.kind,
      "delivery.attempt": number,
      "server.address": host,
      "integration.id": event.integrationId,
      "workspace.id": event.workspaceId
    })
    const result = yield* post(url, headers, event.body)
    const finished = yield* DateTime.now
    const latencyMs = finished.epochMillis - started.epochMillis
    const outcome = result.error === null ? "delivered" : result.statusCode === 410 ? "gone" : "failed"
    yield* Metric.increment(Metric.tagged(Metric.tagged(deliveryAttempts, "event", event.kind), "outcome", outcome))
    yield* Metric.update(deliveryAttemptDuration, latencyMs / 1000)
    yield* Effect.annotateCurrentSpan({
      "http.response.status_code": result.statusCode ?? 0,
      ...(result.error !== null ? { "error.type": result.error.slice(0, 200) } : {})
    })

    const record = (nextRetryAt: DateTime.Utc | null) =>
      repo.recordAttempt({
        eventId: event.id,
        attempt: number,
        startedAt: started,
        latencyMs,
        statusCode: result.statusCode,
        error: result.error,
        responseSnippet: result.snippet,
        nextRetryAt
      })

    if (result.error === null && result.statusCode !== null) {
      yield* record(null).pipe(Effect.zipRight(repo.markDelivered(event.id, number, result.statusCode)), sql.withTransaction)
      if (event.originAt !== null) {
        yield* Metric.update(deliveryLatency, (finished.epochMillis - event.originAt.epochMillis) / 1000)
      }
      return Outcome.Done()
    }
    if (result.statusCode === 410) {
      yield* record(null).pipe(
        Effect.zipRight(integrations.setWebhookEnabled(event.integrationId, false)),
        Effect.zipRight(repo.markDead(event.id, { attempts: number, statusCode: 410, error: "410 Gone: webhook disabled" })),
        sql.withTransaction
      )
      yield* Effect.logWarning(`Integration ${event.integrationId}: receiver answered 410 Gone; webhook disabled`)
      return Outcome.Done()
    }
    const error = result.error ?? "failed"
    const next = result.refused
      ? ({ _tag: "GiveUp" } as const)
      : yield* nextAttempt(config, {
        attempt: number,
        createdAt: event.replayedAt ?? event.createdAt,
        now: finished,
        retryAfter: parseRetryAfter(result.retryAfter, finished)
      })
    if (next._tag === "GiveUp") {
      yield* record(null).pipe(
        Effect.zipRight(repo.markDead(event.id, { attempts: number, statusCode: result.statusCode, error })),
        sql.withTransaction
      )
      return Outcome.Done()
    }
    const nextRetryAt = DateTime.addDuration(finished, next.delay)
    yield* Effect.annotateCurrentSpan({ "delivery.next_retry_at": DateTime.formatIso(nextRetryAt) })
    yield* record(nextRetryAt).pipe(
      Effect.zipRight(repo.markFailed(event.id, {
        attempts: number,
        statusCode: result.statusCode,
        error,
        nextAttemptAt: DateTime.toDateUtc(nextRetryAt)
      })),
      sql.withTransaction
    )
    return Outcome.Retry({ delay: next.delay, error })
  })

  const run = (job: Job) =>
    Effect.gen(function*() {
      const { eventId } = yield* Schema.decodeUnknown(Payload)(job.payload)
      const event = yield* repo.findById(eventId)
      if (Option.isNone(event)) return Outcome.Dead({ error: `Event ${eventId} not found` })
      // A duplicate job (a replay raced a retry) finds the event settled.
      if (event.value.status === "delivered" || event.value.status === "dead") return Outcome.Done()
      return yield* attempt(event.value)
    })

  return { kind: DELIVER_EVENT, run } satisfies JobHandler
})

