/**
 * Field kinds shared by the models (`Model.Class`): one class per entity, whose variants are the row
 * (`select`, `insert`, `update`) and the wire (`json`, `jsonCreate`, `jsonUpdate`). A field below says
 * once how a column is read and written and whether, and how, the wire shows it.
 */
import * as Model from "@effect/sql/Model"
import * as Schema from "effect/Schema"
import { Timestamp } from "./Primitives.js"

/** A column the wire never shows (written on insert and update). */
export const Internal = <S extends Schema.Schema.All>(schema: S) => Model.FieldExcept("json", "jsonCreate", "jsonUpdate")(schema)

/** Set by the database (a default or a sequence): read, never written; not on the wire. */
export const Generated = <S extends Schema.Schema.All>(schema: S) => Model.FieldOnly("select")(schema)

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
export const Jsonb = <A, I>(schema: Schema.Schema<A, I>) =>
  Model.Field({ select: schema, insert: Schema.parseJson(schema), update: Schema.parseJson(schema), json: schema })

/** A nullable `jsonb` column. */
export const NullableJsonb = <A, I>(schema: Schema.Schema<A, I>) =>
  Model.Field({
    select: Schema.NullOr(schema),
    insert: Schema.NullOr(Schema.parseJson(schema)),
    update: Schema.NullOr(Schema.parseJson(schema)),
    json: Schema.NullOr(schema)
  })

/** A nullable `jsonb` column the wire never shows. */
export const InternalJsonb = <A, I>(schema: Schema.Schema<A, I>) =>
  Model.Field({
    select: Schema.NullOr(schema),
    insert: Schema.NullOr(Schema.parseJson(schema)),
    update: Schema.NullOr(Schema.parseJson(schema))
  })

/** A `bigint` column (PostgreSQL sends it as text), set by the database, not on the wire. */
export const Sequence = Generated(Schema.NumberFromString)

/** A field whose column has another name than the field (the wire's name). */
export const column = <A, I>(schema: Schema.Schema<A, I>, name: string) =>
  Schema.propertySignature(schema).pipe(Schema.fromKey(name))
