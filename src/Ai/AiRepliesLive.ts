/**
 * `AiReplies` with every provider: the embedded responder for requests whose model is `"embedded"`
 * (or unset), the agent over a language model otherwise. The model clients share one HTTP connection
 * pool; each call builds its own client from its own settings.
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as Effect from "effect/Effect"
import * as HttpClient from "effect/http/HttpClient"
import * as Layer from "effect/Layer"
import { ConversationsRepo } from "../Conversations/Repo.js"
import { AiReplies } from "./AiReplies.js"
import { makeEmbedded } from "./Embedded.js"
import { Knowledge } from "./Knowledge.js"
import { Agent } from "./Llm/Agent.js"
import { makeModelReplies } from "./ModelReplies.js"

/** The shared client; its spans are named `http.client POST`, as the server's are `http.server POST`. */
const ModelHttpClient = Layer.effect(
  HttpClient.HttpClient,
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    return HttpClient.transform(client, (response) =>
      Effect.provideService(response, HttpClient.SpanNameGenerator, (request) => `http.client ${request.method}`))
  })
).pipe(Layer.provide(NodeHttpClient.layerUndici))

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
      summary: ({ history, model }) => model === "embedded" ? embedded.summary(history) : models.summary(model, history),
      verify: (request) => request.model === "embedded" ? embedded.verify(request) : models.verify(request.model, request),
      screen: models.screen,
      inactivity: ({ model, ...request }) =>
        model === "embedded" ? embedded.inactivity(request.kind, request.language) : models.inactivity(model, request)
    })
  })
).pipe(
  Layer.provide([Knowledge.layer, ConversationsRepo.layer, Agent.layer]),
  Layer.provide(ModelHttpClient)
)
