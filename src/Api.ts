/**
 * The whole HTTP interface as one `HttpApi`: the server implements it, `/openapi.json` is generated
 * from it, and TypeScript integrators build a typed client from it (see `src/index.ts`).
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as OpenApi from "@effect/platform/OpenApi"
import { AdminApi } from "./Admin/Api.js"
import { RepliesApi } from "./Ai/Api.js"
import { WebhooksApi } from "./Conversations/Api.js"
import { CustomersApi } from "./Customers/Api.js"
import { DeliveriesApi } from "./Delivery/Api.js"
import { finishDocument, webhookSchemas, webhooksSection } from "./Delivery/WebhooksOpenApi.js"
import { PayloadTooLargeBody, ValidationErrorBody } from "./Domain/Errors.js"
import { HealthApi } from "./Health/Api.js"
import { HelpdeskApi } from "./Helpdesk/Api.js"
import { IntegrationsApi } from "./Integrations/Api.js"

/** What integrators call with a workspace's API token. */
export class PublicApi extends HttpApi.make("parley")
  .add(CustomersApi)
  .add(IntegrationsApi)
  .add(WebhooksApi)
  .add(HelpdeskApi)
  .add(DeliveriesApi)
  .add(RepliesApi)
  .add(HealthApi)
  .addError(ValidationErrorBody)
  .addError(PayloadTooLargeBody)
  .annotate(OpenApi.Title, "Parley")
  .annotate(OpenApi.Version, "1")
  .annotate(
    OpenApi.Description,
    "AI customer-support integration service. Errors are FastAPI-shaped: {\"detail\": ...}; validation " +
      "failures answer 422 with detail[{loc,msg,type}]. An unexpected failure answers 500 " +
      "{\"detail\":\"Internal error\",\"traceId\":\"...\"}. The events Parley sends to an integration's " +
      "webhook.url are in the webhooks section."
  )
  // Outbound events (OpenAPI 3.1 `webhooks`): their envelopes are components, the operations refer to them.
  .annotate(HttpApi.AdditionalSchemas, webhookSchemas)
  .annotate(OpenApi.Override, { webhooks: webhooksSection })
  .annotate(OpenApi.Transform, finishDocument)
{}

/** Everything Parley serves: the public API and the operators' admin API. */
export class Api extends PublicApi.add(AdminApi) {}
