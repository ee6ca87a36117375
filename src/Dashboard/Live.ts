/**
 * Live updates: a page's changes as server-sent events, from an Effect `Stream` of SSE text that polls
 * the database (`ticks`). Around every such stream (`liveResponse`):
 * - a comment first (the browser gets the headers and shows "Live" at once) and a heartbeat every
 *   `HEARTBEAT_INTERVAL`, so that proxies keep an idle connection open;
 * - the session is checked again every `SESSION_CHECK_INTERVAL`: the stream ends when it expired, was
 *   signed out of elsewhere (its token revoked, its workspace deleted), and in any case after
 *   `MAX_STREAM_LIFETIME` (the browser then reconnects, through the sign-in check again);
 * - at most `MAX_STREAMS_PER_SESSION` streams are open per session at once (more get a "retry later");
 * - it ends when the server shuts down (Node's graceful close would otherwise wait for it).
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import type * as SqlClient from "effect/sql/SqlClient"
import * as Stream from "effect/Stream"
import * as net from "node:net"
import type { SignedInRequest } from "./Page.js"
import { DashboardSessions } from "./Session.js"

/** How often a live page's stream looks at the database. */
export const POLL_INTERVAL = Duration.seconds(1)

/** How often an idle stream sends a comment, so that proxies keep the connection open. */
export const HEARTBEAT_INTERVAL = Duration.seconds(15)

/** How often an open stream checks that its session is still valid. */
export const SESSION_CHECK_INTERVAL = Duration.seconds(30)

/** The longest one stream lasts; the browser reconnects (and resumes) after it. */
export const MAX_STREAM_LIFETIME = Duration.minutes(10)

/** Streams one session may hold open at once (a browser opens at most about six per host anyway). */
export const MAX_STREAMS_PER_SESSION = 10

/** Written first, so that the browser gets the headers (and shows "Live") before the first change. */
const CONNECTED = ": connected\n\n"

/** An SSE comment: browsers ignore it, proxies see traffic. */
export const HEARTBEAT = ": heartbeat\n\n"

/** What a session over its limit gets: try again in a minute (the browser's reconnection delay). */
const TOO_MANY = "retry: 60000\n: too many live pages open in this session\n\n"

/**
 * `events` with a `HEARTBEAT` every `HEARTBEAT_INTERVAL` besides, so that an idle stream stays open;
 * it ends when `events` does.
 */
export const withHeartbeats = <E, R>(events: Stream.Stream<string, E, R>): Stream.Stream<string, E, R> =>
  Stream.merge(events, Stream.fromSchedule(Schedule.spaced(HEARTBEAT_INTERVAL)).pipe(Stream.map(() => HEARTBEAT)), {
    haltStrategy: "left"
  })

/**
 * Whether the server that received `request` has begun to shut down (stopped listening). Node's
 * graceful close waits for every open response, up to 20 s in Effect's Node server, and a live stream
 * would never end by itself. Read from Node's `socket.server`, which `net.Server` sets on each
 * connection it accepts; never true where the request did not come that way.
 */
const serverClosing = (request: HttpServerRequest.HttpServerRequest): () => boolean => {
  const socket: unknown = Reflect.get(request.source, "socket")
  const server: unknown = socket instanceof net.Socket ? Reflect.get(socket, "server") : undefined
  return () => server instanceof net.Server && !server.listening
}

/** A tick every `POLL_INTERVAL` for as long as the server that received `request` serves. */
export const ticks = (request: SignedInRequest): Stream.Stream<void> => {
  const closing = serverClosing(request.request)
  return Stream.tick(POLL_INTERVAL).pipe(Stream.takeWhile(() => !closing()))
}

/** How many live streams each session has open, on this instance. */
export class LiveStreams extends Context.Service<LiveStreams>()("Parley/Dashboard/LiveStreams", {
  make: Effect.sync(() => {
    const open = new Map<string, number>()
    /** Counts one more stream of `session`, unless it has `MAX_STREAMS_PER_SESSION` already. */
    const enter = (session: string) =>
      Effect.sync(() => {
        const count = open.get(session) ?? 0
        if (count >= MAX_STREAMS_PER_SESSION) return false
        open.set(session, count + 1)
        return true
      })
    const leave = (session: string) =>
      Effect.sync(() => {
        const count = (open.get(session) ?? 1) - 1
        if (count <= 0) open.delete(session)
        else open.set(session, count)
      })
    return { enter, leave } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}

/**
 * Completes when the stream must end: its session expired or no longer reads as valid (checked every
 * `SESSION_CHECK_INTERVAL`), or the stream reached `MAX_STREAM_LIFETIME`.
 */
const sessionOver = (request: SignedInRequest) =>
  Effect.gen(function*() {
    const sessions = yield* DashboardSessions
    const until = Math.min(request.session.expiresAt, (yield* Clock.currentTimeMillis) + Duration.toMillis(MAX_STREAM_LIFETIME))
    for (;;) {
      const left = until - (yield* Clock.currentTimeMillis)
      if (left <= 0) return
      yield* Effect.sleep(Duration.millis(Math.min(left, Duration.toMillis(SESSION_CHECK_INTERVAL))))
      if (Option.isNone(yield* sessions.read(request.request))) return
    }
  })

/** The SSE response of `events` (SSE text) for the page that `request` asks for. */
export const liveResponse = (request: SignedInRequest, events: Stream.Stream<string, never, SqlClient.SqlClient>) =>
  Effect.gen(function*() {
    const context = yield* Effect.context<SqlClient.SqlClient | DashboardSessions | LiveStreams>()
    const key = request.session.csrf
    const body = Stream.unwrap(
      Effect.gen(function*() {
        const streams = yield* LiveStreams
        const admitted = yield* Effect.acquireRelease(streams.enter(key), (entered) => entered ? streams.leave(key) : Effect.void)
        if (!admitted) return Stream.make(TOO_MANY)
        return Stream.concat(Stream.make(CONNECTED), withHeartbeats(events)).pipe(Stream.interruptWhen(sessionOver(request)))
      })
    ).pipe(Stream.provideContext(context), Stream.encodeText)
    return HttpServerResponse.stream(body, {
      contentType: "text/event-stream",
      headers: { "cache-control": "no-store", "x-accel-buffering": "no", "x-content-type-options": "nosniff" }
    })
  })
