/**
 * Field kinds shared by the models (`Model.Class`): one class per entity, whose variants are the row
 * (`select`, `insert`, `update`) and the wire (`json`, `jsonCreate`, `jsonUpdate`). A field below says
 * once how a column is read and written and whether, and how, the wire shows it.
 */
import * as Schema from "effect/Schema"
import * as Model from "effect/schema/Model"
import { DbNumber, Timestamp } from "./Primitives.js"

/** A column the wire never shows (written on insert and update). */
export const Internal = <S extends Schema.Top>(schema: S) => Model.FieldExcept(["json", "jsonCreate", "jsonUpdate"])(schema)

/** Set by the database (a default or a sequence): read, never written; not on the wire. */
export const Generated = <S extends Schema.Top>(schema: S) => Model.FieldOnly(["select"])(schema)

/** A timestamp column: a `Date` from PostgreSQL, ISO 8601 UTC with `Z` on the wire. */
export const At = Model.Field({
  select: Schema.DateTimeUtcFromDate,
  insert: Schema.DateTimeUtcFromDate,
  update: Schema.DateTimeUtcFromDate,
  json: Timestamp
})

/** A nullable timestamp column. */
export const NullableAt = Model.Field({
  select: Schema.NullOr(Schema.DateTimeUtcFromDate),
  insert: Schema.NullOr(Schema.DateTimeUtcFromDate),
  update: Schema.NullOr(Schema.DateTimeUtcFromDate),
  json: Schema.NullOr(Timestamp)
})

/** A timestamp the database sets (`DEFAULT now()`), shown on the wire. */
export const CreatedAt = Model.Field({ select: Schema.DateTimeUtcFromDate, json: Timestamp })

/** A timestamp the database sets, not shown on the wire. */
export const InternalCreatedAt = Generated(Schema.DateTimeUtcFromDate)

/** A `jsonb` column: PostgreSQL returns the object; it is written as JSON text. */
export const Jsonb = <S extends Schema.Top>(schema: S) =>
  Model.Field({ select: schema, insert: Schema.fromJsonString(schema), update: Schema.fromJsonString(schema), json: schema })

/** A nullable `jsonb` column. */
export const NullableJsonb = <S extends Schema.Top>(schema: S) =>
  Model.Field({
    select: Schema.NullOr(schema),
    insert: Schema.NullOr(Schema.fromJsonString(schema)),
    update: Schema.NullOr(Schema.fromJsonString(schema)),
    json: Schema.NullOr(schema)
  })

/** A nullable `jsonb` column the wire never shows. */
export const InternalJsonb = <S extends Schema.Top>(schema: S) =>
  Model.Field({
    select: Schema.NullOr(schema),
    insert: Schema.NullOr(Schema.fromJsonString(schema)),
    update: Schema.NullOr(Schema.fromJsonString(schema))
  })

/** A `bigint` column, set by the database, not on the wire. */
export const Sequence = Generated(DbNumber)
