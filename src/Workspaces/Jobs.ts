/**
 * The purge handler (the job kind is `PurgeJob.ts`'s, which `Workspaces` queues without importing
 * this module, so that this layer can provide `Workspaces` itself).
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Job from "../Jobs/Job.js"
import { PurgeWorkspace } from "./PurgeJob.js"
import { Workspaces } from "./Workspaces.js"

export const WorkspacesJobsLive = Job.handlers(
  Effect.gen(function*() {
    const workspaces = yield* Workspaces
    return [Job.handle(PurgeWorkspace, ({ workspaceId }) => Effect.as(workspaces.purge(workspaceId), Job.Outcome.Done()))]
  })
).pipe(Layer.provide(Workspaces.layer))
