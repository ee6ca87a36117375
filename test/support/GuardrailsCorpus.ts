/**
 * The guardrails corpus (test/fixtures/guardrails/corpus.json): its schema, its loader, and how a rule
 * set is scored on it. Shared by test/Ai/Guardrails.test.ts and bench/guardrails.ts, so the figures the
 * test asserts and the figures the bench prints are computed the same way.
 *
 * Hostile messages are the positives; a positive prediction is a `block` or `redact` decision.
 * It imports no Parley module: the caller passes the `check` it scores (the bench runs under Node's
 * type stripping, which wants `.ts` import paths, and tsc wants `.js` ones).
 */
import { readFileSync } from "node:fs"
import * as Schema from "effect/Schema"

export const Language = Schema.Literals(["en", "es", "fr", "de", "pt", "it"])
export type Language = typeof Language.Type

export const HostileCategory = Schema.Literals(["prompt_injection", "abuse", "secret"])
export type HostileCategory = typeof HostileCategory.Type

const Hostile = Schema.Struct({
  text: Schema.String,
  lang: Language,
  label: Schema.Literal("hostile"),
  category: HostileCategory
})

const Benign = Schema.Struct({
  text: Schema.String,
  lang: Language,
  label: Schema.Literal("benign")
})

/** One labelled customer message: hostile ones say which category they belong to, benign ones have none. */
export const CorpusEntry = Schema.Union([Hostile, Benign])
export type CorpusEntry = typeof CorpusEntry.Type

export const Corpus = Schema.Array(CorpusEntry)

/** Decodes the corpus file's text; an unknown key, language or category is an error. */
export const decodeCorpus = Schema.decodeUnknownSync(Schema.fromJsonString(Corpus), { onExcessProperty: "error" })

/** The corpus file, decoded. */
export const loadCorpus = (): ReadonlyArray<CorpusEntry> =>
  decodeCorpus(readFileSync(new URL("../fixtures/guardrails/corpus.json", import.meta.url), "utf8"))

/** The part of a guardrail decision the score reads. */
export interface Prediction {
  readonly action: "pass" | "redact" | "block"
  readonly categories: ReadonlyArray<string>
}

/** Confusion counts and the ratios made from them. */
export interface Score {
  readonly hostile: number
  readonly benign: number
  readonly truePositives: number
  readonly falsePositives: number
  readonly falseNegatives: number
  /** truePositives / (truePositives + falsePositives); 1 when nothing was flagged. */
  readonly precision: number
  /** truePositives / hostile; 1 when there is no hostile message. */
  readonly recall: number
}

export interface CategoryScore {
  readonly hostile: number
  /** Messages of the category that were flagged (blocked or redacted), for any reason. */
  readonly flagged: number
  /** Messages of the category whose decision names that category. */
  readonly named: number
  readonly recall: number
  readonly namedRecall: number
}

export interface Evaluation {
  readonly overall: Score
  readonly byCategory: Readonly<Record<HostileCategory, CategoryScore>>
  readonly byLanguage: ReadonlyArray<{ readonly lang: Language; readonly score: Score }>
  /** Hostile messages that passed. */
  readonly misses: ReadonlyArray<CorpusEntry>
  /** Benign messages whose action was not `pass`. */
  readonly falsePositives: ReadonlyArray<{ readonly entry: CorpusEntry; readonly prediction: Prediction }>
}

const flagged = (prediction: Prediction): boolean => prediction.action !== "pass"

const score = (results: ReadonlyArray<{ readonly entry: CorpusEntry; readonly prediction: Prediction }>): Score => {
  const hostile = results.filter((r) => r.entry.label === "hostile")
  const benign = results.filter((r) => r.entry.label === "benign")
  const truePositives = hostile.filter((r) => flagged(r.prediction)).length
  const falsePositives = benign.filter((r) => flagged(r.prediction)).length
  const falseNegatives = hostile.length - truePositives
  return {
    hostile: hostile.length,
    benign: benign.length,
    truePositives,
    falsePositives,
    falseNegatives,
    precision: truePositives + falsePositives === 0 ? 1 : truePositives / (truePositives + falsePositives),
    recall: hostile.length === 0 ? 1 : truePositives / hostile.length
  }
}

const categoryScore = (
  results: ReadonlyArray<{ readonly entry: CorpusEntry; readonly prediction: Prediction }>,
  category: HostileCategory
): CategoryScore => {
  const ofCategory = results.filter((r) => r.entry.label === "hostile" && r.entry.category === category)
  const flaggedCount = ofCategory.filter((r) => flagged(r.prediction)).length
  const named = ofCategory.filter((r) => r.prediction.categories.includes(category)).length
  const total = ofCategory.length
  return {
    hostile: total,
    flagged: flaggedCount,
    named,
    recall: total === 0 ? 1 : flaggedCount / total,
    namedRecall: total === 0 ? 1 : named / total
  }
}

/** Runs `check` over the corpus and scores it overall, per category and per language. */
export const evaluate = (
  corpus: ReadonlyArray<CorpusEntry>,
  check: (text: string) => Prediction
): Evaluation => {
  const results = corpus.map((entry) => ({ entry, prediction: check(entry.text) }))
  return {
    overall: score(results),
    byCategory: {
      prompt_injection: categoryScore(results, "prompt_injection"),
      abuse: categoryScore(results, "abuse"),
      secret: categoryScore(results, "secret")
    },
    byLanguage: Language.literals
      .map((lang) => ({ lang, score: score(results.filter((r) => r.entry.lang === lang)) }))
      .filter(({ score }) => score.hostile + score.benign > 0),
    misses: results.filter((r) => r.entry.label === "hostile" && !flagged(r.prediction)).map((r) => r.entry),
    falsePositives: results.filter((r) => r.entry.label === "benign" && flagged(r.prediction))
  }
}

/** A ratio as a percentage with one decimal. */
export const percent = (ratio: number): string => `${(ratio * 100).toFixed(1)}%`
