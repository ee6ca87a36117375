/**
 * The database: a real PostgreSQL when `DATABASE_URL` is set, otherwise an embedded one (PGlite, kept
 * in `PARLEY_DATA_DIR`) served over a loopback socket, so the same `PgClient` code runs on both.
 * Migrations run before the layer is built: nothing that needs the database starts before them.
 * PGlite's modules are loaded (`import()`) only for the embedded database: on PostgreSQL they would
 * only hold memory.
 */
import { PgClient, type PgConnection, PgPool } from "@effect/sql-pg"
import type { PGlite } from "@electric-sql/pglite"
import * as Arr from "effect/Array"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Reactivity from "effect/reactivity/Reactivity"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Migrator from "effect/sql/Migrator"
import * as SqlClient from "effect/sql/SqlClient"
import type * as SqlConnection from "effect/sql/SqlConnection"
import * as SqlError from "effect/sql/SqlError"
import * as Statement from "effect/sql/Statement"
import * as Stream from "effect/Stream"
import * as String from "effect/String"
import * as childProcess from "node:child_process"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as net from "node:net"
import { Duplex } from "node:stream"
import { createRequire } from "node:module"
import * as path from "node:path"
import * as AppConfig from "./Config.js"
import { DatabaseUnavailable } from "./Domain/Errors.js"
import { migrations } from "./migrations/index.js"

/**
 * Most statements one connection keeps prepared (Parley sends ~150 distinct ones with parameters, each
 * a few kB to a few tens of kB of the backend's memory with its plan); past it, the least recently used
 * is closed. The driver prepares each statement once per connection (a named statement: Parse the
 * first time, then only Bind and Execute) and prepares again one whose plan a migration made stale.
 */
const PREPARED_PER_CONNECTION = 200

const clientOptions = {
  transformResultNames: String.snakeToCamel,
  transformQueryNames: String.camelToSnake,
  // jsonb holds integrators' free-form objects: their keys must come back exactly as sent.
  transformJson: false,
  applicationName: "parley",
  preparedStatementCacheSize: PREPARED_PER_CONNECTION
} as const

/** What kind of database this is; the worker pool listens for NOTIFY only on a real PostgreSQL. */
export class DatabaseKind extends Context.Service<DatabaseKind, { readonly embedded: boolean }>()("Parley/DatabaseKind") {}

/** A JSON parameter, as sql-pg's `PgClient.json` makes it: its statement compiler knows this kind. */
interface PgJson extends Statement.Custom<"PgJson", unknown> {}
const PgJson = Statement.custom<PgJson>("PgJson")

/** PostgreSQL answers `ROLLBACK` to the `COMMIT` of a transaction that failed (sql-pg's own check). */
const commit = (connection: SqlConnection.Connection): Effect.Effect<void, SqlError.SqlError> =>
  Effect.flatMap(connection.executeRaw("COMMIT", []), (result) =>
    typeof result === "object" && result !== null && "command" in result && result.command === "ROLLBACK"
      ? Effect.fail(
        new SqlError.SqlError({
          reason: new SqlError.UnknownError({
            cause: new Error("COMMIT rolled back an aborted transaction"),
            message: "PgClient: COMMIT rolled back an aborted transaction",
            operation: "commit"
          })
        })
      )
      : Effect.void)

/**
 * One session of the pool as the `SqlClient` sees it (sql-pg's own, but for `finishInterrupted`: a
 * statement interrupted mid-way is then left to finish, and only its result dropped, instead of being
 * cancelled).
 */
class Session implements SqlConnection.Connection {
  constructor(readonly connection: PgConnection.PgConnection, readonly finishInterrupted: boolean) {}

  private guard<A>(effect: Effect.Effect<A, SqlError.SqlError>): Effect.Effect<A, SqlError.SqlError> {
    return this.finishInterrupted ? Effect.uninterruptible(effect) : effect
  }

  private run(sql: string, params: ReadonlyArray<unknown>, prepare: boolean) {
    return this.guard(Effect.map(this.connection.query(sql, params, prepare), (result) => result.rows))
  }

  execute(
    sql: string,
    params: ReadonlyArray<unknown>,
    transformRows: (<A extends object>(rows: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
  ) {
    return transformRows === undefined ? this.run(sql, params, true) : Effect.map(this.run(sql, params, true), transformRows)
  }

  executeUnprepared(
    sql: string,
    params: ReadonlyArray<unknown>,
    transformRows: (<A extends object>(rows: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
  ) {
    return transformRows === undefined ? this.run(sql, params, false) : Effect.map(this.run(sql, params, false), transformRows)
  }

  executeRaw(sql: string, params: ReadonlyArray<unknown>) {
    return this.guard(this.connection.query(sql, params))
  }

  executeValues(sql: string, params: ReadonlyArray<unknown>) {
    return this.guard(this.connection.queryValues(sql, params))
  }

  executeValuesUnprepared(sql: string, params: ReadonlyArray<unknown>) {
    return this.guard(this.connection.queryValues(sql, params, false))
  }

  executeStream(
    sql: string,
    params: ReadonlyArray<unknown>,
    transformRows: (<A extends object>(rows: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
  ) {
    const stream = this.connection.stream(sql, params)
    if (transformRows === undefined) return stream
    return Stream.mapArray(stream, (rows) => {
      // Row for row: the same length as `rows`, never empty.
      const transformed = transformRows(rows)
      return Arr.isReadonlyArrayNonEmpty(transformed) ? transformed : rows
    })
  }
}

/**
 * `PgClient.make` of sql-pg, with two differences (its pool and sessions are sql-pg's own):
 *
 * - `waitForConnection` bounds how long a statement, a transaction or a LISTEN waits to be given a
 *   connection, connecting included. The pool opens connections one batch at a time: a request that
 *   arrives while one is being opened waits for it, and if that one fails, for the next; with the
 *   network silent each costs the whole connect time-out (twice it, or more, in all). Past the bound a
 *   statement fails with a `ConnectionError` (answered 503).
 * - `finishInterrupted` leaves an interrupted statement to finish (see `layerPGlite`).
 */
const makeClient = (
  options: PgClient.PgPoolConfig,
  bounds: { readonly waitForConnection?: Duration.Duration; readonly finishInterrupted: boolean }
): Effect.Effect<PgClient.PgClient, SqlError.SqlError, Scope.Scope | Reactivity.Reactivity> =>
  Effect.gen(function*() {
    const pool = yield* PgPool.make(options)
    const wait = bounds.waitForConnection
    const bounded = <A>(acquire: Effect.Effect<A, SqlError.SqlError, Scope.Scope>) =>
      wait === undefined || Duration.toMillis(wait) <= 0 ? acquire : Effect.timeoutOrElse(acquire, {
        duration: wait,
        orElse: () =>
          Effect.fail(
            new SqlError.SqlError({
              reason: new SqlError.ConnectionError({
                cause: new Error(`No connection within ${Duration.format(wait)}`),
                message: "PgClient: Timed out waiting for a connection",
                operation: "connect"
              })
            })
          )
      })
    const session = (connection: PgConnection.PgConnection) => new Session(connection, bounds.finishInterrupted)
    const listenerName = options.applicationName ?? "parley"
    const acquirer = Effect.map(bounded(pool.get), session)
    const client = yield* SqlClient.make({
      acquirer,
      transactionAcquirer: Effect.map(bounded(pool.reserve), session),
      // As sql-pg: PostgreSQL prepares transaction control like any other statement.
      prepareTransactionControls: true,
      commit,
      releaseSavepoint: (name) => `RELEASE SAVEPOINT ${name}`,
      compiler: PgClient.makeCompiler(options.transformQueryNames, options.transformJson),
      driver: "pg",
      spanAttributes: [
        ...(options.spanAttributes === undefined ? [] : Object.entries(options.spanAttributes)),
        ["db.system.name", "postgresql"],
        ["db.namespace", options.database ?? options.username ?? "postgres"],
        ["server.address", options.host ?? "localhost"],
        ["server.port", options.port ?? 5432]
      ],
      transformRows: options.transformResultNames === undefined
        ? undefined
        : Statement.defaultTransforms(options.transformResultNames, options.transformJson).array
    })
    return Object.assign(client, {
      [PgClient.TypeId]: PgClient.TypeId,
      config: options,
      json: (value: unknown) => Statement.fragment([PgJson(value)]),
      listen: (channel: string) =>
        Effect.gen(function*() {
          const connection = yield* bounded(pool.reserve)
          // Named `<application name>-listen` while it listens, as Parley's listening connections always
          // were: pg_stat_activity tells them from the pool's. Named back (to the connection's default)
          // before the pool has it again.
          yield* connection.query("SELECT set_config('application_name', $1, false)", [`${listenerName}-listen`], false)
          yield* Effect.addFinalizer(() => Effect.ignore(connection.query("RESET application_name", [], false)))
          return yield* connection.listen(channel)
        }),
      notify: (channel: string, payload: string) =>
        Effect.asVoid(Effect.scoped(Effect.flatMap(acquirer, (connection) =>
          connection.executeRaw("SELECT pg_notify($1, $2)", [channel, payload]))))
    })
  })

/**
 * Serves a PGlite instance on a loopback port and connects a one-connection `PgClient` to it.
 * PGlite is a single session, and pglite-socket interleaves the extended-protocol messages of
 * concurrent connections (a Parse of one, then the Bind of another): more than one connection
 * corrupts queries. One connection serializes everything, which is what PGlite does anyway.
 *
 * An interrupted statement (a client that hung up mid-request) is left to finish and its result
 * dropped. sql-pg would cancel it: a `CancelRequest` on a second connection, which pglite-socket
 * refuses (one connection at most; PGlite ignores cancellation anyway), and then, the cancel not
 * confirmed, it retires the connection; its replacement was refused too while the old one was still
 * closing, failing the next request. The statement finishes and the next one queues behind it on the
 * connection, as with any other statement.
 */
export const layerPGlite = (
  acquire: Effect.Effect<PGlite, unknown, Scope.Scope>
): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient | DatabaseKind, unknown> =>
  Layer.unwrap(
    Effect.gen(function*() {
      const db = yield* Effect.acquireRelease(acquire, (db) => Effect.promise(() => db.close()))
      const { PGLiteSocketServer } = yield* Effect.promise(() => import("@electric-sql/pglite-socket"))
      const server = new PGLiteSocketServer({ db, host: "127.0.0.1", port: 0, maxConnections: 1 })
      yield* Effect.acquireRelease(
        Effect.tryPromise(() => server.start()),
        () => Effect.promise(() => server.stop())
      )
      const port = Number(server.getServerConn().split(":").pop())
      return Layer.merge(
        PgClient.layerFrom(makeClient({
          ...clientOptions,
          host: "127.0.0.1",
          port,
          database: "postgres",
          username: "postgres",
          ssl: false,
          maxConnections: 1
        }, { finishInterrupted: true })),
        Layer.succeed(DatabaseKind, { embedded: true })
      )
    })
  )

// PGlite persisted in a folder (created if missing).

/**
 * Creates the database cluster of a new data folder in a child process. `initdb` grows PGlite's
 * WebAssembly memory to several times what serving needs, and a process never gives it back; opening
 * the initialised folder afresh takes only what serving needs (figures: docs/performance.md).
 */
const initialize = (folder: string) =>
  Effect.tryPromise({
    try: () =>
      new Promise<void>((resolve, reject) => {
        const pglite = createRequire(import.meta.url).resolve("@electric-sql/pglite")
        // The folder is the script's first argument (`node -e script folder`: process.argv[1]).
        const script = `const { PGlite } = require(${JSON.stringify(pglite)});
          PGlite.create(process.argv[1]).then((db) => db.close());`
        childProcess.execFile(
          process.execPath,
          ["-e", script, folder],
          (error, _stdout, stderr) =>
            error === null ? resolve() : reject(new Error(`Creating the embedded database failed: ${stderr}`, { cause: error }))
        )
      }),
    catch: (cause) => cause
  })

/** The embedded database's folder is another process's: Parley, or a CLI command working on it. */
export class EmbeddedDatabaseInUse extends Data.TaggedError("EmbeddedDatabaseInUse")<{
  readonly dataDir: string
  readonly pid: number | undefined
}> {
  override get message() {
    return `The embedded database in ${this.dataDir} is in use by another process${
      this.pid === undefined ? "" : ` (pid ${this.pid})`
    }: stop Parley first (the embedded database is single-process), or use PostgreSQL (DATABASE_URL)`
  }
}

/**
 * Holds the embedded database's folder for this process's lifetime, as a Unix socket that only a live
 * process can hold: on Linux in the abstract namespace (no file, gone when the process dies, however it
 * dies), named after the folder's real path; elsewhere a socket file in the folder (a stale one, left by
 * a process that died, refuses connections and is replaced). Whoever connects is told the holder's pid.
 * PGlite itself would let a second process open the folder and fail later (`RuntimeError: Aborted()`)
 * or corrupt it.
 */
const lockDataDir = (dataDir: string, folder: string) => {
  const address = process.platform === "linux"
    ? `\0parley-embedded-${crypto.createHash("sha256").update(fs.realpathSync(folder)).digest("hex").slice(0, 40)}`
    : path.join(folder, ".parley.lock")
  const holder = () =>
    new Promise<number | undefined | null>((resolve) => {
      const socket = net.connect(address)
      let answer = ""
      socket.setTimeout(1_000, () => socket.destroy())
      socket.on("data", (chunk) => (answer += chunk.toString("utf8")))
      socket.on("end", () => resolve(/^\d+$/.test(answer.trim()) ? Number(answer.trim()) : undefined))
      // Nothing listens (or a stale socket file): free.
      socket.on("error", () => resolve(null))
    })
  const listen = () =>
    new Promise<net.Server>((resolve, reject) => {
      const server = net.createServer((socket) => socket.end(`${process.pid}`))
      server.once("error", reject)
      server.listen(address, () => resolve(server.unref()))
    })
  return Effect.acquireRelease(
    Effect.tryPromise({
      try: async () => {
        try {
          return await listen()
        } catch (error) {
          if (!(error instanceof Error && "code" in error && error.code === "EADDRINUSE")) throw error
          const pid = await holder()
          if (pid !== null) throw new EmbeddedDatabaseInUse({ dataDir, pid })
          fs.rmSync(address, { force: true })
          return await listen()
        }
      },
      catch: (error) => error
    }),
    (server) => Effect.callback<void>((resume) => void server.close(() => resume(Effect.void)))
  )
}

const openDataDir = (dataDir: string, sharedBuffers: string) =>
  Effect.gen(function*() {
    const folder = path.resolve(dataDir, "pgdata")
    fs.mkdirSync(folder, { recursive: true })
    yield* lockDataDir(dataDir, folder)
    if (!fs.existsSync(path.join(folder, "PG_VERSION"))) yield* initialize(folder)
    // On Node 24, V8's optimising compiler took PGlite's WebAssembly while the migrations of a fresh
    // folder ran, to a peak of three times the idle memory. `npm start`, the image and the CLI pass `--liftoff-only`
    // (V8 flags cannot be set from here: Node 24 freezes them), see docs/performance.md.
    const { PGlite } = yield* Effect.promise(() => import("@electric-sql/pglite"))
    return yield* Effect.tryPromise(() =>
      PGlite.create(folder, {
        startParams: [...PGlite.defaultStartParams, "-c", `shared_buffers=${sharedBuffers}`]
      })
    )
  })

/** How long Parley waits for an answer after PostgreSQL's own `statement_timeout` should have fired. */
const ANSWER_GRACE_MS = 2_000

export const defaultTimeouts: AppConfig.DatabaseTimeouts = {
  connect: Duration.seconds(5),
  statement: Duration.seconds(15),
  idleInTransaction: Duration.seconds(30)
}

/**
 * A connection to `host:port` that leaves something it was sent unanswered for `silenceMs` is dead: its
 * socket is destroyed, which fails what waits on it and makes the pool drop the connection (the
 * network stopped answering: a partition). A connection with nothing outstanding (idle in the pool, or
 * a LISTEN waiting for notifications) is never timed out. sql-pg is handed a stream over the socket
 * that sees each write and each answer as it happens, in order: counting the socket's bytes a few times
 * per period could not tell a statement answered within a period from one still waiting (it took
 * idle connections for dead), and with TLS (which sql-pg puts on top of this stream) the socket's own
 * events are the encrypted records'. Checked a few times per period: a dead connection is noticed
 * within 1.25 × `silenceMs`.
 */
const silenceBoundedSocket = (host: string, port: number, silenceMs: number) => (): Duplex => {
  const socket = net.connect({ host, port, noDelay: true, keepAlive: true })
  if (silenceMs <= 0) return socket
  /** Since when something written waits for an answer. */
  let waitingSince: number | undefined
  const stream = new Duplex({
    write(chunk, encoding, callback) {
      waitingSince ??= Date.now()
      socket.write(chunk, encoding, callback)
    },
    final(callback) {
      socket.end(callback)
    },
    read() {
      socket.resume()
    },
    destroy(error, callback) {
      socket.destroy(error ?? undefined)
      callback(error)
    }
  })
  socket.on("data", (chunk: Buffer) => {
    // An answer: nothing is outstanding until the next write.
    waitingSince = undefined
    if (!stream.push(chunk)) socket.pause()
  })
  socket.on("end", () => stream.push(null))
  socket.on("error", (error) => stream.destroy(error))
  socket.on("close", () => stream.destroy())
  const watch = setInterval(() => {
    if (waitingSince !== undefined && Date.now() - waitingSince > silenceMs) {
      stream.destroy(Object.assign(new Error(`PostgreSQL sent nothing for ${silenceMs} ms`), { code: "ETIMEDOUT" }))
    }
  }, Math.max(100, Math.floor(silenceMs / 4))).unref()
  stream.once("close", () => clearInterval(watch))
  return stream
}

/** Connections that LISTEN (the workers' job notifications, the caches' invalidations), besides the pool's. */
const LISTENING_CONNECTIONS = 2

/** The TCP address of a PostgreSQL URL; none for a Unix socket or a URL that does not parse. */
const tcpAddress = (url: Redacted.Redacted): { readonly host: string; readonly port: number } | undefined => {
  try {
    const parsed = new URL(Redacted.value(url))
    if (parsed.searchParams.has("host") || parsed.hostname === "") return undefined
    return { host: decodeURIComponent(parsed.hostname).replace(/^\[|\]$/g, ""), port: Number(parsed.port || "5432") }
  } catch {
    return undefined
  }
}

/**
 * A pool whose every wait on PostgreSQL is bounded: connecting and waiting for a free connection
 * (`connectTimeout`), a statement on the server (`statement_timeout`) and, for a network that stopped
 * answering, on the client (a connection silent for 2 s longer than that is closed), and a transaction
 * left open (`idle_in_transaction_session_timeout`). Named (prepared) statements unless `prepared` is
 * false (a pooler that cannot carry them).
 */
export const layerUrl = (
  url: Redacted.Redacted,
  poolSize: number,
  timeouts: AppConfig.DatabaseTimeouts = defaultTimeouts,
  prepared = true
): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient | DatabaseKind, SqlError.SqlError> => {
  const statementMs = Duration.toMillis(timeouts.statement)
  const address = tcpAddress(url)
  return Layer.merge(
    PgClient.layerFrom(makeClient({
      ...clientOptions,
      url,
      // The job workers' and the caches' LISTEN each hold a connection of the pool for good.
      maxConnections: poolSize + LISTENING_CONNECTIONS,
      connectTimeout: timeouts.connect,
      prepare: prepared,
      keepAlive: Duration.seconds(30),
      startupParameters: {
        statement_timeout: `${statementMs}`,
        idle_in_transaction_session_timeout: `${Duration.toMillis(timeouts.idleInTransaction)}`
      },
      ...(address === undefined
        ? {}
        : { stream: silenceBoundedSocket(address.host, address.port, statementMs > 0 ? statementMs + ANSWER_GRACE_MS : 0) })
    }, { waitForConnection: timeouts.connect, finishInterrupted: false })),
    Layer.succeed(DatabaseKind, { embedded: false })
  )
}

/** Runs every migration not yet applied; concurrent starts are serialized by the Migrator's table lock. */
export const migrate = Migrator.make({})({ loader: migrations })

export const MigrationsLive = Layer.effectDiscard(migrate)


/**
 * The database could not be opened or migrated at start: which setting points at it, what it is
 * (`user@host:port/database`, never the password; or the data folder), and why.
 */
export class DatabaseStartFailure extends Data.TaggedError("DatabaseStartFailure")<{
  readonly setting: "DATABASE_URL" | "PARLEY_DATA_DIR"
  readonly target: string
  readonly cause: unknown
}> {}

/** `user@host:port/database` of a PostgreSQL URL, without its password. */
export const describeUrl = (url: Redacted.Redacted): string => {
  try {
    const parsed = new URL(Redacted.value(url))
    const user = parsed.username === "" ? "" : `${decodeURIComponent(parsed.username)}@`
    return `${user}${parsed.hostname || "localhost"}:${parsed.port || "5432"}${parsed.pathname}`
  } catch {
    return "the server in DATABASE_URL"
  }
}

/** A database layer whose failure to start names its setting (interruptions pass as they are). */
const naming = <A, E, R>(
  layer: Layer.Layer<A, E, R>,
  setting: DatabaseStartFailure["setting"],
  target: string
): Layer.Layer<A, DatabaseStartFailure, R> =>
  Layer.catchCause(layer, (cause) => {
    const failure = new DatabaseStartFailure({ setting, target, cause: Cause.squash(cause) })
    return Layer.effectContext<A, DatabaseStartFailure, never>(
      Effect.failCause(Cause.hasInterruptsOnly(cause) ? Cause.map(cause, () => failure) : Cause.fail(failure))
    )
  })

/** The database chosen by configuration, migrated. */
export const SqlLive = Layer.unwrap(
  Effect.gen(function*() {
    const url = yield* AppConfig.DatabaseUrl
    const poolSize = yield* AppConfig.DatabasePoolSize
    const timeouts = yield* AppConfig.DatabaseTimeouts
    const prepared = yield* AppConfig.DatabasePreparedStatements
    const dataDir = yield* AppConfig.DataDir
    const sharedBuffers = yield* AppConfig.EmbeddedSharedBuffers
    return Option.match(url, {
      onSome: (url) =>
        naming(Layer.provideMerge(MigrationsLive, layerUrl(url, poolSize, timeouts, prepared)), "DATABASE_URL", describeUrl(url)),
      onNone: () =>
        naming(
          Layer.provideMerge(MigrationsLive, layerPGlite(openDataDir(dataDir, sharedBuffers))),
          "PARLEY_DATA_DIR",
          path.resolve(dataDir)
        )
    })
  })
).pipe(Layer.orDie)

type Infrastructure = SqlError.SqlError | Schema.SchemaError | Cause.NoSuchElementError

/**
 * Error codes that mean the database is out of reach or not answering, not that a statement is wrong:
 * the network's (refused, reset, timed out, unreachable, unresolvable), and PostgreSQL's shutting down
 * (57P01–57P03), too many connections (53300), statement cancelled by its time-out (57014), idle
 * transaction ended (25P03); every SQLSTATE of class 08 (connection exception) too.
 */
const unavailableCodes = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "EHOSTDOWN",
  "ENETUNREACH",
  "ENETDOWN",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EPIPE",
  "57P01",
  "57P02",
  "57P03",
  "53300",
  "57014",
  "25P03"
])

/** Whether an error (or one of its causes) says the database is unreachable or did not answer in time. */
export const isConnectionFailure = (error: unknown, depth = 0): boolean => {
  if (depth > 6 || typeof error !== "object" || error === null) return false
  if (error instanceof DatabaseUnavailable) return true
  // The driver's own verdicts: a connection that failed or died, a statement over its time-out.
  if (SqlError.isSqlError(error) && (error.reason._tag === "ConnectionError" || error.reason._tag === "StatementTimeoutError")) {
    return true
  }
  const code = "code" in error && typeof error.code === "string" ? error.code : ""
  if (unavailableCodes.has(code) || /^08[0-9A-Z]{3}$/.test(code)) return true
  if (error instanceof AggregateError && error.errors.some((inner) => isConnectionFailure(inner, depth + 1))) return true
  return "cause" in error && isConnectionFailure(error.cause, depth + 1)
}

const errorsOf = (cause: Cause.Cause<unknown>): Array<unknown> =>
  cause.reasons.flatMap((reason) =>
    Cause.isFailReason(reason) ? [reason.error] : Cause.isDieReason(reason) ? [reason.defect] : []
  )

/** Whether a failure, typed or defect, is the database being unavailable (answered 503, not 500). */
export const isDatabaseUnavailable = (cause: Cause.Cause<unknown>): boolean =>
  errorsOf(cause).some((error) => isConnectionFailure(error))

/** Whether a statement referred to a row that is gone (SQLSTATE 23503): deleted while the request ran. */
export const isForeignKeyViolation = (cause: Cause.Cause<unknown>): boolean => {
  const violates = (error: unknown, depth = 0): boolean =>
    depth <= 6 && typeof error === "object" && error !== null &&
    (("code" in error && error.code === "23503") || ("cause" in error && violates(error.cause, depth + 1)))
  return errorsOf(cause).some((error) => violates(error))
}

const causeMessage = (error: SqlError.SqlError): string => {
  const inner = error.reason.cause
  return inner instanceof Error && inner.message !== error.message ? `${error.message}: ${inner.message}` : error.message
}

const isInfrastructure = (error: unknown): boolean =>
  SqlError.isSqlError(error) || Schema.isSchemaError(error) || Cause.isNoSuchElementError(error)

/**
 * Database failures, rows that do not decode and a missing row a statement must return are defects at
 * a service's boundary: they answer 500 with a trace id, while the service's own failures stay typed.
 * A database out of reach is the defect `DatabaseUnavailable`, answered 503 with `Retry-After`.
 */
export const orDieSql = <A, E, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, Exclude<E, Extract<E, Infrastructure>>, R> =>
  Effect.catchIf<A, E, R, Extract<E, Infrastructure>, never, never, never>(
    effect,
    (error): error is Extract<E, Infrastructure> => isInfrastructure(error),
    (error) =>
      Effect.die(
        SqlError.isSqlError(error) && isConnectionFailure(error)
          ? new DatabaseUnavailable({ detail: causeMessage(error) })
          : error
      )
  )
