/**
 * The table of log records in docs/observability.md ("Logs") is complete: every record Parley writes at
 * `info` or above (an `Effect.logInfo`, `logWarning`, `logError` or `logFatal` call in src/, a message
 * built from a template matching by its fixed parts) has its row, at its level; and every record the
 * runbook (docs/runbook.md) searches for or names is in the table.
 */
import { describe, expect, it } from "@effect/vitest"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("../../", import.meta.url))

const sources = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sources(join(dir, entry.name))
      : entry.name.endsWith(".ts")
      ? [join(dir, entry.name)]
      : []
  )

const LEVELS: Record<string, string> = { Info: "INFO", Warning: "WARN", Error: "ERROR", Fatal: "FATAL" }

interface Written {
  readonly file: string
  /** The message, `${…}` parts of a template as `…`. */
  readonly message: string
  readonly level: string
}

/** A string or template literal: its text, with each `${…}` as `…`. */
const LITERAL = String.raw`(?:"((?:[^"\\]|\\.)*)"|\x60((?:[^\x60\\]|\\.)*)\x60)`

const literalText = (double: string | undefined, template: string | undefined) =>
  double ?? (template ?? "").replace(/\$\{[^}]*\}/g, "…")

/**
 * The records a source writes at `info` or above: `Effect.logX("…")`, `(a ? Effect.logX : …)("…")`,
 * and a function held in a variable (`const log = … Effect.logX …` then `log("…")`).
 */
const recordsOf = (file: string): Array<Written> => {
  const text = readFileSync(file, "utf8")
  const found: Array<Written> = []
  const direct = new RegExp(String.raw`Effect\.log(Info|Warning|Error|Fatal)\(\s*${LITERAL}`, "g")
  for (const m of text.matchAll(direct)) {
    found.push({ file, message: literalText(m[2], m[3]), level: LEVELS[m[1] ?? ""] ?? "" })
  }
  const chosen = new RegExp(String.raw`\(([^()]*Effect\.log(?:Info|Warning|Error|Fatal)[^()]*)\)\(\s*${LITERAL}`, "g")
  for (const m of text.matchAll(chosen)) {
    for (const level of (m[1] ?? "").matchAll(/Effect\.log(Info|Warning|Error|Fatal)/g)) {
      found.push({ file, message: literalText(m[2], m[3]), level: LEVELS[level[1] ?? ""] ?? "" })
    }
  }
  for (const held of text.matchAll(/const (\w+) = [^\n]*Effect\.log(Info|Warning|Error|Fatal)/g)) {
    const calls = new RegExp(String.raw`\b${held[1]}\(\s*${LITERAL}`, "g")
    for (const m of text.matchAll(calls)) {
      found.push({ file, message: literalText(m[1], m[2]), level: LEVELS[held[2] ?? ""] ?? "" })
    }
  }
  return found
}

const written = sources(join(root, "src")).flatMap(recordsOf)

const observability = readFileSync(join(root, "docs/observability.md"), "utf8")
const runbook = readFileSync(join(root, "docs/runbook.md"), "utf8")

/** The rows of the table of records: the messages of the first cell (backticked), and the level cell. */
const rows = (() => {
  const logs = observability.slice(observability.indexOf("\n## Logs"), observability.indexOf("\n## Metrics"))
  return logs.split("\n")
    .filter((line) => line.startsWith("| `"))
    .map((line) => {
      const [, first = "", level = ""] = line.split(/(?<!\\)\|/)
      return { messages: [...first.matchAll(/`([^`]+)`/g)].map((m) => m[1] ?? ""), level }
    })
})()

const tabled = rows.flatMap((row) => row.messages)

/** Whether a message of the table is `message` (whose `…` stand for any text). */
const matches = (message: string) => {
  const pattern = new RegExp(`^${message.split("…").map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join(".+")}$`)
  return (row: string) => pattern.test(row)
}

describe("the log table of docs/observability.md", () => {
  it("finds the records of src/ (the scan itself)", () => {
    const messages = written.map((w) => w.message)
    expect(messages).toEqual(expect.arrayContaining([
      "HTTP request",
      "Delivered",
      "Database unavailable; answered 503",
      "No conversation …: the model is unavailable",
      "… interrupted; reconnecting"
    ]))
    expect(written.filter((w) => w.level === "")).toEqual([])
  })

  it("has a row for every record written at info or above, at its level", () => {
    const missing = written.filter((w) => !tabled.some(matches(w.message))).map((w) => `${w.message} (${w.file})`)
    expect(missing).toEqual([])
    const wrongLevel = written.filter((w) => {
      const row = rows.find((r) => r.messages.some(matches(w.message)))
      return row !== undefined && !row.level.includes(w.level)
    }).map((w) => `${w.message}: ${w.level}`)
    expect(wrongLevel).toEqual([])
  })

  it("has a row for every record the runbook looks for", () => {
    // `.message == "…"` in its searches, and the alternatives of `.message | test("^…(a|b)")`.
    const named = [...runbook.matchAll(/\.message == "([^"]+)"/g)].map((m) => m[1] ?? "")
    const searched = [...runbook.matchAll(/\.message \| test\("\^([^"(]*)\(([^)]*)\)/g)]
      .flatMap((m) => (m[2] ?? "").split("|").map((alternative) => `${m[1] ?? ""}${alternative}`))
    expect(named.length).toBeGreaterThan(5)
    expect(searched.length).toBeGreaterThan(5)
    expect(named.filter((message) => !tabled.includes(message))).toEqual([])
    expect(searched.filter((prefix) => !tabled.some((row) => row.startsWith(prefix)))).toEqual([])
    // Records it names in its prose, as `message` or "message".
    const prose = [...runbook.matchAll(/(?:records? |WARN` |ERROR` |INFO` )[`"]([A-Z][^`"]+)[`"]/g)].map((m) => m[1] ?? "")
    expect(prose.length).toBeGreaterThan(3)
    expect(prose.filter((message) => !tabled.some((row) => row.startsWith(message.replace(/…$/, ""))))).toEqual([])
  })
})
