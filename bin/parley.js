#!/usr/bin/env -S node --liftoff-only
// The `parley` command: builds dist/ first when the sources changed (a no-op in a published install).
import { existsSync } from "node:fs"

const root = new URL("..", import.meta.url)
if (existsSync(new URL("src", root)) && existsSync(new URL("node_modules/typescript", root))) {
  await import(new URL("scripts/ensure-build.mjs", root))
}
await import(new URL("dist/cli-main.js", root))
