import { NodeRuntime } from "@effect/platform-node"
import { demo } from "./Demo.js"

NodeRuntime.runMain(demo)
