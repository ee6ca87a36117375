import { describe, expect, it } from "@effect/vitest"
import * as Option from "effect/Option"
import { read } from "../../src/Csat/Scale.js"
import type { RatingStyle } from "../../src/Domain/Csat.js"

/** The reading as a plain value (or null for none), so expectations compare exact values. */
const reading = (style: RatingStyle, answer: string) => Option.getOrNull(read(style, answer))

const good = (score: 4 | 5) => ({ score, rating: "good" })
const bad = (score: 1 | 2 | 3) => ({ score, rating: "bad" })

describe("Csat/Scale read", () => {
  describe("scale 2: thumbs / binary", () => {
    it.each([
      ["good", good(5)],
      ["bad", bad(1)],
      ["👍", good(5)],
      ["👎", bad(1)],
      ["1", good(5)],
      ["0", bad(1)]
    ] as const)("%s reads as %o", (answer, expected) => {
      expect(reading(2, answer)).toEqual(expected)
    })

    it("ignores case, surrounding whitespace and the emoji variation selector", () => {
      expect(reading(2, "  GOOD ")).toEqual(good(5))
      expect(reading(2, "Bad")).toEqual(bad(1))
      expect(reading(2, "👍\ufe0f")).toEqual(good(5))
    })

    it.each(["2", "5", "-1", "maybe", "", "⭐", "good bad"])("%j fits no reading", (answer) => {
      expect(read(2, answer)).toEqual(Option.none())
    })
  })

  describe("scale 3: faces", () => {
    it.each([
      ["1", bad(1)],
      ["2", bad(3)],
      ["3", good(5)],
      ["😞", bad(1)],
      ["😐", bad(3)],
      ["😀", good(5)]
    ] as const)("%s reads as %o", (answer, expected) => {
      expect(reading(3, answer)).toEqual(expected)
    })

    it.each(["0", "4", "5", "👍", "⭐⭐⭐", "1.5"])("%j fits no reading", (answer) => {
      expect(read(3, answer)).toEqual(Option.none())
    })
  })

  describe("scale 5: 1–5, stars or emoji", () => {
    it.each([
      ["1", bad(1)],
      ["2", bad(2)],
      ["3", bad(3)],
      ["4", good(4)],
      ["5", good(5)]
    ] as const)("the number %s reads as %o", (answer, expected) => {
      expect(reading(5, answer)).toEqual(expected)
    })

    it.each([
      ["⭐", bad(1)],
      ["⭐⭐", bad(2)],
      ["⭐⭐⭐", bad(3)],
      ["⭐⭐⭐⭐", good(4)],
      ["⭐⭐⭐⭐⭐", good(5)],
      ["★★★★", good(4)],
      ["⭐\ufe0f⭐\ufe0f", bad(2)]
    ] as const)("the stars %s read as %o", (answer, expected) => {
      expect(reading(5, answer)).toEqual(expected)
    })

    it.each([
      ["😡", bad(1)],
      ["😞", bad(2)],
      ["😐", bad(3)],
      ["🙂", good(4)],
      ["😍", good(5)]
    ] as const)("the emoji %s reads as %o", (answer, expected) => {
      expect(reading(5, answer)).toEqual(expected)
    })

    it.each(["0", "6", "10", "4.5", "⭐⭐⭐⭐⭐⭐", "👍", "five", ""])("%j fits no reading", (answer) => {
      expect(read(5, answer)).toEqual(Option.none())
    })
  })

  describe("scales 10 and 11: NPS 0–10 onto 1–5", () => {
    const nps: ReadonlyArray<readonly [number, 1 | 2 | 3 | 4 | 5]> = [
      [0, 1],
      [1, 1],
      [2, 2],
      [3, 2],
      [4, 3],
      [5, 3],
      [6, 3],
      [7, 4],
      [8, 4],
      [9, 5],
      [10, 5]
    ]

    it.each([10, 11] as const)("scale %i maps every point: 0–1→1, 2–3→2, 4–6→3, 7–8→4, 9–10→5", (style) => {
      expect(nps.map(([answer]) => reading(style, String(answer)))).toEqual(
        nps.map(([, score]) => ({ score, rating: score >= 4 ? "good" : "bad" }))
      )
    })

    it("detractors and passives up to 6 are bad; 7 and up are good", () => {
      expect(reading(11, "6")).toEqual(bad(3))
      expect(reading(11, "7")).toEqual(good(4))
    })

    it.each(["11", "-1", "100", "7.5", "⭐⭐⭐", "good", ""])("%j fits no reading", (answer) => {
      expect(read(10, answer)).toEqual(Option.none())
      expect(read(11, answer)).toEqual(Option.none())
    })
  })

  it("good/bad follows the 1–5 score: 1–3 bad, 4–5 good, on every scale", () => {
    const all: ReadonlyArray<readonly [RatingStyle, string]> = [
      [2, "good"],
      [2, "bad"],
      [3, "1"],
      [3, "2"],
      [3, "3"],
      ...["1", "2", "3", "4", "5"].map((a) => [5, a] as const),
      ...Array.from({ length: 11 }, (_, n) => [11, String(n)] as const)
    ]
    for (const [style, answer] of all) {
      const r = reading(style, answer)
      expect(r, `${style}/${answer}`).not.toBeNull()
      expect(r!.rating, `${style}/${answer}`).toBe(r!.score >= 4 ? "good" : "bad")
    }
  })
})
