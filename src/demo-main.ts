import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Effect from "effect/Effect"
import { demo } from "./Demo.js"
import { PrettyLoggerLive, teardown } from "./Startup.js"

demo.pipe(Effect.provide(PrettyLoggerLive), NodeRuntime.runMain({ teardown }))
