/**
 * The dashboard in a real browser (Debian's Chromium, driven by playwright-core): an operator signs in,
 * creates a workspace and an integration and copies its ID, adds a knowledge article, watches a
 * conversation and its deliveries appear without reloading, makes the receiver fail, replays the dead
 * delivery and sees it delivered; an integrator cannot reach another workspace by changing a URL. Each
 * main page is screenshotted under test-results/dashboard/ (not committed). No page logs an error
 * (a Content-Security-Policy violation is one).
 */
import { describe, expect, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { HttpServer } from "effect/http"
import type { Page } from "playwright-core"
import { MessageReceived } from "../../src/Domain/Conversation.js"
import { ADMIN_TOKEN, bodyAs, call, makeTenant, TestAppWithWorkers } from "../support/App.js"
import { browserAvailable, CHROMIUM, launchBrowser, newContext, screenshot, step } from "../support/Browser.js"
import { makeReceiver } from "../support/Receiver.js"

const customerId = "6f1c1f8e-1d7e-4c8e-9a0a-1b2c3d4e5f60"

/** The server's address, as the browser reaches it. */
const baseUrl = Effect.map(HttpServer.HttpServer, (server) =>
  server.address._tag === "UnixPathAddress" ? "http://127.0.0.1" : `http://127.0.0.1:${server.address.port}`)

/** A customer message through the API, as an integrator's system sends it. */
const ask = (token: string, integrationId: string, id: string, conversationId: string, text: string) =>
  call("POST", `/v1/webhooks/${integrationId}/message-received`, {
    token,
    body: { id, role: "human", customerId, conversationId, text }
  }).pipe(
    Effect.tap((reply) => Effect.sync(() => expect(reply.status).toBe(200))),
    Effect.flatMap(bodyAs(MessageReceived)),
    Effect.map((reply) => reply.body)
  )

/**
 * Every error the page logs (script errors, failed loads, CSP violations), to assert there is none;
 * besides Chromium's line for a page the test expects to be refused (401, 404, 422).
 */
const watchErrors = (page: Page): Array<string> => {
  const errors: Array<string> = []
  page.on("console", (message) => {
    const expected = /^Failed to load resource: the server responded with a status of (401|404|422) /.test(message.text())
    if (message.type() === "error" && !expected) errors.push(message.text())
  })
  page.on("pageerror", (error) => errors.push(error.message))
  return errors
}

const signInAs = (page: Page, base: string, token: string) =>
  step(async () => {
    await page.goto(`${base}/dashboard`)
    await page.getByLabel("Token").fill(token)
    await page.getByRole("button", { name: "Sign in" }).click()
    await page.waitForLoadState()
  })

/** Whether the page is still the document it was when `mark` was set (no reload, no navigation). */
const markDocument = (page: Page) => step(() => page.evaluate("window.parleyTestMark = 'still here'"))
const sameDocument = (page: Page) => step(() => page.evaluate("window.parleyTestMark === 'still here'"))

/** Reloads `page` until `done` holds (what a worker does in the background), or fails after `timeoutMs`. */
const reloadUntil = (page: Page, done: () => Promise<boolean>, timeoutMs = 20_000) =>
  step(async () => {
    const deadline = Date.now() + timeoutMs
    while (!(await done())) {
      if (Date.now() > deadline) throw new Error(`Not there after ${timeoutMs} ms: ${page.url()}`)
      await new Promise((resolve) => setTimeout(resolve, 250))
      await page.reload()
    }
  })

if (!browserAvailable) {
  console.warn(`Browser tests skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium; .ci/run installs it)`)
}

describe.skipIf(!browserAvailable)("the dashboard in Chromium", () =>
layer(
  TestAppWithWorkers({ DELIVERY_MAX_AGE: "2 seconds", DELIVERY_TIMEOUT: "500 millis" }),
  { excludeTestServices: true, timeout: 240_000 }
)((it) => {
  it.effect(
    "an operator creates a workspace and an integration, watches a conversation live, and replays a dead delivery",
    () =>
      Effect.gen(function*() {
        const base = yield* baseUrl
        const receiver = yield* makeReceiver()
        const browser = yield* launchBrowser
        const context = yield* newContext(browser)
        const page = yield* step(() => context.newPage())
        const errors = watchErrors(page)

        // Signing in: a wrong token is refused with a message; the admin token opens the workspaces.
        yield* signInAs(page, base, "not-a-token")
        expect(yield* step(() => page.getByRole("alert").textContent())).toContain("That token is not valid")
        yield* screenshot(page, "00-sign-in-refused")
        yield* signInAs(page, base, ADMIN_TOKEN)
        expect(new URL(page.url()).pathname).toBe("/dashboard/workspaces")

        // A workspace: its first API token shown once.
        yield* step(async () => {
          await page.getByLabel("Name").fill("Acme")
          await page.getByRole("button", { name: "Create workspace" }).click()
        })
        const apiToken = (yield* step(() => page.locator("#new-token").textContent()))?.trim() ?? ""
        expect(apiToken).toMatch(/^prl_/)
        yield* screenshot(page, "01-workspace-created")
        yield* step(() => page.getByRole("link", { name: "Open the workspace" }).click())
        yield* screenshot(page, "02-integrations")

        // An integration, then its ID copied with its button.
        yield* step(async () => {
          await page.getByLabel("Name", { exact: true }).fill("Acme support")
          await page.getByLabel(/^Webhook URL/).fill(receiver.url)
          await page.getByLabel(/^Metadata/).fill(`{"team": "support"}`)
          await page.getByRole("button", { name: "Create integration" }).click()
        })
        const idElement = page.locator("p.row code[id^='integration-id-']")
        const integrationId = (yield* step(() => idElement.textContent()))?.trim() ?? ""
        expect(integrationId).toMatch(/^[0-9a-f-]{36}$/)
        expect(yield* step(() => page.getByRole("status").first().textContent())).toContain(integrationId)
        yield* step(() => page.getByRole("button", { name: /Copy ID/ }).first().click())
        expect(yield* step(() => page.evaluate("navigator.clipboard.readText()"))).toBe(integrationId)
        const workspacePath = new URL(page.url()).pathname.replace(/\/integrations\/.*$/, "")
        yield* screenshot(page, "03-integration-settings")

        // A setting out of range: the API's problem next to its field, nothing saved; then a flag on.
        yield* step(async () => {
          await page.getByLabel(/^Check-in after/).fill("0")
          await page.getByRole("button", { name: "Save settings" }).click()
        })
        expect(yield* step(() => page.locator("#inactivityPromptSeconds-error").textContent()))
          .toContain("body.channelsSettings.timers.inactivityPromptSeconds")
        yield* screenshot(page, "04-settings-refused")
        yield* step(async () => {
          await page.getByLabel(/^Check-in after/).fill("")
          await page.getByLabel(/^Conversation Title/).check()
          await page.getByRole("button", { name: "Save settings" }).click()
        })
        expect(yield* step(() => page.getByRole("status").first().textContent())).toContain("Settings saved.")
        expect(yield* step(() => page.getByLabel(/^Conversation Title/).isChecked())).toBe(true)

        // The knowledge base the embedded responder answers from, searched as the AI would.
        yield* step(async () => {
          await page.goto(`${base}${workspacePath}/ai/knowledge`)
          await page.locator("#new-article-title").fill("Shipping times")
          await page.locator("#new-article-url").fill("https://help.example.com/shipping")
          await page.locator("#new-article-body").fill(
            "Standard shipping takes 3 to 5 business days. Express shipping takes 1 to 2 business days."
          )
          await page.getByRole("button", { name: "Add article" }).click()
          await page.locator("#search-q").fill("how long does shipping take")
          await page.getByRole("button", { name: "Search" }).click()
        })
        expect(yield* step(() => page.locator("main").textContent())).toContain("Score")
        yield* screenshot(page, "05-ai-knowledge-search")

        // The conversations list, live: a message sent through the API appears without a reload.
        yield* step(() => page.goto(`${base}${workspacePath}/integrations/${integrationId}/conversations`))
        yield* step(() => page.locator("#live-status", { hasText: "Live" }).waitFor())
        yield* markDocument(page)
        yield* ask(apiToken, integrationId, "m-1", "order-77", "How long does shipping take?")
        const row = page.locator("#conversations-body tr", { hasText: "order-77" })
        yield* step(() => row.waitFor())
        expect(yield* sameDocument(page)).toBe(true)
        yield* screenshot(page, "06-conversations-live")

        // The conversation: the AI's answer and its delivery arrive live, then the next message.
        yield* step(() => row.locator("th a").click())
        yield* step(() => page.locator("#live-status", { hasText: "Live" }).waitFor())
        yield* markDocument(page)
        yield* step(() => page.locator(".msg.ai").first().waitFor({ timeout: 20_000 }))
        yield* step(() =>
          page.locator("#deliveries-body tr", { hasText: "send_messages" }).filter({ hasText: "delivered" }).first()
            .waitFor({ timeout: 20_000 })
        )
        yield* ask(apiToken, integrationId, "m-2", "order-77", "And express shipping?")
        yield* step(() => page.locator(".msg.human", { hasText: "And express shipping?" }).waitFor())
        expect(yield* step(() => page.locator(".msg.ai .reply-meta").first().textContent())).toContain("Shipping times")
        expect(yield* sameDocument(page)).toBe(true)
        yield* step(() => page.locator(".msg.ai").nth(1).waitFor({ timeout: 20_000 }))
        const conversationUrl = page.url()
        yield* screenshot(page, "07-conversation-live")

        // What the conversation page weighs: the document, its stylesheet and its script.
        const weight = yield* step(() =>
          page.evaluate(
            "[performance.getEntriesByType('navigation')[0], ...performance.getEntriesByType('resource')]" +
              ".filter((e) => e.initiatorType !== 'other').map((e) => [e.name.split('?')[0].split('/').pop(), e.decodedBodySize])"
          )
        )
        console.log(`Conversation page weight (bytes, uncompressed): ${JSON.stringify(weight)}`)

        // The receiver fails: the next reply's delivery dies (DELIVERY_MAX_AGE 2 s), and shows so, live.
        receiver.respondWith(() => ({ status: 500 }))
        yield* ask(apiToken, integrationId, "m-3", "order-77", "Do you ship to Canada?")
        const dead = page.locator("#deliveries-body tr", { hasText: "dead" }).first()
        yield* step(() => dead.waitFor({ timeout: 30_000 }))
        expect(yield* sameDocument(page)).toBe(true)

        // The deliveries page: the dead one, its attempts, replayed once the receiver is back.
        yield* step(() => page.goto(`${base}${workspacePath}/integrations/${integrationId}/deliveries?status=dead`))
        yield* screenshot(page, "08-deliveries")
        yield* step(() => page.locator("table a[href*='/deliveries/']").first().click())
        expect(yield* step(() => page.locator("main").textContent())).toContain("500")
        yield* screenshot(page, "09-delivery-dead")
        receiver.respondWith(() => ({ status: 200 }))
        yield* step(() => page.getByRole("button", { name: "Replay" }).click())
        expect(yield* step(() => page.getByRole("status").first().textContent())).toContain("Replayed")
        yield* reloadUntil(page, async () => (await page.locator(".badge", { hasText: "delivered" }).count()) > 0)
        yield* screenshot(page, "10-delivery-replayed")

        // The other main pages.
        for (const [path, name] of [
          [`${workspacePath}/ai`, "11-ai"],
          [`${workspacePath}/ai/report`, "12-ai-report"],
          [`${workspacePath}/api`, "13-api"]
        ] as const) {
          yield* step(() => page.goto(`${base}${path}`))
          yield* screenshot(page, name)
        }
        expect(yield* step(() => page.locator("main").textContent())).not.toContain(apiToken)

        // On a phone: the conversation fits the screen's width.
        const phone = yield* newContext(browser, { width: 375, height: 800 })
        const small = yield* step(() => phone.newPage())
        const smallErrors = watchErrors(small)
        yield* signInAs(small, base, ADMIN_TOKEN)
        yield* step(() => small.goto(conversationUrl))
        expect(yield* step(() => small.evaluate("document.documentElement.scrollWidth"))).toBeLessThanOrEqual(375)
        yield* screenshot(small, "14-conversation-phone")

        expect(errors).toEqual([])
        expect(smallErrors).toEqual([])
      }).pipe(Effect.scoped)
  )

  it.effect("an integrator sees only their workspace: another's pages answer 404, whatever the URL", () =>
    Effect.gen(function*() {
      const base = yield* baseUrl
      const other = yield* makeTenant()
      const asked = yield* ask(other.token, other.integrationId, "secret-1", "secret-conversation", "My secret order")
      const conversationId = asked.conversation.id
      const mine = yield* makeTenant()
      const browser = yield* launchBrowser
      const context = yield* newContext(browser)
      const page = yield* step(() => context.newPage())

      yield* signInAs(page, base, mine.token)
      expect(new URL(page.url()).pathname).toBe(`/dashboard/w/${mine.workspaceId}/integrations`)
      expect(yield* step(() => page.getByRole("navigation", { name: "Dashboard" }).textContent())).not.toContain("Workspaces")

      const foreign = [
        `/dashboard/w/${other.workspaceId}/integrations`,
        `/dashboard/w/${other.workspaceId}/api`,
        `/dashboard/w/${other.workspaceId}/ai`,
        `/dashboard/w/${other.workspaceId}/conversations/${conversationId}`,
        `/dashboard/w/${mine.workspaceId}/conversations/${conversationId}`,
        `/dashboard/w/${mine.workspaceId}/integrations/${other.integrationId}/conversations`,
        `/dashboard/w/${mine.workspaceId}/integrations/${other.integrationId}/deliveries`,
        "/dashboard/workspaces"
      ]
      for (const path of foreign) {
        const response = yield* step(() => page.goto(`${base}${path}`))
        expect(response?.status(), path).toBe(404)
        expect(yield* step(() => page.locator("h1").textContent()), path).toBe("Not found")
        expect(yield* step(() => page.content()), path).not.toContain("secret")
      }
      yield* screenshot(page, "15-integrator-foreign-page")
    }).pipe(Effect.scoped))
}))
