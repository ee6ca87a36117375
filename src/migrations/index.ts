import * as Migrator from "effect/sql/Migrator"
import initial from "./0001_initial.js"
import deliveryAndKnowledge from "./0002_delivery_and_knowledge.js"
import typedJobs from "./0003_typed_jobs.js"
import fairQueue from "./0004_fair_queue.js"
import replyMetadata from "./0005_reply_metadata.js"
import aiSettings from "./0006_ai_settings.js"
import blockedJobs from "./0007_blocked_jobs.js"
import queueFunctions from "./0008_queue_functions.js"
import workspaceDeletion from "./0009_workspace_deletion.js"
import eventOrder from "./0010_event_order.js"
import deliveryScheduleOnJob from "./0011_delivery_schedule_on_job.js"
import guardrailsAndVerification from "./0012_guardrails_and_verification.js"
import conversationLanguage from "./0013_conversation_language.js"
import contextSummary from "./0014_context_summary.js"
import instructions from "./0015_instructions.js"
import dashboardIndexes from "./0016_dashboard_indexes.js"
import knowledgeGeneration from "./0017_knowledge_generation.js"

/** Numbered migrations, run in order at start. Never edit one after it has landed: add the next. */
const all = {
  "0001_initial": initial,
  "0002_delivery_and_knowledge": deliveryAndKnowledge,
  "0003_typed_jobs": typedJobs,
  "0004_fair_queue": fairQueue,
  "0005_reply_metadata": replyMetadata,
  "0006_ai_settings": aiSettings,
  "0007_blocked_jobs": blockedJobs,
  "0008_queue_functions": queueFunctions,
  "0009_workspace_deletion": workspaceDeletion,
  "0010_event_order": eventOrder,
  "0011_delivery_schedule_on_job": deliveryScheduleOnJob,
  "0012_guardrails_and_verification": guardrailsAndVerification,
  "0013_conversation_language": conversationLanguage,
  "0014_context_summary": contextSummary,
  "0015_instructions": instructions,
  "0016_dashboard_indexes": dashboardIndexes,
  "0017_knowledge_generation": knowledgeGeneration
}

export const migrations = Migrator.fromRecord(all)

/** The id of the newest migration; readiness requires the database to have it. */
export const latestMigrationId = Math.max(...Object.keys(all).map((key) => Number(key.split("_")[0])))
