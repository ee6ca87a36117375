/**
 * The job notification: what the queue tells listening workers when a job becomes due (`NOTIFY` on
 * `JOBS_CHANNEL` on PostgreSQL, an in-process message on the embedded database). Its payload is
 * `<kind> <due>`: the job's kind and when it is due, in whole Unix milliseconds rounded up (a worker
 * woken before the job is due finds nothing to claim); `0` is "now".
 *
 * It is made in two places — here (`encode`), and by the database in the statement that queues or
 * moves the job (`encodeSql`: the due time is the row's, known only there, and the notification goes
 * out in the same statement) — and read in one (`decode`, by the pool). All three are this module's,
 * on one separator.
 */
import type * as Statement from "effect/sql/Statement"
import * as Option from "effect/Option"

/** The channel the queue notifies and the pool listens on. */
export const JOBS_CHANNEL = "parley_jobs"

/** Between the kind and the due time: the last one of a payload (a kind's name may hold one). */
const SEPARATOR = " "

/** A job of `kind` is due at `due` (Unix ms; 0: now). */
export interface Notice {
  readonly kind: string
  readonly due: number
}

/** The payload for a job of `kind` due at `dueMillis`. */
export const encode = (kind: string, dueMillis: number): string => `${kind}${SEPARATOR}${Math.ceil(dueMillis)}`

/**
 * The same payload made by the database: `kind` and the due time `dueMillis` (an expression in Unix
 * ms, a `float8`) rounded up as `encode` rounds it.
 */
export const encodeSql = (sql: Statement.Constructor, kind: string, dueMillis: Statement.Fragment): Statement.Fragment =>
  sql`(${kind}::text || ${SEPARATOR}::text || ceil(${dueMillis})::bigint::text)`

/** `pg_notify` of the payload `encodeSql` makes, for a statement's select list. */
export const notifySql = (sql: Statement.Constructor, kind: string, dueMillis: Statement.Fragment): Statement.Fragment =>
  sql`pg_notify(${JOBS_CHANNEL}, ${encodeSql(sql, kind, dueMillis)})`

const DIGITS = /^\d+$/

/** A payload read back; none when it is not one (a stray `NOTIFY` on the channel). */
export const decode = (payload: string): Option.Option<Notice> => {
  const at = payload.lastIndexOf(SEPARATOR)
  if (at <= 0) return Option.none()
  const due = payload.slice(at + SEPARATOR.length)
  return DIGITS.test(due) ? Option.some({ kind: payload.slice(0, at), due: Number(due) }) : Option.none()
}
