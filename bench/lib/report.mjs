// The printed table (Markdown, so it can be pasted into docs/performance.md as it is).

const cell = (value) => (value === null || value === undefined ? "" : String(value).replaceAll("|", "\\|"))

const metText = (met) => (met === true ? "yes" : met === false ? "**no**" : "n/a")

/** One Markdown table of every scenario's rows, with goal and met from the row's target. */
export const table = (scenarioResults, targets) => {
  const header = ["scenario", "work", "Parley", "baseline (same run)", "ratio", "goal", "met"]
  const lines = [`| ${header.join(" | ")} |`, `|${header.map(() => "---").join("|")}|`]
  for (const [name, result] of Object.entries(scenarioResults)) {
    if (result.error !== undefined) {
      lines.push(`| ${name} | failed: ${cell(result.error.split("\n")[0])} | | | | | |`)
      continue
    }
    for (const row of result.rows ?? []) {
      const t = row.target === undefined ? undefined : targets[row.target]
      lines.push(`| ${[
        name,
        row.work,
        row.parley,
        row.baseline,
        row.ratio === null || row.ratio === undefined ? "" : `${row.ratio}×`,
        t?.goal ?? "",
        t === undefined ? "" : metText(t.met)
      ].map(cell).join(" | ")} |`)
    }
  }
  return lines.join("\n")
}

/** The targets as a short list: name, value, goal, met. */
export const targetList = (targets) =>
  Object.entries(targets).map(([name, t]) =>
    `- ${name}: ${JSON.stringify(t.value)}${t.unit !== undefined ? ` ${t.unit}` : ""} (goal ${t.goal}) → ${metText(t.met)}`
  ).join("\n")
