/**
 * The operator's admin token: `PARLEY_ADMIN_TOKEN`, or in development mode one generated once and kept
 * in the data folder (`admin-token`), printed at start. Production refuses to start without one.
 */
import * as Console from "effect/Console"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as fs from "node:fs"
import * as path from "node:path"
import * as AppConfig from "../Config.js"
import { generateToken } from "./Crypto.js"

export class AdminToken extends Context.Service<AdminToken, Redacted.Redacted<string>>()("Parley/AdminToken") {}

const readOrCreate = (file: string) =>
  Effect.try(() => {
    if (fs.existsSync(file)) return { token: fs.readFileSync(file, "utf8").trim(), created: false }
    fs.mkdirSync(path.dirname(file), { recursive: true })
    const token = generateToken("padm")
    fs.writeFileSync(file, `${token}\n`, { mode: 0o600 })
    return { token, created: true }
  })

export const AdminTokenLive = Layer.effect(
  AdminToken,
  Effect.gen(function*() {
    const configured = yield* AppConfig.AdminToken
    if (Option.isSome(configured)) return configured.value
    // Production without one never gets here: `ProductionRequirements` refuses to start.
    yield* AppConfig.ProductionRequirements
    const file = path.resolve(yield* AppConfig.DataDir, "admin-token")
    const { created, token } = yield* Effect.orDie(readOrCreate(file))
    // For the developer at the terminal, on stderr (stdout is the log stream); development mode only.
    yield* Console.error(
      `Admin token (development mode${created ? ", generated" : ""}; kept in ${file}): ${token}`
    )
    return Redacted.make(token)
  })
)
