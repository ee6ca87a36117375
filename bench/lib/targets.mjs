// The performance targets as `{ value, goal, met }`: value measured in this run, goal as text, met
// computed from both (null when the value could not be measured).
import { round } from "./stats.mjs"

const compare = {
  "<": (a, b) => a < b,
  "<=": (a, b) => a <= b,
  ">=": (a, b) => a >= b,
  "=": (a, b) => a === b
}

/** A target: `value op bound` must hold; `unit` and `note` are shown with it. */
export const target = (value, op, bound, { unit = "", note } = {}) => ({
  value: typeof value === "number" ? round(value) : value,
  goal: `${op} ${round(bound)}${unit === "" ? "" : ` ${unit}`}`,
  met: value === null || value === undefined || Number.isNaN(value) ? null : compare[op](value, bound),
  ...(unit !== "" ? { unit } : {}),
  ...(note !== undefined ? { note } : {})
})
