/**
 * First start of an empty database (by default in development mode only): a demo workspace and
 * integration, their credentials printed and written to `<data dir>/demo.env` so the README's
 * walk-through can `source` them. It is one transaction: a seed that fails (its webhook URL refused by
 * the production SSRF guard, say) leaves nothing behind, and the start fails naming
 * `PARLEY_DEMO_WEBHOOK_URL`.
 */
import * as SqlClient from "effect/sql/SqlClient"
import * as Console from "effect/Console"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as fs from "node:fs"
import * as path from "node:path"
import * as AppConfig from "./Config.js"
import { Knowledge } from "./Ai/Knowledge.js"
import { Integrations } from "./Integrations/Integrations.js"
import { Workspaces } from "./Workspaces/Workspaces.js"

/** The demo could not be created; nothing of it was kept. */
export class SeedFailed extends Data.TaggedError("SeedFailed")<{ readonly reason: string }> {
  override get message() {
    return `The demo workspace could not be created: ${this.reason}`
  }
}

const demoArticles = [
  {
    title: "Shipping times",
    url: "https://help.example.com/shipping",
    body: "Orders ship within one business day. Standard shipping takes 3 to 5 business days; express shipping " +
      "takes 1 to 2 business days. A tracking link is emailed when your parcel leaves our warehouse."
  },
  {
    title: "Returns and refunds",
    url: "https://help.example.com/returns",
    body: "You can return any unused item within 30 days. Start a return from your order page; the refund reaches " +
      "your card within 5 business days after the item arrives back at our warehouse."
  }
]

const seedDemo = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const workspaces = yield* Workspaces
  const integrations = yield* Integrations
  const knowledge = yield* Knowledge
  const webhookUrl = yield* AppConfig.DemoWebhookUrl
  const created = yield* Effect.gen(function*() {
    // Two instances starting on one empty database: the second waits here, then finds the first's demo.
    yield* sql`LOCK TABLE workspaces IN SHARE ROW EXCLUSIVE MODE`
    if ((yield* workspaces.count) > 0) return undefined
    const { apiToken, webhookSecret, workspace } = yield* workspaces.create("Demo")
    const integration = yield* integrations.create(workspace.id, {
      name: "Demo integration",
      integration: "api",
      webhook: { url: webhookUrl, headers: {}, metadata: { source: "parley-demo" } },
      supportedFeatures: {},
      channelsSettings: {}
    }).pipe(
      Effect.catchTag("InvalidInput", (error) =>
        Effect.fail(
          new SeedFailed({
            reason: `PARLEY_DEMO_WEBHOOK_URL=${webhookUrl}: ${error.problems.map((problem) => problem.message).join("; ")}`
          })
        ))
    )
    for (const article of demoArticles) yield* knowledge.addArticle(workspace.id, article)
    return { apiToken, webhookSecret, workspace, integration }
  }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die))
  if (created === undefined) return
  const { apiToken, integration, webhookSecret, workspace } = created
  const file = path.resolve(yield* AppConfig.DataDir, "demo.env")
  // Exported: after `source`, child processes (the `parley` CLI reads PARLEY_TOKEN) see them too.
  const env = [
    `export PARLEY_WORKSPACE_ID=${workspace.id}`,
    `export PARLEY_INTEGRATION_ID=${integration.integrationId}`,
    `export PARLEY_TOKEN=${apiToken}`,
    `export PARLEY_WEBHOOK_SECRET=${webhookSecret}`
  ]
  yield* Effect.try(() => {
    fs.mkdirSync(path.dirname(file), { recursive: true })
    fs.writeFileSync(file, env.join("\n") + "\n", { mode: 0o600 })
  }).pipe(Effect.orDie)
  // A banner for the person at the terminal, on stderr: stdout is the log stream.
  yield* Console.error(
    [
      `Empty database: created a demo workspace, integration and ${demoArticles.length} knowledge-base articles.`,
      ...env.map((line) => `  ${line}`),
      `  (also in ${file}; its webhooks go to ${webhookUrl}: \`npm run receiver\` listens there and verifies them)`,
      `  The dashboard (/dashboard) signs in with PARLEY_TOKEN (this workspace) or the admin token (every workspace).`
    ].join("\n")
  )
})

export const SeedLive = Layer.effectDiscard(
  Effect.gen(function*() {
    if (yield* AppConfig.SeedDemo) yield* seedDemo
  })
)
