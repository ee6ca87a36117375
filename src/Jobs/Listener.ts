/**
 * LISTEN that is re-established whenever its connection drops (a PostgreSQL restart, a network
 * failure). `PgClient.listen` of @effect/sql-pg reserves a connection of the pool for it and fails its
 * queue when that connection is lost; here listening then starts again, with backoff. The connection is
 * also probed every `probeInterval`: a notification this listener sends on its channel must come back
 * on it, so a half-open connection (a partition) is noticed within a probe, not after the operating
 * system's TCP keep-alive. The probe goes through the pool (the listening connection runs nothing else)
 * and covers the whole path a notification takes; probes (every listener's, on every instance) are
 * never passed on.
 */
import { PgClient } from "@effect/sql-pg"
import * as Deferred from "effect/Deferred"
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as crypto from "node:crypto"

/** Emitted after each (re)connection: notifications sent while disconnected are lost, so look now. */
export const CONNECTED = "connected"

/** What every probe's payload starts with: `<PROBE><listener>:<n>`. */
const PROBE = "parley-listen-probe:"

const connectOnce = (pg: PgClient.PgClient, channel: string, probeInterval: Duration.Duration) =>
  Stream.callback<string, Error>((out) =>
    Effect.gen(function*() {
      // Held until the stream ends: then UNLISTEN, and the connection goes back to the pool. Released in
      // the background: on a connection that stopped answering, UNLISTEN waits until the pool's own
      // bounds close it, and reconnecting must not wait for that.
      const listening = yield* Scope.make()
      yield* Effect.addFinalizer(() => Effect.asVoid(Effect.forkDetach(Scope.close(listening, Exit.void))))
      const notifications = yield* pg.listen(channel).pipe(
        Scope.provide(listening),
        Effect.mapError((cause) => new Error("LISTEN failed", { cause }))
      )
      yield* Queue.offer(out, CONNECTED)

      const listener = crypto.randomUUID()
      let sent = 0
      /** The probe whose notification is awaited. */
      let awaited: { readonly payload: string; readonly arrived: Deferred.Deferred<void, Error> } | undefined

      const forward = Queue.take(notifications).pipe(
        Effect.mapError((cause) => new Error("LISTEN connection ended", { cause })),
        Effect.flatMap(({ payload }): Effect.Effect<unknown> => {
          if (!payload.startsWith(PROBE)) return Queue.offer(out, payload)
          return awaited !== undefined && payload === awaited.payload ? Deferred.succeed(awaited.arrived, undefined) : Effect.void
        }),
        Effect.forever
      )

      const probe = Effect.gen(function*() {
        const arrived = yield* Deferred.make<void, Error>()
        const payload = `${PROBE}${listener}:${++sent}`
        awaited = { payload, arrived }
        // Not awaited: a statement on a connection that stopped answering cannot be interrupted before it
        // answers (sql-pg drains it first), and the probe must end within its interval.
        yield* pg.notify(channel, payload).pipe(
          Effect.catch((cause) => Deferred.fail(arrived, new Error("LISTEN connection probe failed", { cause }))),
          Effect.forkDetach
        )
        yield* Deferred.await(arrived).pipe(
          Effect.timeoutOrElse({
            duration: probeInterval,
            orElse: () => Effect.fail(new Error("LISTEN connection probe timed out"))
          })
        )
      }).pipe(Effect.repeat(Schedule.spaced(probeInterval)))

      // Either ends only by failing: the connection is lost (or not answering), and the stream fails.
      yield* Effect.all([forward, probe], { concurrency: "unbounded", discard: true })
    }).pipe(
      // Retried like a lost connection: a defect here must not stop notifications for good.
      Effect.catchDefect((defect) => Effect.fail(new Error("LISTEN failed", { cause: defect })))
    )
  )

/**
 * Notification payloads of `channel`, and `CONNECTED` after every (re)connection. Never fails: a lost
 * connection is logged (`<what> interrupted; reconnecting`) and connected again with backoff (100 ms
 * doubling to 10 s, from 100 ms again once a connection was made: `Stream.retry` starts its schedule
 * afresh at the first element, `CONNECTED`).
 */
export const listen = (
  channel: string,
  probeInterval: Duration.Input = Duration.seconds(10),
  what = "Job notifications"
): Stream.Stream<string, never, PgClient.PgClient> =>
  Stream.unwrap(
    Effect.map(Effect.service(PgClient.PgClient), (pg) =>
      connectOnce(pg, channel, Duration.fromInputUnsafe(probeInterval)))
  ).pipe(
    // The error as the record's `cause` (a plain second argument would be written into `message`).
    Stream.tapError((error) => Effect.logWarning(`${what} interrupted; reconnecting`, Cause.fail(error))),
    Stream.retry(
      Schedule.exponential("100 millis").pipe(
        Schedule.modifyDelay(({ duration }) => Effect.succeed(Duration.min(duration, Duration.seconds(10))))
      )
    ),
    Stream.orDie
  )
