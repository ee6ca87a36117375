/**
 * Every setting Parley reads, as `Config` values. Layers read them when they are built; nothing else
 * looks at the environment. The README's configuration table mirrors this file.
 */
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type { ModelSettings } from "./Ai/Llm/Contract.js"

export const Mode = Config.literal("development", "production")("PARLEY_MODE").pipe(
  Config.withDefault("development" as const)
)
export type Mode = "development" | "production"

export const Port = Config.port("PORT").pipe(Config.withDefault(8080))
export const Host = Config.string("HOST").pipe(Config.withDefault("0.0.0.0"))

export const DatabaseUrl = Config.option(Config.redacted("DATABASE_URL"))
export const DataDir = Config.string("PARLEY_DATA_DIR").pipe(Config.withDefault("./.parley"))

/**
 * PostgreSQL's `shared_buffers` for the embedded database (PGlite). PGlite's own default is 128 MB
 * inside a WebAssembly memory that never shrinks, so its pages stay in the process's memory for good;
 * an embedded database's working set is far smaller, and the rest is the OS's file cache. PostgreSQL's
 * size syntax (`16MB`, `512kB`); see docs/performance.md for what each
 * size costs in memory and speed.
 */
export const EmbeddedSharedBuffers = Config.string("PARLEY_EMBEDDED_SHARED_BUFFERS").pipe(
  Config.validate({ message: "a size such as 16MB or 512kB", validation: (size) => /^\d+\s*(kB|MB|GB)$/.test(size) }),
  Config.withDefault("16MB")
)
export const DatabasePoolSize = Config.integer("DATABASE_POOL_SIZE").pipe(Config.withDefault(10))

/**
 * Named (prepared) statements on PostgreSQL: each parsed once per connection, its plan kept. Off for a
 * pooler that cannot carry them (PgBouncer in transaction mode before 1.21, or without
 * `max_prepared_statements`). The embedded database always prepares.
 */
export const DatabasePreparedStatements = Config.boolean("DATABASE_PREPARED_STATEMENTS").pipe(Config.withDefault(true))

/** Every wait on PostgreSQL is bounded (not the embedded database, which cannot be unreachable). */
export const DatabaseTimeouts = Config.all({
  /** Connecting, and waiting for a free connection of the pool. */
  connect: Config.duration("DATABASE_CONNECT_TIMEOUT").pipe(Config.withDefault(Duration.seconds(5))),
  /**
   * One statement, enforced by PostgreSQL (`statement_timeout`); a connection silent 2 s longer is
   * closed by Parley (the network is gone). 0 turns both off (e.g. for a long migration).
   */
  statement: Config.duration("DATABASE_STATEMENT_TIMEOUT").pipe(Config.withDefault(Duration.seconds(15))),
  /** A transaction left idle this long is ended by PostgreSQL (`idle_in_transaction_session_timeout`). */
  idleInTransaction: Config.duration("DATABASE_IDLE_IN_TRANSACTION_TIMEOUT").pipe(
    Config.withDefault(Duration.seconds(30))
  )
})
export type DatabaseTimeouts = Config.Config.Success<typeof DatabaseTimeouts>

export const AdminToken = Config.option(Config.redacted("PARLEY_ADMIN_TOKEN"))
export const EncryptionKey = Config.option(Config.redacted("PARLEY_ENCRYPTION_KEY"))
/** The key before a rotation: still opens what it sealed, until `parley secrets reencrypt` re-seals it. */
export const EncryptionKeyPrevious = Config.option(Config.redacted("PARLEY_ENCRYPTION_KEY_PREVIOUS"))

/** Largest accepted request body, in bytes (PRODUCT.md §3: 1 MiB). */
export const BodyLimit = Config.integer("PARLEY_BODY_LIMIT").pipe(Config.withDefault(1024 * 1024))
/** Requests per minute per API token; 0 turns the limit off. */
export const RateLimit = Config.integer("PARLEY_RATE_LIMIT").pipe(Config.withDefault(600))
export const MaxMessageChars = Config.integer("PARLEY_MAX_MESSAGE_CHARS").pipe(Config.withDefault(32_000))
export const MaxAttachments = Config.integer("PARLEY_MAX_ATTACHMENTS").pipe(Config.withDefault(20))

/** How long the previous webhook secret stays valid after a rotation. */
export const SecretRotationGrace = Config.duration("PARLEY_SECRET_ROTATION_GRACE").pipe(
  Config.withDefault("24 hours")
)

/**
 * How long a valid API token's lookup is remembered. Revoking through this instance takes effect at
 * once; another instance sharing the database may accept a revoked token for up to this long. 0 = off.
 */
export const TokenCacheTtl = Config.duration("PARLEY_TOKEN_CACHE_TTL").pipe(Config.withDefault(Duration.seconds(1)))

/**
 * How long an integration read by the API (by id, within the caller's workspace) is remembered: it was
 * one of message-received's round trips. A write through an instance empties that instance's cache at
 * once; another instance on the same database may use the settings before a change for up to this
 * long. 0 = off.
 */
export const IntegrationCacheTtl = Config.duration("PARLEY_INTEGRATION_CACHE_TTL").pipe(
  Config.withDefault(Duration.seconds(1))
)

/** Whether the first start of an empty database creates a demo workspace. */
export const SeedDemo = Config.boolean("PARLEY_SEED_DEMO").pipe(Config.withDefault(true))

// Replies (PRODUCT.md §6)

/** Messages within this window are answered together by one reply. */
export const ReplyDebounce = Config.duration("REPLY_DEBOUNCE").pipe(Config.withDefault(Duration.millis(1500)))

/** The embedded knowledge-base responder. */
export const EmbeddedConfig = Config.all({
  /**
   * Lowest relevance of the best passage for an answer: its BM25 score over the question's total
   * term weight. Relative, so a knowledge base of one article answers as well as one of thousands.
   */
  minRelevance: Config.number("PARLEY_KB_MIN_RELEVANCE").pipe(Config.withDefault(0.3)),
  /** Lowest share of the question's terms the best passage must contain. */
  minCoverage: Config.number("PARLEY_KB_MIN_COVERAGE").pipe(Config.withDefault(0.5))
})

// The job queue and its workers

/** How long a claimed job stays an instance's without a heartbeat before others may take it. */
export const JobLease = Config.duration("JOB_LEASE").pipe(Config.withDefault(Duration.seconds(30)))

export const WorkerConfig = Config.all({
  /** Replies (and other non-delivery jobs) one instance generates at once. */
  concurrency: Config.integer("WORKER_CONCURRENCY").pipe(Config.withDefault(8)),
  /** Of those, at most this many for one workspace at once (across instances). */
  concurrencyPerWorkspace: Config.integer("WORKER_CONCURRENCY_PER_WORKSPACE").pipe(Config.withDefault(4)),
  /**
   * Webhook deliveries one instance has in flight at once (they wait on the network, not the CPU, and
   * hold no database connection meanwhile).
   */
  deliveryConcurrency: Config.integer("DELIVERY_CONCURRENCY").pipe(Config.withDefault(256)),
  /**
   * Of those, at most this many to one integration at once (across instances): a slow receiver costs
   * only its own. A claim's deliveries to one integration go out as a batch, so this is also the most
   * one batch holds (one integration's lane: 400/s at 8, 700/s at 32 on the development machine).
   */
  deliveryConcurrencyPerIntegration: Config.integer("DELIVERY_CONCURRENCY_PER_INTEGRATION").pipe(
    Config.withDefault(32)
  ),
  /** Idle workers look for due jobs this often (besides LISTEN/NOTIFY on PostgreSQL). */
  pollInterval: Config.duration("JOB_POLL_INTERVAL").pipe(Config.withDefault(Duration.seconds(1))),
  /** On shutdown, running jobs get this long to finish before they are given back. */
  shutdownGrace: Config.duration("WORKER_SHUTDOWN_GRACE").pipe(Config.withDefault(Duration.seconds(10))),
  /** A job whose handler fails this often is dead (kinds that settle their own failures excepted). */
  maxAttempts: Config.integer("JOB_MAX_ATTEMPTS").pipe(Config.withDefault(10)),
  /** How often queue depth and age are measured for metrics. */
  depthInterval: Config.duration("JOB_METRICS_INTERVAL").pipe(Config.withDefault(Duration.seconds(15))),
  /** Done and dead jobs are deleted this long after they finished. */
  retention: Config.duration("JOB_RETENTION").pipe(Config.withDefault(Duration.days(7)))
})
export type WorkerConfig = Config.Config.Success<typeof WorkerConfig>

// Webhook delivery (PRODUCT.md §5)

export const DeliveryConfig = Config.all({
  /** First retry delay; later ones double, with jitter. */
  retryBase: Config.duration("DELIVERY_RETRY_BASE").pipe(Config.withDefault(Duration.seconds(5))),
  /** Cap of one delay. */
  retryMaxDelay: Config.duration("DELIVERY_RETRY_MAX_DELAY").pipe(Config.withDefault(Duration.hours(1))),
  /** When an undelivered event goes dead, counted from its creation or last replay. */
  maxAge: Config.duration("DELIVERY_MAX_AGE").pipe(Config.withDefault(Duration.hours(28))),
  /** Per attempt. */
  timeout: Config.duration("DELIVERY_TIMEOUT").pipe(Config.withDefault(Duration.seconds(10)))
})
export type DeliveryConfig = Config.Config.Success<typeof DeliveryConfig>

/** One access record per HTTP request (at `info`; `/health/*` at `debug`); `false` turns them off. */
export const LogRequests = Config.boolean("LOG_REQUESTS").pipe(Config.withDefault(true))

/** Port of the Prometheus `/metrics` endpoint (a server of its own, apart from `PORT`); unset: none. */
export const MetricsPort = Config.option(Config.port("METRICS_PORT"))

// ---------------------------------------------------------------------------------------------------
// AI providers (src/Ai/Llm). The global default model; per-workspace settings override it.
// ---------------------------------------------------------------------------------------------------

/** `embedded` = the offline knowledge-base responder; `openai` / `anthropic` = an LLM through @effect/ai. */
export const AiProvider = Config.literal("embedded", "openai", "anthropic")("AI_PROVIDER").pipe(
  Config.withDefault("embedded" as const)
)
export const AiModel = Config.option(Config.nonEmptyString("AI_MODEL"))
export const OpenAiApiKey = Config.option(Config.redacted("OPENAI_API_KEY"))
export const AnthropicApiKey = Config.option(Config.redacted("ANTHROPIC_API_KEY"))
/** SDK-style base URLs ending in `/v1`: `http://localhost:11434/v1` for Ollama. */
export const OpenAiBaseUrl = Config.option(Config.nonEmptyString("OPENAI_BASE_URL"))
export const AnthropicBaseUrl = Config.option(Config.nonEmptyString("ANTHROPIC_BASE_URL"))
/** `chat` (OpenAI-compatible servers) or `responses` (OpenAI). Default: `chat` with a base URL, else `responses`. */
export const OpenAiApiKind = Config.option(Config.literal("chat", "responses")("OPENAI_API"))
/** One attempt of one model call. */
export const AiTimeout = Config.duration("AI_TIMEOUT").pipe(Config.withDefault(Duration.seconds(60)))
/** Time one reply may lose to failed model calls and to waiting between retries before it gives up. */
export const AiRetryBudget = Config.duration("AI_RETRY_BUDGET").pipe(Config.withDefault(Duration.minutes(2)))
/** Retries of one model call at most (within the budget). */
export const AiMaxRetries = Config.integer("AI_MAX_RETRIES").pipe(Config.withDefault(5))
/** Model calls of one reply at most (the agent's tool loop). */
export const AiMaxTurns = Config.integer("AI_MAX_TURNS").pipe(Config.withDefault(6))

export const DEFAULT_FALLBACK_MESSAGE = "I'm sorry, I can't answer right now. Please try again in a few minutes."

/**
 * What the customer gets when the model cannot be reached within the retry budget and the integration
 * has no `escalation` (with it, the conversation is handed over instead).
 */
export const AiFallbackMessage = Config.nonEmptyString("AI_FALLBACK_MESSAGE").pipe(
  Config.withDefault(DEFAULT_FALLBACK_MESSAGE)
)

/**
 * The global default model: none with `AI_PROVIDER=embedded`. `AI_MODEL` is required otherwise, and
 * the provider's key unless a base URL points at a server that takes none (a local Ollama).
 */
export const globalModelSettings: Config.Config<Option.Option<ModelSettings>> = Config.all({
  provider: AiProvider,
  model: AiModel,
  openAiKey: OpenAiApiKey,
  anthropicKey: AnthropicApiKey,
  openAiBaseUrl: OpenAiBaseUrl,
  anthropicBaseUrl: AnthropicBaseUrl,
  openAiApi: OpenAiApiKind
}).pipe(
  Config.mapOrFail((c): Either.Either<Option.Option<ModelSettings>, ConfigError.ConfigError> => {
    if (c.provider === "embedded") return Either.right(Option.none())
    const missing = (name: string) =>
      Either.left(ConfigError.MissingData([name], `${name} is required with AI_PROVIDER=${c.provider}`))
    if (Option.isNone(c.model)) return missing("AI_MODEL")
    const baseUrl = c.provider === "openai" ? c.openAiBaseUrl : c.anthropicBaseUrl
    const key = c.provider === "openai" ? c.openAiKey : c.anthropicKey
    if (Option.isNone(key) && Option.isNone(baseUrl)) {
      return missing(c.provider === "openai" ? "OPENAI_API_KEY" : "ANTHROPIC_API_KEY")
    }
    return Either.right(Option.some({
      provider: c.provider,
      model: c.model.value,
      apiKey: Option.getOrElse(key, () => Redacted.make("")),
      baseUrl: Option.getOrUndefined(baseUrl),
      openAiApi: Option.getOrElse(c.openAiApi, () => Option.isSome(c.openAiBaseUrl) ? "chat" as const : "responses" as const)
    }))
  })
)
