/**
 * Every setting Parley reads, as `Config` values. Layers read them when they are built; nothing else
 * looks at the environment. The README's configuration table mirrors this file.
 */
import * as Config from "effect/Config"

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

/** Port of the Prometheus `/metrics` endpoint (a server of its own, apart from `PORT`); unset: none. */
export const MetricsPort = Config.option(Config.port("METRICS_PORT"))
