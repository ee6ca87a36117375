// `node bench/guardrails.ts` (Node 24 runs TypeScript by stripping its types; nothing to build)
//
// Scores the customer-message guardrails (src/Ai/Guardrails.ts) on the labelled corpus
// (test/fixtures/guardrails/corpus.json): precision and recall overall, per category and per language,
// the hostile messages it misses and the benign ones it flags, and the mean time of one `check` over
// the corpus repeated 200 times. Offline and single-threaded; not part of `npm run bench`.
import { check, rules } from "../src/Ai/Guardrails.ts"
import { evaluate, loadCorpus, percent } from "../test/support/GuardrailsCorpus.ts"

const ROUNDS = 200

const corpus = loadCorpus()
const result = evaluate(corpus, check)
const out = (line = ""): void => {
  process.stdout.write(`${line}\n`)
}

out(`Guardrails: ${rules.length} rules, corpus of ${corpus.length} messages (${result.overall.hostile} hostile, ${result.overall.benign} benign)`)
out()
out("| scope | hostile | benign | TP | FP | FN | precision | recall |")
out("|---|---|---|---|---|---|---|---|")
const row = (scope: string, s: typeof result.overall): void =>
  out(`| ${scope} | ${s.hostile} | ${s.benign} | ${s.truePositives} | ${s.falsePositives} | ${s.falseNegatives} | ${percent(s.precision)} | ${percent(s.recall)} |`)
row("overall", result.overall)
for (const { lang, score } of result.byLanguage) row(lang, score)
out()
out("| category | hostile | flagged | recall | flagged as this category |")
out("|---|---|---|---|---|")
for (const [category, s] of Object.entries(result.byCategory)) {
  out(`| ${category} | ${s.hostile} | ${s.flagged} | ${percent(s.recall)} | ${s.named} (${percent(s.namedRecall)}) |`)
}
out()
out(`Missed hostile messages (${result.misses.length}):`)
for (const entry of result.misses) {
  out(`  - [${entry.lang}] ${entry.label === "hostile" ? entry.category : ""}: ${JSON.stringify(entry.text)}`)
}
out(`Benign messages flagged (${result.falsePositives.length}):`)
for (const { entry, prediction } of result.falsePositives) {
  out(`  - [${entry.lang}] ${prediction.action} ${prediction.categories.join(",")}: ${JSON.stringify(entry.text)}`)
}

const texts = corpus.map((entry) => entry.text)
let sink = 0
for (const text of texts) sink += check(text).findings.length
const started = process.hrtime.bigint()
for (let round = 0; round < ROUNDS; round++) {
  for (const text of texts) sink += check(text).findings.length
}
const elapsedNs = Number(process.hrtime.bigint() - started)
const checks = ROUNDS * texts.length
const meanChars = texts.reduce((sum, text) => sum + text.length, 0) / texts.length
out()
out(`Mean time per check: ${(elapsedNs / checks / 1000).toFixed(1)} µs over ${checks} checks (${ROUNDS} rounds of the corpus, mean message ${meanChars.toFixed(0)} characters; findings seen: ${sink})`)
