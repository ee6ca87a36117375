/** A workspace and what it owns directly: API tokens and tones (docs/api.md). */
import * as Model from "@effect/sql/Model"
import * as Schema from "effect/Schema"
import { CreatedAt, Internal, InternalCreatedAt, NullableAt } from "./Fields.js"
import { TokenId, ToneId, WorkspaceId } from "./Ids.js"
import { nonEmptyString, Timestamp } from "./Primitives.js"

/** A name an operator gives: 1 to 200 characters. */
const Name = nonEmptyString(200)

export class Workspace extends Model.Class<Workspace>("Workspace")({
  id: Model.Generated(WorkspaceId),
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
export const WorkspaceSummary = Workspace.json.annotations({ identifier: "WorkspaceSummary" })
export const NewWorkspace = Workspace.jsonCreate.annotations({ identifier: "NewWorkspace" })

export const CreatedWorkspace = Schema.Struct({
  id: WorkspaceId,
  name: Schema.String,
  apiToken: Schema.String,
  webhookSecret: Schema.String
}).annotations({ identifier: "CreatedWorkspace", description: "The API token is shown only here." })

export const WorkspaceDetail = Schema.Struct({
  ...Workspace.json.fields,
  webhookSecret: Schema.String,
  webhookSecretEncryptedAtRest: Schema.Boolean
}).annotations({ identifier: "WorkspaceDetail" })

export const RotatedSecret = Schema.Struct({
  webhookSecret: Schema.String,
  previousSecretExpiresAt: Timestamp
}).annotations({
  identifier: "RotatedSecret",
  description: "Until previousSecretExpiresAt, webhooks are signed with both the new and the previous secret."
})

/** An API token: stored only as its SHA-256 hash. */
export class ApiToken extends Model.Class<ApiToken>("ApiToken")({
  id: Model.Generated(TokenId),
  workspaceId: Internal(WorkspaceId),
  tokenHash: Model.Sensitive(Schema.String),
  name: Model.Field({
    select: Schema.NullOr(Schema.String),
    insert: Schema.NullOr(Schema.String),
    json: Schema.NullOr(Schema.String),
    jsonCreate: Schema.optionalWith(Schema.NullOr(Name), { default: () => null })
  }),
  createdAt: CreatedAt,
  revokedAt: NullableAt
}) {}

export const TokenSummary = ApiToken.json.annotations({ identifier: "TokenSummary" })
export const NewToken = ApiToken.jsonCreate.annotations({ identifier: "NewToken" })

export const CreatedToken = Schema.Struct({
  id: TokenId,
  token: Schema.String
}).annotations({ identifier: "CreatedToken", description: "The token is shown only here." })

/** Tone instructions for the AI (`toneId`, `firstResponseToneId` of an integration). */
export class Tone extends Model.Class<Tone>("Tone")({
  id: Model.Generated(ToneId),
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

export const ToneJson = Tone.json.annotations({ identifier: "Tone" })
export const NewTone = Tone.jsonCreate.annotations({ identifier: "NewTone" })
