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
export const DatabasePoolSize = Config.integer("DATABASE_POOL_SIZE").pipe(Config.withDefault(10))

export const AdminToken = Config.option(Config.redacted("PARLEY_ADMIN_TOKEN"))
export const EncryptionKey = Config.option(Config.redacted("PARLEY_ENCRYPTION_KEY"))

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
  /** Jobs one instance runs at once. */
  concurrency: Config.integer("WORKER_CONCURRENCY").pipe(Config.withDefault(4)),
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
