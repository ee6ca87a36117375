/**
 * A fingerprint of everything Parley stores: row counts of every table, and a digest of the rows a
 * rejected request could have changed in place (settings, tokens, conversation status, customer facts).
 * Equal fingerprints before and after a rejected request mean it stored nothing.
 */
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"

const counted = [
  "workspaces",
  "api_tokens",
  "tones",
  "integrations",
  "customers",
  "conversations",
  "conversation_status_changes",
  "messages",
  "csat_responses",
  "jobs",
  "events",
  "delivery_attempts",
  "kb_articles",
  "kb_chunks"
] as const

const digested = ["workspaces", "api_tokens", "integrations", "customers", "conversations"] as const

export const storedFingerprint = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const counts = counted.map((table) => `(SELECT count(*) FROM ${table})::text`).join(" || ',' || ")
  const digests = digested.map((table) =>
    `(SELECT md5(coalesce(string_agg(t::text, ',' ORDER BY t.id), '')) FROM ${table} t)`
  ).join(" || ',' || ")
  const rows = yield* sql.unsafe<{ readonly fingerprint: string }>(
    `SELECT ${counts} || ';' || ${digests} AS fingerprint`
  )
  return rows[0]?.fingerprint ?? ""
}).pipe(Effect.orDie)

/** Which tables differ between two fingerprints (for the failure message). */
export const describeChange = (before: string, after: string): string => {
  const [beforeCounts = "", beforeDigests = ""] = before.split(";")
  const [afterCounts = "", afterDigests = ""] = after.split(";")
  const changed: Array<string> = []
  const bc = beforeCounts.split(",")
  const ac = afterCounts.split(",")
  counted.forEach((table, i) => {
    if (bc[i] !== ac[i]) changed.push(`${table} rows ${bc[i]} → ${ac[i]}`)
  })
  const bd = beforeDigests.split(",")
  const ad = afterDigests.split(",")
  digested.forEach((table, i) => {
    if (bd[i] !== ad[i]) changed.push(`${table} rows changed`)
  })
  return changed.join("; ")
}
