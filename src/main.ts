import { NodeRuntime } from "@effect/platform-node"
import * as Layer from "effect/Layer"
import { AppLive } from "./App.js"

Layer.launch(AppLive).pipe(NodeRuntime.runMain)
