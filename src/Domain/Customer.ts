import * as Schema from "effect/Schema"
import { CustomerId } from "./Ids.js"
import { JsonObject, optionalNullable } from "./Primitives.js"

export const Account = Schema.Struct({
  id: optionalNullable(Schema.String),
  name: optionalNullable(Schema.String),
  email: optionalNullable(Schema.String),
  website: optionalNullable(Schema.String),
  customFields: optionalNullable(JsonObject)
}).annotations({ identifier: "Account" })
export type Account = typeof Account.Type

/** Spec 2.1: every field optional and nullable; Parley always sends every field. */
export const Customer = Schema.Struct({
  id: optionalNullable(CustomerId),
  userId: optionalNullable(Schema.String),
  email: optionalNullable(Schema.String),
  firstName: optionalNullable(Schema.String),
  lastName: optionalNullable(Schema.String),
  phoneNumber: optionalNullable(Schema.String),
  location: optionalNullable(Schema.String),
  ip: optionalNullable(Schema.String),
  isVisitor: optionalNullable(Schema.Boolean),
  visitorId: optionalNullable(CustomerId),
  customFields: optionalNullable(JsonObject),
  fields: optionalNullable(JsonObject),
  account: optionalNullable(Account)
}).annotations({ identifier: "Customer" })
export type Customer = typeof Customer.Type
