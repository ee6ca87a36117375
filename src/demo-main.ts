import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { demo } from "./Demo.js"

NodeRuntime.runMain(demo)
