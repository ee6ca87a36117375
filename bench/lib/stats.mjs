// Summaries computed from raw samples (milliseconds): nearest-rank percentiles, no histogram binning.

/** The p-th percentile (0 < p <= 100) of `sorted` (ascending), by the nearest-rank method. */
export const percentile = (sorted, p) => {
  if (sorted.length === 0) return null
  const rank = Math.ceil((p / 100) * sorted.length)
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]
}

/** count, mean, min, p50, p90, p99, max of the samples (null figures when there are none). */
export const summarize = (samples) => {
  const sorted = Float64Array.from(samples).sort()
  const count = sorted.length
  const mean = count === 0 ? null : sorted.reduce((sum, x) => sum + x, 0) / count
  return {
    count,
    mean: round(mean),
    min: round(count === 0 ? null : sorted[0]),
    p50: round(percentile(sorted, 50)),
    p90: round(percentile(sorted, 90)),
    p99: round(percentile(sorted, 99)),
    max: round(count === 0 ? null : sorted[count - 1])
  }
}

export const median = (samples) => summarize(samples).p50

/** Rounds to `digits` decimals; null stays null. */
export const round = (x, digits = 2) => {
  if (x === null || x === undefined || !Number.isFinite(x)) return x ?? null
  const f = 10 ** digits
  return Math.round(x * f) / f
}

export const ratio = (a, b) => (a === null || b === null || b === 0 ? null : round(a / b, 3))
