/**
 * In production, webhook URLs whose host is an internal IP literal or `localhost` are refused when they
 * are saved: 422 `url_internal` at `["body","webhook","url"]`, nothing stored. (`webhookUrlProblem` in
 * src/Delivery/Ssrf.ts decides; Integrations create/updateSettings must call it: known defect until then.)
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { knownDefects } from "../Fuzz/KnownDefects.js"
import { validationDetail } from "../Fuzz/Wire.js"
import { ADMIN_TOKEN, call, makeTenant, TestApp } from "../support/App.js"

const internalUrls = [
  "http://127.0.0.1:8080/hook",
  "http://localhost/hook",
  "http://[::ffff:127.0.0.1]/hook",
  "http://[64:ff9b::a9fe:a9fe]/latest/meta-data",
  "http://169.254.169.254/latest/meta-data",
  "http://10.0.0.5/hook"
]

const Listed = Schema.Array(Schema.Struct({ settings: Schema.Struct({ webhook: Schema.Struct({ url: Schema.String }) }) }))

describe("webhook URLs in production mode", () => {
  it.layer(TestApp({ PARLEY_MODE: "production" }), { timeout: 120_000 })((it) => {
    const refusing = knownDefects.productionWebhookUrl ? it.effect.fails : it.effect
    refusing("internal URLs are a 422 url_internal at create and at update, and nothing changes", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant({ webhookUrl: "https://hooks.example.com/parley" })
        for (const url of internalUrls) {
          const created = yield* call("POST", `/admin/v1/workspaces/${tenant.workspaceId}/integrations`, {
            token: ADMIN_TOKEN,
            body: { name: "Internal", webhook: { url } }
          })
          expect(created.status, url).toBe(422)
          expect(validationDetail(created), url).toEqual([
            { loc: ["body", "webhook", "url"], msg: expect.any(String), type: "url_internal" }
          ])
          const updated = yield* call("POST", `/v1/integration/${tenant.integrationId}/update-settings`, {
            token: tenant.token,
            body: { webhook: { url } }
          })
          expect(updated.status, url).toBe(422)
          expect(validationDetail(updated)[0]?.type, url).toBe("url_internal")
        }
        const listed = yield* call("GET", "/v1/integration/list", { token: tenant.token })
        expect(Schema.decodeUnknownSync(Listed)(listed.body).map((i) => i.settings.webhook.url))
          .toEqual(["https://hooks.example.com/parley"])
      }))

    it.effect("public URLs are accepted in production", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant({ webhookUrl: "https://hooks.example.com/parley" })
        const updated = yield* call("POST", `/v1/integration/${tenant.integrationId}/update-settings`, {
          token: tenant.token,
          body: { webhook: { url: "https://93.184.216.34/hook" } }
        })
        expect(updated.status).toBe(200)
      }))
  })
})
