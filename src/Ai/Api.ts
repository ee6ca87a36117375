import * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import * as HttpApiGroup from "effect/http-api/HttpApiGroup"
import * as OpenApi from "effect/http-api/OpenApi"
import * as Schema from "effect/Schema"
import { WorkspaceAuth } from "../Auth/Api.js"
import { NotFoundBody } from "../Domain/Errors.js"
import { IntegrationId } from "../Domain/Ids.js"
import { ExternalId } from "../Domain/Primitives.js"
import { ReplyRecordJson } from "../Domain/Reply.js"

const ConversationPath = Schema.Struct({ integration_id: IntegrationId, conversation_id: ExternalId })

/** How each AI reply was produced: for integrators' audits and cost tracking. */
export class RepliesApi extends HttpApiGroup.make("replies")
  .add(
    HttpApiEndpoint.get("list", "/v1/integration/:integration_id/conversations/:conversation_id/replies", {
      params: ConversationPath,
      success: Schema.Array(ReplyRecordJson).annotate({ description: "One record per answered customer message, oldest first" }),
      error: NotFoundBody
    })
      .annotate(OpenApi.Summary, "What answered each customer message of a conversation, and what produced it")
      .annotate(
        OpenApi.Description,
        "One record per answered customer message (the trigger), oldest first: the action (answer, escalate, " +
          "close), the message sent if any, provider, model, input and output tokens (reply, title and summary " +
          "calls), model turns, latency, the knowledge-base passages used with their links, and the error when " +
          "the model was unavailable. conversation_id is your conversation id or Parley's."
      )
  )
  .middleware(WorkspaceAuth)
  .annotate(OpenApi.Description, "How each AI reply was produced: action, model, tokens, latency, passages used.")
{}
