import { ValidationError } from "@effect/cli"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Effect from "effect/Effect"
import { cli } from "./Cli.js"

cli(process.argv).pipe(
  // The CLI has already printed what was wrong with the arguments; only the exit code is left to set.
  Effect.catchIf(ValidationError.isValidationError, () =>
    Effect.sync(() => {
      process.exitCode = 2
    })),
  Effect.provide(NodeContext.layer),
  NodeRuntime.runMain
)
