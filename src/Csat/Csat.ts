/** CSAT answers synced from the integrator's system (spec 2.9, PRODUCT.md §4). */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { ConversationsRepo } from "../Conversations/Repo.js"
import type { CsatRecord, CsatResponse } from "../Domain/Csat.js"
import { invalid, NotFound } from "../Domain/Errors.js"
import type { IntegrationRow } from "../Integrations/Repo.js"
import { CsatRepo } from "./Repo.js"
import { describeScale, read } from "./Scale.js"

export class Csat extends Effect.Service<Csat>()("Parley/Csat", {
  dependencies: [CsatRepo.Default, ConversationsRepo.Default],
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const repo = yield* CsatRepo
    const conversations = yield* ConversationsRepo

    const record = Effect.fn("Csat.record")(function*(integration: IntegrationRow, response: CsatResponse) {
      const ratingAnswer = String(response.ratingAnswer)
      const reading = read(response.ratingStyle, ratingAnswer)
      if (Option.isNone(reading)) {
        return yield* invalid(
          ["body", "ratingAnswer"],
          `Answer does not fit a scale of ${response.ratingStyle}: expected ${describeScale(response.ratingStyle)}`,
          "rating_answer_invalid"
        )
      }
      const conversation = yield* conversations.findByAnyId({
        workspaceId: integration.workspaceId,
        integrationId: integration.id,
        id: response.conversationId
      }).pipe(
        Effect.orDie,
        Effect.flatMap(Option.match({
          onNone: () => Effect.fail(new NotFound({ detail: "Conversation not found" })),
          onSome: Effect.succeed
        }))
      )
      const row = yield* repo.replace({
        conversationId: conversation.id,
        ratingStyle: response.ratingStyle,
        ratingAnswer,
        csatComment: response.csatComment ?? null,
        score: reading.value.score,
        rating: reading.value.rating
      }).pipe(sql.withTransaction, Effect.orDie)
      return {
        id: row.id,
        conversationId: conversation.id,
        externalConversationId: conversation.externalId,
        ratingStyle: row.ratingStyle,
        ratingAnswer: row.ratingAnswer,
        csatComment: row.csatComment,
        score: reading.value.score,
        rating: row.rating,
        createdAt: row.createdAt
      } satisfies CsatRecord
    })

    return { record } as const
  })
}) {}
