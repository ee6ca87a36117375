import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { detailBody } from "../Domain/Errors.js"

export const Health = Schema.Struct({
  status: Schema.Literal("ok"),
  database: Schema.optionalWith(Schema.String, { exact: true })
}).annotations({ identifier: "Health" })

export class NotReady extends Schema.TaggedError<NotReady>()("NotReady", { detail: Schema.String }) {}

/** `{"detail": ...}` on the wire, as every error (docs/api.md). */
export const NotReadyBody = detailBody(NotReady, 503, "The database is unreachable, too slow (2 s) or not migrated")

export class HealthApi extends HttpApiGroup.make("health")
  .add(
    HttpApiEndpoint.get("live", "/health/live")
      .addSuccess(Health)
      .annotate(OpenApi.Summary, "The process is up")
  )
  .add(
    HttpApiEndpoint.get("ready", "/health/ready")
      .addSuccess(Health)
      .addError(NotReadyBody)
      .annotate(OpenApi.Summary, "The database is reachable and migrated")
  )
{}
