import * as Schema from "effect/Schema"

/**
 * A UUID as PostgreSQL's `uuid` type reads it: 32 hex digits in the 8-4-4-4-12 form, any version or
 * variant (an integrator's own ids need not be RFC 9562 UUIDs; `Schema.isUUID` would refuse them).
 */
const uuid = Schema.String.check(
  Schema.isGUID({
    errorType: "uuid_parsing",
    message: "Input should be a valid UUID",
    toJsonSchema: () => ({ format: "uuid", pattern: "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$" })
  })
)

export const WorkspaceId = uuid.pipe(Schema.brand("WorkspaceId"))
export type WorkspaceId = typeof WorkspaceId.Type

export const IntegrationId = uuid.pipe(Schema.brand("IntegrationId"))
export type IntegrationId = typeof IntegrationId.Type

export const CustomerId = uuid.pipe(Schema.brand("CustomerId"))
export type CustomerId = typeof CustomerId.Type

export const ConversationId = uuid.pipe(Schema.brand("ConversationId"))
export type ConversationId = typeof ConversationId.Type

export const MessageId = uuid.pipe(Schema.brand("MessageId"))
export type MessageId = typeof MessageId.Type

export const TokenId = uuid.pipe(Schema.brand("TokenId"))
export type TokenId = typeof TokenId.Type

export const ToneId = uuid.pipe(Schema.brand("ToneId"))
export type ToneId = typeof ToneId.Type

export const CsatId = uuid.pipe(Schema.brand("CsatId"))
export type CsatId = typeof CsatId.Type

export const JobId = uuid.pipe(Schema.brand("JobId"))
export type JobId = typeof JobId.Type

export const EventId = uuid.pipe(Schema.brand("EventId"))
export type EventId = typeof EventId.Type

export const ArticleId = uuid.pipe(Schema.brand("ArticleId"))
export type ArticleId = typeof ArticleId.Type

export const InstructionsId = uuid.pipe(Schema.brand("InstructionsId"))
export type InstructionsId = typeof InstructionsId.Type
