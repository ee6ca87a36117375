import { readdirSync, readFileSync } from "node:fs"
import { join, relative } from "node:path"
import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

// The suite runs on the embedded database (PGlite) always, and also on a real PostgreSQL server when
// TEST_DATABASE_URL is set: every test file that uses a database then runs once per project. Each file
// gets a fresh database. Files that use none (pure functions, local HTTP servers) run once: a file uses one
// when it names a database layer (or test/support/ReplySetup.ts, which builds one).
const root = fileURLToPath(new URL("..", import.meta.url))
const postgres = process.env["TEST_DATABASE_URL"]

const testFiles = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? testFiles(join(dir, entry.name))
      : entry.name.endsWith(".test.ts")
      ? [join(dir, entry.name)]
      : []
  )

const databaseFree = testFiles(join(root, "test"))
  .filter((file) => !/\b(TestApp|TestAppWithWorkers|TestDatabase|makeApp|layerTest|ReplySetup)\b/.test(readFileSync(file, "utf8")))
  .map((file) => relative(root, file))

export default defineConfig({
  root,
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/globalSetup.ts"],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    pool: "forks",
    maxWorkers: 2,
    projects: [
      { extends: true as const, test: { name: "pglite", env: { PARLEY_TEST_DB: "pglite" } } },
      ...(postgres === undefined || postgres === ""
        ? []
        : [{
          extends: true as const,
          // The browser tests drive the UI: what the database does under it is tested on both projects
          // (test/Dashboard), so they run once.
          test: { name: "postgres", env: { PARLEY_TEST_DB: "postgres" }, exclude: [...databaseFree, "test/Browser/**"] }
        }])
    ]
  }
})
