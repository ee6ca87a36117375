/**
 * Once per test run: a migrated PGlite database, dumped to a file that every test file loads (loading
 * a snapshot takes ~1 s; creating and migrating a fresh PGlite takes several). Cached across runs by
 * the migrations' content.
 */
import { PGlite } from "@electric-sql/pglite"
import * as Effect from "effect/Effect"
import { createHash } from "node:crypto"
import { existsSync, readdirSync, readFileSync, renameSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { TestProject } from "vitest/node"
import { layerPGlite, migrate } from "../../src/Sql.js"

declare module "vitest" {
  export interface ProvidedContext {
    pgliteSnapshot: string
  }
}

const migrationsDir = new URL("../../src/migrations/", import.meta.url).pathname

export default async function setup(project: TestProject) {
  const hash = createHash("sha256")
  for (const file of readdirSync(migrationsDir).sort()) hash.update(file).update(readFileSync(join(migrationsDir, file)))
  const path = join(tmpdir(), `parley-pglite-${hash.digest("hex").slice(0, 16)}.tar.gz`)
  if (!existsSync(path)) {
    const db = await PGlite.create()
    const dump = await Effect.runPromise(
      Effect.andThen(migrate, Effect.promise(() => db.dumpDataDir("gzip"))).pipe(
        Effect.provide(layerPGlite(Effect.succeed(db))),
        Effect.orDie
      )
    )
    const partial = `${path}.${process.pid}`
    writeFileSync(partial, Buffer.from(await dump.arrayBuffer()))
    renameSync(partial, path)
  }
  project.provide("pgliteSnapshot", path)
}
