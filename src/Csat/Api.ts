import * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import * as OpenApi from "effect/http-api/OpenApi"
import { CsatRecordView, CsatResponse } from "../Domain/Csat.js"
import { NotFoundBody } from "../Domain/Errors.js"
import { IntegrationPath } from "../Integrations/Api.js"

/** Endpoint 5: served in the `webhooks` group (`Conversations/Api.ts`), beside message-received. */
export const CsatResponseReceived = HttpApiEndpoint.post(
  "csatResponseReceived",
  "/v1/webhooks/:integration_id/csat-response-received",
  {
    params: IntegrationPath,
    payload: CsatResponse,
    success: CsatRecordView,
    error: NotFoundBody
  }
)
  .annotate(OpenApi.Summary, "CSAT response received")
  .annotate(
    OpenApi.Description,
    "Stores the raw answer and its reading: a 1-5 score and good/bad. One per conversation; a later one replaces it."
  )
