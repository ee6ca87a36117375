/**
 * Standing instructions for the AI (docs/ai.md, "Business instructions"): short rules a workspace, or one
 * of its integrations, gives every reply ("never promise refunds; offer the returns form"). Versioned
 * like tones: a version is never changed; setting new instructions adds a version, and the newest one
 * of each scope is in force (an empty text clears the scope). A reply records the versions it followed.
 */
import * as Model from "effect/schema/Model"
import * as Schema from "effect/Schema"
import { CreatedAt, Internal } from "./Fields.js"
import { InstructionsId, IntegrationId, WorkspaceId } from "./Ids.js"
import { Text } from "./Primitives.js"

/** The most characters one version may have: instructions are rules, not a knowledge base. */
export const MAX_INSTRUCTIONS_CHARS = 2000

export class Instructions extends Model.Class<Instructions>("Instructions")({
  id: Model.GeneratedByDb(InstructionsId),
  workspaceId: Internal(WorkspaceId),
  /** The integration they are for; null: every integration of the workspace. */
  integrationId: Schema.NullOr(IntegrationId),
  /** Empty: the scope has no instructions from this version on. */
  text: Schema.String,
  createdAt: CreatedAt
}) {}

export const InstructionsJson = Instructions.json.annotate({
  identifier: "Instructions",
  description: "A version of standing instructions for the AI; the newest of each scope is in force"
})

export const NewInstructions = Schema.Struct({
  // Storable text (no NUL, no lone surrogate: PostgreSQL would refuse or alter it), at most the limit.
  text: Text.check(
    Schema.isMaxLength(MAX_INSTRUCTIONS_CHARS, {
      message: `Instructions should have at most ${MAX_INSTRUCTIONS_CHARS} characters`
    })
  ),
  integrationId: Schema.optionalKey(Schema.NullOr(IntegrationId))
}).annotate({
  identifier: "NewInstructions",
  description: "New instructions for the workspace (integrationId absent or null) or one integration; \"\" clears"
})
export type NewInstructions = typeof NewInstructions.Type

/** The versions a reply followed, as the replies record shows them. */
export const InstructionsUsed = Schema.Struct({
  id: InstructionsId,
  scope: Schema.Literals(["workspace", "integration"])
})
export type InstructionsUsed = typeof InstructionsUsed.Type
