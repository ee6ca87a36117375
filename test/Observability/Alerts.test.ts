/**
 * The alert rules fit what Parley serves: every metric an `expr` names is on a real `/metrics`
 * (scraped through the telemetry layer, every metric of Metrics.ts registered as at start), every
 * rule says how bad it is and what it means, and every `runbook_url` has its section in
 * docs/runbook.md. `promtool check rules` (in .ci/run) checks the PromQL itself.
 */
import { describe, expect, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { readFileSync } from "node:fs"
import { parse } from "yaml"
import { TelemetryLive } from "../../src/Observability/Telemetry.js"
import { freePort, parseExposition, scrape } from "./Exposition.js"

const root = new URL("../../", import.meta.url)

const Rule = Schema.Struct({
  alert: Schema.String,
  expr: Schema.String,
  for: Schema.optional(Schema.String),
  labels: Schema.Struct({ severity: Schema.Literal("warning", "critical") }),
  annotations: Schema.Struct({
    summary: Schema.NonEmptyString,
    description: Schema.NonEmptyString,
    runbook_url: Schema.String.pipe(Schema.pattern(/^docs\/runbook\.md#[a-z0-9-]+$/))
  })
})
const RuleFile = Schema.Struct({
  groups: Schema.NonEmptyArray(Schema.Struct({ name: Schema.String, rules: Schema.NonEmptyArray(Rule) }))
})

const rules = Schema.decodeUnknownSync(RuleFile)(parse(readFileSync(new URL("deploy/prometheus/alerts.yml", root), "utf8")))
  .groups.flatMap((group) => group.rules)
const runbook = readFileSync(new URL("docs/runbook.md", root), "utf8")

const KEYWORDS = new Set([
  "and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "offset", "bool", "inf", "nan"
])

/** The metric names a PromQL expression selects (not its functions, keywords, labels or durations). */
const metricNames = (expr: string): ReadonlyArray<string> => {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, "\"\"")
    .replace(/\{[^}]*\}/g, " ")
    .replace(/\[[^\]]*\]/g, " ")
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, " ")
  const names = new Set<string>()
  for (const match of stripped.matchAll(/\b[a-zA-Z_:][a-zA-Z0-9_:]*\b(?!\s*\()/g)) {
    if (!KEYWORDS.has(match[0].toLowerCase())) names.add(match[0])
  }
  return [...names]
}

/** GitHub's anchor of a Markdown heading. */
const anchorOf = (heading: string) =>
  heading.trim().toLowerCase().replace(/[^a-z0-9 _-]/g, "").replace(/ /g, "-")

const anchors = new Set(
  runbook.split("\n").filter((line) => /^#{1,6} /.test(line)).map((line) => anchorOf(line.replace(/^#+ /, "")))
)

describe("alert rules", () => {
  it("has the alerts an on-call engineer needs, each with severity, summary, description and runbook", () => {
    expect(new Set(rules.map((r) => r.alert))).toEqual(
      new Set([
        "ParleyInstanceDown",
        "ParleyHttp5xxRatio",
        "ParleyDeliveryFailureRatio",
        "ParleyDeadLetters",
        "ParleyJobQueueBacklog",
        "ParleyAiProviderErrorRatio"
      ])
    )
  })

  it("every runbook_url has its section in docs/runbook.md, and so has every link inside it", () => {
    const missing = rules.map((r) => r.annotations.runbook_url.split("#")[1]!).filter((a) => !anchors.has(a))
    expect(missing).toEqual([])
    const internal = [...runbook.matchAll(/\]\(#([^)]+)\)/g)].map((m) => m[1]!)
    expect(internal.length).toBeGreaterThan(0)
    expect(internal.filter((a) => !anchors.has(a))).toEqual([])
  })

  it("finds the metric names in an expression", () => {
    expect(metricNames(
      `sum by (provider) (rate(parley_bogus_total{outcome="error", x=~"a|b"}[10m] offset 1h)) / on(job) group_left up > 0.1`
    )).toEqual(["parley_bogus_total", "up"])
    expect(metricNames(`histogram_quantile(0.95, sum by (le) (rate(x_bucket[5m:1m]))) > 1e3`)).toEqual(["x_bucket"])
  })

  it.live("every metric a rule uses is one Parley serves at /metrics (or Prometheus' own `up`)", () =>
    Effect.gen(function*() {
      const port = yield* freePort
      yield* Layer.build(TelemetryLive.pipe(
        Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(
          new Map([["METRICS_PORT", String(port)], ["HOST", "127.0.0.1"]])
        )))
      ))
      const served = new Set(parseExposition((yield* scrape(port)).body).samples.map((s) => s.name))
      expect(served.has("parley_delivery_dead_total")).toBe(true)

      const unknown = rules.flatMap((rule) =>
        metricNames(rule.expr).filter((name) => name !== "up" && !served.has(name)).map((name) => `${rule.alert}: ${name}`)
      )
      expect(unknown).toEqual([])
      expect(rules.flatMap((rule) => metricNames(rule.expr)).length).toBeGreaterThanOrEqual(rules.length)
    }).pipe(Effect.scoped))
})
