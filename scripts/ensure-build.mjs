// Builds dist/ with tsc when any source file is newer than the last build; `npm start` runs it first.
import { execFileSync } from "node:child_process"
import { existsSync, readdirSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"

const root = new URL("..", import.meta.url).pathname
const stamp = join(root, "dist", ".build-stamp")

const newest = (dir) =>
  readdirSync(dir, { withFileTypes: true }).reduce((max, entry) => {
    const path = join(dir, entry.name)
    return Math.max(max, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs)
  }, 0)

const sourcesChanged = Math.max(newest(join(root, "src")), statSync(join(root, "tsconfig.json")).mtimeMs,
  statSync(join(root, "src", "tsconfig.json")).mtimeMs, statSync(join(root, "package-lock.json")).mtimeMs)

const force = process.argv.includes("--force")
if (force || !existsSync(stamp) || statSync(stamp).mtimeMs < sourcesChanged) {
  process.stderr.write("Building Parley (tsc)...\n")
  execFileSync(process.execPath, [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", join(root, "src", "tsconfig.json")], {
    stdio: "inherit"
  })
  writeFileSync(stamp, new Date().toISOString() + "\n")
}
