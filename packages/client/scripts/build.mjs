// Builds @parley/client: src/index.ts and every module it imports, compiled from the server's own sources
// into dist/ (tsconfig.json), so the package and the server share one API definition. Then refuses the
// build when the compiled modules import anything an integrator does not install with the package: a
// server module reached from the definition (a database driver, OpenTelemetry, an HTTP server) would
// otherwise be found only when an integrator's import fails. `npm pack` and `npm publish` run it
// (`prepack`).
import { execFileSync } from "node:child_process"
import { readdirSync, readFileSync, rmSync, statSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join, relative, resolve } from "node:path"
import { fileURLToPath } from "node:url"

const packageDir = fileURLToPath(new URL("..", import.meta.url))
const dist = join(packageDir, "dist")
const manifest = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8"))

/** Packages the compiled modules may import: what the package declares, and itself (its doc comments do). */
const declared = new Set([
  manifest.name,
  ...Object.keys(manifest.dependencies ?? {}),
  ...Object.keys(manifest.peerDependencies ?? {})
])
/**
 * Node.js built-ins the definition modules use: HMAC for the webhook signatures (`Delivery/Signature.ts`)
 * and deep equality for the snake_case aliases (`Domain/Validation.ts`). Any other (node:http, node:net,
 * node:dns, node:fs...) is server code reached by mistake.
 */
const builtins = new Set(["node:crypto", "node:util"])

// The client's modules run on the integrator's copy of Effect: it must be the version the server is
// built and tested with (HttpApi may change in a minor release), so an upgrade of the server moves it.
const server = JSON.parse(readFileSync(join(packageDir, "..", "..", "package.json"), "utf8"))
if (manifest.peerDependencies?.effect !== server.dependencies.effect) {
  process.stderr.write(
    `${manifest.name}: peerDependencies.effect is ${manifest.peerDependencies?.effect}, the server runs effect ` +
      `${server.dependencies.effect}: set packages/client/package.json to the same exact version\n`
  )
  process.exit(1)
}

// A module removed from the definition must not linger in the package from an earlier build.
rmSync(dist, { recursive: true, force: true })
const tsc = createRequire(join(packageDir, "package.json")).resolve("typescript/bin/tsc")
execFileSync(process.execPath, [tsc, "-p", join(packageDir, "tsconfig.json")], { stdio: "inherit" })

const files = (dir) =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? files(join(dir, entry.name)) : [join(dir, entry.name)]
  )

const specifiers = (text) =>
  [...text.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*|\bdeclare\s+module\s+)["']([^"']+)["']/g)].map((m) => m[1])

const problems = []
const emitted = files(dist)
for (const file of emitted.filter((f) => f.endsWith(".js") || f.endsWith(".d.ts"))) {
  for (const specifier of specifiers(readFileSync(file, "utf8"))) {
    const where = relative(packageDir, file)
    if (specifier.startsWith(".")) {
      if (relative(dist, resolve(dirname(file), specifier)).startsWith("..")) {
        problems.push(`${where} imports ${specifier}, outside the package`)
      }
    } else if (specifier.startsWith("node:")) {
      if (!builtins.has(specifier)) problems.push(`${where} imports ${specifier} (server code?)`)
    } else {
      const name = specifier.startsWith("@") ? specifier.split("/").slice(0, 2).join("/") : specifier.split("/")[0]
      if (!declared.has(name)) problems.push(`${where} imports ${specifier}, not a dependency of ${manifest.name}`)
    }
  }
}
if (problems.length > 0) {
  process.stderr.write(
    `${manifest.name}: the client's modules reach code integrators do not install. Move it out of the API ` +
      `definition's modules (src/Api.ts, src/*/Api.ts, src/Domain/*, src/Delivery/Signature.ts):\n` +
      problems.map((p) => `  ${p}\n`).join("")
  )
  process.exit(1)
}
const bytes = emitted.reduce((sum, file) => sum + statSync(file).size, 0)
process.stderr.write(`${manifest.name}: ${emitted.length} files, ${(bytes / 1024).toFixed(0)} kB in dist/\n`)
