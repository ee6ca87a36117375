/**
 * Reading a CSAT answer on its scale (docs/api.md): the raw answer is kept as sent; beside it Parley
 * stores a 1–5 score and Zendesk's good/bad reading (1–3 bad, 4–5 good).
 */
import * as Option from "effect/Option"
import type { RatingStyle } from "../Domain/Csat.js"

type Score = 1 | 2 | 3 | 4 | 5

export interface Reading {
  readonly score: Score
  readonly rating: "good" | "bad"
}

const scores: ReadonlyArray<Score> = [1, 2, 3, 4, 5]

/** `n` as a score, when it is one. */
const score = (n: number): Option.Option<Score> => Option.fromNullishOr(scores.find((s) => s === n))

const reading = (score: Score): Reading => ({ score, rating: score >= 4 ? "good" : "bad" })

const normalize = (answer: string): string => answer.trim().toLowerCase().replace(/\ufe0f/g, "")

const binary: Record<string, Score> = {
  good: 5, "👍": 5, thumbs_up: 5, thumbsup: 5, up: 5, yes: 5, positive: 5, satisfied: 5,
  bad: 1, "👎": 1, thumbs_down: 1, thumbsdown: 1, down: 1, no: 1, negative: 1, unsatisfied: 1
}

const faces: Record<string, Score> = {
  "1": 1, "😞": 1, "☹": 1, "🙁": 1, sad: 1, unhappy: 1, bad: 1,
  "2": 3, "😐": 3, neutral: 3, okay: 3, ok: 3, meh: 3,
  "3": 5, "😀": 5, "😃": 5, "😊": 5, "🙂": 5, happy: 5, good: 5, great: 5
}

const fivePoint: Record<string, Score> = {
  "😡": 1, "😠": 1, "😞": 2, "🙁": 2, "😐": 3, "🙂": 4, "😊": 4, "😀": 5, "😍": 5, "🤩": 5,
  terrible: 1, bad: 2, okay: 3, good: 4, great: 5, excellent: 5
}

const integerIn = (answer: string, min: number, max: number): Option.Option<number> => {
  if (!/^\d{1,2}$/.test(answer)) return Option.none()
  const n = Number(answer)
  return n >= min && n <= max ? Option.some(n) : Option.none()
}

const stars = (answer: string): Option.Option<number> => {
  const count = [...answer].length
  return /^(⭐|★)+$/u.test(answer) && count <= 5 ? Option.some(count) : Option.none()
}

/** The reading of `answer` on a scale of `style`, or none when it fits no reading of that scale. */
export const read = (style: RatingStyle, rawAnswer: string): Option.Option<Reading> => {
  const answer = normalize(rawAnswer)
  switch (style) {
    case 2:
      return Option.fromNullishOr(binary[answer]).pipe(
        Option.orElse(() => integerIn(answer, 0, 1).pipe(Option.map((n): Score => (n === 1 ? 5 : 1)))),
        Option.map(reading)
      )
    case 3:
      return Option.fromNullishOr(faces[answer]).pipe(Option.map(reading))
    case 5:
      return integerIn(answer, 1, 5).pipe(
        Option.orElse(() => stars(answer)),
        Option.flatMap(score),
        Option.orElse(() => Option.fromNullishOr(fivePoint[answer])),
        Option.map(reading)
      )
    case 10:
    case 11:
      // NPS 0–10 onto 1–5: 0–1 → 1, 2–3 → 2, 4–6 → 3, 7–8 → 4, 9–10 → 5 (detractors stay "bad").
      return integerIn(answer, 0, 10).pipe(
        Option.flatMap((n) => score(Math.min(5, Math.max(1, Math.round(1 + n * 0.4))))),
        Option.map(reading)
      )
  }
}

export const describeScale = (style: RatingStyle): string => {
  switch (style) {
    case 2:
      return "good/bad, 👍/👎 or 1/0"
    case 3:
      return "1–3 or faces (😞 😐 😀)"
    case 5:
      return "1–5, ⭐ to ⭐⭐⭐⭐⭐, or emoji"
    case 10:
    case 11:
      return "an NPS score 0–10"
  }
}
