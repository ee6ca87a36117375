/**
 * The whole HTTP interface as one `HttpApi`: the server implements it, `/openapi.json` is generated
 * from it, and TypeScript integrators build a typed client from it (see `src/index.ts`).
 */
import * as HttpApi from "effect/http-api/HttpApi"
import * as HttpApiMiddleware from "effect/http-api/HttpApiMiddleware"
import * as HttpApiSchema from "effect/http-api/HttpApiSchema"
import * as OpenApi from "effect/http-api/OpenApi"
import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"
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

/**
 * Parley's own failure (a defect): logged with the trace id the answer carries, never a stack trace.
 * The server answers it from its edge (`Http.ts`); the class is what the typed client fails with.
 */
export class InternalError extends Schema.TaggedError<InternalError>()("InternalError", {
  detail: Schema.String,
  traceId: Schema.String
}) {}

const INTERNAL = "Parley's own failure, never the caller's mistake; quote traceId when reporting it"

const InternalErrorBody = Schema.Struct({
  detail: Schema.Literal("Internal error"),
  traceId: Schema.String.annotate({ description: "The request's trace id, as in Parley's logs and traces." })
}).annotate({ identifier: "500Error", description: INTERNAL }).pipe(
  Schema.decodeTo(
    Schema.instanceOf(InternalError),
    SchemaTransformation.transform({
      decode: (body) => new InternalError(body),
      encode: (error) => ({ detail: "Internal error" as const, traceId: error.traceId })
    })
  ),
  HttpApiSchema.status(500)
).annotate({ description: INTERNAL })

/**
 * What every endpoint may answer besides its own errors: a request that does not validate (422
 * `detail[{loc,msg,type}]`), a body over the limit (413) and Parley's own failure (500). Declared once
 * here, on every endpoint, for the OpenAPI document and the typed client; the server's side (`Http.ts`)
 * turns HttpApi's own decoding failures into the 422 and answers the 413 and the 500 at its edge. What
 * authenticated endpoints answer besides (401, 429, 503) is declared with their authentication
 * (`Auth/Api.ts`).
 */
export class RequestFailures extends HttpApiMiddleware.Service<RequestFailures>()("Parley/RequestFailures", {
  error: [ValidationErrorBody, PayloadTooLargeBody, InternalErrorBody]
}) {}

/** What integrators call with a workspace's API token. */
export class PublicApi extends HttpApi.make("parley")
  .add(CustomersApi)
  .add(IntegrationsApi)
  .add(WebhooksApi)
  .add(HelpdeskApi)
  .add(DeliveriesApi)
  .add(RepliesApi)
  .add(HealthApi)
  .middleware(RequestFailures)
  // Every problem of a request is reported, not only the first (docs/api.md).
  .annotate(HttpApi.ParseOptions, { errors: "all" })
  .annotate(OpenApi.Title, "Parley")
  .annotate(OpenApi.Version, "1")
  .annotate(OpenApi.License, { name: "MIT", identifier: "MIT" })
  // Every instance serves this document about itself: paths are relative to wherever it was fetched.
  .annotate(OpenApi.Servers, [{ url: "/", description: "The Parley instance serving this document" }])
  .annotate(
    OpenApi.Description,
    "AI customer-support integration service. Errors are FastAPI-shaped: {\"detail\": ...}; validation " +
      "failures answer 422 with detail[{loc,msg,type}], a body over the limit 413, a missing or invalid token 401 " +
      "(WWW-Authenticate: Bearer), the token's rate limit 429 and the database out of reach 503 (both with " +
      "Retry-After). An unexpected failure answers 500 {\"detail\":\"Internal error\",\"traceId\":\"...\"}. " +
      "No CORS headers are sent: call the API from a server. The events Parley sends to an integration's " +
      "webhook.url are in the webhooks section."
  )
  // Outbound events (OpenAPI 3.1 `webhooks`): their envelopes are components, the operations refer to them.
  .annotate(HttpApi.AdditionalSchemas, webhookSchemas)
  .annotate(OpenApi.Override, { webhooks: webhooksSection })
  .annotate(OpenApi.Transform, finishDocument)
{}

/** Everything Parley serves: the public API and the operators' admin API. */
export class Api extends PublicApi.add(AdminApi.middleware(RequestFailures)) {}
