import * as Model from "effect/schema/Model"
import * as Schema from "effect/Schema"
import { Internal, InternalCreatedAt, NullableJsonb } from "./Fields.js"
import { CustomerId, WorkspaceId } from "./Ids.js"
import { JsonObject, optionalNullable } from "./Primitives.js"

/** docs/api.md: every field optional and nullable. */
export const Account = Schema.Struct({
  id: optionalNullable(Schema.String),
  name: optionalNullable(Schema.String),
  email: optionalNullable(Schema.String),
  website: optionalNullable(Schema.String),
  customFields: optionalNullable(JsonObject)
}).annotate({ identifier: "Account" })
export type Account = typeof Account.Type

/**
 * A customer of a workspace (docs/api.md). Ids are per workspace: integrators may choose them. Every
 * field is sent in responses (null when unknown).
 */
export class Customer extends Model.Class<Customer>("Customer")({
  id: CustomerId,
  workspaceId: Internal(WorkspaceId),
  userId: Schema.NullOr(Schema.String),
  email: Schema.NullOr(Schema.String),
  firstName: Schema.NullOr(Schema.String),
  lastName: Schema.NullOr(Schema.String),
  phoneNumber: Schema.NullOr(Schema.String),
  location: Schema.NullOr(Schema.String),
  ip: Schema.NullOr(Schema.String),
  isVisitor: Schema.Boolean,
  visitorId: Schema.NullOr(CustomerId),
  customFields: NullableJsonb(JsonObject),
  fields: NullableJsonb(JsonObject),
  account: NullableJsonb(Account),
  createdAt: InternalCreatedAt
}) {}

export const CustomerJson = Customer.json.annotate({ identifier: "Customer" })

/** What a helpdesk or a message tells about a customer; absent fields keep their stored value. */
export interface CustomerFacts {
  readonly email?: string | null
  readonly firstName?: string | null
  readonly lastName?: string | null
  readonly phoneNumber?: string | null
}
