/**
 * The instants Parley can store and answer with: PostgreSQL's `timestamptz` (4714-11-24 BC to 294276 AD)
 * within JavaScript's `Date` (±8.64e15 ms, 271821 BC to 275760 AD). Anything outside would fail in the
 * database (a 500) instead of at the edge (a 422).
 */

/** 4714-11-24T00:00:00Z BC (astronomical year -4713): Julian day 0, PostgreSQL's first instant. */
export const EARLIEST_MILLIS = -210_866_803_200_000
/** 275760-09-13T00:00:00Z: JavaScript's last instant (PostgreSQL's is later, in 294276 AD). */
export const LATEST_MILLIS = 8_640_000_000_000_000

export const storableRange = "between -004713-11-24T00:00:00Z (4714 BC) and +275760-09-13T00:00:00Z"

export const isStorableMillis = (millis: number): boolean =>
  Number.isFinite(millis) && millis >= EARLIEST_MILLIS && millis <= LATEST_MILLIS

const DATE_PREFIX = /^([+-]\d{6}|\d{4})-(\d{2})-(\d{2})/

/**
 * Whether the calendar date an ISO 8601 text starts with exists. JavaScript reads `2026-02-30` as
 * 2 March; texts that do not start with a date are left to the parser.
 */
export const isRealCalendarDate = (text: string): boolean => {
  const match = DATE_PREFIX.exec(text)
  if (match === null) return true
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])]
  if (month < 1 || month > 12 || day < 1) return false
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
  const days = month === 2 ? (leap ? 29 : 28) : [4, 6, 9, 11].includes(month) ? 30 : 31
  return day <= days
}
