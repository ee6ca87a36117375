import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

// The suite runs on the embedded database (PGlite) always, and also on a real PostgreSQL server when
// TEST_DATABASE_URL is set: every test file then runs once per project. Each file gets a fresh database.
const postgres = process.env["TEST_DATABASE_URL"]

export default defineConfig({
  root: fileURLToPath(new URL("..", import.meta.url)),
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/globalSetup.ts"],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    pool: "forks",
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    projects: [
      { extends: true as const, test: { name: "pglite", env: { PARLEY_TEST_DB: "pglite" } } },
      ...(postgres === undefined || postgres === ""
        ? []
        : [{ extends: true as const, test: { name: "postgres", env: { PARLEY_TEST_DB: "postgres" } } }])
    ]
  }
})
