/**
 * The alert rules fit what Parley serves: every metric an `expr` names is on a real `/metrics`
 * (scraped through the telemetry layer, every metric of Metrics.ts registered as at start), every
 * rule says how bad it is and what it means, and every `runbook_url` is an absolute link to its
 * section of docs/runbook.md: the page named by the external label `parley_runbook_base`
 * (deploy/prometheus/prometheus.yml), else the published runbook. `promtool check rules` and
 * `promtool test rules` (in .ci/run) check the PromQL and the default link; a real Prometheus, when
 * installed, shows the link an alert carries with the external label set.
 */
import { describe, expect, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { execFileSync, spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import * as http from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { parse } from "yaml"
import { eventually } from "../support/Eventually.js"
import { TelemetryLive } from "../../src/Observability/Telemetry.js"
import { freePort, parseExposition, scrape } from "./Exposition.js"

const root = new URL("../../", import.meta.url)

/**
 * `{{ or $externalLabels.parley_runbook_base "<default page>" }}#<section>`: the external label's page,
 * else the default, and the section's anchor.
 */
const RUNBOOK_URL = /^\{\{ or \$externalLabels\.parley_runbook_base "([^"#]+)" \}\}#([a-z0-9-]+)$/

const Rule = Schema.Struct({
  alert: Schema.String,
  expr: Schema.String,
  for: Schema.optional(Schema.String),
  labels: Schema.Struct({ severity: Schema.Literals(["warning", "critical"]) }),
  annotations: Schema.Struct({
    summary: Schema.NonEmptyString,
    description: Schema.NonEmptyString,
    runbook_url: Schema.String.check(Schema.isPattern(RUNBOOK_URL))
  })
})
const RuleFile = Schema.Struct({
  groups: Schema.NonEmptyArray(Schema.Struct({ name: Schema.String, rules: Schema.NonEmptyArray(Rule) }))
})

const rules = Schema.decodeUnknownSync(RuleFile)(parse(readFileSync(new URL("deploy/prometheus/alerts.yml", root), "utf8")))
  .groups.flatMap((group) => group.rules)
const runbook = readFileSync(new URL("docs/runbook.md", root), "utf8")

const PrometheusConfig = Schema.Struct({
  global: Schema.Struct({ external_labels: Schema.Struct({ parley_runbook_base: Schema.String }) })
})
const prometheusYml = new URL("deploy/prometheus/prometheus.yml", root)
const runbookBase = Schema.decodeUnknownSync(PrometheusConfig)(parse(readFileSync(prometheusYml, "utf8")))
  .global.external_labels.parley_runbook_base

/** The default page and the section of a rule's `runbook_url`. */
const linkOf = (url: string) => {
  const [, page = "", section = ""] = RUNBOOK_URL.exec(url) ?? []
  return { page, section }
}

/** Whether a program is on the PATH (`promtool`, `prometheus`). */
const installed = (program: string) => {
  try {
    execFileSync(program, ["--version"], { stdio: "ignore" })
    return true
  } catch {
    return false
  }
}

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
    const missing = rules.map((r) => linkOf(r.annotations.runbook_url).section).filter((a) => !anchors.has(a))
    expect(missing).toEqual([])
    const internal = [...runbook.matchAll(/\]\(#([^)]+)\)/g)].map((m) => m[1]!)
    expect(internal.length).toBeGreaterThan(0)
    expect(internal.filter((a) => !anchors.has(a))).toEqual([])
  })

  it("every runbook_url is absolute: prometheus.yml's parley_runbook_base, by default the published runbook", () => {
    // One page for every alert, the same as prometheus.yml sets: an https URL of the runbook, no anchor.
    expect(new Set(rules.map((r) => linkOf(r.annotations.runbook_url).page))).toEqual(new Set([runbookBase]))
    const page = new URL(runbookBase)
    expect([page.protocol, page.hash]).toEqual(["https:", ""])
    expect(page.pathname.endsWith("/docs/runbook.md")).toBe(true)
  })

  it.live.skipIf(!installed("prometheus"))("an alert of a real Prometheus links the section on the external label's page", () =>
    Effect.gen(function*() {
      // A target whose dead-letter counter goes up (ParleyDeadLetters fires at once), and a Prometheus
      // that evaluates the real rules with `parley_runbook_base` set to another page.
      let dead = 0
      const target = http.createServer((_, response) => {
        dead += 1
        response.writeHead(200, { "content-type": "text/plain; version=0.0.4" })
        response.end(`# TYPE parley_delivery_dead_total counter\nparley_delivery_dead_total{event="escalate"} ${dead}\n`)
      })
      const targetPort = yield* Effect.acquireRelease(
        Effect.callback<number>((resume) => {
          target.listen(0, "127.0.0.1", () => {
            const address = target.address()
            resume(Effect.succeed(typeof address === "object" && address !== null ? address.port : 0))
          })
        }),
        () => Effect.callback<void>((resume) => void target.close(() => resume(Effect.void)))
      )
      const webPort = yield* freePort
      const dir = mkdtempSync(join(tmpdir(), "parley-prometheus-"))
      const page = "https://runbooks.internal.test/parley/runbook.md"
      writeFileSync(join(dir, "prometheus.yml"), [
        "global:",
        "  scrape_interval: 1s",
        "  evaluation_interval: 1s",
        "  external_labels:",
        `    parley_runbook_base: ${page}`,
        "rule_files:",
        `  - ${fileURLToPath(new URL("deploy/prometheus/alerts.yml", root))}`,
        "scrape_configs:",
        "  - job_name: parley",
        "    static_configs:",
        `      - targets: ["127.0.0.1:${targetPort}"]`,
        ""
      ].join("\n"))
      yield* Effect.acquireRelease(
        Effect.sync(() =>
          spawn("prometheus", [
            `--config.file=${join(dir, "prometheus.yml")}`,
            `--storage.tsdb.path=${join(dir, "data")}`,
            `--web.listen-address=127.0.0.1:${webPort}`
          ], { stdio: "ignore" })
        ),
        (child) =>
          Effect.callback<void>((resume) => {
            child.once("exit", () => resume(Effect.void))
            child.kill("SIGTERM")
          }).pipe(Effect.ensuring(Effect.sync(() => rmSync(dir, { recursive: true, force: true }))))
      )
      const Alerts = Schema.Struct({
        data: Schema.Struct({
          alerts: Schema.Array(Schema.Struct({
            labels: Schema.Struct({ alertname: Schema.String }),
            annotations: Schema.Struct({ runbook_url: Schema.String })
          }))
        })
      })
      const firing = Effect.tryPromise(() => fetch(`http://127.0.0.1:${webPort}/api/v1/alerts`).then((r) => r.json())).pipe(
        Effect.flatMap(Schema.decodeUnknownEffect(Alerts)),
        Effect.map((body) => body.data.alerts.filter((a) => a.labels.alertname === "ParleyDeadLetters")),
        Effect.orElseSucceed(() => [])
      )
      const [alert] = yield* eventually(firing, (alerts) => alerts.length > 0, 30_000)
      expect(alert?.annotations.runbook_url).toBe(`${page}#parleydeadletters`)
    }).pipe(Effect.scoped), 60_000)

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
        Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord({ METRICS_PORT: String(port), HOST: "127.0.0.1" })))
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
