/**
 * `parley workspace delete` and `parley kb add` as an operator types them: deletion asks for `--yes`;
 * `kb add` takes files, folders and patterns the shell left unexpanded, and says when nothing matches.
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
    Effect.map((reply) => reply.body.map((a) => `${a.title} ${a.url ?? ""}`.trim()).sort())
  )

describe("parley workspace and kb", () => {
  layer(TestApp(), { timeout: 120_000 })((it) => {
    it.effect("workspace delete asks for --yes, then deletes: the workspace's token stops working", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const unconfirmed = yield* parley("workspace", "delete", tenant.workspaceId)
        expect(unconfirmed.exitCode).toBe(1)
        expect(unconfirmed.err).toBe(
          `Error: This deletes workspace Test workspace (${tenant.workspaceId}), its tokens, integrations, conversations ` +
            "and deliveries. Run again with --yes to confirm"
        )
        expect((yield* call("GET", "/v1/integration/list", { token: tenant.token })).status).toBe(200)

        const deleted = yield* parley("workspace", "delete", tenant.workspaceId, "--yes")
        expect(deleted.exitCode).toBe(0)
        expect(deleted.out).toBe(
          `Workspace Test workspace (${tenant.workspaceId}) deleted: its tokens no longer work; its data is being removed in the background`
        )
        expect((yield* call("GET", "/v1/integration/list", { token: tenant.token })).status).toBe(401)

        const again = yield* parley("workspace", "delete", tenant.workspaceId, "--yes")
        expect(again.exitCode).toBe(1)
        expect(again.err).toBe("Error: Workspace not found")
      }))

    it.effect("kb add takes files, a folder, and a quoted pattern; a pattern matching nothing is an error", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const dir = mkdtempSync(join(tmpdir(), "parley-kb-"))
        writeFileSync(join(dir, "shipping.md"), "# Shipping\n\nOrders ship in a day.\n")
        writeFileSync(join(dir, "returns.md"), "# Returns\n\n30 days.\n")
        writeFileSync(join(dir, "notes.json"), "{}")

        const pattern = yield* parley("kb", "add", join(dir, "*.md"), "--workspace", tenant.workspaceId, "--url-base", "https://help.example.com/")
        expect(pattern.exitCode).toBe(0)
        expect(yield* articles(tenant.workspaceId)).toEqual([
          "Returns https://help.example.com/returns",
          "Shipping https://help.example.com/shipping"
        ])

        const other = yield* makeTenant()
        const folder = yield* parley("kb", "add", dir, "--workspace", other.workspaceId)
        expect(folder.exitCode).toBe(0)
        expect(yield* articles(other.workspaceId)).toEqual(["Returns", "Shipping"])

        const nothing = yield* parley("kb", "add", join(dir, "help", "*.md"), "--workspace", tenant.workspaceId)
        expect(nothing.exitCode).toBe(1)
        expect(nothing.err).toBe(`Error: No file matches ${join(dir, "help", "*.md")}`)

        // The README's own example: the articles shipped in examples/help.
        const shipped = yield* parley("kb", "add", "examples/help/*.md", "--workspace", other.workspaceId)
        expect(shipped.exitCode).toBe(0)
        expect(shipped.out.split("\n")).toHaveLength(3)
      }))
  })
})
