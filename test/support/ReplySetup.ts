/**
 * The reply step's test setup, shared by the tests that call `Replies.generate` directly: the services
 * on the test database, a scripted chat-completions model (`withModel`), and a new workspace and
 * integration with a function that stores a customer message and runs its reply (`anIntegration`).
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Replies } from "../../src/Ai/GenerateReply.js"
import { Knowledge } from "../../src/Ai/Knowledge.js"
import { type Incoming, Conversations } from "../../src/Conversations/Conversations.js"
import { ConversationsRepo } from "../../src/Conversations/Repo.js"
import type { FeatureName } from "../../src/Domain/Integration.js"
import { Integrations } from "../../src/Integrations/Integrations.js"
import { Workspaces } from "../../src/Workspaces/Workspaces.js"
import { incoming } from "./Incoming.js"
import { type LlmServer, makeLlmServer } from "./LlmServers.js"
import { layerTest } from "./Services.js"

export const replyServices = Layer.mergeAll(
  Replies.layer,
  Conversations.layer,
  ConversationsRepo.layer,
  Integrations.layer,
  Workspaces.layer,
  Knowledge.layer
)

/** The scripted model of `withModel`. */
export class Llm extends Context.Service<Llm, LlmServer>()("test/ReplySetup/Llm") {}

/** The reply services with a model on a local chat-completions server (`Llm`), and `config` on top. */
export const withModel = (config: Record<string, string> = {}) =>
  Layer.unwrap(
    Effect.map(makeLlmServer, (server) =>
      Layer.merge(
        layerTest(replyServices, {
          AI_PROVIDER: "openai",
          AI_MODEL: "test-model",
          OPENAI_BASE_URL: server.baseUrl,
          ...config
        }),
        Layer.succeed(Llm, server)
      ))
  )

let conversations = 0

/**
 * A new workspace (with `article` in its knowledge base, if given) and integration (`typing` off unless
 * given); `ask` stores a customer message in the integration's one conversation and runs its reply step,
 * answering the conversation's id; `message` tailors the stored message (attachments, requestContext).
 */
export const anIntegration = (options: {
  readonly features?: Partial<Record<FeatureName, boolean>>
  readonly channelsSettings?: Record<string, unknown>
  readonly article?: { readonly title: string; readonly url: string | null; readonly body: string }
}) =>
  Effect.gen(function*() {
    const { workspace } = yield* Effect.flatMap(Workspaces, (w) => w.create("Replies"))
    if (options.article !== undefined) {
      const article = options.article
      yield* Effect.flatMap(Knowledge, (k) => k.addArticle(workspace.id, article))
    }
    const integration = yield* Effect.flatMap(Integrations, (i) =>
      i.create(workspace.id, {
        name: "Replies test",
        integration: "api",
        webhook: { url: "https://receiver.example/hook", headers: {}, metadata: {} },
        supportedFeatures: { typing: false, ...options.features },
        channelsSettings: options.channelsSettings ?? {}
      }))
    const conversation = `reply-${++conversations}`
    const ask = (id: string, text: string, message: (incoming: Incoming) => Incoming = (m) => m) =>
      Effect.gen(function*() {
        const { conversation: stored, message: asked } = yield* Effect.flatMap(Conversations, (c) =>
          c.ingest(integration, message(incoming(conversation, `${conversation}-${id}`, text))))
        yield* Effect.flatMap(Replies, (r) => r.generate({ conversationId: stored.id, messageId: asked.id }))
        return stored.id
      })
    return { workspace, integration, ask }
  }).pipe(Effect.orDie)
