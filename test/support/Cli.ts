/**
 * The `parley` CLI run in-process through its own command runner against Parley on a real port (it talks
 * to the admin API over fetch, as it does from a shell), with what it prints captured from its `Console`.
 */
import { HttpServer } from "effect/http"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { cli } from "../../src/Cli.js"
import { ADMIN_TOKEN } from "./App.js"

export interface Run {
  readonly out: string
  readonly err: string
  readonly exitCode: number
  readonly failed: boolean
}

/** `parley <args…> --url <server> --admin-token <token>`: what it printed, and how it ended. */
export const parley = (...args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const server = yield* HttpServer.HttpServer
    const port = server.address._tag !== "UnixPathAddress" ? server.address.port : 0
    const out: Array<string> = []
    const err: Array<string> = []
    const before = process.exitCode
    process.exitCode = 0
    const captured: Console.Console = Object.assign(Object.create(console), {
      log: (...items: ReadonlyArray<unknown>) => void out.push(items.map(String).join(" ")),
      error: (...items: ReadonlyArray<unknown>) => void err.push(items.map(String).join(" "))
    })
    const run = cli(["node", "parley", ...args, "--url", `http://127.0.0.1:${port}`, "--admin-token", ADMIN_TOKEN]).pipe(
      Effect.provideService(Console.Console, captured)
    )
    const exit = yield* Effect.exit(run)
    const exitCode = Number(process.exitCode ?? 0)
    process.exitCode = before
    return { out: out.join("\n"), err: err.join("\n"), exitCode, failed: exit._tag === "Failure" } satisfies Run
  })

