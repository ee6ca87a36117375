/** The purge of a deleted workspace's data: one live job per workspace, in batches until nothing is left. */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { WorkspaceId } from "../Domain/Ids.js"
import * as Job from "../Jobs/Job.js"
import * as Lanes from "../Jobs/Lanes.js"
import { Workspaces } from "./Workspaces.js"

export const PurgeWorkspace = Job.define("purge_workspace", {
  payload: Schema.Struct({ workspaceId: WorkspaceId }),
  // A few per workspace, like its replies: a purge is statements, not waiting.
  lane: Lanes.replies,
  key: ({ workspaceId }) => workspaceId
})

/**
 * The purge handler. `Workspaces.ts` imports this module (it queues the purge): `Workspaces` is read
 * when the layer is built, never while the modules load.
 */
export const WorkspacesJobsLive = Job.handlers(
  Effect.gen(function*() {
    const workspaces = yield* Workspaces
    return [Job.handle(PurgeWorkspace, ({ workspaceId }) => Effect.as(workspaces.purge(workspaceId), Job.Outcome.Done()))]
  })
)
