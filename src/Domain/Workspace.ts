/** A workspace and what it owns directly: API tokens and tones (docs/api.md). */
import * as Model from "effect/schema/Model"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { CreatedAt, Internal, InternalCreatedAt, NullableAt } from "./Fields.js"
import { TokenId, ToneId, WorkspaceId } from "./Ids.js"
import { nonEmptyString, Timestamp } from "./Primitives.js"

/** A name an operator gives: 1 to 200 characters. */
const Name = nonEmptyString(200)

export class Workspace extends Model.Class<Workspace>("Workspace")({
  id: Model.GeneratedByDb(WorkspaceId),
  name: Model.Field({
    select: Schema.String,
    insert: Schema.String,
    update: Schema.String,
    json: Schema.String,
    jsonCreate: Name
  }),
  /** Sealed (AES-256-GCM) when an encryption key is configured; never on the wire as stored. */
  webhookSecret: Model.Sensitive(Schema.String),
  previousWebhookSecret: Model.Sensitive(Schema.NullOr(Schema.String)),
  previousSecretExpiresAt: Model.Sensitive(Schema.NullOr(Schema.DateTimeUtcFromDate)),
  createdAt: CreatedAt
}) {}

/** What the admin API lists. */
export const WorkspaceSummary = Workspace.json.annotate({ identifier: "WorkspaceSummary" })
export const NewWorkspace = Workspace.jsonCreate.annotate({ identifier: "NewWorkspace" })

export const CreatedWorkspace = Schema.Struct({
  id: WorkspaceId,
  name: Schema.String,
  apiToken: Schema.String,
  webhookSecret: Schema.String
}).annotate({
  identifier: "CreatedWorkspace",
  description: "The new workspace, its first API token and its webhook secret. The API token is shown only here."
})

export const WorkspaceDetail = Schema.Struct({
  ...Workspace.json.fields,
  webhookSecret: Schema.String,
  webhookSecretEncryptedAtRest: Schema.Boolean
}).annotate({ identifier: "WorkspaceDetail", description: "A workspace with its current webhook secret" })

export const RotatedSecret = Schema.Struct({
  webhookSecret: Schema.String,
  previousSecretExpiresAt: Timestamp
}).annotate({
  identifier: "RotatedSecret",
  description: "Until previousSecretExpiresAt, webhooks are signed with both the new and the previous secret."
})

/** An API token: stored only as its SHA-256 hash. */
export class ApiToken extends Model.Class<ApiToken>("ApiToken")({
  id: Model.GeneratedByDb(TokenId),
  workspaceId: Internal(WorkspaceId),
  tokenHash: Model.Sensitive(Schema.String),
  name: Model.Field({
    select: Schema.NullOr(Schema.String),
    insert: Schema.NullOr(Schema.String),
    json: Schema.NullOr(Schema.String),
    jsonCreate: Schema.NullOr(Name).pipe(Schema.withDecodingDefaultTypeKey(Effect.succeed(null)))
  }),
  createdAt: CreatedAt,
  revokedAt: NullableAt
}) {}

export const TokenSummary = ApiToken.json.annotate({ identifier: "TokenSummary" })
export const NewToken = ApiToken.jsonCreate.annotate({ identifier: "NewToken" })

export const CreatedToken = Schema.Struct({
  id: TokenId,
  token: Schema.String
}).annotate({ identifier: "CreatedToken", description: "The new API token. The token is shown only here." })

/** Tone instructions for the AI (`toneId`, `firstResponseToneId` of an integration). */
export class Tone extends Model.Class<Tone>("Tone")({
  id: Model.GeneratedByDb(ToneId),
  workspaceId: Internal(WorkspaceId),
  name: Model.Field({ select: Schema.String, insert: Schema.String, json: Schema.String, jsonCreate: Name }),
  instructions: Model.Field({
    select: Schema.String,
    insert: Schema.String,
    json: Schema.String,
    jsonCreate: nonEmptyString(8000)
  }),
  createdAt: InternalCreatedAt
}) {}

export const ToneJson = Tone.json.annotate({ identifier: "Tone", description: "A tone: instructions for the AI's replies" })
export const NewTone = Tone.jsonCreate.annotate({ identifier: "NewTone" })
