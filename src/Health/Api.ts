import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import * as Schema from "effect/Schema"

export const Health = Schema.Struct({
  status: Schema.Literal("ok"),
  database: Schema.optionalWith(Schema.String, { exact: true })
}).annotations({ identifier: "Health" })

export class NotReady extends Schema.TaggedError<NotReady>()(
  "NotReady",
  { detail: Schema.String },
  HttpApiSchema.annotations({ status: 503 })
) {}

export class HealthApi extends HttpApiGroup.make("health")
  .add(
    HttpApiEndpoint.get("live", "/health/live")
      .addSuccess(Health)
      .annotate(OpenApi.Summary, "The process is up")
  )
  .add(
    HttpApiEndpoint.get("ready", "/health/ready")
      .addSuccess(Health)
      .addError(NotReady)
      .annotate(OpenApi.Summary, "The database is reachable and migrated")
  )
{}
