/**
 * Debian's Chromium driven by playwright-core, for the dashboard's browser tests: never a downloaded
 * browser. Without /usr/bin/chromium the browser tests are skipped, unless `PARLEY_REQUIRE_BROWSER` is
 * set (as `.ci/run` does, after installing it), when they fail. Screenshots go to `test-results/`.
 */
import * as Effect from "effect/Effect"
import { existsSync, mkdirSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core"

export const CHROMIUM = "/usr/bin/chromium"

const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run"
]

/** Whether the browser tests run here: Chromium is installed, or CI requires them (and they fail without it). */
export const browserAvailable = existsSync(CHROMIUM) || process.env["PARLEY_REQUIRE_BROWSER"] !== undefined

/** Chromium for the test's scope, closed with it. */
export const launchBrowser = Effect.acquireRelease(
  Effect.promise(() => chromium.launch({ executablePath: CHROMIUM, args: FLAGS })),
  (browser) => Effect.promise(() => browser.close())
)

/** A fresh browser profile (cookies, storage) for one user, closed with the test's scope. */
export const newContext = (browser: Browser, options: { readonly width?: number; readonly height?: number } = {}) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      browser.newContext({
        viewport: { width: options.width ?? 1280, height: options.height ?? 900 },
        permissions: ["clipboard-read", "clipboard-write"]
      })
    ),
    (context: BrowserContext) => Effect.promise(() => context.close())
  )

const RESULTS = fileURLToPath(new URL("../../test-results/dashboard", import.meta.url))

/** A full-page screenshot, `test-results/dashboard/<name>.png` (not committed). */
export const screenshot = (page: Page, name: string) =>
  Effect.promise(async () => {
    mkdirSync(RESULTS, { recursive: true })
    const path = join(RESULTS, `${name}-${process.env["PARLEY_TEST_DB"] ?? "pglite"}.png`)
    await page.screenshot({ path, fullPage: true })
    return path
  })

/** Runs one step of the page (a Playwright promise) as an effect; its failure fails the test. */
export const step = <A>(run: () => Promise<A>) => Effect.tryPromise({ try: run, catch: (error) => error }).pipe(Effect.orDie)
