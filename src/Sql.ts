/**
 * The database: a real PostgreSQL when `DATABASE_URL` is set, otherwise an embedded one (PGlite, kept
 * in `PARLEY_DATA_DIR`) served over a loopback socket, so the same `PgClient` code runs on both.
 * Migrations run before the layer is built: nothing that needs the database starts before them.
 * PGlite's modules are loaded (`import()`) only for the embedded database: on PostgreSQL they would
 * only hold memory (~2 MiB).
 */
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlError from "@effect/sql/SqlError"
import { PgClient } from "@effect/sql-pg"
import type { PGlite } from "@electric-sql/pglite"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import * as String from "effect/String"
import * as childProcess from "node:child_process"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as net from "node:net"
import { createRequire } from "node:module"
import * as path from "node:path"
import * as v8 from "node:v8"
import pg from "pg"
import * as AppConfig from "./Config.js"
import { DatabaseUnavailable } from "./Domain/Errors.js"
import { migrations } from "./migrations/index.js"

const clientOptions = {
  transformResultNames: String.snakeToCamel,
  transformQueryNames: String.camelToSnake,
  // jsonb holds integrators' free-form objects: their keys must come back exactly as sent.
  transformJson: false,
  applicationName: "parley"
} as const

/** What kind of database this is; the worker pool listens for NOTIFY only on a real PostgreSQL. */
export class DatabaseKind extends Context.Tag("Parley/DatabaseKind")<
  DatabaseKind,
  { readonly embedded: boolean }
>() {}

/**
 * Serves a PGlite instance on a loopback port and connects a one-connection `PgClient` to it.
 * PGlite is a single session, and pglite-socket interleaves the extended-protocol messages of
 * concurrent connections (a Parse of one, then the Bind of another): more than one connection
 * corrupts queries. One connection serializes everything, which is what PGlite does anyway.
 */
/**
 * The one-connection pool to the embedded database. Its client forgets the backend's process id: an
 * interrupted statement (a client that hung up mid-request) then just has its result dropped, instead
 * of sql-pg sending `pg_cancel_backend` through the pool — which, the pool's only connection being the
 * one to cancel, waited 5 s for a connection and stalled every request meanwhile. PGlite ignores
 * cancellation anyway; the statement finishes and the next one queues behind it on the connection.
 */
const embeddedPool = (port: number) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const pool = new pg.Pool({
        host: "127.0.0.1",
        port,
        database: "postgres",
        user: "postgres",
        Client: PreparingClient,
        max: 1,
        application_name: clientOptions.applicationName
      })
      pool.on("error", () => {})
      pool.on("connect", (client) => void Reflect.deleteProperty(client, "processID"))
      return pool
    }),
    (pool) => Effect.promise(() => pool.end()).pipe(Effect.timeoutOption(1000))
  )

export const layerPGlite = (
  acquire: Effect.Effect<PGlite, unknown, Scope.Scope>
): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient | DatabaseKind, unknown> =>
  Layer.unwrapScoped(
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
        PgClient.layerFromPool({ ...clientOptions, acquire: embeddedPool(port) }),
        Layer.succeed(DatabaseKind, { embedded: true })
      )
    })
  )

// PGlite persisted in a folder (created if missing).

/**
 * Creates the database cluster of a new data folder in a child process. `initdb` grows PGlite's
 * WebAssembly memory to ~600 MB that the process never gives back: done in-process, Parley idled at
 * ~870 MB; opening the initialised folder afresh takes ~160 MB.
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
    (server) => Effect.async<void>((resume) => void server.close(() => resume(Effect.void)))
  )
}

const openDataDir = (dataDir: string, sharedBuffers: string) =>
  Effect.gen(function*() {
    const folder = path.resolve(dataDir, "pgdata")
    fs.mkdirSync(folder, { recursive: true })
    yield* lockDataDir(dataDir, folder)
    if (!fs.existsSync(path.join(folder, "PG_VERSION"))) yield* initialize(folder)
    // PGlite's WebAssembly is optimised only where it runs hot for a long while: with V8's default tiering
    // budget, start-up and migrations alone sent ~200 of its functions to the optimising compiler, on
    // background threads whose memory then stayed in their malloc arenas. Raised budget (bench
    // `embedded`, full runs): idle RSS 209 and 218 MiB against 216-263, peak 222-230 against 260-278, the
    // same 203-224 requests/s under load (where hot functions still tier up). Set before the module
    // is compiled; it touches only WebAssembly, which on this path is PGlite's (and undici's parser).
    v8.setFlagsFromString("--wasm-tiering-budget=2000000000")
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
 * A connection that says nothing for `silenceMs` is dead: its socket is destroyed, which fails what
 * waits on it and makes the pool drop it. (node-postgres's own `query_timeout` gives up on the query
 * but keeps the connection, with the query still in flight and the statements queued behind it, e.g.
 * a transaction's ROLLBACK, silently dropped: after a partition heals, the next user of that
 * connection finds a transaction still open.) Idle pooled connections are closed by the pool sooner
 * (10 s) unless `silenceMs` is shorter, which costs only a reconnection.
 */
const silenceBoundedSocket = (silenceMs: number) => (): net.Socket => {
  const socket = new net.Socket()
  if (silenceMs > 0) {
    socket.setTimeout(silenceMs, () =>
      socket.destroy(Object.assign(new Error(`PostgreSQL sent nothing for ${silenceMs} ms`), { code: "ETIMEDOUT" })))
  }
  return socket
}

/**
 * Most statements one connection keeps prepared (Parley sends ~150 distinct ones with parameters, each
 * a few kB to a few tens of kB of the backend's memory with its plan); past it, new ones go unnamed.
 */
const PREPARED_PER_CONNECTION = 200

/** Statement names by text (the text's digest), shared by every connection. */
const statementNames = new Map<string, string>()

const statementName = (text: string) => {
  let name = statementNames.get(text)
  if (name === undefined) {
    name = `parley_${crypto.createHash("sha1").update(text).digest("base64url")}`
    if (statementNames.size < 10_000) statementNames.set(text, name)
  }
  return name
}

/** PostgreSQL's answer to a prepared statement whose columns a migration changed (SQLSTATE 0A000). */
const isStalePlan = (error: unknown) =>
  error instanceof Error && "code" in error && error.code === "0A000" && /cached plan must not change result type/.test(error.message)

/**
 * A connection that prepares each statement with parameters once — a named statement: Parse is sent
 * the first time, then only Bind and Execute, and PostgreSQL keeps its plan (its own choice between a
 * generic plan and one per execution) — instead of parsing and planning it at every execution, which
 * is what sql-pg's unnamed statements make it do. The pool's `Client` option is node-postgres's way to
 * change how its connections query. A migration that changes a table's columns makes PostgreSQL refuse
 * the statements prepared before it that return them (`SELECT *`, `RETURNING *`: during a rolling
 * upgrade, on the instances still running): that one execution fails, and the statement is prepared
 * again under a new name for the next.
 */
class PreparingClient extends pg.Client {
  private readonly prepared = new Set<string>()
  private readonly renamed = new Map<string, number>()
  // node-postgres's `query` has a dozen overloads; sql-pg calls only `(text, values, callback)`.
  override query(config: any, values?: any, callback?: any): any {
    if (typeof config !== "string" || !Array.isArray(values) || values.length === 0 || typeof callback !== "function") {
      return super.query(config, values, callback)
    }
    const generation = this.renamed.get(config)
    const name = generation === undefined ? statementName(config) : `${statementName(config)}_${generation}`
    if (!this.prepared.has(name) && this.prepared.size >= PREPARED_PER_CONNECTION) {
      return super.query(config, values, callback)
    }
    this.prepared.add(name)
    return super.query({ name, text: config, values }, (error: Error | null, result: pg.QueryResult) => {
      if (isStalePlan(error)) {
        this.prepared.delete(name)
        this.renamed.set(config, (generation ?? 0) + 1)
      }
      callback(error, result)
    })
  }
}

/**
 * A pool whose every wait is bounded: connecting and waiting for a free connection
 * (`connectionTimeoutMillis`), a statement on the server (`statement_timeout`) and, for a network that
 * stopped answering, on the client (a connection silent for 2 s longer than that is closed), and a
 * transaction left open (`idle_in_transaction_session_timeout`).
 */
const boundedPool = (
  url: Redacted.Redacted,
  poolSize: number,
  timeouts: AppConfig.DatabaseTimeouts,
  prepared: boolean
) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const statementMs = Duration.toMillis(timeouts.statement)
      const pool = new pg.Pool({
        connectionString: Redacted.value(url),
        ...(prepared ? { Client: PreparingClient } : {}),
        max: poolSize,
        application_name: clientOptions.applicationName,
        connectionTimeoutMillis: Duration.toMillis(timeouts.connect),
        statement_timeout: statementMs,
        idle_in_transaction_session_timeout: Duration.toMillis(timeouts.idleInTransaction),
        stream: silenceBoundedSocket(statementMs > 0 ? statementMs + ANSWER_GRACE_MS : 0),
        keepAlive: true
      })
      // An idle connection that breaks emits here; the pool drops it. Unhandled, it would end the process.
      pool.on("error", () => {})
      return pool
    }),
    (pool) => Effect.promise(() => pool.end()).pipe(Effect.interruptible, Effect.timeoutOption(1000))
  )

export const layerUrl = (
  url: Redacted.Redacted,
  poolSize: number,
  timeouts: AppConfig.DatabaseTimeouts = defaultTimeouts,
  prepared = true
) =>
  Layer.merge(
    PgClient.layerFromPool({ ...clientOptions, acquire: boundedPool(url, poolSize, timeouts, prepared) }),
    Layer.succeed(DatabaseKind, { embedded: false })
  )

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
  Layer.catchAllCause(layer, (cause) => {
    const failure = new DatabaseStartFailure({ setting, target, cause: Cause.squash(cause) })
    return Layer.failCause(Cause.isInterruptedOnly(cause) ? Cause.map(cause, () => failure) : Cause.fail(failure))
  })

/** The database chosen by configuration, migrated. */
export const SqlLive = Layer.unwrapEffect(
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

type Infrastructure = SqlError.SqlError | ParseResult.ParseError | Cause.NoSuchElementException

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

/** The messages of node-postgres's own connection failures and time-outs (they carry no code). */
const unavailableMessage =
  /timeout exceeded when trying to connect|Connection terminated|Query read timeout|not queryable|Connection timed out|Connection error/i

/** Whether an error (or one of its causes) says the database is unreachable or did not answer in time. */
export const isConnectionFailure = (error: unknown, depth = 0): boolean => {
  if (depth > 6 || typeof error !== "object" || error === null) return false
  if (error instanceof DatabaseUnavailable) return true
  const code = "code" in error && typeof error.code === "string" ? error.code : ""
  if (unavailableCodes.has(code) || /^08[0-9A-Z]{3}$/.test(code)) return true
  // A SqlError's own message ("Failed to execute statement") says nothing; its cause does.
  if (!(error instanceof SqlError.SqlError) && error instanceof Error && unavailableMessage.test(error.message)) return true
  if (error instanceof AggregateError && error.errors.some((inner) => isConnectionFailure(inner, depth + 1))) return true
  return "cause" in error && isConnectionFailure(error.cause, depth + 1)
}

/** Whether a failure, typed or defect, is the database being unavailable (answered 503, not 500). */
export const isDatabaseUnavailable = (cause: Cause.Cause<unknown>): boolean =>
  [...Cause.defects(cause), ...Cause.failures(cause)].some((error) => isConnectionFailure(error))

/** Whether a statement referred to a row that is gone (SQLSTATE 23503): deleted while the request ran. */
export const isForeignKeyViolation = (cause: Cause.Cause<unknown>): boolean => {
  const violates = (error: unknown, depth = 0): boolean =>
    depth <= 6 && typeof error === "object" && error !== null &&
    (("code" in error && error.code === "23503") || ("cause" in error && violates(error.cause, depth + 1)))
  return [...Cause.defects(cause), ...Cause.failures(cause)].some((error) => violates(error))
}

const causeMessage = (error: SqlError.SqlError): string =>
  error.cause instanceof Error ? `${error.message}: ${error.cause.message}` : error.message

/**
 * Database failures, rows that do not decode and a missing row a statement must return are defects at
 * a service's boundary: they answer 500 with a trace id, while the service's own failures stay typed.
 * A database out of reach is the defect `DatabaseUnavailable`, answered 503 with `Retry-After`.
 */
export const orDieSql = <A, E, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, Exclude<E, Extract<E, Infrastructure>>, R> =>
  Effect.catchIf(
    effect,
    (error): error is Extract<E, Infrastructure> =>
      error instanceof SqlError.SqlError || ParseResult.isParseError(error) || Cause.isNoSuchElementException(error),
    (error) =>
      Effect.die(
        error instanceof SqlError.SqlError && isConnectionFailure(error)
          ? new DatabaseUnavailable({ detail: causeMessage(error) })
          : error
      )
  )
