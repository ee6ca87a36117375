/** The HTTP client that posts webhooks: undici, redirects not followed, the SSRF guard in production. */
import * as HttpClient from "@effect/platform/HttpClient"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Agent } from "undici"
import * as AppConfig from "../Config.js"
import { guardedLookup } from "./Ssrf.js"

export class WebhookClient extends Context.Tag("Parley/WebhookClient")<WebhookClient, HttpClient.HttpClient>() {}

export const WebhookClientLive = Layer.scoped(
  WebhookClient,
  Effect.gen(function*() {
    const mode = yield* AppConfig.Mode
    const agent = yield* Effect.acquireRelease(
      Effect.sync(() =>
        new Agent({
          keepAliveTimeout: 10_000,
          ...(mode === "production" ? { connect: { lookup: guardedLookup } } : {})
        })
      ),
      (agent) => Effect.promise(() => agent.close())
    )
    return NodeHttpClient.makeUndici(agent)
  })
)
