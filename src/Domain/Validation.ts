/**
 * Validation failures in the API's shape (FastAPI's convention):
 * `{"detail":[{"loc":["body","customerId"],"msg":"Field required","type":"missing"}]}`.
 *
 * Effect's ParseIssue tree is walked here, not its formatted text, so `type` is a stable machine word
 * taken from the schema itself: refinements and transformations may carry an `ErrorType` annotation.
 */
import * as Arr from "effect/Array"
import * as JSONSchema from "effect/JSONSchema"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as AST from "effect/SchemaAST"
import { isDeepStrictEqual } from "node:util"

/** Annotation: the machine word a refinement or transformation reports when it fails. */
export const ErrorType: unique symbol = Symbol.for("parley/ErrorType")

export type Location = "body" | "path" | "query" | "header"

export const ValidationItem = Schema.Struct({
  loc: Schema.Array(Schema.Union(Schema.String, Schema.Number)),
  msg: Schema.String,
  type: Schema.String
})
export type ValidationItem = typeof ValidationItem.Type

const errorTypeOf = (ast: AST.AST): string | undefined => {
  const annotation = ast.annotations[ErrorType]
  return typeof annotation === "string" ? annotation : undefined
}

const customMessage = (ast: AST.AST, issue: ParseResult.ParseIssue): string | undefined =>
  Option.match(AST.getMessageAnnotation(ast), {
    onNone: () => undefined,
    onSome: (annotation) => {
      const out = annotation(issue)
      if (typeof out === "string") return out
      if (typeof out === "object" && out !== null && "message" in out && typeof out.message === "string") {
        return out.message
      }
      return undefined
    }
  })

const describeLiteral = (ast: AST.AST): string | undefined =>
  AST.isLiteral(ast) ? JSON.stringify(ast.literal) : undefined

const keywordReading = (ast: AST.AST): { readonly type: string; readonly msg: string } => {
  switch (ast._tag) {
    case "StringKeyword":
    case "TemplateLiteral":
      return { type: "string_type", msg: "Input should be a valid string" }
    case "NumberKeyword":
      return { type: "number_type", msg: "Input should be a valid number" }
    case "BooleanKeyword":
      return { type: "bool_type", msg: "Input should be a valid boolean" }
    case "TypeLiteral":
      return { type: "dict_type", msg: "Input should be a valid object" }
    case "TupleType":
      return { type: "list_type", msg: "Input should be a valid list" }
    case "Literal":
      return { type: "literal_error", msg: `Input should be ${JSON.stringify(ast.literal)}` }
    case "Union": {
      const literals = ast.types.map(describeLiteral)
      if (literals.every((l) => l !== undefined)) {
        return { type: "literal_error", msg: `Input should be ${literals.join(", ")}` }
      }
      const readings = ast.types.filter((t) => !(AST.isLiteral(t) && t.literal === null)).map(keywordReading)
      return readings.length === 1 ? readings[0]! : { type: "union_type", msg: "Input does not match any allowed type" }
    }
    case "Refinement":
      if (Option.getOrUndefined(AST.getIdentifierAnnotation(ast)) === "Int") {
        return { type: "int_type", msg: "Input should be a valid integer" }
      }
      return keywordReading(ast.from)
    case "Transformation":
      return keywordReading(ast.from)
    case "Declaration":
      return { type: "value_error", msg: "Input is not valid" }
    default:
      return { type: "value_error", msg: "Input is not valid" }
  }
}

const isNullish = (ast: AST.AST): boolean =>
  AST.isUndefinedKeyword(ast) || (AST.isLiteral(ast) && ast.literal === null)

type Context = { readonly path: ReadonlyArray<PropertyKey>; readonly inherited: AST.AST | undefined }

const leaf = (ctx: Context, ast: AST.AST, issue: ParseResult.ParseIssue): ValidationItem => {
  const annotated = errorTypeOf(ast) !== undefined ? ast : ctx.inherited
  const reading = keywordReading(ast)
  const type = (annotated && errorTypeOf(annotated)) ?? reading.type
  const own = issue._tag === "Type" ? issue.message : undefined
  const msg = customMessage(ast, issue) ?? own ?? (annotated && customMessage(annotated, issue)) ?? reading.msg
  return { loc: ctx.path.map((k) => (typeof k === "number" ? k : String(k))), msg, type }
}

const walk = (issue: ParseResult.ParseIssue, ctx: Context): Array<ValidationItem> => {
  switch (issue._tag) {
    case "Pointer":
      return walk(issue.issue, { ...ctx, path: [...ctx.path, ...Arr.ensure(issue.path)] })
    case "Composite": {
      if (AST.isUnion(issue.ast)) {
        // `optional`/`NullOr` add undefined/null members: the complaint worth reporting is the real member's.
        const real = Arr.ensure(issue.issues).filter((member) => !(member._tag === "Type" && isNullish(member.ast)))
        if (real.length === 1) return walk(real[0]!, ctx)
        // Otherwise one failure: what the field should have been, not every member's complaint.
        return [leaf(ctx, issue.ast, issue)]
      }
      return Arr.flatMap(Arr.ensure(issue.issues), (i) => walk(i, ctx))
    }
    case "Missing":
      return [{ loc: ctx.path.map((k) => (typeof k === "number" ? k : String(k))), msg: "Field required", type: "missing" }]
    case "Unexpected":
      return [{
        loc: ctx.path.map((k) => (typeof k === "number" ? k : String(k))),
        msg: "Extra inputs are not permitted",
        type: "extra_forbidden"
      }]
    case "Forbidden":
      return [{
        loc: ctx.path.map((k) => (typeof k === "number" ? k : String(k))),
        msg: issue.message ?? "Input is not allowed",
        type: "value_error"
      }]
    case "Refinement": {
      const inherited = errorTypeOf(issue.ast) !== undefined ? issue.ast : ctx.inherited
      if (issue.kind === "From") return walk(issue.issue, { ...ctx, inherited: ctx.inherited })
      // A filter that names where, inside the value, the problem is.
      if (issue.issue._tag === "Pointer") return walk(issue.issue, { ...ctx, inherited: issue.ast })
      return [leaf({ ...ctx, inherited }, issue.ast, issue)]
    }
    case "Transformation": {
      const inherited = errorTypeOf(issue.ast) !== undefined ? issue.ast : ctx.inherited
      // A transformation that reports problems located inside its input (e.g. `withAliases`).
      if (issue.kind === "Transformation" && (issue.issue._tag === "Composite" || issue.issue._tag === "Pointer")) {
        return walk(issue.issue, { ...ctx, inherited })
      }
      if (issue.kind === "Transformation") {
        const inner = issue.issue
        const msg = inner._tag === "Type" || inner._tag === "Forbidden" ? inner.message : undefined
        const item = leaf({ ...ctx, inherited }, issue.ast, issue)
        return [msg !== undefined && customMessage(issue.ast, issue) === undefined ? { ...item, msg } : item]
      }
      return walk(issue.issue, { ...ctx, inherited })
    }
    case "Type":
      return [leaf(ctx, issue.ast, issue)]
  }
}

/** Every problem in `issue`, located under `location` (`body`, `path`, `query` or `header`). */
export const formatIssue = (location: Location, issue: ParseResult.ParseIssue): Array<ValidationItem> =>
  walk(issue, { path: [location], inherited: undefined })

/** Inlines `$ref`s of a JSON Schema made by `JSONSchema.make`, for use as one property's documentation. */
const inline = (schema: unknown, defs: Readonly<Record<string, unknown>>): unknown => {
  if (Array.isArray(schema)) return schema.map((item) => inline(item, defs))
  if (typeof schema !== "object" || schema === null) return schema
  const ref = "$ref" in schema && typeof schema.$ref === "string" ? /^#\/\$defs\/(.+)$/.exec(schema.$ref) : null
  if (ref !== null) return inline(defs[ref[1] ?? ""], defs)
  return Object.fromEntries(
    Object.entries(schema).filter(([key]) => key !== "$schema" && key !== "$defs").map(([key, value]) => [key, inline(value, defs)])
  )
}

/** The type a struct field documents: its schema's, or its property signature's. */
const fieldType = (field: Schema.Struct.Field): AST.AST => {
  const ast = field.ast
  const type = ast._tag === "PropertySignatureDeclaration"
    ? ast.type
    : ast._tag === "PropertySignatureTransformation"
    ? ast.from.type
    : ast
  // An optional field's type is a union with `undefined`, which JSON has not.
  return AST.isUnion(type) ? AST.Union.make(type.types.filter((member) => !AST.isUndefinedKeyword(member))) : type
}

const documentation = (field: Schema.Struct.Field): object => {
  const made = JSONSchema.make(Schema.make(fieldType(field)))
  const defs = "$defs" in made && typeof made.$defs === "object" && made.$defs !== null ? made.$defs : {}
  const inlined = inline(made, defs)
  return typeof inlined === "object" && inlined !== null ? inlined : {}
}

/**
 * A struct of `fields` that also accepts other spellings of some of them, e.g. `{ sent_at: "sentAt" }`.
 * An alias is renamed to its field before `schema` decodes, so every problem is reported once, at the
 * field's name; both spellings with different values fail at the alias (`conflicting_alias`). The wire
 * side only documents: every spelling is an optional property there (the API's OpenAPI document shows
 * both); the checks are `schema`'s.
 */
export const withAliases = <Fields extends Schema.Struct.Fields>(
  fields: Fields,
  aliases: Readonly<Record<string, string>>
) => {
  const schema = Schema.Struct(fields)
  const documented = (field: Schema.Struct.Field) =>
    Schema.optionalWith(Schema.Unknown.annotations({ jsonSchema: documentation(field) }), { exact: true })
  const wire: Record<string, Schema.optionalWith<typeof Schema.Unknown, { exact: true }>> = {}
  for (const [name, field] of Object.entries(schema.fields)) {
    wire[name] = documented(field)
    for (const [alias, canonical] of Object.entries(aliases)) if (canonical === name) wire[alias] = documented(field)
  }
  const conflict = (alias: string, canonical: string) =>
    Schema.Unknown.annotations({
      [ErrorType]: "conflicting_alias",
      message: () => `Both ${canonical} and ${alias} were sent with different values; send one spelling`
    }).ast
  return Schema.transformOrFail(Schema.Struct(wire), schema, {
    strict: false,
    decode: (input, _, ast) => {
      const out: Record<string, unknown> = { ...input }
      const conflicts: Array<ParseResult.ParseIssue> = []
      for (const [alias, canonical] of Object.entries(aliases)) {
        if (!(alias in out)) continue
        if (canonical in out && !isDeepStrictEqual(out[canonical], out[alias])) {
          conflicts.push(new ParseResult.Pointer(alias, input, new ParseResult.Type(conflict(alias, canonical), out[alias])))
          continue
        }
        out[canonical] = out[alias]
        delete out[alias]
      }
      return Arr.isNonEmptyArray(conflicts)
        ? ParseResult.fail(new ParseResult.Composite(ast, input, conflicts))
        : ParseResult.succeed(out)
    },
    encode: (encoded) => ParseResult.succeed(encoded)
  }).annotations({ parseOptions: { errors: "all" } })
}
