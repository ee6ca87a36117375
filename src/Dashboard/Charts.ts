/**
 * Charts of an integration's last hour of delivery attempts, drawn on the server as inline SVG (no
 * script): attempts per minute by outcome (stacked bars) and latency p50/p99 per minute (lines). Each
 * is an image with an accessible name and a summary, a legend in words, and a table of the same numbers
 * in a `<details>` (what a screen reader, or anyone who wants the values, reads instead).
 * Colours are SVG presentation attributes: the page's policy forbids `style` attributes.
 */
import type { MinuteSummary } from "./DeliveryQueries.js"
import { type Html, html } from "./Html.js"

/** One minute of the chart: its start, and zeros (and no latency) when nothing was attempted in it. */
export interface MinuteBucket {
  readonly start: Date
  readonly succeeded: number
  readonly failed: number
  readonly p50: number | null
  readonly p99: number | null
}

export const CHART_MINUTES = 60

const MINUTE_MS = 60_000

/** The window of `minutes` whole minutes ending with the one `now` is in: `[from, to)`. */
export const chartWindow = (nowMillis: number, minutes = CHART_MINUTES) => {
  const last = Math.floor(nowMillis / MINUTE_MS)
  return { from: new Date((last - minutes + 1) * MINUTE_MS), to: new Date((last + 1) * MINUTE_MS) }
}

/**
 * The window's minutes, oldest first, each with its summary if the database had one: minutes without
 * attempts count zero and have no latency, and summaries outside the window are left out.
 */
export const minuteBuckets = (
  nowMillis: number,
  summaries: ReadonlyArray<MinuteSummary>,
  minutes = CHART_MINUTES
): ReadonlyArray<MinuteBucket> => {
  const byMinute = new Map(summaries.map((summary) => [summary.minute, summary]))
  const first = chartWindow(nowMillis, minutes).from.getTime() / MINUTE_MS
  return Array.from({ length: minutes }, (_, index) => {
    const minute = first + index
    const summary = byMinute.get(minute)
    return {
      start: new Date(minute * MINUTE_MS),
      succeeded: summary?.succeeded ?? 0,
      failed: summary?.failed ?? 0,
      p50: summary?.p50 ?? null,
      p99: summary?.p99 ?? null
    }
  })
}

/** The smallest "round" number (1, 2 or 5 times a power of ten) at or above `value` (at least 1). */
export const niceCeiling = (value: number): number => {
  if (!(value > 1)) return 1
  const power = 10 ** Math.floor(Math.log10(value))
  const step = [1, 2, 5, 10].find((factor) => factor * power >= value) ?? 10
  return step * power
}

// -----------------------------------------------------------------------------
// Drawing
// -----------------------------------------------------------------------------

const COLOURS = { ok: "#1a7f37", bad: "#cf222e", p50: "#0b57d0", p99: "#bf8700" } as const
const INK = "#555d66"
const GRID = "#d0d7de"

const WIDTH = 720
const HEIGHT = 230
const PLOT = { left: 64, right: 12, top: 12, bottom: 46 } as const
const PLOT_WIDTH = WIDTH - PLOT.left - PLOT.right
const PLOT_HEIGHT = HEIGHT - PLOT.top - PLOT.bottom

/** `HH:MM` of a time, UTC. */
const clock = (at: Date) => at.toISOString().slice(11, 16)

/** A latency as shown everywhere on the page: whole milliseconds, or one decimal. */
export const formatMs = (ms: number): string => Number.isInteger(ms) ? String(ms) : ms.toFixed(1)

const round = (n: number) => Math.round(n * 10) / 10

const slotWidth = (count: number) => PLOT_WIDTH / Math.max(count, 1)
const xOf = (index: number, count: number) => PLOT.left + index * slotWidth(count)
const yOf = (value: number, max: number) => PLOT.top + PLOT_HEIGHT - (value / max) * PLOT_HEIGHT

/** Grid lines and labels of the value axis (0, half, max) and the time axis (every 15 minutes). */
const axes = (buckets: ReadonlyArray<MinuteBucket>, max: number, unit: string): Html => {
  const ticks = Number.isInteger(max / 2) ? [0, max / 2, max] : [0, max]
  const timeLabels = buckets.flatMap((bucket, index) =>
    index % 15 === 0 || index === buckets.length - 1 ? [{ index, label: clock(bucket.start) }] : []
  )
  return html`
  <g>${
    ticks.map((tick) =>
      html`<line x1="${PLOT.left}" x2="${WIDTH - PLOT.right}" y1="${round(yOf(tick, max))}" y2="${
        round(yOf(tick, max))
      }" stroke="${GRID}" stroke-width="1"/><text x="${PLOT.left - 6}" y="${round(yOf(tick, max)) + 4}" font-size="12" fill="${INK}" text-anchor="end">${
        formatMs(round(tick))
      }${unit}</text>`
    )
  }</g>
  <g>${
    timeLabels.map(({ index, label }) =>
      html`<text x="${round(xOf(index, buckets.length) + slotWidth(buckets.length) / 2)}" y="${
        HEIGHT - PLOT.bottom + 16
      }" font-size="12" fill="${INK}" text-anchor="middle">${label}</text>`
    )
  }</g>
  <text x="${PLOT.left + PLOT_WIDTH / 2}" y="${HEIGHT - 6}" font-size="12" fill="${INK}" text-anchor="middle">Minute (UTC)</text>`
}

/** The SVG frame: an image named `title`, described by `summary`. */
const svg = (id: string, title: string, summary: string, content: Html): Html =>
  html`<svg class="chart" viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-label="${title}" aria-describedby="${id}-desc" xmlns="http://www.w3.org/2000/svg">
  <title>${title}</title>
  <desc id="${id}-desc">${summary}</desc>
  ${content}
</svg>`

const legend = (entries: ReadonlyArray<readonly [swatch: string, label: string]>): Html =>
  html`<p class="legend">${
    entries.map(([swatch, label]) => html`<span><span class="sw ${swatch}" aria-hidden="true"></span>${label}</span>`)
  }</p>`

/** The chart's numbers as a table, folded away. */
const dataTable = (
  caption: string,
  headers: ReadonlyArray<string>,
  rows: ReadonlyArray<ReadonlyArray<string | number>>
): Html =>
  html`<details>
  <summary>${caption}: table</summary>
  <div class="table-wrap" tabindex="0"><table>
    <caption class="visually-hidden">${caption}</caption>
    <thead><tr>${headers.map((header) => html`<th scope="col">${header}</th>`)}</tr></thead>
    <tbody>${
    rows.map(([first, ...rest]) => html`<tr><th scope="row">${first}</th>${rest.map((cell) => html`<td>${cell}</td>`)}</tr>`)
  }</tbody>
  </table></div>
</details>`

/** A chart under its heading, with its legend, its summary in words and its table. */
const figure = (id: string, heading: string, chart: Html, caption: Html, table: Html): Html =>
  html`<div id="${id}">
  <h3>${heading}</h3>
  ${chart}
  ${caption}
  ${table}
</div>`

// -----------------------------------------------------------------------------
// Attempts per minute, by outcome
// -----------------------------------------------------------------------------

const ATTEMPTS_TITLE = "Delivery attempts per minute in the last hour, succeeded and failed"

/** Stacked bars: succeeded (2xx) at the bottom, failed above. */
export const attemptsChart = (buckets: ReadonlyArray<MinuteBucket>): Html => {
  const max = niceCeiling(Math.max(0, ...buckets.map((bucket) => bucket.succeeded + bucket.failed)))
  const succeeded = buckets.reduce((sum, bucket) => sum + bucket.succeeded, 0)
  const failed = buckets.reduce((sum, bucket) => sum + bucket.failed, 0)
  const width = round(slotWidth(buckets.length) * 0.8)
  const bar = (index: number, from: number, value: number, colour: string) =>
    value === 0 ? html`` : html`<rect x="${round(xOf(index, buckets.length) + slotWidth(buckets.length) * 0.1)}" y="${
      round(yOf(from + value, max))
    }" width="${width}" height="${round(yOf(from, max) - yOf(from + value, max))}" fill="${colour}"/>`
  const summary = succeeded + failed === 0
    ? "No delivery attempts in the last hour."
    : `In the last hour: ${succeeded} attempts succeeded, ${failed} failed.`
  return figure(
    "chart-attempts",
    "Attempts per minute",
    svg(
      "chart-attempts",
      ATTEMPTS_TITLE,
      summary,
      html`${axes(buckets, max, "")}
  <g>${
        buckets.map((bucket, index) =>
          html`${bar(index, 0, bucket.succeeded, COLOURS.ok)}${bar(index, bucket.succeeded, bucket.failed, COLOURS.bad)}`
        )
      }</g>`
    ),
    html`${legend([["sw-ok", "Succeeded (2xx)"], ["sw-bad", "Failed (other status, or no response)"]])}<p>${summary}</p>`,
    dataTable(
      "Attempts per minute",
      ["Minute (UTC)", "Succeeded", "Failed"],
      buckets.map((bucket) => [clock(bucket.start), bucket.succeeded, bucket.failed])
    )
  )
}

// -----------------------------------------------------------------------------
// Latency per minute
// -----------------------------------------------------------------------------

const LATENCY_TITLE = "Delivery latency per minute in the last hour, p50 and p99"

/** A line through the minutes that have a value, broken where a minute has none; a dot on each value. */
const series = (
  buckets: ReadonlyArray<MinuteBucket>,
  value: (bucket: MinuteBucket) => number | null,
  max: number,
  colour: string
): Html => {
  const points = buckets.map((bucket, index) => {
    const v = value(bucket)
    return v === null
      ? undefined
      : { x: round(xOf(index, buckets.length) + slotWidth(buckets.length) / 2), y: round(yOf(v, max)) }
  })
  const path = points.map((point, index) =>
    point === undefined ? "" : `${points[index - 1] === undefined ? "M" : "L"}${point.x} ${point.y}`
  ).join(" ").trim()
  return html`${path === "" ? "" : html`<path d="${path}" fill="none" stroke="${colour}" stroke-width="2"/>`}${
    points.map((point) => point === undefined ? "" : html`<circle cx="${point.x}" cy="${point.y}" r="2.5" fill="${colour}"/>`)
  }`
}

const cell = (ms: number | null) => ms === null ? "—" : formatMs(ms)

/** Two lines: p50 and p99 of each minute's attempts, in milliseconds; gaps where nothing was attempted. */
export const latencyChart = (buckets: ReadonlyArray<MinuteBucket>): Html => {
  const max = niceCeiling(Math.max(0, ...buckets.map((bucket) => bucket.p99 ?? bucket.p50 ?? 0)))
  const worst = buckets.reduce<MinuteBucket | undefined>(
    (found, bucket) => bucket.p99 !== null && (found?.p99 ?? -1) < bucket.p99 ? bucket : found,
    undefined
  )
  const summary = worst === undefined || worst.p99 === null
    ? "No delivery attempts in the last hour."
    : `Highest p99 in the last hour: ${formatMs(worst.p99)} ms at ${clock(worst.start)} UTC.`
  return figure(
    "chart-latency",
    "Latency per minute",
    svg(
      "chart-latency",
      LATENCY_TITLE,
      summary,
      html`${axes(buckets, max, " ms")}
  <g>${series(buckets, (bucket) => bucket.p99, max, COLOURS.p99)}${series(buckets, (bucket) => bucket.p50, max, COLOURS.p50)}</g>`
    ),
    html`${legend([["sw-p50", "p50 (median)"], ["sw-p99", "p99"]])}<p>${summary}</p>`,
    dataTable(
      "Latency per minute",
      ["Minute (UTC)", "p50 (ms)", "p99 (ms)"],
      buckets.map((bucket) => [clock(bucket.start), cell(bucket.p50), cell(bucket.p99)])
    )
  )
}
