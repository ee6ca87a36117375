/** What answered each customer message of a conversation, and what produced it (`reply_metadata`). */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { ConversationsRepo } from "../Conversations/Repo.js"
import { NotFound } from "../Domain/Errors.js"
import type { Integration } from "../Domain/Integration.js"
import { orDieSql } from "../Sql.js"
import { ReplyRepo } from "./ReplyRepo.js"

const conversationNotFound = new NotFound({ detail: "Conversation not found" })

export class ReplyHistory extends Context.Service<ReplyHistory>()("Parley/ReplyHistory", {
  make: Effect.gen(function*() {
    const conversations = yield* ConversationsRepo
    const records = yield* ReplyRepo

    /** The replies of the integration's conversation `conversationId` (the integrator's id or Parley's), oldest first. */
    const list = Effect.fn("ReplyHistory.list")(function*(integration: Integration, conversationId: string) {
      const conversation = yield* conversations.findByAnyId({
        workspaceId: integration.workspaceId,
        integrationId: integration.integrationId,
        id: conversationId
      })
      if (Option.isNone(conversation)) return yield* Effect.fail(conversationNotFound)
      return yield* records.listByConversation(conversation.value.id)
    }, orDieSql)

    return { list } as const
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
  static readonly layer = this.layerWithoutDependencies.pipe(Layer.provide([ConversationsRepo.layer, ReplyRepo.layer]))
}
