/**
 * The parts of an OpenAPI document the tests read (other keys are ignored; a document of another shape
 * fails to decode), and the document Parley serves: `HttpApiBuilder` serves `OpenApi.fromApi(Api)`.
 */
import * as Schema from "effect/Schema"

const Header = Schema.Struct({ required: Schema.Boolean, schema: Schema.Unknown })
const Media = Schema.Record(Schema.String, Schema.Struct({ schema: Schema.Unknown }))
const Response = Schema.Struct({
  description: Schema.String,
  headers: Schema.optionalKey(Schema.Record(Schema.String, Header)),
  content: Schema.optionalKey(Media)
})
const Parameter = Schema.Struct({ name: Schema.String, in: Schema.String, schema: Schema.Unknown })

export const Operation = Schema.Struct({
  operationId: Schema.String,
  summary: Schema.optionalKey(Schema.String),
  security: Schema.Array(Schema.Record(Schema.String, Schema.Array(Schema.String))),
  parameters: Schema.Array(Parameter),
  requestBody: Schema.optionalKey(Schema.Struct({ required: Schema.Boolean, content: Media })),
  responses: Schema.Record(Schema.String, Response)
})
export type Operation = typeof Operation.Type

export const Document = Schema.Struct({
  paths: Schema.Record(Schema.String, Schema.Record(Schema.String, Operation)),
  components: Schema.Struct({ schemas: Schema.Record(Schema.String, Schema.Unknown) })
})
export type Document = typeof Document.Type
