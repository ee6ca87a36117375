// Writes the OpenAPI document that Parley serves at /openapi.json, generated from the build in dist/
// (`npm run build`) the way the server generates it, to the file named (standard output without one).
// `npm run lint:openapi` lints what it writes. `--dist=<dir>` reads another build of src/.
//
//   node scripts/openapi.mjs [--dist=dist] [file]
import { writeFileSync } from "node:fs"
import { resolve } from "node:path"
import { pathToFileURL } from "node:url"
import * as OpenApi from "effect/http-api/OpenApi"

const args = process.argv.slice(2)
const dist = args.find((arg) => arg.startsWith("--dist="))?.slice("--dist=".length) ??
  new URL("../dist", import.meta.url).pathname
const [file] = args.filter((arg) => !arg.startsWith("--"))

const { Api } = await import(pathToFileURL(resolve(dist, "Api.js")).href)
const text = JSON.stringify(OpenApi.fromApi(Api), null, 2) + "\n"
if (file === undefined) process.stdout.write(text)
else writeFileSync(file, text)
