/**
 * Secrets at rest: with `PARLEY_ENCRYPTION_KEY`, helpdesk webhook secrets and
 * custom header values are sealed in the table, helpdesk secrets are masked in every read, deliveries
 * and signature checks still use them in clear; key rotation with `PARLEY_ENCRYPTION_KEY_PREVIOUS` and
 * `parley secrets reencrypt` (which also seals what was stored before a key was set).
 */
import { describe, expect, layer } from "@effect/vitest"
import * as SqlClient from "effect/sql/SqlClient"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { createHmac } from "node:crypto"
import { readFileSync } from "node:fs"
import { makeApp } from "../../src/App.js"
import { Secrets } from "../../src/Auth/Secrets.js"
import { Events } from "../../src/Delivery/Events.js"
import { Sender } from "../../src/Delivery/Sender.js"
import { IntegrationId, WorkspaceId } from "../../src/Domain/Ids.js"
import { IntegrationJson } from "../../src/Domain/Integration.js"
import { CreatedWorkspace } from "../../src/Domain/Workspace.js"
import { Integrations } from "../../src/Integrations/Integrations.js"
import { IntegrationsRepo } from "../../src/Integrations/Repo.js"
import { Outcome } from "../../src/Jobs/Job.js"
import { Workspaces } from "../../src/Workspaces/Workspaces.js"
import { ADMIN_TOKEN, bodyAs, call, TestConfig, TestServer, ValidationBody } from "../support/App.js"
import { TestDatabase } from "../support/Database.js"
import { makeReceiver } from "../support/Receiver.js"
import { expectSignedWebhook } from "../support/WebhookSignatures.js"

const K1 = "1f".repeat(32)
const K2 = Buffer.alloc(32, 7).toString("base64")

const App = Layer.mergeAll(Sender.layer, IntegrationsRepo.layer).pipe(
  Layer.provideMerge(makeApp({ server: TestServer, database: TestDatabase, workers: false })),
  Layer.provide(TestConfig({ PARLEY_ENCRYPTION_KEY: K1 })),
  Layer.orDie
)

/** Runs `effect` with services built under other keys (as another Parley process on the same database would). */
const withKeys = (keys: { readonly current?: string; readonly previous?: string }) =>
<A, E, R>(effect: Effect.Effect<A, E, R>) =>
  effect.pipe(
    // `local`: built afresh here. Effect 4's `Effect.provide` otherwise reuses the services the app's
    // layer already built (it shares the memo map of the layer the test runs in), under the app's key.
    Effect.provide(Layer.mergeAll(Secrets.layer, Integrations.layer, Workspaces.layer, IntegrationsRepo.layer), {
      local: true
    }),
    Effect.provideService(
      ConfigProvider.ConfigProvider,
      ConfigProvider.fromEnvRecord(Object.fromEntries([
        ...(keys.current === undefined ? [] : [["PARLEY_ENCRYPTION_KEY", keys.current] as const]),
        ...(keys.previous === undefined ? [] : [["PARLEY_ENCRYPTION_KEY_PREVIOUS", keys.previous] as const])
      ]))
    )
  )

const storedSettings = (id: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ readonly settings: string }>`SELECT settings::text AS settings FROM integrations WHERE id = ${id}`).pipe(
      Effect.map((rows) => rows[0]?.settings ?? "")
    )

const storedWorkspaceSecret = (id: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ readonly webhookSecret: string }>`SELECT webhook_secret FROM workspaces WHERE id = ${id}`).pipe(
      Effect.map((rows) => rows[0]?.webhookSecret ?? "")
    )

const createWorkspace = Effect.gen(function*() {
  const reply = yield* call("POST", "/admin/v1/workspaces", { token: ADMIN_TOKEN, body: { name: "Secrets" } })
  const body = (yield* bodyAs(CreatedWorkspace)(reply)).body
  return { ...body, id: WorkspaceId.make(body.id) }
})

const createIntegration = (workspaceId: string, input: Record<string, unknown>) =>
  Effect.gen(function*() {
    const reply = yield* call("POST", `/admin/v1/workspaces/${workspaceId}/integrations`, { token: ADMIN_TOKEN, body: input })
    expect(reply.status, JSON.stringify(reply.body)).toBe(201)
    const body = (yield* bodyAs(IntegrationJson)(reply)).body
    return { ...body, integrationId: IntegrationId.make(body.integrationId) }
  })

const chatwootEvent = readFileSync(new URL("../fixtures/chatwoot/message_created.incoming.json", import.meta.url), "utf8")

const signChatwoot = (secret: string, raw: string) => {
  const timestamp = String(Math.floor(Date.now() / 1000))
  return {
    "X-Chatwoot-Timestamp": timestamp,
    "X-Chatwoot-Signature": `sha256=${createHmac("sha256", secret).update(`${timestamp}.${raw}`).digest("hex")}`
  }
}

const chatwootSecretOf = (settings: { readonly channelsSettings: Readonly<Record<string, unknown>> }) => {
  const chatwoot = settings.channelsSettings["chatwoot"]
  return typeof chatwoot === "object" && chatwoot !== null && "webhookSecret" in chatwoot ? chatwoot.webhookSecret : undefined
}

describe("secrets at rest", () => {
  // The real clock: Chatwoot signatures and webhook signatures carry the time.
  layer(App, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("sealed in the table, masked in every read, and still checking Chatwoot's signature", () =>
      Effect.gen(function*() {
        const workspace = yield* createWorkspace
        const created = yield* createIntegration(workspace.id, {
          name: "Chatwoot",
          integration: "chatwoot",
          webhook: { url: "https://hooks.example.com/cw", headers: { "X-Api-Key": "hdr-secret-value" } },
          channelsSettings: { chatwoot: { webhookSecret: "cw-secret-value", accountId: 7 } }
        })
        // The creation answer masks it too: the integrator chose it and knows it.
        expect(created.settings.channelsSettings).toEqual({ chatwoot: { webhookSecret: "********", accountId: 7 } })
        expect(created.settings.webhook.headers).toEqual({ "X-Api-Key": "hdr-secret-value" })

        const stored = yield* storedSettings(created.integrationId)
        expect(stored).not.toContain("cw-secret-value")
        expect(stored).not.toContain("hdr-secret-value")
        expect(stored.match(/aes256gcm:v1:/g)).toHaveLength(2)
        expect(yield* storedWorkspaceSecret(workspace.id)).toMatch(/^aes256gcm:v1:/)

        const list = yield* call("GET", "/v1/integration/list", { token: workspace.apiToken })
        const listed = (yield* bodyAs(Schema.Array(IntegrationJson))(list)).body
        expect(listed.map((i) => [chatwootSecretOf(i.settings), i.settings.webhook.headers])).toEqual([
          ["********", { "X-Api-Key": "hdr-secret-value" }]
        ])
        const adminList = yield* call("GET", `/admin/v1/workspaces/${workspace.id}/integrations`, { token: ADMIN_TOKEN })
        expect(JSON.stringify(adminList.body)).not.toContain("cw-secret-value")

        const path = `/v1/webhooks/${created.integrationId}/helpdesk-event-received?access_token=${
          encodeURIComponent(workspace.apiToken)
        }`
        const send = (secret: string) => call("POST", path, { raw: chatwootEvent, headers: signChatwoot(secret, chatwootEvent) })
        expect((yield* send("cw-secret-value")).status).toBe(200)
        expect((yield* send("********")).status).toBe(401)

        // What was read, changed and sent back keeps the secret the mask stands for.
        const [first] = listed
        const update = yield* call("POST", `/v1/integration/${created.integrationId}/update-settings`, {
          token: workspace.apiToken,
          body: { name: "Renamed", channelsSettings: first?.settings.channelsSettings }
        })
        expect(update.status).toBe(200)
        expect(chatwootSecretOf((yield* bodyAs(IntegrationJson)(update)).body.settings)).toBe("********")
        expect((yield* send("cw-secret-value")).status).toBe(200)
        expect(yield* storedSettings(created.integrationId)).not.toContain("cw-secret-value")

        // A new secret replaces it, sealed too.
        yield* call("POST", `/v1/integration/${created.integrationId}/update-settings`, {
          token: workspace.apiToken,
          body: { channelsSettings: { chatwoot: { webhookSecret: "cw-secret-two" } } }
        })
        expect((yield* send("cw-secret-two")).status).toBe(200)
        expect((yield* send("cw-secret-value")).status).toBe(401)
        expect(yield* storedSettings(created.integrationId)).not.toContain("cw-secret-two")
      }))

    it.effect("the mask with no stored secret, and values that look sealed, are 422", () =>
      Effect.gen(function*() {
        const workspace = yield* createWorkspace
        const masked = yield* call("POST", `/admin/v1/workspaces/${workspace.id}/integrations`, {
          token: ADMIN_TOKEN,
          body: {
            name: "x",
            webhook: { url: "https://hooks.example.com/a" },
            channelsSettings: { chatwoot: { webhookSecret: "********" } }
          }
        })
        const sealedLooking = yield* call("POST", `/admin/v1/workspaces/${workspace.id}/integrations`, {
          token: ADMIN_TOKEN,
          body: { name: "x", webhook: { url: "https://hooks.example.com/a", headers: { "X-Key": "aes256gcm:v1:a:b:c" } } }
        })
        const problems = [yield* bodyAs(ValidationBody)(masked), yield* bodyAs(ValidationBody)(sealedLooking)].map((r) =>
          [r.status, r.body.detail.map((d) => [d.loc.join("."), d.type])]
        )
        expect(problems).toEqual([
          [422, [["body.channelsSettings.chatwoot.webhookSecret", "secret_masked"]]],
          [422, [["body.webhook.headers.X-Key", "secret_reserved"]]]
        ])
      }))

    it.effect("a delivery is signed with the sealed workspace secret and sends header values in clear", () =>
      Effect.gen(function*() {
        const receiver = yield* makeReceiver()
        const workspace = yield* createWorkspace
        const created = yield* createIntegration(workspace.id, {
          name: "Shop",
          webhook: { url: receiver.url, headers: { "X-Api-Key": "hdr-secret-value", "X-Shop": "7" } }
        })
        expect(yield* storedSettings(created.integrationId)).not.toContain("hdr-secret-value")
        const integration = yield* Effect.flatMap(IntegrationsRepo, (repo) => repo.findById(created.integrationId)).pipe(
          Effect.map(Option.getOrThrow)
        )
        const sql = yield* SqlClient.SqlClient
        const id = yield* Effect.flatMap(Events, (events) =>
          events.emit("send_csat", { integration, conversation: null, data: {} })).pipe(sql.withTransaction)
        expect(yield* Effect.flatMap(Sender, (sender) => sender.deliver(id))).toEqual(Outcome.Done())
        const [request] = yield* receiver.waitFor(1)
        expect(request?.headers["x-api-key"]).toBe("hdr-secret-value")
        expect(request?.headers["x-shop"]).toBe("7")
        expectSignedWebhook(request!, workspace.webhookSecret)
      }).pipe(Effect.scoped))

    it.effect("key rotation: the previous key reads until reencrypt, which also seals what predates the key", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        // Under K1 (the running app): a workspace and an integration with both kinds of secret.
        const workspace = yield* createWorkspace
        const underK1 = yield* createIntegration(workspace.id, {
          name: "K1",
          integration: "chatwoot",
          webhook: { url: "https://hooks.example.com/k1", headers: { "X-Api-Key": "k1-header" } },
          channelsSettings: { chatwoot: { webhookSecret: "k1-chatwoot" } }
        })
        // Before any key: stored in clear.
        const plain = yield* withKeys({})(Effect.gen(function*() {
          const created = yield* Effect.flatMap(Workspaces, (w) => w.create("No key yet"))
          const integration = yield* Effect.flatMap(Integrations, (i) =>
            i.create(created.workspace.id, {
              name: "Plain",
              integration: "chatwoot",
              webhook: { url: "https://hooks.example.com/plain", headers: { "X-Api-Key": "plain-header" }, metadata: {} },
              supportedFeatures: {},
              channelsSettings: { chatwoot: { webhookSecret: "plain-chatwoot" } }
            }))
          return { workspaceId: created.workspace.id, secret: created.webhookSecret, integrationId: integration.integrationId }
        }))
        expect(yield* storedSettings(plain.integrationId)).toContain("plain-header")
        expect(yield* storedWorkspaceSecret(plain.workspaceId)).toBe(plain.secret)

        const read = (id: IntegrationId) =>
          Effect.flatMap(IntegrationsRepo, (repo) => repo.findById(id)).pipe(
            Effect.map(Option.getOrThrow),
            Effect.map((i) => [chatwootSecretOf(i.settings), i.settings.webhook.headers["X-Api-Key"]])
          )
        const secretOf = (id: WorkspaceId) => Effect.flatMap(Workspaces, (w) => w.webhookSecrets(id))

        // K2 alone cannot read K1's values; K2 with K1 as the previous key can.
        expect(Exit.isFailure(yield* Effect.exit(withKeys({ current: K2 })(read(underK1.integrationId))))).toBe(true)
        const rotated = withKeys({ current: K2, previous: K1 })
        expect(yield* rotated(read(underK1.integrationId))).toEqual(["k1-chatwoot", "k1-header"])
        expect((yield* rotated(secretOf(workspace.id))).current).toBe(workspace.webhookSecret)

        // A workspace's own AI provider key, stored before any key was set.
        yield* sql`INSERT INTO workspace_ai_settings (workspace_id, provider, model, api_key)
                   VALUES (${plain.workspaceId}, 'openai', 'gpt-test', 'sk-plain-ai-key')`

        const first = yield* rotated(Effect.flatMap(Secrets, (s) => s.reencrypt()))
        expect(first.sealed).toBeGreaterThanOrEqual(3) // the plain workspace secret, chatwoot secret and header
        expect(first.resealed).toBeGreaterThanOrEqual(3) // K1's workspace secret, chatwoot secret and header
        expect(first.unreadable).toBe(0)
        const again = yield* rotated(Effect.flatMap(Secrets, (s) => s.reencrypt()))
        expect(again).toEqual({ sealed: 0, resealed: 0, unchanged: first.sealed + first.resealed + first.unchanged, unreadable: 0 })

        // K1 is no longer needed; nothing is in clear any more.
        const k2 = withKeys({ current: K2 })
        expect(yield* k2(read(underK1.integrationId))).toEqual(["k1-chatwoot", "k1-header"])
        expect(yield* k2(read(plain.integrationId))).toEqual(["plain-chatwoot", "plain-header"])
        expect((yield* k2(secretOf(workspace.id))).current).toBe(workspace.webhookSecret)
        expect((yield* k2(secretOf(plain.workspaceId))).current).toBe(plain.secret)
        expect(Exit.isFailure(yield* Effect.exit(withKeys({ current: K1 })(read(underK1.integrationId))))).toBe(true)
        for (const id of [underK1.integrationId, plain.integrationId]) {
          const stored = yield* storedSettings(id)
          expect(stored).not.toMatch(/k1-|plain-/)
          expect(stored.match(/aes256gcm:v1:/g)).toHaveLength(2)
        }
        expect(yield* storedWorkspaceSecret(plain.workspaceId)).toMatch(/^aes256gcm:v1:/)
        const [aiKey] = yield* sql<{ readonly apiKey: string }>`
          SELECT api_key FROM workspace_ai_settings WHERE workspace_id = ${plain.workspaceId}`
        expect(aiKey?.apiKey).toMatch(/^aes256gcm:v1:/)

        // Without a key there is nothing to seal with.
        const noKey = yield* Effect.exit(withKeys({})(Effect.flatMap(Secrets, (s) => s.reencrypt())))
        expect(Exit.isFailure(noKey) && String(noKey.cause)).toContain("PARLEY_ENCRYPTION_KEY is not set")
      }))
  })
})
