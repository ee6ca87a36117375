/**
 * `@parley/client` as an integrator gets it: `npm pack` of the workspace (its `prepack` compiles it from
 * src/), the tarball installed into an empty folder with nothing but what it declares, and two programs
 * in that folder — the README's example and a webhook receiver — type-checked against the installed
 * declarations and run by Node against Parley (the package README's examples are type-checked too).
 * Nothing in the folder can reach the repository's sources or its node_modules; only `@types/node` is
 * lent to the compiler (an integrator's own, for `process` and `node:http`).
 */
import { describe, expect, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as HttpServer from "effect/http/HttpServer"
import * as Schema from "effect/Schema"
import { execFile } from "node:child_process"
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join, relative } from "node:path"
import { makeTenant, TestAppWithWorkers } from "../support/App.js"
import { root } from "../support/Spawn.js"

/** What an installation may weigh: `effect` alone is about 54 MB of files (its sources ship with it). */
const MAX_INSTALLED_BYTES = 80 * 1024 * 1024
/** The client alone: the compiled definition and its declarations. */
const MAX_CLIENT_BYTES = 1024 * 1024

/** The server's own dependencies, none of which an integrator should get. */
const serverOnly = ["@effect/platform-node", "@effect/sql-pg", "@effect/opentelemetry", "@electric-sql/pglite", "@opentelemetry", "pg", "undici"]

/**
 * The environment of the npm commands: the test's (PATH, HOME, the npm cache) without what an npm
 * script that started the suite exported about its own project (`npm_config_local_prefix`,
 * `npm_package_*`, …), which would aim npm back at the repository. Node.js first on PATH is the one
 * running the test (Node 24), for npm and for the package's build script.
 */
const environment = (): Record<string, string> => ({
  ...Object.fromEntries(
    Object.entries(process.env).flatMap(([name, value]) =>
      value === undefined || (name.startsWith("npm_") && !/^npm_config_(cache|registry|userconfig|globalconfig)$/.test(name))
        ? []
        : [[name, value]]
    )
  ),
  PATH: `${dirname(process.execPath)}:${process.env["PATH"] ?? ""}`
})

interface Ran {
  readonly stdout: string
  readonly stderr: string
}

/** Runs `command`; its failure fails the test with its output. */
const run = (command: string, args: ReadonlyArray<string>, cwd: string, env: Record<string, string> = {}) =>
  Effect.callback<Ran, Error>((resume) => {
    execFile(
      command,
      args,
      { cwd, env: { ...environment(), ...env }, maxBuffer: 16 * 1024 * 1024, timeout: 120_000 },
      (error, stdout, stderr) =>
        resume(
          error === null
            ? Effect.succeed({ stdout, stderr })
            : Effect.fail(new Error(`${command} ${args.join(" ")} failed: ${error.message}\n${stdout}\n${stderr}`))
        )
    )
  })

/** Every file under `dir` with its size (links are not followed: npm links nothing here). */
const filesOf = (dir: string): ReadonlyArray<{ readonly path: string; readonly bytes: number }> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    return entry.isDirectory() ? filesOf(path) : [{ path, bytes: lstatSync(path).size }]
  })

const megabytes = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`

/** The package's manifest: what `npm pack` names the tarball after. */
const Manifest = Schema.fromJsonString(Schema.Struct({ version: Schema.String }))

/** The server's manifest: the `effect` it runs, which the client's peer dependency must be. */
const ServerManifest = Schema.fromJsonString(Schema.Struct({ dependencies: Schema.Struct({ effect: Schema.String }) }))

/** The folder's lockfile: every package npm installed there, with its version. */
const Lockfile = Schema.fromJsonString(Schema.Struct({
  packages: Schema.Record(Schema.String, Schema.Struct({ version: Schema.optional(Schema.String) }))
}))

/** The `ts` blocks of a Markdown text, as integrators copy them. */
const examplesOf = (markdown: string) => [...markdown.matchAll(/```ts\n([\s\S]*?)```/g)].flatMap((m) => m[1] ?? [])

/** The README's example (the first `ts` block of its client section). */
const readmeExample = () => {
  const readme = readFileSync(join(root, "README.md"), "utf8")
  const example = examplesOf(readme.slice(readme.indexOf("## For TypeScript integrators")))[0]
  if (example === undefined) throw new Error("README.md: no ts example under \"For TypeScript integrators\"")
  return example
}

/**
 * An integrator's webhook receiver and client in one program: it points the integration's webhook at
 * itself, sends a customer's message, checks the signature of the reply Parley delivers with
 * `verifyWebhook`, decodes it with the envelope schema, and reads the delivery back. It prints what it
 * saw as one JSON line. `refused` is never called: the compiler must reject it, or the installed types
 * are not the server's schemas.
 */
const proofProgram = `
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import { createServer } from "node:http"
import {
  type ConversationStatus, type DeliveryStatus, EventId, IntegrationId, makeClient, type ParleyClient, verifyWebhook,
  WebhookEvent
} from "@parley/client"

const setting = (name: string): string => {
  const value = process.env[name]
  if (value === undefined) throw new Error(name + " is not set")
  return value
}

type SendMessages = Extract<WebhookEvent, { readonly event: "send_messages" }>
interface Received { readonly verified: boolean; readonly tamperedRejected: boolean; readonly event: SendMessages }

const decodeEvent = Schema.decodeUnknownSync(Schema.fromJsonString(WebhookEvent))
let receive: (received: Received) => void = () => {}
const reply = new Promise<Received>((resolve) => (receive = resolve))

const receiver = createServer((request, response) => {
  const chunks: Array<Buffer> = []
  request.on("data", (chunk: Buffer) => chunks.push(chunk))
  request.on("end", () => {
    const rawBody = Buffer.concat(chunks).toString("utf8")
    const secret = setting("PARLEY_WEBHOOK_SECRET")
    const check = verifyWebhook({ secret, headers: request.headers, rawBody })
    const tampered = verifyWebhook({ secret, headers: request.headers, rawBody: rawBody.replace("}", " }") })
    const event = decodeEvent(rawBody)
    response.writeHead(200).end()
    if (event.event === "send_messages") receive({ verified: check.ok, tamperedRejected: !tampered.ok, event })
  })
})

const program = Effect.gen(function*() {
  yield* Effect.callback<void>((resume) => {
    receiver.listen(0, "127.0.0.1", () => resume(Effect.void))
  })
  const address = receiver.address()
  const port = typeof address === "object" && address !== null ? address.port : 0
  const parley = yield* makeClient({ baseUrl: setting("PARLEY_URL"), token: setting("PARLEY_TOKEN") })
  const integration_id = IntegrationId.make(setting("PARLEY_INTEGRATION_ID"))

  const integration = yield* parley.integrations.updateSettings({
    params: { integration_id },
    payload: { webhook: { url: "http://127.0.0.1:" + port + "/parley" } }
  })
  const { message, conversation } = yield* parley.webhooks.messageReceived({
    params: { integration_id },
    payload: {
      id: "proof-1",
      role: "human",
      customerId: "6f1c1f8e-1d7e-4c8e-9a0a-1b2c3d4e5f60",
      conversationId: "proof-conversation",
      text: "How long does shipping take?",
      attachments: [],
      syncOnly: false
    }
  })
  const status: ConversationStatus = conversation.status
  const received = yield* Effect.promise(() => reply).pipe(Effect.timeout("30 seconds"))
  const delivery = yield* parley.deliveries.get({ params: { integration_id, delivery_id: received.event.eventId } }).pipe(
    Effect.repeat({ schedule: Schedule.spaced("100 millis"), until: (d) => d.status === "delivered" }),
    Effect.timeout("10 seconds")
  )
  const deliveryStatus: DeliveryStatus = delivery.status
  const listed = yield* parley.deliveries.list({ params: { integration_id }, query: { limit: 10 } })
  const missing = yield* parley.deliveries.get({
    params: { integration_id, delivery_id: EventId.make("00000000-0000-4000-8000-000000000000") }
  }).pipe(
    Effect.map(() => "found"),
    Effect.catchTag("NotFound", (error) => Effect.succeed("NotFound: " + error.detail))
  )
  return {
    webhookUrl: integration.settings.webhook.url,
    messageExternalId: message.externalId,
    messageRole: message.role,
    sentAtIsUtc: DateTime.isDateTime(message.sentAt) && DateTime.isUtc(message.sentAt),
    conversationStatus: status,
    conversationExternalId: conversation.externalId,
    webhookVerified: received.verified,
    tamperedRejected: received.tamperedRejected,
    webhookEvent: received.event.event,
    webhookConversationId: received.event.conversationId,
    replyRoles: received.event.data.messages.map((m) => m.role),
    deliveryStatus,
    deliveryAttempts: delivery.attemptLog.length,
    listedEvents: listed.map((d) => d.event),
    missing
  }
})

Effect.runPromise(program.pipe(Effect.provide(FetchHttpClient.layer), Effect.ensuring(Effect.sync(() => receiver.close()))))
  .then((summary) => console.log(JSON.stringify(summary)))

export const refused = (parley: ParleyClient, integration_id: IntegrationId) => [
  // @ts-expect-error a role is human, ai, agent or system
  parley.webhooks.messageReceived({ params: { integration_id }, payload: { id: "1", role: "robot", customerId: "c", conversationId: "c", text: "t", attachments: [], syncOnly: false } }),
  // @ts-expect-error the path parameter is an IntegrationId, not any string
  parley.deliveries.list({ params: { integration_id: "not-branded" }, query: { limit: 10 } }),
  // @ts-expect-error the operators' admin API is not in the integrators' client
  parley.admin
]
`

const Summary = Schema.fromJsonString(Schema.Struct({
  webhookUrl: Schema.String,
  messageExternalId: Schema.NullOr(Schema.String),
  messageRole: Schema.String,
  sentAtIsUtc: Schema.Boolean,
  conversationStatus: Schema.String,
  conversationExternalId: Schema.String,
  webhookVerified: Schema.Boolean,
  tamperedRejected: Schema.Boolean,
  webhookEvent: Schema.String,
  webhookConversationId: Schema.String,
  replyRoles: Schema.Array(Schema.String),
  deliveryStatus: Schema.String,
  deliveryAttempts: Schema.Int,
  listedEvents: Schema.Array(Schema.String),
  missing: Schema.String
}))

// The package does not depend on the database, and two runs at once (the PostgreSQL project beside the
// PGlite one) would both rebuild packages/client/dist: the proof runs once per suite.
describe.skipIf(process.env["PARLEY_TEST_DB"] === "postgres")("@parley/client, packed and installed", () => {
  layer(TestAppWithWorkers(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("installs without server dependencies and calls Parley with typed answers", () =>
      Effect.gen(function*() {
        const work = mkdtempSync(join(tmpdir(), "parley-client-"))
        yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(work, { recursive: true, force: true })))

        // Packed as `npm publish --workspace packages/client` would publish it.
        const { version } = Schema.decodeUnknownSync(Manifest)(readFileSync(join(root, "packages", "client", "package.json"), "utf8"))
        yield* run("npm", ["pack", "--workspace", "packages/client", "--pack-destination", work], root)
        const tarball = `parley-client-${version}.tgz`
        expect(readdirSync(work).filter((name) => name.endsWith(".tgz"))).toEqual([tarball])

        const app = join(work, "app")
        mkdirSync(app)
        writeFileSync(join(app, "package.json"), JSON.stringify({ name: "integrator", private: true, type: "module" }))
        yield* run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", join(work, tarball)], app)

        // What was installed: the client and its one (peer) dependency, nothing of the server.
        const lock = Schema.decodeUnknownSync(Lockfile)(readFileSync(join(app, "package-lock.json"), "utf8"))
        const installed = Object.entries(lock.packages).filter(([path]) => path !== "")
          .map(([path, entry]) => `${path.replace(/^node_modules\//, "")}@${entry.version}`).sort()
        const effect = Schema.decodeUnknownSync(ServerManifest)(readFileSync(join(root, "package.json"), "utf8")).dependencies.effect
        expect(installed).toEqual([`@parley/client@${version}`, `effect@${effect}`])
        const modules = readdirSync(join(app, "node_modules")).filter((name) => !name.startsWith("."))
        for (const name of serverOnly) expect(modules).not.toContain(name)
        const client = filesOf(join(app, "node_modules", "@parley", "client"))
        const everything = filesOf(join(app, "node_modules"))
        const clientBytes = client.reduce((sum, file) => sum + file.bytes, 0)
        const totalBytes = everything.reduce((sum, file) => sum + file.bytes, 0)
        console.info(
          `@parley/client installed: ${megabytes(totalBytes)} in node_modules (${everything.length} files), ` +
            `the client ${(clientBytes / 1024).toFixed(0)} kB (${client.length} files); packages: ${installed.join(", ")}`
        )
        expect(totalBytes).toBeLessThan(MAX_INSTALLED_BYTES)
        expect(clientBytes).toBeLessThan(MAX_CLIENT_BYTES)
        // Compiled modules and declarations only: no TypeScript sources, tests or server modules.
        for (const file of client) {
          expect(relative(join(app, "node_modules", "@parley", "client"), file.path))
            .toMatch(/^(package\.json|README\.md|dist\/.+\.(js|d\.ts))$/)
        }

        // Type-checked against the installed declarations, then run as Node runs integrators' code. The
        // examples of the package's own README (the copy installed, as the registry shows it) are
        // type-checked too.
        const packageExamples = examplesOf(readFileSync(join(app, "node_modules", "@parley", "client", "README.md"), "utf8"))
        expect(packageExamples).toHaveLength(2)
        const checked = ["proof.ts", "readme.ts", ...packageExamples.map((_, i) => `package-readme-${i + 1}.ts`)]
        writeFileSync(join(app, "proof.ts"), proofProgram)
        writeFileSync(join(app, "readme.ts"), readmeExample())
        packageExamples.forEach((example, i) => writeFileSync(join(app, `package-readme-${i + 1}.ts`), example))
        writeFileSync(
          join(app, "tsconfig.json"),
          JSON.stringify({
            compilerOptions: {
              target: "ES2022",
              module: "NodeNext",
              moduleResolution: "NodeNext",
              // Effect's declarations name Web Crypto types (CryptoKey) that only the DOM library declares.
              lib: ["ES2022", "DOM"],
              strict: true,
              skipLibCheck: false,
              types: ["node"],
              typeRoots: [join(root, "node_modules", "@types")],
              rootDir: ".",
              outDir: "."
            },
            files: checked
          })
        )
        yield* run(process.execPath, [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.json"], app)

        const server = yield* HttpServer.HttpServer
        const port = server.address._tag === "UnixPathAddress" ? 0 : server.address.port
        const tenant = yield* makeTenant()
        const env = {
          PARLEY_URL: `http://127.0.0.1:${port}`,
          PARLEY_TOKEN: tenant.token,
          PARLEY_INTEGRATION_ID: tenant.integrationId,
          PARLEY_WEBHOOK_SECRET: tenant.webhookSecret
        }

        const proof = yield* run(process.execPath, ["proof.js"], app, env)
        console.info(`The receiver program saw: ${proof.stdout.trim()}`)
        const summary = Schema.decodeUnknownSync(Summary)(proof.stdout.trim())
        expect(summary).toMatchObject({
          webhookUrl: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/parley$/),
          messageExternalId: "proof-1",
          messageRole: "human",
          sentAtIsUtc: true,
          conversationStatus: "open",
          conversationExternalId: "proof-conversation",
          webhookVerified: true,
          tamperedRejected: true,
          webhookEvent: "send_messages",
          webhookConversationId: "proof-conversation",
          replyRoles: ["ai"],
          deliveryStatus: "delivered",
          deliveryAttempts: 1,
          missing: expect.stringMatching(/^NotFound: /)
        })
        expect(summary.listedEvents).toContain("send_messages")

        // The README's example, verbatim: its message opens a second conversation, and the list shows
        // the reply delivered above.
        const readme = yield* run(process.execPath, ["readme.js"], app, env)
        console.info(`The README's example printed:\n${readme.stdout}`)
        expect(readme.stderr).toBe("")
        expect(readme.stdout).toMatch(/^open conversation [0-9a-f-]{36}, message sent \d{4}-\d\d-\d\dT[\d:.]+Z$/m)
        expect(readme.stdout).toMatch(/^send_messages delivered, attempts: 1$/m)
      }), { timeout: 240_000 })
  })
})
