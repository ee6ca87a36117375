/**
 * `AiReplies` with every provider: the embedded responder for requests whose model is `"embedded"`
 * (or unset), the agent over a language model otherwise. The model clients share one HTTP connection
 * pool; each call builds its own client from its own settings.
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { ConversationsRepo } from "../Conversations/Repo.js"
import { AiReplies } from "./AiReplies.js"
import { makeEmbedded } from "./Embedded.js"
import { Knowledge } from "./Knowledge.js"
import { Agent } from "./Llm/Agent.js"
import { makeModelReplies } from "./ModelReplies.js"

export const AiRepliesLive = Layer.effect(
  AiReplies,
  Effect.gen(function*() {
    const embedded = yield* makeEmbedded
    const models = yield* makeModelReplies
    return AiReplies.of({
      reply: (request) =>
        request.model === undefined || request.model === "embedded"
          ? embedded.reply(request)
          : models.reply(request.model, request),
      title: ({ history, model }) => model === "embedded" ? embedded.title(history) : models.title(model, history),
      summary: ({ history, model }) => model === "embedded" ? embedded.summary(history) : models.summary(model, history)
    })
  })
).pipe(
  Layer.provide([Knowledge.Default, ConversationsRepo.Default, Agent.Default]),
  Layer.provide(NodeHttpClient.layerUndici)
)
