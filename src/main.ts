import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Layer from "effect/Layer"
import { AppLive } from "./App.js"
import { teardown } from "./Startup.js"

// AppLive logs its own start failure, in the configured format: runMain must not print it again (in its own).
Layer.launch(AppLive).pipe(NodeRuntime.runMain({ disableErrorReporting: true, teardown }))
