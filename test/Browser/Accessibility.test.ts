/**
 * The dashboard's pages checked by axe-core (WCAG 2.1 A and AA rules: labels, names, contrast,
 * landmarks, headings, ARIA) in Chromium, with the data a real workspace has: an integration, a
 * conversation with an AI reply that used an article, its deliveries, a form refused with its errors.
 * axe is injected by the test (its context bypasses the pages' Content-Security-Policy to do so).
 */
import { describe, expect, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { HttpServer } from "effect/http"
import { createRequire } from "node:module"
import type { Page } from "playwright-core"
import { MessageReceived } from "../../src/Domain/Conversation.js"
import { DeliveryJson } from "../../src/Domain/Delivery.js"
import { ADMIN_TOKEN, bodyAs, call, makeTenant, TestAppWithWorkers } from "../support/App.js"
import { browserAvailable, launchBrowser, step } from "../support/Browser.js"
import { eventually } from "../support/Eventually.js"
import { makeReceiver } from "../support/Receiver.js"

const axeScript = createRequire(import.meta.url).resolve("axe-core/axe.min.js")

const baseUrl = Effect.map(HttpServer.HttpServer, (server) =>
  server.address._tag === "UnixPathAddress" ? "http://127.0.0.1" : `http://127.0.0.1:${server.address.port}`)

/** axe's violations of the page: each rule's id, impact and the elements it found, for a readable failure. */
const violations = (page: Page) =>
  step(async () => {
    await page.addScriptTag({ path: axeScript })
    const found = await page.evaluate(
      "axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } })" +
        ".then((r) => r.violations.map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(' | ')}`))"
    )
    return Array.isArray(found) ? found.map(String) : [String(found)]
  })

describe.skipIf(!browserAvailable)("the dashboard's accessibility", () =>
  layer(TestAppWithWorkers(), { excludeTestServices: true, timeout: 180_000 })((it) => {
    it.effect("every main page passes axe's WCAG 2.1 A and AA rules and fits the screen, on a laptop and on a phone", () =>
      Effect.gen(function*() {
        const base = yield* baseUrl
        const receiver = yield* makeReceiver()
        const tenant = yield* makeTenant({ webhookUrl: receiver.url })
        yield* call("POST", `/admin/v1/workspaces/${tenant.workspaceId}/articles`, {
          token: ADMIN_TOKEN,
          body: { title: "Shipping times", url: "https://help.example.com/shipping", body: "Standard shipping takes 3 to 5 business days." }
        })
        const asked = yield* call("POST", `/v1/webhooks/${tenant.integrationId}/message-received`, {
          token: tenant.token,
          body: { id: "a11y-1", role: "human", customerId: "6f1c1f8e-1d7e-4c8e-9a0a-1b2c3d4e5f60", conversationId: "a11y", text: "How long does shipping take?" }
        }).pipe(Effect.flatMap(bodyAs(MessageReceived)))
        const conversationId = asked.body.conversation.id
        yield* receiver.waitFor(1, 20_000)
        const deliveries = yield* eventually(
          call("GET", `/v1/integration/${tenant.integrationId}/deliveries`, { token: tenant.token }).pipe(
            Effect.flatMap(bodyAs(Schema.Array(DeliveryJson))),
            Effect.map((reply) => reply.body)
          ),
          (list) => list.length > 0
        )
        const deliveryId = deliveries[0]?.id ?? ""

        const w = `/dashboard/w/${tenant.workspaceId}`
        const i = `${w}/integrations/${tenant.integrationId}`
        const pages = [
          "/dashboard/workspaces",
          `${w}/integrations`,
          i,
          `${i}/conversations`,
          `${w}/conversations/${conversationId}`,
          `${i}/deliveries`,
          `${i}/deliveries/${deliveryId}`,
          `${w}/api?reveal=secret`,
          `${w}/ai`,
          `${w}/ai/knowledge?q=shipping`,
          `${w}/ai/report`
        ]

        const browser = yield* launchBrowser
        for (const viewport of [{ width: 1280, height: 900 }, { width: 375, height: 800 }]) {
          const context = yield* Effect.acquireRelease(
            step(() => browser.newContext({ viewport, bypassCSP: true })),
            (context) => Effect.promise(() => context.close())
          )
          const page = yield* step(() => context.newPage())
          yield* step(() => page.goto(`${base}/dashboard`))
          const found: Array<string> = (yield* violations(page)).map((v) => `/dashboard (sign-in): ${v}`)
          yield* step(async () => {
            await page.getByLabel("Token").fill(ADMIN_TOKEN)
            await page.getByRole("button", { name: "Sign in" }).click()
            await page.waitForLoadState()
          })
          for (const path of pages) {
            const response = yield* step(() => page.goto(`${base}${path}`))
            expect(response?.status(), path).toBe(200)
            found.push(...(yield* violations(page)).map((v) => `${path}: ${v}`))
            // Readable without scrolling sideways: only a wide table scrolls, within its own region.
            const width = yield* step(() => page.evaluate("document.documentElement.scrollWidth"))
            if (typeof width !== "number" || width > viewport.width) found.push(`${path}: the page is ${String(width)} px wide`)
          }
          // A form refused: its errors next to the fields.
          yield* step(async () => {
            await page.goto(`${base}${i}`)
            await page.getByLabel(/^Check-in after/).fill("0")
            await page.getByRole("button", { name: "Save settings" }).click()
          })
          found.push(...(yield* violations(page)).map((v) => `settings refused: ${v}`))
          expect(found, `at ${viewport.width} px`).toEqual([])
        }
      }).pipe(Effect.scoped))
  }))
