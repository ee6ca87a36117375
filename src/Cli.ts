/**
 * `parley`, the operator's command line. Admin commands drive the admin API with the typed
 * `HttpApiClient` (the same schemas as the server); `serve` and `migrate` run Parley itself.
 */
import * as Cause from "effect/Cause"
import * as Argument from "effect/cli/Argument"
import * as CliOutput from "effect/cli/CliOutput"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as TerminalCapabilities from "effect/cli/TerminalCapabilities"
import * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as HttpApiClient from "effect/http-api/HttpApiClient"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as HttpClient from "effect/http/HttpClient"
import * as HttpClientError from "effect/http/HttpClientError"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
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
import { ArticleId, EventId, IntegrationId, TokenId, WorkspaceId } from "./Domain/Ids.js"
import { InstructionsJson } from "./Domain/Instructions.js"
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

/**
 * A switch: false unless given. Effect 4's boolean flags also take a `--no-<name>` form; Parley's
 * switches keep the one form they have always had.
 */
const toggle = (name: string, description: string) =>
  Flag.Boolean(name).pipe(Flag.withoutNegation, Flag.withDescription(description), Flag.withDefault(false))

const connection = {
  url: Flag.String("url").pipe(
    Flag.withDescription("Parley's base URL (env PARLEY_URL)"),
    Flag.withFallbackConfig(Config.String("PARLEY_URL")),
    Flag.withDefault("http://localhost:8080")
  ),
  adminToken: Flag.Redacted("admin-token").pipe(
    Flag.withDescription("The admin token (env PARLEY_ADMIN_TOKEN; in development, <data dir>/admin-token)"),
    Flag.withFallbackConfig(Config.Redacted("PARLEY_ADMIN_TOKEN")),
    Flag.optional
  ),
  json: toggle("json", "Print JSON instead of text")
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

/** The client could not send the request: Parley is not there (or the URL is not one). */
const isRequestError = (error: unknown) =>
  HttpClientError.isHttpClientError(error) &&
  (error.reason._tag === "TransportError" || error.reason._tag === "EncodeError" ||
    error.reason._tag === "InvalidUrlError")

/** Server answers become one readable line; the exit code says it failed. */
const explain = (error: unknown): string => {
  if (typeof error === "object" && error !== null) {
    if ("detail" in error) {
      const detail = error.detail
      return Array.isArray(detail)
        ? detail.map((d: { loc: Array<unknown>; msg: string }) => `${d.loc.join(".")}: ${d.msg}`).join("; ")
        : String(detail)
    }
    if (isRequestError(error)) return "Cannot reach Parley (is it running? see --url)"
    if ("message" in error && typeof error.message === "string") return error.message
  }
  return String(error)
}

const print = <A, I>(
  conn: Connection,
  schema: Schema.Codec<A, I>,
  value: A,
  text: (value: A) => string
) =>
  conn.json
    // Encoded as the API writes it on the wire (its JSON codec), so `--json` prints what the API answers.
    ? Effect.flatMap(Schema.encodeEffect(Schema.toCodecJson(schema))(value), (encoded) =>
      Console.log(JSON.stringify(encoded, null, 2)))
    : Console.log(text(value))

/**
 * Runs a command's calls over fetch; a failure prints one line and sets the exit code. A command that
 * opens the database itself (`migrate`, `secrets reencrypt`) says which setting to fix when it cannot
 * (the embedded database held by a running Parley: "stop Parley first").
 */
const reporting = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  effect.pipe(
    Effect.catchCause((cause) => {
      if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause)
      const failure = Cause.findErrorOption(cause)
      const message = Option.isSome(failure) && !(failure.value instanceof Config.ConfigError)
        ? explain(failure.value)
        : (({ reason, setting }) => setting === undefined || reason.includes(setting) ? reason : `${setting}: ${reason}`)(
          explainStartFailure(cause)
        )
      return Effect.andThen(
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
  run: (client: Effect.Success<ReturnType<typeof adminClient>>) => Effect.Effect<A, E, R>
) => reporting(Effect.flatMap(adminClient(conn), run))

// ---------------------------------------------------------------------------------------------
// Commands

const workspaceId = Argument.String("workspace-id").pipe(Argument.withSchema(WorkspaceId))

const workspaceCreate = Command.make(
  "create",
  { ...connection, name: Argument.String("name") },
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
    Effect.flatMap(client.getWorkspace({ params: { workspaceId: conn.workspaceId } }), (w) =>
      print(conn, WorkspaceDetail, w, (w) =>
        [`Workspace ${w.name}: ${w.id}`, `  Webhook secret: ${w.webhookSecret}`].join("\n"))))
).pipe(Command.withDescription("Show a workspace and its webhook secret"))

const workspaceDelete = Command.make(
  "delete",
  {
    ...connection,
    workspaceId,
    yes: toggle("yes", "Confirm: the workspace and all its data are deleted")
  },
  (conn) =>
    admin(conn, (client) =>
      Effect.gen(function*() {
        const w = yield* client.getWorkspace({ params: { workspaceId: conn.workspaceId } })
        if (!conn.yes) {
          return yield* new CliFailure({
            message: `This deletes workspace ${w.name} (${w.id}), its tokens, integrations, conversations and deliveries. ` +
              "Run again with --yes to confirm"
          })
        }
        yield* client.deleteWorkspace({ params: { workspaceId: conn.workspaceId } })
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
  { ...connection, workspaceId, name: Flag.String("name").pipe(Flag.optional) },
  (conn) =>
    admin(conn, (client) =>
      Effect.flatMap(
        client.createToken({
          params: { workspaceId: conn.workspaceId },
          payload: { name: Option.getOrNull(conn.name) }
        }),
        (token) => print(conn, CreatedToken, token, (t) => `Token ${t.id} (shown once): ${t.token}`)
      ))
).pipe(Command.withDescription("Create an API token for a workspace"))

const tokenList = Command.make("list", { ...connection, workspaceId }, (conn) =>
  admin(conn, (client) =>
    Effect.flatMap(client.listTokens({ params: { workspaceId: conn.workspaceId } }), (tokens) =>
      print(conn, Schema.Array(TokenSummary), tokens, (ts) =>
        ts.map((t) => `${t.id}  ${t.name ?? "-"}  ${t.revokedAt === null ? "active" : "revoked"}`).join("\n"))))
).pipe(Command.withDescription("List a workspace's API tokens"))

const tokenRevoke = Command.make("revoke", { ...connection, tokenId: Argument.String("token-id").pipe(Argument.withSchema(TokenId)) }, (conn) =>
  admin(conn, (client) =>
    Effect.andThen(
      client.revokeToken({ params: { tokenId: conn.tokenId } }),
      conn.json ? Console.log(JSON.stringify({ revoked: conn.tokenId })) : Console.log(`Token ${conn.tokenId} revoked`)
    ))
).pipe(Command.withDescription("Revoke an API token (it stops working at once)"))

const token = Command.make("token").pipe(
  Command.withSubcommands([tokenCreate, tokenList, tokenRevoke]),
  Command.withDescription("API tokens")
)

const secretRotate = Command.make("rotate", { ...connection, workspaceId }, (conn) =>
  admin(conn, (client) =>
    Effect.flatMap(client.rotateWebhookSecret({ params: { workspaceId: conn.workspaceId } }), (rotated) =>
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
    Effect.gen(function*() {
      const counts = yield* (yield* Secrets).reencrypt()
      yield* json
        ? Console.log(JSON.stringify(counts, null, 2))
        : Console.log(
          `Secrets at rest: ${counts.sealed} sealed (were plain text), ${counts.resealed} re-sealed ` +
            `(were sealed by PARLEY_ENCRYPTION_KEY_PREVIOUS), ${counts.unchanged} already sealed by PARLEY_ENCRYPTION_KEY`
        )
    }).pipe(Effect.provide(Secrets.layer.pipe(Layer.provide(SqlLive))))
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
  return Schema.decodeUnknownEffect(FeatureName)(name).pipe(
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
    name: Flag.String("name"),
    webhookUrl: Flag.String("webhook-url"),
    kind: Flag.String("kind").pipe(Flag.withDefault("api"), Flag.withDescription("api, chatwoot, ...")),
    header: Flag.KeyValuePair("header").pipe(Flag.optional),
    feature: Flag.String("feature").pipe(
      Flag.atLeast(0),
      Flag.withDescription("flag[=true|false], repeatable, e.g. --feature externalCustomerId")
    )
  },
  (conn) =>
    admin(conn, (client) =>
      Effect.gen(function*() {
        const features = Object.fromEntries(yield* Effect.forEach(conn.feature, parseFeature))
        const headers = Option.getOrElse(conn.header, () => ({}))
        const created = yield* client.createIntegration({
          params: { workspaceId: conn.workspaceId },
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
    Effect.flatMap(client.listIntegrations({ params: { workspaceId: conn.workspaceId } }), (list) =>
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
  { ...connection, workspaceId, name: Flag.String("name"), instructions: Flag.String("instructions") },
  (conn) =>
    admin(conn, (client) =>
      Effect.flatMap(
        client.createTone({
          params: { workspaceId: conn.workspaceId },
          payload: { name: conn.name, instructions: conn.instructions }
        }),
        (tone) => print(conn, ToneJson, tone, (t) => `Tone ${t.name}: ${t.id}`)
      ))
).pipe(Command.withDescription("Create a tone (what toneId and firstResponseToneId refer to)"))

const tone = Command.make("tone").pipe(Command.withSubcommands([toneCreate]), Command.withDescription("Tones"))

const instructionsSet = Command.make(
  "set",
  {
    ...connection,
    workspaceId,
    text: Flag.String("text").pipe(Flag.withDescription("The instructions (at most 2000 characters; \"\" clears)")),
    integration: Flag.String("integration").pipe(
      Flag.withSchema(IntegrationId),
      Flag.optional,
      Flag.withDescription("For this integration only (default: the whole workspace)")
    )
  },
  (conn) =>
    admin(conn, (client) =>
      Effect.flatMap(
        client.setInstructions({
          params: { workspaceId: conn.workspaceId },
          payload: { text: conn.text, integrationId: Option.getOrNull(conn.integration) }
        }),
        (version) =>
          print(conn, InstructionsJson, version, (v) =>
            `Instructions ${v.id} for ${v.integrationId === null ? "the workspace" : `integration ${v.integrationId}`}`)
      ))
).pipe(Command.withDescription("Set the AI's standing instructions (a new version; the newest is in force)"))

const instructionsList = Command.make(
  "list",
  { ...connection, workspaceId },
  (conn) =>
    admin(conn, (client) =>
      Effect.flatMap(client.listInstructions({ params: { workspaceId: conn.workspaceId } }), (versions) =>
        print(conn, Schema.Array(InstructionsJson), versions, (vs) =>
          vs.map((v) =>
            `${DateTime.formatIso(v.createdAt)} ${v.integrationId ?? "workspace"}: ${v.text === "" ? "(cleared)" : v.text}`
          ).join("\n"))))
).pipe(Command.withDescription("List every version of the standing instructions, newest first"))

const instructionsCommand = Command.make("instructions").pipe(
  Command.withSubcommands([instructionsSet, instructionsList]),
  Command.withDescription("The AI's standing instructions")
)

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
    workspace: Flag.String("workspace").pipe(Flag.withSchema(WorkspaceId), Flag.withDescription("Workspace id")),
    urlBase: Flag.String("url-base").pipe(
      Flag.optional,
      Flag.withDescription("Article URL = url-base + file name without extension")
    ),
    articleUrl: Flag.String("article-url").pipe(Flag.optional, Flag.withDescription("Article URL (one file)")),
    files: Argument.String("FILE.md|FOLDER").pipe(
      Argument.atLeast(1),
      Argument.withDescription("Markdown files, folders of them, or a quoted pattern such as 'docs/help/*.md'")
    )
  },
  (conn) =>
    admin(conn, (client) =>
      Effect.gen(function*() {
        const files = (yield* Effect.forEach(conn.files, articleFiles)).flat()
        yield* Effect.forEach(files, (file) =>
        Effect.gen(function*() {
          const article = yield* readArticle(file, conn.urlBase, files.length === 1 ? conn.articleUrl : Option.none())
          const created = yield* client.createArticle({ params: { workspaceId: conn.workspace }, payload: article })
          yield* print(conn, ArticleJson, created, (a) => `Article ${a.title}: ${a.id}${a.url ? ` (${a.url})` : ""}`)
        }), { discard: true })
      }))
).pipe(Command.withDescription("Add Markdown files to a workspace's knowledge base"))

const kbList = Command.make("list", { ...connection, workspaceId }, (conn) =>
  admin(conn, (client) =>
    Effect.flatMap(client.listArticles({ params: { workspaceId: conn.workspaceId } }), (list) =>
      print(conn, Schema.Array(ArticleJson), list, (as) =>
        as.length === 0 ? "No articles" : as.map((a) => `${a.id}  ${a.title}  ${a.url ?? ""}`).join("\n"))))
).pipe(Command.withDescription("List a workspace's knowledge-base articles"))

const articleId = Argument.String("article-id").pipe(Argument.withSchema(ArticleId))

/** The URL an updated article gets: the one given, none (`--remove-url`), else the one it has. */
const updatedUrl = <E>(
  conn: { readonly articleUrl: Option.Option<string>; readonly removeUrl: boolean },
  current: Effect.Effect<string | null, E>
): Effect.Effect<string | null, E | CliFailure> => {
  if (conn.removeUrl && Option.isSome(conn.articleUrl)) {
    return Effect.fail(new CliFailure({ message: "Give --article-url or --remove-url, not both" }))
  }
  if (conn.removeUrl) return Effect.succeed(null)
  return Option.match(conn.articleUrl, { onSome: (url) => Effect.succeed(url), onNone: () => current })
}

const kbUpdate = Command.make(
  "update",
  {
    ...connection,
    workspaceId,
    articleId,
    file: Argument.String("FILE.md").pipe(
      Argument.withDescription("The article's new text: its first # heading is the title, else the file name")
    ),
    articleUrl: Flag.String("article-url").pipe(Flag.optional, Flag.withDescription("Article URL (default: the one it has)")),
    removeUrl: toggle("remove-url", "Remove the article's URL")
  },
  (conn) =>
    admin(conn, (client) =>
      Effect.gen(function*() {
        const params = { workspaceId: conn.workspaceId, articleId: conn.articleId }
        const url = yield* updatedUrl(
          conn,
          Effect.map(client.listArticles({ params }), (articles) =>
            articles.find((article) => article.id === conn.articleId)?.url ?? null)
        )
        const article = yield* readArticle(conn.file, Option.none(), Option.none())
        const updated = yield* client.updateArticle({ params, payload: { ...article, url } })
        yield* print(conn, ArticleJson, updated, (a) => `Article ${a.title} updated: ${a.id}${a.url ? ` (${a.url})` : ""}`)
      }))
).pipe(Command.withDescription("Replace a knowledge-base article's title and body with a Markdown file"))

const kbDelete = Command.make("delete", { ...connection, workspaceId, articleId }, (conn) =>
  admin(conn, (client) =>
    Effect.andThen(
      client.deleteArticle({ params: { workspaceId: conn.workspaceId, articleId: conn.articleId } }),
      conn.json ? Console.log(JSON.stringify({ deleted: conn.articleId })) : Console.log(`Article ${conn.articleId} deleted`)
    ))
).pipe(Command.withDescription("Delete a knowledge-base article (the AI no longer finds it)"))

const kb = Command.make("kb").pipe(
  Command.withSubcommands([kbAdd, kbList, kbUpdate, kbDelete]),
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
    provider: Flag.Literals("provider", ["embedded", "openai", "anthropic"]).pipe(
      Flag.withDescription("embedded (the offline responder), openai (and OpenAI-compatible servers) or anthropic")
    ),
    model: Flag.String("model").pipe(Flag.optional, Flag.withDescription("e.g. gpt-4.1-mini, claude-sonnet-4-5, llama3.2")),
    apiKey: Flag.Redacted("api-key").pipe(
      Flag.optional,
      Flag.withDescription("The provider's key: stored encrypted, never shown again (kept if left out and provider and base URL stay)")
    ),
    removeApiKey: toggle("remove-api-key", "Remove the stored key"),
    baseUrl: Flag.String("base-url").pipe(
      Flag.optional,
      Flag.withDescription("Base URL ending in /v1, e.g. http://localhost:11434/v1 (Ollama); default: the vendor's")
    ),
    openAiApi: Flag.Literals("openai-api", ["chat", "responses"]).pipe(
      Flag.optional,
      Flag.withDescription("openai only: chat (/chat/completions) or responses; default chat with a base URL, else responses")
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
        const settings = yield* client.setAiSettings({ params: { workspaceId: conn.workspaceId }, payload })
        yield* print(conn, AiSettingsView, settings, describeAi)
      }))
).pipe(Command.withDescription("Give a workspace its own AI provider, model, base URL and key (replaces its settings)"))

const aiShow = Command.make("show", { ...connection, workspaceId }, (conn) =>
  admin(conn, (client) =>
    Effect.flatMap(client.getAiSettings({ params: { workspaceId: conn.workspaceId } }), (settings) =>
      print(conn, AiSettingsView, settings, describeAi)))
).pipe(Command.withDescription("Show the model that answers a workspace (its own settings or the global default)"))

const aiClear = Command.make("clear", { ...connection, workspaceId }, (conn) =>
  admin(conn, (client) =>
    Effect.gen(function*() {
      yield* client.clearAiSettings({ params: { workspaceId: conn.workspaceId } })
      const now = yield* client.getAiSettings({ params: { workspaceId: conn.workspaceId } })
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
    days: Flag.Int("days").pipe(Flag.withDefault(30), Flag.withDescription("Days back, today included (1-366)"))
  },
  (conn) =>
    admin(conn, (client) =>
      Effect.gen(function*() {
        if (conn.days < 1 || conn.days > 366) {
          return yield* new CliFailure({ message: "--days should be between 1 and 366" })
        }
        const report = yield* client.getAiUsage({ params: { workspaceId: conn.workspaceId }, query: { days: conn.days } })
        yield* print(conn, AiUsageReport, report, describeUsage)
      }))
).pipe(Command.withDescription("A workspace's AI token use per day, provider and model"))

const ai = Command.make("ai").pipe(
  Command.withSubcommands([aiSet, aiShow, aiClear, aiUsage]),
  Command.withDescription("Per-workspace AI settings and token use")
)

// Deliveries belong to a workspace: these commands use its API token, not the admin token.
const apiToken = Flag.Redacted("token").pipe(
  Flag.withDescription("A workspace API token (env PARLEY_TOKEN)"),
  Flag.withFallbackConfig(Config.Redacted("PARLEY_TOKEN"))
)
const integrationId = Argument.String("integration-id").pipe(Argument.withSchema(IntegrationId))

const workspaceCall = <A, E, R>(
  conn: Connection & { readonly token: Redacted.Redacted<string> },
  run: (client: Effect.Success<ReturnType<typeof publicClient>>) => Effect.Effect<A, E, R>
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
    status: Flag.Literals("status", ["pending", "failed", "delivered", "dead"]).pipe(Flag.optional),
    since: Flag.String("since").pipe(Flag.optional, Flag.withDescription("ISO 8601 time"))
  },
  (conn) =>
    workspaceCall(conn, (client) =>
      Effect.gen(function*() {
        const since = yield* Option.match(conn.since, {
          onNone: () => Effect.succeed(undefined),
          onSome: (value) => Schema.decodeEffect(Timestamp)(value)
        })
        const list = yield* client.deliveries.list({
          params: { integration_id: conn.integrationId },
          query: {
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
  { ...connection, token: apiToken, integrationId, deliveryId: Argument.String("delivery-id").pipe(Argument.withSchema(EventId)) },
  (conn) =>
    workspaceCall(conn, (client) =>
      Effect.flatMap(
        client.deliveries.get({ params: { integration_id: conn.integrationId, delivery_id: conn.deliveryId } }),
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
    deliveryId: Argument.String("delivery-id").pipe(Argument.withSchema(EventId), Argument.optional),
    since: Flag.String("since").pipe(Flag.optional, Flag.withDescription("Replay every dead or failed one since"))
  },
  (conn) =>
    workspaceCall(conn, (client) =>
      Effect.gen(function*() {
        if (Option.isSome(conn.deliveryId)) {
          const d = yield* client.deliveries.replay({
            params: { integration_id: conn.integrationId, delivery_id: conn.deliveryId.value }
          })
          return yield* print(conn, DeliveryJson, d, (d) => `Replaying ${describeDelivery(d)}`)
        }
        if (Option.isNone(conn.since)) {
          return yield* new CliFailure({ message: "Give a delivery id, or --since <time> to replay all dead or failed" })
        }
        const since = yield* Schema.decodeEffect(Timestamp)(conn.since.value)
        const result = yield* client.deliveries.replayAll({ params: { integration_id: conn.integrationId }, query: { since } })
        yield* print(conn, Replayed, result, (r) => `Replaying ${r.replayed} deliveries`)
      }))
).pipe(Command.withDescription("Send deliveries again: one by id, or all dead/failed since a time"))

const deliveries = Command.make("deliveries").pipe(
  Command.withSubcommands([deliveriesList, deliveriesShow, deliveriesReplay]),
  Command.withDescription("Webhook deliveries of an integration (uses a workspace API token)")
)

// A start that fails has been reported by AppLive itself (the line on stderr, the record in the log):
// only the exit code is left to set, not a second report of it by the runtime, in another format.
const serve = Command.make("serve", {}, () =>
  Layer.launch(AppLive).pipe(
    Effect.catchCause((cause) =>
      Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause) : Effect.sync(() => {
        process.exitCode = 1
      })
    )
  )).pipe(
  Command.withDescription("Run Parley (migrates the database first)")
)

const migrateCommand = Command.make("migrate", {}, () =>
  reporting(
    Effect.scoped(Effect.andThen(Layer.build(SqlLive), Console.log(`Database migrated (latest migration ${latestMigrationId})`)))
  )
).pipe(Command.withDescription("Run the database migrations and exit"))

export const parley = Command.make("parley").pipe(
  Command.withSubcommands([
    serve,
    migrateCommand,
    workspace,
    token,
    secret,
    secrets,
    integration,
    tone,
    instructionsCommand,
    kb,
    ai,
    deliveries
  ]),
  Command.withDescription("Parley: AI customer-support integration service")
)

const run = Command.runWith(parley, { version: "0.1.0" })

/**
 * The CLI on a command line as Node gives it (`process.argv`: node, the script, then the arguments).
 * `--version` prints the version alone, as it always has (Effect 4's formatter prints `parley v0.1.0`).
 */
export const cli = (argv: ReadonlyArray<string>) =>
  run(argv.slice(2)).pipe(
    Effect.provideServiceEffect(
      CliOutput.Formatter,
      Effect.gen(function*() {
        const { canColor } = yield* TerminalCapabilities.TerminalCapabilities
        return { ...CliOutput.defaultFormatter({ colors: canColor }), formatVersion: (_name: string, version: string) => version }
      })
    )
  )
