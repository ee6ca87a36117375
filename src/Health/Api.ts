import * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import * as HttpApiGroup from "effect/http-api/HttpApiGroup"
import * as OpenApi from "effect/http-api/OpenApi"
import * as Schema from "effect/Schema"
import { detailBody } from "../Domain/Errors.js"

export const Health = Schema.Struct({
  status: Schema.Literal("ok"),
  database: Schema.optionalKey(Schema.String)
}).annotate({
  identifier: "Health",
  description: "ok: the process is up (for readiness, also the database reachable and migrated)"
})

export class NotReady extends Schema.TaggedError<NotReady>()("NotReady", { detail: Schema.String }) {}

/** `{"detail": ...}` on the wire, as every error (docs/api.md). */
export const NotReadyBody = detailBody(NotReady, 503, "The database is unreachable, too slow (2 s) or not migrated")

export class HealthApi extends HttpApiGroup.make("health")
  .add(
    HttpApiEndpoint.get("live", "/health/live", { success: Health })
      .annotate(OpenApi.Summary, "The process is up")
  )
  .add(
    HttpApiEndpoint.get("ready", "/health/ready", { success: Health, error: NotReadyBody })
      .annotate(OpenApi.Summary, "The database is reachable and migrated")
  )
  .annotate(OpenApi.Description, "Probes for orchestrators, without a token.")
{}
