/**
 * Validation failures in the API's shape (FastAPI's convention):
 * `{"detail":[{"loc":["body","customerId"],"msg":"Field required","type":"missing"}]}`.
 *
 * Effect's issue tree (`SchemaIssue`) is walked here, not its formatted text, so `type` is a stable
 * machine word taken from the schema itself: filters and transformations may carry an `errorType`
 * annotation, and `message` says it for a person.
 */
import * as Effect from "effect/Effect"
import type * as JsonSchema from "effect/JsonSchema"
import * as Schema from "effect/Schema"
import type * as SchemaAST from "effect/SchemaAST"
import * as SchemaGetter from "effect/SchemaGetter"
import * as SchemaIssue from "effect/SchemaIssue"
import { isDeepStrictEqual } from "node:util"

declare module "effect/Schema" {
  namespace Annotations {
    interface Annotations {
      /** The machine word a 422 reports when this schema, filter or transformation rejects a value. */
      readonly errorType?: string | undefined
    }
  }
}

export type Location = "body" | "path" | "query" | "header"

export const ValidationItem = Schema.Struct({
  loc: Schema.Array(Schema.Union([Schema.String, Schema.Int])),
  msg: Schema.String,
  type: Schema.String
}).annotate({ identifier: "ValidationItem" })
export type ValidationItem = typeof ValidationItem.Type

/** What a node of the issue tree may carry: an `errorType` and a `message`. */
interface Said {
  readonly errorType: string | undefined
  readonly message: string | undefined
}

const said = (annotations: Schema.Annotations.Annotations | undefined): Said => ({
  errorType: typeof annotations?.errorType === "string" ? annotations.errorType : undefined,
  message: typeof annotations?.["message"] === "string" ? annotations["message"] : undefined
})

const nothing: Said = { errorType: undefined, message: undefined }

/** What a value of this kind should have been, FastAPI's words. */
const reading = (ast: SchemaAST.AST): { readonly type: string; readonly msg: string } => {
  switch (ast._tag) {
    case "String":
    case "TemplateLiteral":
      return { type: "string_type", msg: "Input should be a valid string" }
    case "Number":
      return { type: "number_type", msg: "Input should be a valid number" }
    case "Boolean":
      return { type: "bool_type", msg: "Input should be a valid boolean" }
    case "Objects":
      return { type: "dict_type", msg: "Input should be a valid object" }
    case "Arrays":
      return { type: "list_type", msg: "Input should be a valid list" }
    case "Literal":
      return { type: "literal_error", msg: `Input should be ${JSON.stringify(ast.literal)}` }
    case "Null":
      return { type: "none_required", msg: "Input should be null" }
    case "Union": {
      const members = ast.types.filter((t) => t._tag !== "Null" && t._tag !== "Undefined")
      if (members.length > 0 && members.every((t) => t._tag === "Literal")) {
        return {
          type: "literal_error",
          msg: `Input should be ${members.map((t) => t._tag === "Literal" ? JSON.stringify(t.literal) : "").join(", ")}`
        }
      }
      const readings = members.map(reading)
      return readings.length === 1 ? readings[0]! : { type: "union_type", msg: "Input does not match any allowed type" }
    }
    default:
      return { type: "value_error", msg: "Input is not valid" }
  }
}

const located = (path: ReadonlyArray<PropertyKey>) => path.map((k) => (typeof k === "number" ? k : String(k)))

interface Context {
  readonly path: ReadonlyArray<PropertyKey>
  /** The nearest enclosing filter or transformation that named its failure (`errorType`, `message`). */
  readonly inherited: Said
}

const item = (ctx: Context, type: string, msg: string): ValidationItem => ({ loc: located(ctx.path), msg, type })

const isNullish = (issue: SchemaIssue.Issue) =>
  issue._tag === "InvalidType" && (issue.ast._tag === "Null" || issue.ast._tag === "Undefined")

const walk = (issue: SchemaIssue.Issue, ctx: Context): Array<ValidationItem> => {
  switch (issue._tag) {
    case "Pointer":
      return walk(issue.issue, { ...ctx, path: [...ctx.path, ...issue.path] })
    case "Composite":
      return issue.issues.flatMap((inner) => walk(inner, ctx))
    case "AnyOf": {
      // `NullOr`/`optional` add null/undefined members: the complaint worth reporting is the real member's.
      const real = issue.issues.filter((member) => !isNullish(member))
      if (real.length === 1) return walk(real[0]!, ctx)
      const own = said(issue.ast.annotations)
      const r = reading(issue.ast)
      return [item(ctx, own.errorType ?? ctx.inherited.errorType ?? r.type, own.message ?? ctx.inherited.message ?? r.msg)]
    }
    case "MissingKey":
      return [item(ctx, "missing", "Field required")]
    case "UnexpectedKey":
      return [item(ctx, "extra_forbidden", "Extra inputs are not permitted")]
    case "Forbidden":
      return [item(ctx, "value_error", said(issue.annotations).message ?? "Input is not allowed")]
    case "OneOf":
      return [item(ctx, "value_error", "Input matches more than one allowed type")]
    case "InvalidType": {
      // A value of the wrong kind: the kind's words, unless the schema itself names its failure.
      const own = said(issue.ast.annotations)
      const r = reading(issue.ast)
      return [item(ctx, own.errorType ?? r.type, own.message ?? r.msg)]
    }
    case "InvalidValue": {
      const own = said(issue.annotations)
      return [
        item(ctx, own.errorType ?? ctx.inherited.errorType ?? "value_error", own.message ?? ctx.inherited.message ?? "Input is not valid")
      ]
    }
    case "Filter": {
      const own = said(issue.filter.annotations)
      const inherited: Said = {
        errorType: own.errorType ?? ctx.inherited.errorType,
        message: own.message ?? (own.errorType !== undefined ? undefined : ctx.inherited.message)
      }
      // A filter that names where, inside the value, the problem is: its message is the inner one.
      if (issue.issue._tag === "Pointer" || issue.issue._tag === "Composite") {
        return walk(issue.issue, { ...ctx, inherited: { errorType: inherited.errorType, message: undefined } })
      }
      const inner = issue.issue._tag === "InvalidValue" ? said(issue.issue.annotations) : nothing
      return [
        item(
          ctx,
          inner.errorType ?? inherited.errorType ?? "value_error",
          own.message ?? inner.message ?? inherited.message ?? "Input is not valid"
        )
      ]
    }
    case "Encoding": {
      // A transformation that failed; it may report problems located inside its input (`withAliases`).
      const own = said(issue.ast.annotations)
      const inherited: Said = {
        errorType: own.errorType ?? ctx.inherited.errorType,
        message: own.message ?? ctx.inherited.message
      }
      if (issue.issue._tag === "InvalidValue") {
        const inner = said(issue.issue.annotations)
        return [
          item(ctx, inner.errorType ?? inherited.errorType ?? "value_error", inner.message ?? inherited.message ?? "Input is not valid")
        ]
      }
      return walk(issue.issue, { ...ctx, inherited })
    }
  }
}

/**
 * Every problem in `issue`, located under `location` (`body`, `path`, `query` or `header`): one per
 * place, the first check that failed there (a value that is not a number is not also out of range).
 */
export const formatIssue = (location: Location, issue: SchemaIssue.Issue): Array<ValidationItem> => {
  const seen = new Set<string>()
  return walk(issue, { path: [location], inherited: nothing }).filter((problem) => {
    const at = JSON.stringify(problem.loc)
    if (seen.has(at)) return false
    seen.add(at)
    return true
  })
}

/** A failure at a place inside a value, for a filter or a transformation to report. */
export const problemAt = (path: ReadonlyArray<PropertyKey>, message: string, errorType?: string): SchemaIssue.Issue =>
  new SchemaIssue.Pointer(path, new SchemaIssue.InvalidValue({ message, ...(errorType === undefined ? {} : { errorType }) }))

/** A JSON Schema with the `$ref`s to its own `$defs` written out, for use as one property's documentation. */
const inline = (schema: unknown, defs: JsonSchema.Definitions): unknown => {
  if (Array.isArray(schema)) return schema.map((item) => inline(item, defs))
  if (typeof schema !== "object" || schema === null) return schema
  const ref = "$ref" in schema && typeof schema.$ref === "string" ? /^#\/\$defs\/(.+)$/.exec(schema.$ref) : null
  if (ref !== null) return inline(defs[ref[1] ?? ""], defs)
  return Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, inline(value, defs)]))
}

/**
 * What the OpenAPI document shows of a `withAliases` body: every spelling of every field, each
 * documented as its field; `required` is the fields the struct requires, in their reference spelling.
 */
const aliasedDocument = (canonical: Schema.Top, aliases: Readonly<Record<string, string>>): JsonSchema.JsonSchema => {
  const made = Schema.toJsonSchemaDocument(canonical, { onExcessProperty: "error" })
  const properties = inline(made.schema["properties"] ?? {}, made.definitions)
  const documented: Record<string, unknown> = {}
  if (typeof properties === "object" && properties !== null) {
    for (const [name, documentation] of Object.entries(properties)) {
      documented[name] = documentation
      for (const [alias, field] of Object.entries(aliases)) if (field === name) documented[alias] = documentation
    }
  }
  return { properties: documented, required: made.schema["required"] ?? [], additionalProperties: false }
}

/**
 * A struct of `fields` that also accepts other spellings of some of them, e.g. `{ sent_at: "sentAt" }`.
 * An alias is renamed to its field before the struct decodes, so every problem is reported once, at the
 * field's name; both spellings with different values fail at the alias (`conflicting_alias`). The wire
 * side only documents (`aliasedDocument`, named and described by `annotations`): the checks are the struct's.
 */
export const withAliases = <Fields extends Schema.Struct.Fields>(
  fields: Fields,
  aliases: Readonly<Record<string, string>>,
  annotations: { readonly identifier: string; readonly description: string }
) => {
  const canonical = Schema.Struct(fields)
  const Wire = Schema.Record(Schema.String, Schema.Any).check(
    Schema.makeFilter(() => true, { toJsonSchema: () => aliasedDocument(canonical, aliases) })
  ).annotate(annotations)
  const Body = Schema.Record(Schema.String, Schema.Unknown)
  const renamed = Wire.pipe(
    Schema.decodeTo(Body, {
      decode: SchemaGetter.transformEffect((input: { readonly [x: string]: unknown }) => {
        const out: Record<string, unknown> = { ...input }
        const conflicts: Array<SchemaIssue.Issue> = []
        for (const [alias, name] of Object.entries(aliases)) {
          if (!(alias in out)) continue
          if (name in out && !isDeepStrictEqual(out[name], out[alias])) {
            conflicts.push(problemAt(
              [alias],
              `Both ${name} and ${alias} were sent with different values; send one spelling`,
              "conflicting_alias"
            ))
            continue
          }
          out[name] = out[alias]
          delete out[alias]
        }
        const [first, ...rest] = conflicts
        return first === undefined
          ? Effect.succeed(out)
          : Effect.fail(new SchemaIssue.Composite(Body.ast, [first, ...rest]))
      }),
      encode: SchemaGetter.passthrough()
    })
  )
  return renamed.pipe(Schema.decodeTo(canonical))
}
