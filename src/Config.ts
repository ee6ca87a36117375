/**
 * Every setting Parley reads, as `Config` values. Layers read them when they are built; nothing else
 * looks at the environment. The README's configuration table mirrors this file.
 */
import * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import * as SchemaTransformation from "effect/SchemaTransformation"
import type { ModelSettings } from "./Ai/Llm/Contract.js"

// ---------------------------------------------------------------------------------------------------
// Ranges. Every numeric and duration setting has one: a value outside it is refused at start with the
// setting's name, the value and the range (`Startup.ts` prints it), never accepted to fail later (a
// WORKER_CONCURRENCY of 0 would start and never reply).
// ---------------------------------------------------------------------------------------------------

/** Every (path, message) of a schema issue. */
const leaves = (issue: SchemaIssue.Issue, path: ReadonlyArray<PropertyKey> = []): Array<{
  readonly path: ReadonlyArray<PropertyKey>
  readonly message: string
}> => {
  switch (issue._tag) {
    case "Pointer":
      return leaves(issue.issue, [...path, ...issue.path])
    case "Composite":
    case "AnyOf":
      return issue.issues.length === 0
        ? [{ path, message: SchemaIssue.makeFormatterDefault()(issue) }]
        : issue.issues.flatMap((inner) => leaves(inner, path))
    case "Filter":
    case "Encoding":
      return issue.issue._tag === "Pointer" || issue.issue._tag === "Composite"
        ? leaves(issue.issue, path)
        : [{ path, message: SchemaIssue.makeFormatterDefault()(issue) }]
    default:
      return [{ path, message: SchemaIssue.makeFormatterDefault()(issue) }]
  }
}

const noPath: ReadonlyArray<PropertyKey> = []

/** The setting(s) a `ConfigError` is about and what is wrong with each. */
export const describeConfigError = (
  error: Config.ConfigError
): { readonly setting: string | undefined; readonly reason: string } => {
  const cause = error.cause
  const found = Schema.isSchemaError(cause)
    ? leaves(cause.issue)
    : [{ path: noPath, message: cause.message }]
  const named = found.map((leaf) => ({ name: leaf.path.map(String).join("_"), message: leaf.message }))
  const settings = [...new Set(named.flatMap((l) => l.name === "" ? [] : [l.name]))]
  // Effect's own messages ("Expected a finite number, got …") do not name the setting.
  const messages = named.map((l) => l.name === "" || l.message.includes(l.name) ? l.message : `${l.name}: ${l.message}`)
  return {
    setting: settings.length === 0 ? undefined : settings.join(", "),
    reason: messages.length === 0 ? error.message : [...new Set(messages)].join("; ")
  }
}

/** A duration as a setting is written: `1500 millis`, `5 seconds`, `28 hours` (the largest exact unit). */
export const formatDuration = (input: Duration.Input): string => {
  const millis = Duration.toMillis(Duration.fromInputUnsafe(input))
  const units: ReadonlyArray<readonly [string, number]> = [["days", 86_400_000], ["hours", 3_600_000], ["minutes", 60_000], [
    "seconds",
    1000
  ]]
  const unit = units.find(([, size]) => millis >= size && millis % size === 0)
  if (unit === undefined) return `${millis} millis`
  const count = millis / unit[1]
  return `${count} ${count === 1 ? unit[0].slice(0, -1) : unit[0]}`
}

/** A value of a setting its schema accepts, checked: `range` says what is allowed when `ok` says no. */
const ranged = <T>(schema: Schema.Codec<T, string>, name: string, ok: (value: T) => boolean, show: (value: T) => string, range: string) =>
  Config.schema(
    schema.check(Schema.makeFilter((value: T) => ok(value) ? undefined : `${name}=${show(value)} is out of range: ${range}`)),
    name
  )

/** Text that `pattern` accepts, read as a number; other text is named in the error (`expected`). */
const numberText = (pattern: RegExp, expected: string) =>
  Schema.String.check(
    Schema.makeFilter((text: string) => pattern.test(text) ? undefined : `Expected ${expected} but received ${JSON.stringify(text)}`)
      .abort()
  ).pipe(Schema.decodeTo(Schema.Number, SchemaTransformation.numberFromString))

const WholeNumber = numberText(/^\s*[+-]?\d+\s*$/, "an integer value")
const DecimalNumber = numberText(/^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$/, "a number")

/** A whole number from `min` to `max`; `fallback` when unset. */
export const integerIn = (name: string, min: number, max: number, fallback: number): Config.Config<number> =>
  ranged(WholeNumber, name, (n) => n >= min && n <= max, String, `a whole number from ${min} to ${max}`)
    .pipe(Config.withDefault(fallback))

/** A number from `min` to `max`; `fallback` when unset. */
export const numberIn = (name: string, min: number, max: number, fallback: number): Config.Config<number> =>
  ranged(DecimalNumber, name, (n) => Number.isFinite(n) && n >= min && n <= max, String, `a number from ${min} to ${max}`)
    .pipe(Config.withDefault(fallback))

/**
 * A duration from `min` to `max` (an Effect duration string: `1500 millis`, `5 seconds`); `zeroOff`
 * also allows 0, which turns the feature off. `fallback` when unset.
 */
export const durationIn = (
  name: string,
  min: Duration.Input,
  max: Duration.Input,
  fallback: Duration.Input,
  options: { readonly zeroOff?: boolean } = {}
): Config.Config<Duration.Duration> =>
  ranged(
    Schema.DurationFromString,
    name,
    (duration) =>
      (options.zeroOff === true && Duration.toMillis(duration) === 0) ||
      (Duration.isGreaterThanOrEqualTo(duration, Duration.fromInputUnsafe(min)) &&
        Duration.isLessThanOrEqualTo(duration, Duration.fromInputUnsafe(max))),
    formatDuration,
    `from ${formatDuration(min)} to ${formatDuration(max)}${options.zeroOff === true ? ", or 0 seconds (off)" : ""}`
  ).pipe(Config.withDefault(Duration.fromInputUnsafe(fallback)))

/** A failure of a setting, named (for checks across settings). */
export const settingError = (name: string, message: string): Config.ConfigError =>
  new Config.ConfigError(new Schema.SchemaError(new SchemaIssue.Pointer([name], new SchemaIssue.InvalidValue({ message }))))

export const Mode = Config.Literals(["development", "production"], "PARLEY_MODE").pipe(
  Config.withDefault("development" as const)
)
export type Mode = "development" | "production"

export const Port = Config.Port("PORT").pipe(Config.withDefault(8080))
export const Host = Config.String("HOST").pipe(Config.withDefault("0.0.0.0"))

export const DatabaseUrl = Config.option(Config.Redacted("DATABASE_URL"))
export const DataDir = Config.String("PARLEY_DATA_DIR").pipe(Config.withDefault("./.parley"))

/**
 * PostgreSQL's `shared_buffers` for the embedded database (PGlite). PGlite's own default is 128 MB
 * inside a WebAssembly memory that never shrinks, so its pages stay in the process's memory for good;
 * an embedded database's working set is far smaller, and the rest is the OS's file cache. PostgreSQL's
 * size syntax (`16MB`, `512kB`); see docs/performance.md for what each
 * size costs in memory and speed.
 */
export const EmbeddedSharedBuffers = Config.schema(
  Schema.String.check(Schema.makeFilter((size: string) =>
    /^\d+\s*(kB|MB|GB)$/.test(size) ? undefined : `PARLEY_EMBEDDED_SHARED_BUFFERS=${size} should be a size such as 16MB or 512kB`
  )),
  "PARLEY_EMBEDDED_SHARED_BUFFERS"
).pipe(Config.withDefault("16MB"))
export const DatabasePoolSize = integerIn("DATABASE_POOL_SIZE", 1, 1000, 10)

/**
 * Named (prepared) statements on PostgreSQL: each parsed once per connection, its plan kept. Off for a
 * pooler that cannot carry them (PgBouncer in transaction mode before 1.21, or without
 * `max_prepared_statements`). The embedded database always prepares.
 */
export const DatabasePreparedStatements = Config.Boolean("DATABASE_PREPARED_STATEMENTS").pipe(Config.withDefault(true))

/** Every wait on PostgreSQL is bounded (not the embedded database, which cannot be unreachable). */
export const DatabaseTimeouts = Config.all({
  /** Connecting, and waiting for a free connection of the pool. */
  connect: durationIn("DATABASE_CONNECT_TIMEOUT", Duration.millis(100), Duration.minutes(10), Duration.seconds(5)),
  /**
   * One statement, enforced by PostgreSQL (`statement_timeout`); a connection silent 2 s longer is
   * closed by Parley (the network is gone). 0 turns both off (e.g. for a long migration).
   */
  statement: durationIn("DATABASE_STATEMENT_TIMEOUT", Duration.millis(100), Duration.hours(24), Duration.seconds(15), {
    zeroOff: true
  }),
  /** A transaction left idle this long is ended by PostgreSQL (`idle_in_transaction_session_timeout`). */
  idleInTransaction: durationIn(
    "DATABASE_IDLE_IN_TRANSACTION_TIMEOUT",
    Duration.millis(100),
    Duration.hours(24),
    Duration.seconds(30),
    { zeroOff: true }
  )
})
export type DatabaseTimeouts = Config.Success<typeof DatabaseTimeouts>

export const AdminToken = Config.option(Config.Redacted("PARLEY_ADMIN_TOKEN"))

/** A 32-byte key given as 64 hex characters or as base64; undefined when it is not one. */
export const parseEncryptionKey = (raw: string): Buffer | undefined => {
  const trimmed = raw.trim()
  const key = /^[0-9a-fA-F]{64}$/.test(trimmed) ? Buffer.from(trimmed, "hex") : Buffer.from(trimmed, "base64")
  return key.length === 32 ? key : undefined
}

export const GENERATE_KEY_HINT = "generate one with `openssl rand -hex 32`"

/** An AES-256 key: none when unset or empty (`PARLEY_ENCRYPTION_KEY=` from a compose file). */
const encryptionKey = (name: string): Config.Config<Option.Option<Buffer>> =>
  Config.option(Config.Redacted(name)).pipe(
    Config.mapEffect((configured) => {
      const raw = Option.getOrElse(Option.map(configured, Redacted.value), () => "").trim()
      if (raw === "") return Effect.succeed(Option.none())
      const key = parseEncryptionKey(raw)
      return key !== undefined
        ? Effect.succeed(Option.some(key))
        : Effect.fail(settingError(name, `${name} must be 32 bytes, as 64 hex characters or base64 (${GENERATE_KEY_HINT})`))
    })
  )

export const EncryptionKey = encryptionKey("PARLEY_ENCRYPTION_KEY")
/** The key before a rotation: still opens what it sealed, until `parley secrets reencrypt` re-seals it. */
export const EncryptionKeyPrevious = encryptionKey("PARLEY_ENCRYPTION_KEY_PREVIOUS")
/** Production without an encryption key stores secrets in plain text only when this says so. */
export const AllowPlaintextSecrets = Config.Boolean("PARLEY_ALLOW_PLAINTEXT_SECRETS").pipe(Config.withDefault(false))

/**
 * What production mode requires before anything starts: an admin token (development generates one) and
 * an encryption key for secrets at rest, unless `PARLEY_ALLOW_PLAINTEXT_SECRETS=true` says plain text is
 * meant.
 */
export const ProductionRequirements: Config.Config<void> = Config.all({
  mode: Mode,
  adminToken: AdminToken,
  key: EncryptionKey,
  previousKey: EncryptionKeyPrevious,
  allowPlaintext: AllowPlaintextSecrets
}).pipe(
  Config.mapEffect((c): Effect.Effect<void, Config.ConfigError> => {
    if (Option.isSome(c.previousKey) && Option.isNone(c.key)) {
      return Effect.fail(settingError(
        "PARLEY_ENCRYPTION_KEY",
        "PARLEY_ENCRYPTION_KEY_PREVIOUS is set but PARLEY_ENCRYPTION_KEY is not"
      ))
    }
    if (c.mode !== "production") return Effect.void
    if (Option.isNone(c.adminToken) || Redacted.value(c.adminToken.value).trim() === "") {
      return Effect.fail(settingError(
        "PARLEY_ADMIN_TOKEN",
        `PARLEY_ADMIN_TOKEN must be set in production mode (${GENERATE_KEY_HINT})`
      ))
    }
    if (Option.isNone(c.key) && !c.allowPlaintext) {
      return Effect.fail(settingError(
        "PARLEY_ENCRYPTION_KEY",
        "PARLEY_ENCRYPTION_KEY must be set in production mode: webhook secrets, custom header values and AI keys " +
          `are stored encrypted with it; ${GENERATE_KEY_HINT} (or set PARLEY_ALLOW_PLAINTEXT_SECRETS=true to store them in plain text)`
      ))
    }
    return Effect.void
  })
)

/** Largest accepted request body, in bytes (docs/api.md: 1 MiB). */
export const BodyLimit = integerIn("PARLEY_BODY_LIMIT", 1024, 100 * 1024 * 1024, 1024 * 1024)
/** Requests per minute per API token; 0 turns the limit off. */
export const RateLimit = integerIn("PARLEY_RATE_LIMIT", 0, 1_000_000, 600)
export const MaxMessageChars = integerIn("PARLEY_MAX_MESSAGE_CHARS", 1, 1_000_000, 32_000)
export const MaxAttachments = integerIn("PARLEY_MAX_ATTACHMENTS", 0, 1000, 20)

/** How long the previous webhook secret stays valid after a rotation. */
export const SecretRotationGrace = durationIn("PARLEY_SECRET_ROTATION_GRACE", 0, Duration.days(30), Duration.hours(24))

/** How long a dashboard sign-in lasts (docs/dashboard.md). */
export const DashboardSessionTtl = durationIn("PARLEY_DASHBOARD_SESSION_TTL", Duration.minutes(5), Duration.days(7), Duration.hours(8))

/**
 * How long a valid API token's lookup is remembered. Revoking through this instance takes effect at
 * once; another instance sharing the database may accept a revoked token for up to this long. 0 = off.
 */
export const TokenCacheTtl = durationIn("PARLEY_TOKEN_CACHE_TTL", 0, Duration.minutes(1), Duration.seconds(1))

/**
 * How long an integration read by the API (by id, within the caller's workspace) is remembered: it was
 * one of message-received's round trips. A write through an instance empties that instance's cache at
 * once; another instance on the same database may use the settings before a change for up to this
 * long. 0 = off.
 */
export const IntegrationCacheTtl = durationIn("PARLEY_INTEGRATION_CACHE_TTL", 0, Duration.minutes(1), Duration.seconds(1))

/**
 * Whether the first start of an empty database creates a demo workspace: by default in development
 * mode only (a production database starts empty; operators create workspaces).
 */
export const SeedDemo = Config.all([Config.option(Config.Boolean("PARLEY_SEED_DEMO")), Mode]).pipe(
  Config.map(([seed, mode]) => Option.getOrElse(seed, () => mode === "development"))
)

/** Where the demo integration's webhooks go: `npm run receiver` listens there by default. */
export const DemoWebhookUrl = Config.URL("PARLEY_DEMO_WEBHOOK_URL").pipe(
  Config.map((url) => url.toString()),
  Config.withDefault("http://127.0.0.1:8787/webhook")
)

// Replies (docs/ai.md)

/** Messages within this window are answered together by one reply. */
export const ReplyDebounce = durationIn("REPLY_DEBOUNCE", 0, Duration.minutes(1), Duration.millis(1500))

/** The embedded knowledge-base responder. */
export const EmbeddedConfig = Config.all({
  /**
   * Lowest relevance of the best passage for an answer: its BM25 score over the question's total
   * term weight. Relative, so a knowledge base of one article answers as well as one of thousands.
   */
  minRelevance: numberIn("PARLEY_KB_MIN_RELEVANCE", 0, 10, 0.3),
  /** Lowest share of the question's terms the best passage must contain. */
  minCoverage: numberIn("PARLEY_KB_MIN_COVERAGE", 0, 1, 0.5)
})

// The job queue and its workers

/** How long a claimed job stays an instance's without a heartbeat before others may take it. */
export const JobLease = durationIn("JOB_LEASE", Duration.millis(100), Duration.hours(1), Duration.seconds(30))

export const WorkerConfig = Config.all({
  /** Replies (and other non-delivery jobs) one instance generates at once. */
  concurrency: integerIn("WORKER_CONCURRENCY", 1, 1000, 8),
  /** Of those, at most this many for one workspace at once (across instances). */
  concurrencyPerWorkspace: integerIn("WORKER_CONCURRENCY_PER_WORKSPACE", 1, 1000, 4),
  /**
   * Webhook deliveries one instance has in flight at once (they wait on the network, not the CPU, and
   * hold no database connection meanwhile).
   */
  deliveryConcurrency: integerIn("DELIVERY_CONCURRENCY", 1, 10_000, 256),
  /**
   * Of those, at most this many to one integration at once (across instances): a slow receiver costs
   * only its own. A claim's deliveries to one integration go out as a batch, so this is also the most
   * one batch holds, and what bounds one integration's rate (docs/performance.md).
   */
  deliveryConcurrencyPerIntegration: integerIn("DELIVERY_CONCURRENCY_PER_INTEGRATION", 1, 1000, 32),
  /** Idle workers look for due jobs this often (besides LISTEN/NOTIFY on PostgreSQL). */
  pollInterval: durationIn("JOB_POLL_INTERVAL", Duration.millis(10), Duration.hours(1), Duration.seconds(1)),
  /** On shutdown, running jobs get this long to finish before they are given back. */
  shutdownGrace: durationIn("WORKER_SHUTDOWN_GRACE", 0, Duration.minutes(10), Duration.seconds(10)),
  /** A job whose handler fails this often is dead (kinds that settle their own failures excepted). */
  maxAttempts: integerIn("JOB_MAX_ATTEMPTS", 1, 1000, 10),
  /** How often queue depth and age are measured for metrics. */
  depthInterval: durationIn("JOB_METRICS_INTERVAL", Duration.millis(100), Duration.hours(1), Duration.seconds(15)),
  /** Done and dead jobs are deleted this long after they finished. */
  retention: durationIn("JOB_RETENTION", Duration.minutes(1), Duration.days(3650), Duration.days(7))
})
export type WorkerConfig = Config.Success<typeof WorkerConfig>

// Webhook delivery (docs/webhooks.md)

export const DeliveryConfig = Config.all({
  /** First retry delay; later ones double, with jitter. */
  retryBase: durationIn("DELIVERY_RETRY_BASE", Duration.millis(1), Duration.hours(1), Duration.seconds(5)),
  /** Cap of one delay. */
  retryMaxDelay: durationIn("DELIVERY_RETRY_MAX_DELAY", Duration.millis(1), Duration.days(7), Duration.hours(1)),
  /** When an undelivered event goes dead, counted from its creation or last replay. */
  maxAge: durationIn("DELIVERY_MAX_AGE", Duration.millis(100), Duration.days(90), Duration.hours(28)),
  /** Per attempt. */
  timeout: durationIn("DELIVERY_TIMEOUT", Duration.millis(10), Duration.minutes(5), Duration.seconds(10))
}).pipe(
  Config.mapEffect((c) =>
    Duration.isLessThan(c.retryMaxDelay, c.retryBase)
      ? Effect.fail(settingError(
        "DELIVERY_RETRY_MAX_DELAY",
        `DELIVERY_RETRY_MAX_DELAY=${formatDuration(c.retryMaxDelay)} is out of range: at least DELIVERY_RETRY_BASE (${
          formatDuration(c.retryBase)
        })`
      ))
      : Effect.succeed(c)
  )
)
export type DeliveryConfig = Config.Success<typeof DeliveryConfig>

/** One access record per HTTP request (at `info`; `/health/*` at `debug`); `false` turns them off. */
export const LogRequests = Config.Boolean("LOG_REQUESTS").pipe(Config.withDefault(true))

/** Port of the Prometheus `/metrics` endpoint (a server of its own, apart from `PORT`); unset: none. */
export const MetricsPort = Config.option(Config.Port("METRICS_PORT"))

// ---------------------------------------------------------------------------------------------------
// AI providers (src/Ai/Llm). The global default model; per-workspace settings override it.
// ---------------------------------------------------------------------------------------------------

/** `embedded` = the offline knowledge-base responder; `openai` / `anthropic` = an LLM through @effect/ai. */
export const AiProvider = Config.Literals(["embedded", "openai", "anthropic"], "AI_PROVIDER").pipe(
  Config.withDefault("embedded" as const)
)
export const AiModel = Config.option(Config.NonEmptyString("AI_MODEL"))
export const OpenAiApiKey = Config.option(Config.Redacted("OPENAI_API_KEY"))
export const AnthropicApiKey = Config.option(Config.Redacted("ANTHROPIC_API_KEY"))
/** SDK-style base URLs ending in `/v1`: `http://localhost:11434/v1` for Ollama. */
export const OpenAiBaseUrl = Config.option(Config.NonEmptyString("OPENAI_BASE_URL"))
export const AnthropicBaseUrl = Config.option(Config.NonEmptyString("ANTHROPIC_BASE_URL"))
/** `chat` (OpenAI-compatible servers) or `responses` (OpenAI). Default: `chat` with a base URL, else `responses`. */
export const OpenAiApiKind = Config.option(Config.Literals(["chat", "responses"], "OPENAI_API"))
/** One attempt of one model call. */
export const AiTimeout = durationIn("AI_TIMEOUT", Duration.millis(10), Duration.minutes(30), Duration.seconds(20))
/**
 * The most a reply may take with a model, everything included (the guardrail classifier, the tool loop,
 * retries, the verifier): then the customer gets the hand-over or the fallback. A hung model counts
 * like any failure.
 */
export const AiReplyTimeout = durationIn("AI_REPLY_TIMEOUT", Duration.seconds(1), Duration.minutes(30), Duration.seconds(30))
/** Time one reply may lose to failed model calls and to waiting between retries before it gives up. */
export const AiRetryBudget = durationIn("AI_RETRY_BUDGET", 0, Duration.hours(1), Duration.minutes(2))
/** Retries of one model call at most (within the budget). */
export const AiMaxRetries = integerIn("AI_MAX_RETRIES", 0, 100, 5)
/**
 * The estimated tokens of conversation a model reads (docs/ai.md, "Context budget"); 0: the model
 * family's own budget (src/Ai/Context.ts).
 */
export const AiContextTokens = integerIn("AI_CONTEXT_TOKENS", 0, 2_000_000, 0)
/** Model calls of one reply at most (the agent's tool loop). */
export const AiMaxTurns = integerIn("AI_MAX_TURNS", 1, 100, 6)

export const DEFAULT_FALLBACK_MESSAGE = "I'm sorry, I can't answer right now. Please try again in a few minutes."

/**
 * What the customer gets when the model cannot be reached within the retry budget and the integration
 * has no `escalation` (with it, the conversation is handed over instead).
 */
export const AiFallbackMessage = Config.NonEmptyString("AI_FALLBACK_MESSAGE").pipe(
  Config.withDefault(DEFAULT_FALLBACK_MESSAGE)
)

/** What a model costs, in US dollars per million tokens it reads (`input`) and writes (`output`). */
export interface ModelPrice {
  readonly input: number
  readonly output: number
}

const PRICE = /^(\d+(\.\d*)?|\.\d+)$/
const PRICES_EXAMPLE = "gpt-4o-mini=0.15/0.60,claude-3-5-haiku=0.80/4.00"

/**
 * `AI_PRICES` as written: `model=input/output` entries separated by commas, in USD per million tokens.
 * An entry splits at its last `=`, so that a model name may hold `/` or `:` (`meta-llama/Llama-3.1-8B`,
 * `llama3.2:latest`); names are matched exactly. The failure is the reason, naming the entry.
 */
export const parseAiPrices = (text: string): Result.Result<ReadonlyMap<string, ModelPrice>, string> => {
  const prices = new Map<string, ModelPrice>()
  for (const entry of text.split(",").map((part) => part.trim()).filter((part) => part !== "")) {
    const at = entry.lastIndexOf("=")
    const model = entry.slice(0, Math.max(at, 0)).trim()
    const [input = "", output = "", ...extra] = entry.slice(at + 1).split("/").map((part) => part.trim())
    if (at < 0 || model === "" || extra.length > 0 || !PRICE.test(input) || !PRICE.test(output)) {
      return Result.fail(
        `AI_PRICES entry ${JSON.stringify(entry)} should be model=input/output in USD per million tokens ` +
          `(e.g. ${PRICES_EXAMPLE})`
      )
    }
    if (prices.has(model)) return Result.fail(`AI_PRICES names the model ${JSON.stringify(model)} twice`)
    prices.set(model, { input: Number(input), output: Number(output) })
  }
  return Result.succeed(prices)
}

/**
 * Prices of models by name, for the dashboard's estimated cost of AI replies (docs/dashboard.md); a
 * model without one has no estimate. Unset or empty: none.
 */
export const AiPrices: Config.Config<ReadonlyMap<string, ModelPrice>> = Config.String("AI_PRICES").pipe(
  Config.withDefault(""),
  Config.mapEffect((text) =>
    Result.match(parseAiPrices(text), {
      onFailure: (reason) => Effect.fail(settingError("AI_PRICES", reason)),
      onSuccess: (prices) => Effect.succeed(prices)
    })
  )
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
  Config.mapEffect((c): Effect.Effect<Option.Option<ModelSettings>, Config.ConfigError> => {
    if (c.provider === "embedded") return Effect.succeed(Option.none())
    const missing = (name: string) => Effect.fail(settingError(name, `${name} is required with AI_PROVIDER=${c.provider}`))
    if (Option.isNone(c.model)) return missing("AI_MODEL")
    const baseUrl = c.provider === "openai" ? c.openAiBaseUrl : c.anthropicBaseUrl
    const key = c.provider === "openai" ? c.openAiKey : c.anthropicKey
    if (Option.isNone(key) && Option.isNone(baseUrl)) {
      return missing(c.provider === "openai" ? "OPENAI_API_KEY" : "ANTHROPIC_API_KEY")
    }
    return Effect.succeed(Option.some({
      provider: c.provider,
      model: c.model.value,
      apiKey: Option.getOrElse(key, () => Redacted.make("")),
      baseUrl: Option.getOrUndefined(baseUrl),
      openAiApi: Option.getOrElse(c.openAiApi, () => Option.isSome(c.openAiBaseUrl) ? "chat" as const : "responses" as const)
    }))
  })
)
