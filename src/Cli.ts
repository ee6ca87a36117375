/**
 * `parley`, the operator's command line. Admin commands drive the admin API with the typed
 * `HttpApiClient` (the same schemas as the server); `serve` and `migrate` run Parley itself.
 */
import { Args, Command, Options } from "@effect/cli"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpApiClient from "@effect/platform/HttpApiClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Cause from "effect/Cause"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Console from "effect/Console"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as path from "node:path"
import { Api } from "./Api.js"
import { AppLive } from "./App.js"
import { Secrets } from "./Auth/Secrets.js"
import * as AppConfig from "./Config.js"
import { Replayed } from "./Delivery/Api.js"
import { type AiSettingsUpdate, AiSettingsView, AiUsageReport } from "./Domain/AiSettings.js"
import { DeliveryDetail, DeliveryJson } from "./Domain/Delivery.js"
import { EventId, IntegrationId, TokenId, WorkspaceId } from "./Domain/Ids.js"
import { FeatureName, IntegrationJson } from "./Domain/Integration.js"
import { ArticleJson } from "./Domain/Knowledge.js"
import { Timestamp } from "./Domain/Primitives.js"
import {
  CreatedToken,
  CreatedWorkspace,
  RotatedSecret,
  TokenSummary,
  ToneJson,
  WorkspaceDetail,
  WorkspaceSummary
} from "./Domain/Workspace.js"
import { latestMigrationId } from "./migrations/index.js"
import { SqlLive } from "./Sql.js"
import { explainStartFailure } from "./Startup.js"

// ---------------------------------------------------------------------------------------------
// Connection to a running Parley

const connection = {
  url: Options.text("url").pipe(
    Options.withDescription("Parley's base URL (env PARLEY_URL)"),
    Options.withFallbackConfig(Config.string("PARLEY_URL")),
    Options.withDefault("http://localhost:8080")
  ),
  adminToken: Options.redacted("admin-token").pipe(
    Options.withDescription("The admin token (env PARLEY_ADMIN_TOKEN; in development, <data dir>/admin-token)"),
    Options.withFallbackConfig(Config.redacted("PARLEY_ADMIN_TOKEN")),
    Options.optional
  ),
  json: Options.boolean("json").pipe(Options.withDescription("Print JSON instead of text"))
}

type Connection = {
  readonly url: string
  readonly adminToken: Option.Option<Redacted.Redacted<string>>
  readonly json: boolean
}

const adminToken = (conn: Connection) =>
  Option.match(conn.adminToken, {
    onSome: (token) => Effect.succeed(Redacted.value(token)),
    onNone: () =>
      Effect.gen(function*() {
        const file = path.resolve(yield* AppConfig.DataDir, "admin-token")
        if (!fs.existsSync(file)) {
          return yield* Effect.fail(
            new CliFailure({ message: "No admin token: pass --admin-token or set PARLEY_ADMIN_TOKEN" })
          )
        }
        return fs.readFileSync(file, "utf8").trim()
      })
  })

const adminClient = (conn: Connection) =>
  Effect.gen(function*() {
    const token = yield* adminToken(conn)
    const client = yield* HttpApiClient.make(Api, {
      baseUrl: conn.url,
      transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(token))
    })
    return client.admin
  })

export class CliFailure extends Schema.TaggedError<CliFailure>()("CliFailure", { message: Schema.String }) {}

/** Server answers become one readable line; the exit code says it failed. */
const explain = (error: unknown): string => {
  if (typeof error === "object" && error !== null) {
    if ("detail" in error) {
      const detail = error.detail
      return Array.isArray(detail)
        ? detail.map((d: { loc: Array<unknown>; msg: string }) => `${d.loc.join(".")}: ${d.msg}`).join("; ")
        : String(detail)
    }
    if ("_tag" in error && error._tag === "RequestError") return "Cannot reach Parley (is it running? see --url)"
    if ("message" in error && typeof error.message === "string") return error.message
  }
  return String(error)
}

const print = <A, I>(
  conn: Connection,
  schema: Schema.Schema<A, I>,
  value: A,
  text: (value: A) => string
) =>
  conn.json
    ? Effect.flatMap(Schema.encode(schema)(value), (encoded) => Console.log(JSON.stringify(encoded, null, 2)))
    : Console.log(text(value))

/**
 * Runs a command's calls over fetch; a failure prints one line and sets the exit code. A command that
 * opens the database itself (`migrate`, `secrets reencrypt`) says which setting to fix when it cannot
 * (the embedded database held by a running Parley: "stop Parley first").
 */
const reporting = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  effect.pipe(
    Effect.catchAllCause((cause) => {
      if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause)
      const failure = Cause.failureOption(cause)
      const message = Option.isSome(failure) && !ConfigError.isConfigError(failure.value)
        ? explain(failure.value)
        : (({ reason, setting }) => setting === undefined || reason.includes(setting) ? reason : `${setting}: ${reason}`)(
          explainStartFailure(cause)
        )
      return Effect.zipRight(
        Console.error(`Error: ${message}`),
        Effect.sync(() => {
          process.exitCode = 1
        })
      )
    }),
    Effect.provide(FetchHttpClient.layer)
  )

const admin = <A, E, R>(
  conn: Connection,
  run: (client: Effect.Effect.Success<ReturnType<typeof adminClient>>) => Effect.Effect<A, E, R>
) => reporting(Effect.flatMap(adminClient(conn), run))

// ---------------------------------------------------------------------------------------------
// Commands

const workspaceId = Args.text({ name: "workspace-id" }).pipe(Args.withSchema(WorkspaceId))

const workspaceCreate = Command.make(
  "create",
  { ...connection, name: Args.text({ name: "name" }) },
  (conn) =>
    admin(conn, (client) =>
      Effect.flatMap(client.createWorkspace({ payload: { name: conn.name } }), (created) =>
        print(conn, CreatedWorkspace, created, (w) =>
          [
            `Workspace ${w.name}: ${w.id}`,
            `  API token (shown once): ${w.apiToken}`,
            `  Webhook secret:         ${w.webhookSecret}`
          ].join("\n"))))
).pipe(Command.withDescription("Create a workspace, its first API token and its webhook secret"))

const workspaceList = Command.make("list", connection, (conn) =>
  admin(conn, (client) =>
    Effect.flatMap(client.listWorkspaces(), (list) =>
      print(conn, Schema.Array(WorkspaceSummary), list, (ws) =>
        ws.length === 0 ? "No workspaces" : ws.map((w) => `${w.id}  ${w.name}`).join("\n"))))
).pipe(Command.withDescription("List workspaces"))

const workspaceShow = Command.make("show", { ...connection, workspaceId }, (conn) =>
  admin(conn, (client) =>
    Effect.flatMap(client.getWorkspace({ path: { workspaceId: conn.workspaceId } }), (w) =>
      print(conn, WorkspaceDetail, w, (w) =>
        [`Workspace ${w.name}: ${w.id}`, `  Webhook secret: ${w.webhookSecret}`].join("\n"))))
).pipe(Command.withDescription("Show a workspace and its webhook secret"))

const workspaceDelete = Command.make(
  "delete",
  {
    ...connection,
    workspaceId,
    yes: Options.boolean("yes").pipe(Options.withDescription("Confirm: the workspace and all its data are deleted"))
  },
  (conn) =>
    admin(conn, (client) =>
      Effect.gen(function*() {
        const w = yield* client.getWorkspace({ path: { workspaceId: conn.workspaceId } })
        if (!conn.yes) {
          return yield* new CliFailure({
            message: `This deletes workspace ${w.name} (${w.id}), its tokens, integrations, conversations and deliveries. ` +
              "Run again with --yes to confirm"
          })
        }
        yield* client.deleteWorkspace({ path: { workspaceId: conn.workspaceId } })
        yield* conn.json
          ? Console.log(JSON.stringify({ deleted: w.id }))
          : Console.log(
            `Workspace ${w.name} (${w.id}) deleted: its tokens no longer work; its data is being removed in the background`
          )
      }))
).pipe(Command.withDescription("Delete a workspace and everything it owns (asks for --yes)"))

const workspace = Command.make("workspace").pipe(
  Command.withSubcommands([workspaceCreate, workspaceList, workspaceShow, workspaceDelete]),
  Command.withDescription("Workspaces")
)

const tokenCreate = Command.make(
  "create",
  { ...connection, workspaceId, name: Options.text("name").pipe(Options.optional) },
  (conn) =>
    admin(conn, (client) =>
      Effect.flatMap(
        client.createToken({
          path: { workspaceId: conn.workspaceId },
          payload: { name: Option.getOrNull(conn.name) }
        }),
        (token) => print(conn, CreatedToken, token, (t) => `Token ${t.id} (shown once): ${t.token}`)
      ))
).pipe(Command.withDescription("Create an API token for a workspace"))

const tokenList = Command.make("list", { ...connection, workspaceId }, (conn) =>
  admin(conn, (client) =>
    Effect.flatMap(client.listTokens({ path: { workspaceId: conn.workspaceId } }), (tokens) =>
      print(conn, Schema.Array(TokenSummary), tokens, (ts) =>
        ts.map((t) => `${t.id}  ${t.name ?? "-"}  ${t.revokedAt === null ? "active" : "revoked"}`).join("\n"))))
).pipe(Command.withDescription("List a workspace's API tokens"))

const tokenRevoke = Command.make("revoke", { ...connection, tokenId: Args.text({ name: "token-id" }).pipe(Args.withSchema(TokenId)) }, (conn) =>
  admin(conn, (client) =>
    Effect.zipRight(
      client.revokeToken({ path: { tokenId: conn.tokenId } }),
      conn.json ? Console.log(JSON.stringify({ revoked: conn.tokenId })) : Console.log(`Token ${conn.tokenId} revoked`)
    ))
).pipe(Command.withDescription("Revoke an API token (it stops working at once)"))

const token = Command.make("token").pipe(
  Command.withSubcommands([tokenCreate, tokenList, tokenRevoke]),
  Command.withDescription("API tokens")
)

const secretRotate = Command.make("rotate", { ...connection, workspaceId }, (conn) =>
  admin(conn, (client) =>
    Effect.flatMap(client.rotateWebhookSecret({ path: { workspaceId: conn.workspaceId } }), (rotated) =>
      print(conn, RotatedSecret, rotated, (r) =>
        `New webhook secret: ${r.webhookSecret}\n  (the previous one is also used to sign until ${
          DateTime.formatIso(r.previousSecretExpiresAt)
        })`)))
).pipe(Command.withDescription("Rotate a workspace's webhook secret"))

const secret = Command.make("secret").pipe(
  Command.withSubcommands([secretRotate]),
  Command.withDescription("Webhook secrets")
)

const reencrypt = Command.make("reencrypt", { json: connection.json }, ({ json }) =>
  reporting(
    Effect.flatMap(Secrets, (secrets) => secrets.reencrypt()).pipe(
      Effect.flatMap((counts) =>
        json
          ? Console.log(JSON.stringify(counts, null, 2))
          : Console.log(
            `Secrets at rest: ${counts.sealed} sealed (were plain text), ${counts.resealed} re-sealed ` +
              `(were sealed by PARLEY_ENCRYPTION_KEY_PREVIOUS), ${counts.unchanged} already sealed by PARLEY_ENCRYPTION_KEY`
          )
      ),
      Effect.provide(Secrets.Default.pipe(Layer.provide(SqlLive)))
    )
  )
).pipe(
  Command.withDescription(
    "Seal every secret at rest with PARLEY_ENCRYPTION_KEY: plain text ones, and those of PARLEY_ENCRYPTION_KEY_PREVIOUS " +
      "(works on the database: DATABASE_URL, or the embedded one in PARLEY_DATA_DIR with Parley stopped)"
  )
)

const secrets = Command.make("secrets").pipe(
  Command.withSubcommands([reencrypt]),
  Command.withDescription("Secrets at rest (encryption key rotation)")
)

const parseFeature = (entry: string) => {
  const [name = "", value = "true"] = entry.split("=")
  return Schema.decodeUnknown(FeatureName)(name).pipe(
    Effect.mapError(() =>
      new CliFailure({ message: `Unknown feature ${name}; known: ${FeatureName.literals.join(", ")}` })
    ),
    Effect.map((feature) => [feature, value === "true"] as const)
  )
}

const integrationCreate = Command.make(
  "create",
  {
    ...connection,
    workspaceId,
    name: Options.text("name"),
    webhookUrl: Options.text("webhook-url"),
    kind: Options.text("kind").pipe(Options.withDefault("api"), Options.withDescription("api, chatwoot, ...")),
    header: Options.keyValueMap("header").pipe(Options.optional),
    feature: Options.text("feature").pipe(
      Options.repeated,
      Options.withDescription("flag[=true|false], repeatable, e.g. --feature externalCustomerId")
    )
  },
  (conn) =>
    admin(conn, (client) =>
      Effect.gen(function*() {
        const features = Object.fromEntries(yield* Effect.forEach(conn.feature, parseFeature))
        const headers = Option.match(conn.header, {
          onNone: () => ({}),
          onSome: (map) => Object.fromEntries(map)
        })
        const created = yield* client.createIntegration({
          path: { workspaceId: conn.workspaceId },
          payload: {
            name: conn.name,
            integration: conn.kind,
            webhook: { url: conn.webhookUrl, headers, metadata: {} },
            supportedFeatures: features,
            channelsSettings: {}
          }
        })
        yield* print(conn, IntegrationJson, created, (i) => `Integration ${i.settings.name}: ${i.integrationId}`)
      }))
).pipe(Command.withDescription("Create an integration (its webhook receives Parley's events)"))

const integrationList = Command.make("list", { ...connection, workspaceId }, (conn) =>
  admin(conn, (client) =>
    Effect.flatMap(client.listIntegrations({ path: { workspaceId: conn.workspaceId } }), (list) =>
      print(conn, Schema.Array(IntegrationJson), list, (is) =>
        is.map((i) => `${i.integrationId}  ${i.integration}  ${i.settings.name}  ${i.settings.webhook.url}`).join(
          "\n"
        ))))
).pipe(Command.withDescription("List a workspace's integrations"))

const integration = Command.make("integration").pipe(
  Command.withSubcommands([integrationCreate, integrationList]),
  Command.withDescription("Integrations")
)

const toneCreate = Command.make(
  "create",
  { ...connection, workspaceId, name: Options.text("name"), instructions: Options.text("instructions") },
  (conn) =>
    admin(conn, (client) =>
      Effect.flatMap(
        client.createTone({
          path: { workspaceId: conn.workspaceId },
          payload: { name: conn.name, instructions: conn.instructions }
        }),
        (tone) => print(conn, ToneJson, tone, (t) => `Tone ${t.name}: ${t.id}`)
      ))
).pipe(Command.withDescription("Create a tone (what toneId and firstResponseToneId refer to)"))

const tone = Command.make("tone").pipe(Command.withSubcommands([toneCreate]), Command.withDescription("Tones"))

/** Title: the first `# heading` (removed from the body), else the file name. */
const readArticle = (file: string, urlBase: Option.Option<string>, url: Option.Option<string>) =>
  Effect.try({
    try: () => {
      const text = fs.readFileSync(file, "utf8")
      const heading = /^#\s+(.+)$/m.exec(text)
      const slug = path.basename(file).replace(/\.(md|markdown|txt)$/i, "")
      return {
        title: heading?.[1]?.trim() ?? slug,
        body: heading ? text.replace(heading[0], "").trim() : text.trim(),
        url: Option.getOrNull(Option.orElse(url, () => Option.map(urlBase, (base) => new URL(slug, base).toString())))
      }
    },
    catch: (error) => new CliFailure({ message: `Cannot read ${file}: ${String(error)}` })
  })

/**
 * The Markdown files an argument names: a file, every `.md`/`.markdown`/`.txt` file of a folder, or a
 * pattern the shell did not expand (quoted, or matching nothing): `*` and `?` in the file name part.
 */
const articleFiles = (argument: string) =>
  Effect.try({
    try: (): Array<string> => {
      if (fs.existsSync(argument)) {
        if (!fs.statSync(argument).isDirectory()) return [argument]
        return fs.readdirSync(argument).filter((name) => /\.(md|markdown|txt)$/i.test(name)).sort().map((name) =>
          path.join(argument, name)
        )
      }
      const base = path.basename(argument)
      if (!/[*?]/.test(base)) return []
      const dir = path.dirname(argument)
      const pattern = new RegExp(`^${base.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".")}$`)
      return fs.existsSync(dir) && fs.statSync(dir).isDirectory()
        ? fs.readdirSync(dir).filter((name) => pattern.test(name)).sort().map((name) => path.join(dir, name))
        : []
    },
    catch: (error) => new CliFailure({ message: `Cannot read ${argument}: ${String(error)}` })
  }).pipe(
    Effect.filterOrFail(
      (files) => files.length > 0,
      () =>
        new CliFailure({
          message: fs.existsSync(argument)
            ? `No Markdown files (.md, .markdown, .txt) in ${argument}`
            : `No file matches ${argument}`
        })
    )
  )

const kbAdd = Command.make(
  "add",
  {
    ...connection,
    workspace: Options.text("workspace").pipe(Options.withSchema(WorkspaceId), Options.withDescription("Workspace id")),
    urlBase: Options.text("url-base").pipe(
      Options.optional,
      Options.withDescription("Article URL = url-base + file name without extension")
    ),
    articleUrl: Options.text("article-url").pipe(Options.optional, Options.withDescription("Article URL (one file)")),
    files: Args.text({ name: "FILE.md|FOLDER" }).pipe(
      Args.atLeast(1),
      Args.withDescription("Markdown files, folders of them, or a quoted pattern such as 'docs/help/*.md'")
    )
  },
  (conn) =>
    admin(conn, (client) =>
      Effect.gen(function*() {
        const files = (yield* Effect.forEach(conn.files, articleFiles)).flat()
        yield* Effect.forEach(files, (file) =>
        Effect.gen(function*() {
          const article = yield* readArticle(file, conn.urlBase, files.length === 1 ? conn.articleUrl : Option.none())
          const created = yield* client.createArticle({ path: { workspaceId: conn.workspace }, payload: article })
          yield* print(conn, ArticleJson, created, (a) => `Article ${a.title}: ${a.id}${a.url ? ` (${a.url})` : ""}`)
        }), { discard: true })
      }))
).pipe(Command.withDescription("Add Markdown files to a workspace's knowledge base"))

const kbList = Command.make("list", { ...connection, workspaceId }, (conn) =>
  admin(conn, (client) =>
    Effect.flatMap(client.listArticles({ path: { workspaceId: conn.workspaceId } }), (list) =>
      print(conn, Schema.Array(ArticleJson), list, (as) =>
        as.length === 0 ? "No articles" : as.map((a) => `${a.id}  ${a.title}  ${a.url ?? ""}`).join("\n"))))
).pipe(Command.withDescription("List a workspace's knowledge-base articles"))

const kb = Command.make("kb").pipe(
  Command.withSubcommands([kbAdd, kbList]),
  Command.withDescription("Knowledge base (what the embedded responder answers from)")
)

const describeAi = (s: AiSettingsView) =>
  [
    `AI settings of workspace ${s.workspaceId} (${s.source === "workspace" ? "its own" : "the global default"})`,
    `  Provider: ${s.provider}`,
    ...(s.provider === "embedded"
      ? []
      : [
        `  Model:    ${s.model ?? "-"}`,
        `  Base URL: ${s.baseUrl ?? "(the vendor's)"}`,
        ...(s.openAiApi === null ? [] : [`  API:      ${s.openAiApi}`]),
        `  API key:  ${
          s.apiKeySet
            ? `set${s.apiKeyHint === null ? "" : ` (${s.apiKeyHint})`}${
              s.source === "workspace" ? (s.apiKeyEncryptedAtRest ? ", encrypted at rest" : ", NOT encrypted at rest") : ""
            }`
            : "none"
        }`
      ]),
    ...(s.updatedAt === null ? [] : [`  Updated:  ${DateTime.formatIso(s.updatedAt)}`])
  ].join("\n")

const aiSet = Command.make(
  "set",
  {
    ...connection,
    workspaceId,
    provider: Options.choice("provider", ["embedded", "openai", "anthropic"]).pipe(
      Options.withDescription("embedded (the offline responder), openai (and OpenAI-compatible servers) or anthropic")
    ),
    model: Options.text("model").pipe(Options.optional, Options.withDescription("e.g. gpt-4.1-mini, claude-sonnet-4-5, llama3.2")),
    apiKey: Options.redacted("api-key").pipe(
      Options.optional,
      Options.withDescription("The provider's key: stored encrypted, never shown again (kept if left out and provider and base URL stay)")
    ),
    removeApiKey: Options.boolean("remove-api-key").pipe(Options.withDescription("Remove the stored key")),
    baseUrl: Options.text("base-url").pipe(
      Options.optional,
      Options.withDescription("Base URL ending in /v1, e.g. http://localhost:11434/v1 (Ollama); default: the vendor's")
    ),
    openAiApi: Options.choice("openai-api", ["chat", "responses"]).pipe(
      Options.optional,
      Options.withDescription("openai only: chat (/chat/completions) or responses; default chat with a base URL, else responses")
    )
  },
  (conn) =>
    admin(conn, (client) =>
      Effect.gen(function*() {
        if (conn.removeApiKey && Option.isSome(conn.apiKey)) {
          return yield* new CliFailure({ message: "Give --api-key or --remove-api-key, not both" })
        }
        const payload: AiSettingsUpdate = {
          provider: conn.provider,
          ...Option.match(conn.model, { onNone: () => ({}), onSome: (model) => ({ model }) }),
          ...Option.match(conn.baseUrl, { onNone: () => ({}), onSome: (baseUrl) => ({ baseUrl }) }),
          ...Option.match(conn.openAiApi, { onNone: () => ({}), onSome: (openAiApi) => ({ openAiApi }) }),
          ...(conn.removeApiKey
            ? { apiKey: null }
            : Option.match(conn.apiKey, { onNone: () => ({}), onSome: (key) => ({ apiKey: Redacted.value(key) }) }))
        }
        const settings = yield* client.setAiSettings({ path: { workspaceId: conn.workspaceId }, payload })
        yield* print(conn, AiSettingsView, settings, describeAi)
      }))
).pipe(Command.withDescription("Give a workspace its own AI provider, model, base URL and key (replaces its settings)"))

const aiShow = Command.make("show", { ...connection, workspaceId }, (conn) =>
  admin(conn, (client) =>
    Effect.flatMap(client.getAiSettings({ path: { workspaceId: conn.workspaceId } }), (settings) =>
      print(conn, AiSettingsView, settings, describeAi)))
).pipe(Command.withDescription("Show the model that answers a workspace (its own settings or the global default)"))

const aiClear = Command.make("clear", { ...connection, workspaceId }, (conn) =>
  admin(conn, (client) =>
    Effect.gen(function*() {
      yield* client.clearAiSettings({ path: { workspaceId: conn.workspaceId } })
      const now = yield* client.getAiSettings({ path: { workspaceId: conn.workspaceId } })
      yield* print(conn, AiSettingsView, now, (s) => `Removed the workspace's own AI settings and key.\n${describeAi(s)}`)
    }))
).pipe(Command.withDescription("Remove a workspace's own AI settings and key: the global default answers again"))

const column = (text: string | number, width: number) => String(text).padEnd(width)

const describeUsage = (report: AiUsageReport) => {
  if (report.perDay.length === 0) return `No AI token use for workspace ${report.workspaceId} from ${report.from} to ${report.to} (UTC)`
  const modelWidth = Math.max(5, ...report.perDay.map((row) => row.model.length)) + 2
  const header = `${column("DAY", 12)}${column("PROVIDER", 11)}${column("MODEL", modelWidth)}${column("INPUT", 12)}${
    column("OUTPUT", 12)
  }REQUESTS`
  const rows = report.perDay.map((row) =>
    `${column(row.day, 12)}${column(row.provider, 11)}${column(row.model, modelWidth)}${column(row.inputTokens, 12)}${
      column(row.outputTokens, 12)
    }${row.requests}`
  )
  const total = `${column("Total", 23 + modelWidth)}${column(report.total.inputTokens, 12)}${
    column(report.total.outputTokens, 12)
  }${report.total.requests}`
  return [`AI token use of workspace ${report.workspaceId}, ${report.from} to ${report.to} (UTC)`, header, ...rows, total]
    .join("\n")
}

const aiUsage = Command.make(
  "usage",
  {
    ...connection,
    workspaceId,
    days: Options.integer("days").pipe(Options.withDefault(30), Options.withDescription("Days back, today included (1-366)"))
  },
  (conn) =>
    admin(conn, (client) =>
      Effect.gen(function*() {
        if (conn.days < 1 || conn.days > 366) {
          return yield* new CliFailure({ message: "--days should be between 1 and 366" })
        }
        const report = yield* client.getAiUsage({ path: { workspaceId: conn.workspaceId }, urlParams: { days: conn.days } })
        yield* print(conn, AiUsageReport, report, describeUsage)
      }))
).pipe(Command.withDescription("A workspace's AI token use per day, provider and model"))

const ai = Command.make("ai").pipe(
  Command.withSubcommands([aiSet, aiShow, aiClear, aiUsage]),
  Command.withDescription("Per-workspace AI settings and token use")
)

// Deliveries belong to a workspace: these commands use its API token, not the admin token.
const apiToken = Options.redacted("token").pipe(
  Options.withDescription("A workspace API token (env PARLEY_TOKEN)"),
  Options.withFallbackConfig(Config.redacted("PARLEY_TOKEN"))
)
const integrationId = Args.text({ name: "integration-id" }).pipe(Args.withSchema(IntegrationId))

const workspaceCall = <A, E, R>(
  conn: Connection & { readonly token: Redacted.Redacted<string> },
  run: (client: Effect.Effect.Success<ReturnType<typeof publicClient>>) => Effect.Effect<A, E, R>
) =>
  reporting(Effect.flatMap(publicClient(conn.url, Redacted.value(conn.token)), run))

const publicClient = (url: string, token: string) =>
  HttpApiClient.make(Api, { baseUrl: url, transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(token)) })

const describeDelivery = (d: typeof DeliveryJson.Type) =>
  `${d.id}  ${d.event.padEnd(18)} ${d.status.padEnd(9)} attempts=${d.attempts}` +
  (d.lastError === null ? "" : `  last error: ${d.lastError}`)

const deliveriesList = Command.make(
  "list",
  {
    ...connection,
    token: apiToken,
    integrationId,
    status: Options.choice("status", ["pending", "failed", "delivered", "dead"]).pipe(Options.optional),
    since: Options.text("since").pipe(Options.optional, Options.withDescription("ISO 8601 time"))
  },
  (conn) =>
    workspaceCall(conn, (client) =>
      Effect.gen(function*() {
        const since = yield* Option.match(conn.since, {
          onNone: () => Effect.succeed(undefined),
          onSome: (value) => Schema.decode(Timestamp)(value)
        })
        const list = yield* client.deliveries.list({
          path: { integration_id: conn.integrationId },
          urlParams: {
            limit: 100,
            ...(Option.isSome(conn.status) ? { status: conn.status.value } : {}),
            ...(since !== undefined ? { since } : {})
          }
        })
        yield* print(conn, Schema.Array(DeliveryJson), list, (ds) =>
          ds.length === 0 ? "No deliveries" : ds.map(describeDelivery).join("\n"))
      }))
).pipe(Command.withDescription("List an integration's deliveries (newest first)"))

const deliveriesShow = Command.make(
  "show",
  { ...connection, token: apiToken, integrationId, deliveryId: Args.text({ name: "delivery-id" }).pipe(Args.withSchema(EventId)) },
  (conn) =>
    workspaceCall(conn, (client) =>
      Effect.flatMap(
        client.deliveries.get({ path: { integration_id: conn.integrationId, delivery_id: conn.deliveryId } }),
        (d) =>
          print(conn, DeliveryDetail, d, (d) =>
            [
              describeDelivery(d),
              ...d.attemptLog.map((a) =>
                `  #${a.attempt} ${a.statusCode ?? "-"} ${a.latencyMs} ms${a.error === null ? "" : ` ${a.error}`}`
              )
            ].join("\n"))
      ))
).pipe(Command.withDescription("Show one delivery with every attempt"))

const deliveriesReplay = Command.make(
  "replay",
  {
    ...connection,
    token: apiToken,
    integrationId,
    deliveryId: Args.text({ name: "delivery-id" }).pipe(Args.withSchema(EventId), Args.optional),
    since: Options.text("since").pipe(Options.optional, Options.withDescription("Replay every dead or failed one since"))
  },
  (conn) =>
    workspaceCall(conn, (client) =>
      Effect.gen(function*() {
        if (Option.isSome(conn.deliveryId)) {
          const d = yield* client.deliveries.replay({
            path: { integration_id: conn.integrationId, delivery_id: conn.deliveryId.value }
          })
          return yield* print(conn, DeliveryJson, d, (d) => `Replaying ${describeDelivery(d)}`)
        }
        if (Option.isNone(conn.since)) {
          return yield* new CliFailure({ message: "Give a delivery id, or --since <time> to replay all dead or failed" })
        }
        const since = yield* Schema.decode(Timestamp)(conn.since.value)
        const result = yield* client.deliveries.replayAll({ path: { integration_id: conn.integrationId }, urlParams: { since } })
        yield* print(conn, Replayed, result, (r) => `Replaying ${r.replayed} deliveries`)
      }))
).pipe(Command.withDescription("Send deliveries again: one by id, or all dead/failed since a time"))

const deliveries = Command.make("deliveries").pipe(
  Command.withSubcommands([deliveriesList, deliveriesShow, deliveriesReplay]),
  Command.withDescription("Webhook deliveries of an integration (uses a workspace API token)")
)

const serve = Command.make("serve", {}, () => Layer.launch(AppLive)).pipe(
  Command.withDescription("Run Parley (migrates the database first)")
)

const migrateCommand = Command.make("migrate", {}, () =>
  reporting(
    Effect.scoped(Effect.zipRight(Layer.build(SqlLive), Console.log(`Database migrated (latest migration ${latestMigrationId})`)))
  )
).pipe(Command.withDescription("Run the database migrations and exit"))

export const parley = Command.make("parley").pipe(
  Command.withSubcommands([serve, migrateCommand, workspace, token, secret, secrets, integration, tone, kb, ai, deliveries]),
  Command.withDescription("Parley: AI customer-support integration service")
)

export const cli = Command.run(parley, { name: "parley", version: "0.1.0" })
