/** CSAT answers synced from the integrator's system (docs/api.md). */
import * as SqlClient from "effect/sql/SqlClient"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { ConversationsRepo } from "../Conversations/Repo.js"
import type { CsatRecordView, CsatResponse } from "../Domain/Csat.js"
import { InvalidInput, NotFound } from "../Domain/Errors.js"
import type { Integration } from "../Domain/Integration.js"
import { orDieSql } from "../Sql.js"
import { CsatRepo } from "./Repo.js"
import { describeScale, read } from "./Scale.js"

const conversationNotFound = new NotFound({ detail: "Conversation not found" })

export class Csat extends Context.Service<Csat>()("Parley/Csat", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const repo = yield* CsatRepo
    const conversations = yield* ConversationsRepo

    const record = Effect.fn("Csat.record")(function*(integration: Integration, response: CsatResponse) {
      const ratingAnswer = String(response.ratingAnswer)
      const reading = read(response.ratingStyle, ratingAnswer)
      if (Option.isNone(reading)) {
        return yield* InvalidInput.one(["ratingAnswer"], `Answer does not fit a scale of ${response.ratingStyle}: expected ${describeScale(response.ratingStyle)}`, "rating_answer_invalid")
      }
      const conversation = yield* conversations.findByAnyId({
        workspaceId: integration.workspaceId,
        integrationId: integration.integrationId,
        id: response.conversationId
      }).pipe(
        Effect.flatMap(Option.match({ onNone: () => Effect.fail(conversationNotFound), onSome: Effect.succeed }))
      )
      const stored = yield* repo.replace({
        conversationId: conversation.id,
        ratingStyle: response.ratingStyle,
        ratingAnswer,
        csatComment: response.csatComment ?? null,
        score: reading.value.score,
        rating: reading.value.rating,
        isCurrent: true
      }).pipe(sql.withTransaction)
      return { ...stored, externalConversationId: conversation.externalId } satisfies CsatRecordView
    }, orDieSql)

    return { record } as const
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
  static readonly layer = this.layerWithoutDependencies.pipe(Layer.provide([CsatRepo.layer, ConversationsRepo.layer]))
}
