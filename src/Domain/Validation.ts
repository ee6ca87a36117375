/**
 * Validation failures in the spec's shape (FastAPI's convention):
 * `{"detail":[{"loc":["body","customerId"],"msg":"Field required","type":"missing"}]}`.
 *
 * Effect's ParseIssue tree is walked here, not its formatted text, so `type` is a stable machine word
 * taken from the schema itself: refinements and transformations may carry an `ErrorType` annotation.
 */
import * as Arr from "effect/Array"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as AST from "effect/SchemaAST"

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
  const msg = customMessage(ast, issue) ?? (annotated && customMessage(annotated, issue)) ?? reading.msg
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
      return [leaf({ ...ctx, inherited }, issue.ast, issue)]
    }
    case "Transformation": {
      const inherited = errorTypeOf(issue.ast) !== undefined ? issue.ast : ctx.inherited
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
