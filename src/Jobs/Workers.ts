/** The job kinds Parley runs, and the worker pool that runs them. A new kind: one module, one line here. */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { EmbeddedRepliesLive } from "../Ai/Embedded.js"
import { makeGenerateReply } from "../Ai/GenerateReply.js"
import { ConversationsRepo } from "../Conversations/Repo.js"
import { Events } from "../Delivery/Events.js"
import { DeliveriesRepo } from "../Delivery/Repo.js"
import { makeSender } from "../Delivery/Sender.js"
import { WebhookClientLive } from "../Delivery/WebhookClient.js"
import { IntegrationsRepo } from "../Integrations/Repo.js"
import { Workspaces } from "../Workspaces/Workspaces.js"
import { JobHandlers } from "./Handler.js"
import { JobQueue } from "./Queue.js"
import { WorkersLive } from "./Worker.js"

export const JobHandlersLive = Layer.effect(
  JobHandlers,
  Effect.map(Effect.all([makeGenerateReply, makeSender]), (handlers) => new Map(handlers.map((h) => [h.kind, h])))
).pipe(
  Layer.provide([
    ConversationsRepo.Default,
    IntegrationsRepo.Default,
    DeliveriesRepo.Default,
    Events.Default,
    Workspaces.Default,
    EmbeddedRepliesLive,
    WebhookClientLive
  ])
)

/** `WORKER_CONCURRENCY` supervised workers; needs the database (`PgClient`). */
export const WorkerPoolLive = WorkersLive.pipe(Layer.provide([JobHandlersLive, JobQueue.Default]))
