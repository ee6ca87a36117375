/**
 * The AI page's report: per integration and UTC day, what the AI did (conversations it answered alone,
 * hand-overs, closes, CSAT after its replies) and what its tokens cost. `readReport` reads the rows
 * (two statements); `buildReport` puts them together and prices them, without I/O (tested on its own).
 *
 * - Answered by the AI alone: conversations with an AI reply that day (an answer or a close of the
 *   reply job, not a hand-over) that were never handed over, then or later.
 * - Handed over / closed: conversations that became `escalated` / `closed` that day, whoever did it
 *   (the AI, the integrator, an inactivity timeout).
 * - CSAT after AI replies: the customers' current answers given that day in conversations where the AI
 *   had replied before.
 * - Tokens: `reply_metadata`'s (every model call of a reply, its title and summary included), grouped
 *   by provider and model; priced with `AI_PRICES`, the embedded responder at 0.
 */
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import * as SqlSchema from "effect/sql/SqlSchema"
import type { ModelPrice } from "../Config.js"
import { IntegrationId, WorkspaceId } from "../Domain/Ids.js"
import { DbNumber } from "../Domain/Primitives.js"
import { orDieSql } from "../Sql.js"

/** How many days back a report may look (`?days=`), and by default. */
export const MAX_REPORT_DAYS = 90
export const DEFAULT_REPORT_DAYS = 30

export const ReportDays = Schema.NumberFromString.check(
  Schema.isInt(),
  Schema.isBetween({ minimum: 1, maximum: MAX_REPORT_DAYS })
)

/** The UTC days a report covers, both included (`2026-11-23`). */
export interface ReportWindow {
  readonly days: number
  readonly from: string
  readonly to: string
}

/** The `days` days up to today (UTC), today included. */
export const reportWindow = (now: DateTime.Utc, days: number): ReportWindow => ({
  days,
  from: DateTime.formatIsoDateUtc(DateTime.subtract(now, { days: days - 1 })),
  to: DateTime.formatIsoDateUtc(now)
})

const DAY_MS = 86_400_000
const startOf = (day: string) => `${day}T00:00:00.000Z`
const endOf = (day: string) => new Date(Date.parse(startOf(day)) + DAY_MS).toISOString()

/** What happened to one integration's conversations on one day. */
export const ActivityRow = Schema.Struct({
  integrationId: IntegrationId,
  day: Schema.String,
  answeredByAi: DbNumber,
  handedOver: DbNumber,
  closed: DbNumber,
  csatAnswers: DbNumber,
  csatScoreSum: DbNumber
})
export type ActivityRow = typeof ActivityRow.Type

/** One integration's replies of one day by one provider and model. */
export const UsageRow = Schema.Struct({
  integrationId: IntegrationId,
  day: Schema.String,
  provider: Schema.String,
  model: Schema.NullOr(Schema.String),
  replies: DbNumber,
  inputTokens: DbNumber,
  outputTokens: DbNumber
})
export type UsageRow = typeof UsageRow.Type

const Request = Schema.Struct({ workspaceId: WorkspaceId, since: Schema.String, until: Schema.String })

/**
 * The window's conversations, each counted once however many days it was active: what the total row
 * shows (a sum of the days would count a conversation once per day).
 */
export const ConversationTotals = Schema.Struct({
  answeredByAi: DbNumber,
  handedOver: DbNumber,
  closed: DbNumber
})
export type ConversationTotals = typeof ConversationTotals.Type

// -------------------------------------------------------------------------------------------------
// Pricing and putting the rows together (no I/O)
// -------------------------------------------------------------------------------------------------

/** One provider and model's use, priced: `cost` is undefined when the model has no price. */
export interface ModelUse extends UsageRow {
  readonly cost: number | undefined
}

/** CSAT answers after AI replies: how many, and their scores (1–5) summed. */
export interface Csat {
  readonly answers: number
  readonly scoreSum: number
}

/** The average score; null without answers. */
export const averageOf = (csat: Csat): number | null => csat.answers === 0 ? null : csat.scoreSum / csat.answers

interface Totals {
  readonly answeredByAi: number
  readonly handedOver: number
  readonly closed: number
  readonly csat: Csat
  readonly inputTokens: number
  readonly outputTokens: number
  /** Undefined when a model used has no price. */
  readonly cost: number | undefined
}

export interface ReportLine extends Totals {
  readonly integrationId: IntegrationId
  readonly day: string
  readonly models: ReadonlyArray<ModelUse>
}

export interface Report {
  readonly window: ReportWindow
  /** Newest day first; within a day, by integration. Days without activity are left out. */
  readonly lines: ReadonlyArray<ReportLine>
  readonly total: Totals
  /** Models that were used (with tokens) and have no price in `AI_PRICES`. */
  readonly unpriced: ReadonlyArray<string>
}

const PER_MILLION = 1_000_000

/**
 * What a use cost in USD: 0 for the embedded responder (and for no tokens), undefined for a model
 * without a price.
 */
export const costOf = (
  prices: ReadonlyMap<string, ModelPrice>,
  use: Pick<UsageRow, "provider" | "model" | "inputTokens" | "outputTokens">
): number | undefined => {
  if (use.provider === "embedded" || use.inputTokens + use.outputTokens === 0) return 0
  const price = use.model === null ? undefined : prices.get(use.model)
  return price === undefined
    ? undefined
    : (use.inputTokens * price.input + use.outputTokens * price.output) / PER_MILLION
}

/** The sum of costs; undefined when any is unknown. */
const sumCosts = (costs: ReadonlyArray<number | undefined>): number | undefined =>
  costs.reduce<number | undefined>((sum, cost) => sum === undefined || cost === undefined ? undefined : sum + cost, 0)

const sum = <A>(items: ReadonlyArray<A>, of: (item: A) => number) => items.reduce((total, item) => total + of(item), 0)

const lineOf = (
  integrationId: IntegrationId,
  day: string,
  activity: ActivityRow | undefined,
  models: ReadonlyArray<ModelUse>
): ReportLine => ({
  integrationId,
  day,
  answeredByAi: activity?.answeredByAi ?? 0,
  handedOver: activity?.handedOver ?? 0,
  closed: activity?.closed ?? 0,
  csat: { answers: activity?.csatAnswers ?? 0, scoreSum: activity?.csatScoreSum ?? 0 },
  inputTokens: sum(models, (use) => use.inputTokens),
  outputTokens: sum(models, (use) => use.outputTokens),
  models,
  cost: sumCosts(models.map((use) => use.cost))
})

const totalOf = (lines: ReadonlyArray<ReportLine>, conversations: ConversationTotals): Totals => ({
  answeredByAi: conversations.answeredByAi,
  handedOver: conversations.handedOver,
  closed: conversations.closed,
  csat: { answers: sum(lines, (line) => line.csat.answers), scoreSum: sum(lines, (line) => line.csat.scoreSum) },
  inputTokens: sum(lines, (line) => line.inputTokens),
  outputTokens: sum(lines, (line) => line.outputTokens),
  cost: sumCosts(lines.map((line) => line.cost))
})

const byDayThenIntegration = (a: ReportLine, b: ReportLine) =>
  a.day === b.day ? a.integrationId.localeCompare(b.integrationId) : b.day.localeCompare(a.day)

/** The report of `window` from its rows, priced with `prices`. */
export const buildReport = (
  window: ReportWindow,
  activity: ReadonlyArray<ActivityRow>,
  usage: ReadonlyArray<UsageRow>,
  prices: ReadonlyMap<string, ModelPrice>,
  conversations: ConversationTotals
): Report => {
  const key = (row: { readonly integrationId: IntegrationId; readonly day: string }) => `${row.day} ${row.integrationId}`
  const keys = new Map<string, { readonly integrationId: IntegrationId; readonly day: string }>()
  for (const row of [...activity, ...usage]) keys.set(key(row), { integrationId: row.integrationId, day: row.day })
  const activityByKey = new Map(activity.map((row) => [key(row), row]))
  const priced: ReadonlyArray<ModelUse> = usage.map((row) => ({ ...row, cost: costOf(prices, row) }))
  const lines = [...keys.entries()].map(([k, { day, integrationId }]) =>
    lineOf(integrationId, day, activityByKey.get(k), priced.filter((use) => key(use) === k))
  ).sort(byDayThenIntegration)
  const unpriced = [
    ...new Set(priced.flatMap((use) => use.cost === undefined ? [use.model ?? `${use.provider} (no model)`] : []))
  ].sort()
  return { window, lines, total: totalOf(lines, conversations), unpriced }
}

// -------------------------------------------------------------------------------------------------
// Reading the rows
// -------------------------------------------------------------------------------------------------

const makeQueries = (sql: SqlClient.SqlClient) => {
  const dayOf = (column: string) => sql.literal(`to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD')`)
  // An AI reply: the reply job answered or closed (a close may send no message), not a hand-over.
  const aiReply = (alias: string) => sql.literal(`${alias}.action IN ('answer', 'close')`)
  // An AI reply that answered: not the fallback message of a model that failed (its error is kept),
  // nor the embedded responder's "I couldn't find an answer" (it answers only with passages it cites).
  const aiAnswer = (alias: string) =>
    sql.literal(
      `${alias}.action IN ('answer', 'close') AND ${alias}.error IS NULL AND ` +
        `NOT (${alias}.provider = 'embedded' AND ${alias}.action = 'answer' AND jsonb_array_length(${alias}.citations) = 0)`
    )
  const neverHandedOver = (alias: string) =>
    sql.literal(
      `NOT EXISTS (SELECT 1 FROM conversation_status_changes s WHERE s.conversation_id = ${alias}.conversation_id AND s.to_status = 'escalated')`
    )

  const activity = SqlSchema.findAll({
    Request,
    Result: ActivityRow,
    execute: ({ since, until, workspaceId }) =>
      sql`SELECT integration_id, day,
                 sum(answered)::bigint AS answered_by_ai, sum(handed_over)::bigint AS handed_over,
                 sum(closed)::bigint AS closed, sum(csat_answers)::bigint AS csat_answers,
                 sum(csat_score_sum)::bigint AS csat_score_sum
          FROM (
            SELECT c.integration_id, ${dayOf("r.created_at")} AS day, count(DISTINCT r.conversation_id) AS answered,
                   0 AS handed_over, 0 AS closed, 0 AS csat_answers, 0 AS csat_score_sum
            FROM reply_metadata r JOIN conversations c ON c.id = r.conversation_id
            WHERE r.workspace_id = ${workspaceId} AND c.workspace_id = ${workspaceId}
              AND r.created_at >= ${since}::timestamptz AND r.created_at < ${until}::timestamptz
              AND ${aiAnswer("r")} AND ${neverHandedOver("r")}
            GROUP BY 1, 2
            UNION ALL
            SELECT c.integration_id, ${dayOf("s.changed_at")}, 0,
                   count(DISTINCT s.conversation_id) FILTER (WHERE s.to_status = 'escalated'),
                   count(DISTINCT s.conversation_id) FILTER (WHERE s.to_status = 'closed'), 0, 0
            FROM conversation_status_changes s JOIN conversations c ON c.id = s.conversation_id
            WHERE c.workspace_id = ${workspaceId} AND s.to_status IN ('escalated', 'closed')
              AND s.changed_at >= ${since}::timestamptz AND s.changed_at < ${until}::timestamptz
            GROUP BY 1, 2
            UNION ALL
            SELECT c.integration_id, ${dayOf("a.created_at")}, 0, 0, 0, count(*), sum(a.score)
            FROM csat_responses a JOIN conversations c ON c.id = a.conversation_id
            WHERE c.workspace_id = ${workspaceId} AND a.is_current
              AND a.created_at >= ${since}::timestamptz AND a.created_at < ${until}::timestamptz
              AND EXISTS (SELECT 1 FROM reply_metadata r
                          WHERE r.conversation_id = a.conversation_id AND ${aiReply("r")} AND r.created_at <= a.created_at)
            GROUP BY 1, 2
          ) facts
          GROUP BY integration_id, day`
  })

  const usage = SqlSchema.findAll({
    Request,
    Result: UsageRow,
    execute: ({ since, until, workspaceId }) =>
      sql`SELECT c.integration_id, ${dayOf("r.created_at")} AS day, r.provider, r.model, count(*) AS replies,
                 sum(r.input_tokens) AS input_tokens, sum(r.output_tokens) AS output_tokens
          FROM reply_metadata r JOIN conversations c ON c.id = r.conversation_id
          WHERE r.workspace_id = ${workspaceId} AND c.workspace_id = ${workspaceId}
            AND r.created_at >= ${since}::timestamptz AND r.created_at < ${until}::timestamptz
          GROUP BY 1, 2, 3, 4
          ORDER BY 2 DESC, 1, 3, 4`
  })

  const conversations = SqlSchema.findOne({
    Request,
    Result: ConversationTotals,
    execute: ({ since, until, workspaceId }) =>
      sql`SELECT
            (SELECT count(DISTINCT r.conversation_id) FROM reply_metadata r
             WHERE r.workspace_id = ${workspaceId}
               AND r.created_at >= ${since}::timestamptz AND r.created_at < ${until}::timestamptz
               AND ${aiAnswer("r")} AND ${neverHandedOver("r")}) AS answered_by_ai,
            count(DISTINCT s.conversation_id) FILTER (WHERE s.to_status = 'escalated') AS handed_over,
            count(DISTINCT s.conversation_id) FILTER (WHERE s.to_status = 'closed') AS closed
          FROM conversation_status_changes s JOIN conversations c ON c.id = s.conversation_id
          WHERE c.workspace_id = ${workspaceId} AND s.to_status IN ('escalated', 'closed')
            AND s.changed_at >= ${since}::timestamptz AND s.changed_at < ${until}::timestamptz`
  })

  return { activity, usage, conversations } as const
}

/** The workspace's report of the last `days` days (UTC, today included), priced with `prices`. */
export const readReport = Effect.fn("AiReport.read")(
  function*(workspaceId: WorkspaceId, days: number, prices: ReadonlyMap<string, ModelPrice>) {
    const queries = makeQueries(yield* SqlClient.SqlClient)
    const window = reportWindow(yield* DateTime.now, days)
    const request = { workspaceId, since: startOf(window.from), until: endOf(window.to) }
    const [activity, usage, conversations] = yield* Effect.all([
      queries.activity(request),
      queries.usage(request),
      queries.conversations(request)
    ])
    return buildReport(window, activity, usage, prices, conversations)
  },
  orDieSql
)
