/**
 * First start of an empty database: a demo workspace and integration, their credentials printed and
 * written to `<data dir>/demo.env` so the README's walk-through can `source` them.
 */
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as fs from "node:fs"
import * as path from "node:path"
import * as AppConfig from "./Config.js"
import { Knowledge } from "./Ai/Knowledge.js"
import { Integrations } from "./Integrations/Integrations.js"
import { Workspaces } from "./Workspaces/Workspaces.js"

const DEMO_WEBHOOK_URL = "http://127.0.0.1:8787/webhook"

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
  const workspaces = yield* Workspaces
  const integrations = yield* Integrations
  const knowledge = yield* Knowledge
  if ((yield* workspaces.count) > 0) return
  const { apiToken, webhookSecret, workspace } = yield* workspaces.create("Demo")
  const integration = yield* integrations.create(workspace.id, {
    name: "Demo integration",
    integration: "api",
    webhook: { url: DEMO_WEBHOOK_URL, headers: {}, metadata: { source: "parley-demo" } },
    supportedFeatures: {},
    channelsSettings: {}
  }).pipe(Effect.orDie)
  for (const article of demoArticles) yield* knowledge.addArticle(workspace.id, article)
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
      `  (also in ${file}; its webhook URL is ${DEMO_WEBHOOK_URL})`
    ].join("\n")
  )
})

export const SeedLive = Layer.effectDiscard(
  Effect.gen(function*() {
    if (yield* AppConfig.SeedDemo) yield* seedDemo
  })
)
