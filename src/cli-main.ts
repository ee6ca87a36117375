import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import * as CliError from "effect/cli/CliError"
import * as Effect from "effect/Effect"
import { cli } from "./Cli.js"
import { PrettyLoggerLive, teardown } from "./Startup.js"

cli(process.argv).pipe(
  // The CLI has already printed what was wrong with the arguments; only the exit code is left to set.
  // A command named without its subcommand (`parley workspace`) prints its help: that is no error.
  Effect.catchIf(CliError.isCliError, (error) =>
    Effect.sync(() => {
      if (error._tag !== "ShowHelp" || error.errors.length > 0) process.exitCode = 2
    })),
  Effect.provide([NodeServices.layer, PrettyLoggerLive]),
  NodeRuntime.runMain({ teardown })
)
