/** The purge of a deleted workspace's data: one live job per workspace, in batches until nothing is left. */
import * as Schema from "effect/Schema"
import { WorkspaceId } from "../Domain/Ids.js"
import * as Job from "../Jobs/Job.js"
import * as Lanes from "../Jobs/Lanes.js"

export const PurgeWorkspace = Job.define("purge_workspace", {
  payload: Schema.Struct({ workspaceId: WorkspaceId }),
  // A few per workspace, like its replies: a purge is statements, not waiting.
  lane: Lanes.replies,
  key: ({ workspaceId }) => workspaceId
})
