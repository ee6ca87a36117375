/**
 * `parley kb update` and `parley kb delete`: an article replaced from a Markdown file (its link kept
 * unless changed or removed) and deleted, within its workspace only; another workspace's article is
 * "not found" and stays as it was.
 */
import { describe, expect, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ArticleJson } from "../../src/Domain/Knowledge.js"
import { ADMIN_TOKEN, bodyAs, call, makeTenant, TestApp } from "../support/App.js"
import { parley } from "../support/Cli.js"

const articles = (workspaceId: string) =>
  call("GET", `/admin/v1/workspaces/${workspaceId}/articles`, { token: ADMIN_TOKEN }).pipe(
    Effect.flatMap(bodyAs(Schema.Array(ArticleJson))),
    Effect.map((reply) => reply.body.map((a) => ({ id: a.id, title: a.title, url: a.url })))
  )

const markdown = (name: string, text: string) => {
  const file = join(mkdtempSync(join(tmpdir(), "parley-kb-update-")), name)
  writeFileSync(file, text)
  return file
}

describe("parley kb update and delete", () => {
  layer(TestApp(), { timeout: 120_000 })((it) => {
    it.effect("update replaces title and body from a file, keeping, changing or removing the link; delete removes", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        yield* parley("kb", "add", markdown("shipping.md", "# Shipping\n\nOrders ship in a day.\n"), "--workspace", tenant.workspaceId, "--article-url", "https://help.example.com/shipping")
        const [article] = yield* articles(tenant.workspaceId)
        const id = article!.id

        const kept = yield* parley("kb", "update", tenant.workspaceId, id, markdown("delivery.md", "# Delivery\n\nTwo days.\n"))
        expect(kept.exitCode).toBe(0)
        expect(kept.out).toBe(`Article Delivery updated: ${id} (https://help.example.com/shipping)`)
        expect(yield* articles(tenant.workspaceId)).toEqual([{ id, title: "Delivery", url: "https://help.example.com/shipping" }])

        const moved = yield* parley("kb", "update", tenant.workspaceId, id, markdown("delivery.md", "# Delivery\n\nTwo days.\n"), "--article-url", "https://help.example.com/delivery")
        expect(moved.exitCode).toBe(0)
        expect(yield* articles(tenant.workspaceId)).toEqual([{ id, title: "Delivery", url: "https://help.example.com/delivery" }])

        const unlinked = yield* parley("kb", "update", tenant.workspaceId, id, markdown("delivery.md", "Two days.\n"), "--remove-url", "--json")
        expect(unlinked.exitCode).toBe(0)
        expect(JSON.parse(unlinked.out)).toMatchObject({ id, title: "delivery", url: null })

        const both = yield* parley("kb", "update", tenant.workspaceId, id, markdown("x.md", "x"), "--remove-url", "--article-url", "https://a.example/")
        expect(both.exitCode).toBe(1)
        expect(both.err).toBe("Error: Give --article-url or --remove-url, not both")

        // Another workspace's article is not found there, and stays as it was.
        const other = yield* makeTenant()
        const foreign = yield* parley("kb", "delete", other.workspaceId, id)
        expect(foreign.exitCode).toBe(1)
        expect(foreign.err).toBe("Error: Article not found")
        const foreignUpdate = yield* parley("kb", "update", other.workspaceId, id, markdown("x.md", "# Hijacked\n\nNo.\n"))
        expect(foreignUpdate.err).toBe("Error: Article not found")
        expect(yield* articles(tenant.workspaceId)).toEqual([{ id, title: "delivery", url: null }])

        const deleted = yield* parley("kb", "delete", tenant.workspaceId, id)
        expect(deleted.exitCode).toBe(0)
        expect(deleted.out).toBe(`Article ${id} deleted`)
        expect(yield* articles(tenant.workspaceId)).toEqual([])
      }))
  })
})
