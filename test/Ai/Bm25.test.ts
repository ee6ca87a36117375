import { describe, expect, it } from "@effect/vitest"
import { buildIndex, chunk, type Passage, tokenize } from "../../src/Ai/Bm25.js"

/** A small help center, written as support teams write them. */
const articles = [
  {
    title: "Shipping and delivery",
    body: `# Delivery times

Orders leave our warehouse within 1–2 business days. Standard delivery takes 3–5 business days; express delivery arrives the next business day when you order before 2 pm.

# Tracking your order

As soon as your parcel leaves the warehouse we email you a tracking number. Follow the link in that email to see where your parcel is.

# International orders

We deliver to 40 countries. Customs duties and import taxes are paid by the recipient.`
  },
  {
    title: "Returns and refunds",
    body: `## Returning an item

You can return any unused item within 30 days of delivery. Print the prepaid return label from your account and drop the parcel at any post office.

## Refunds

Refunds are issued to the original payment method within 5 business days after we receive the returned item. You will get an email when the refund is processed.`
  },
  {
    title: "Your account",
    body: `## Forgotten password

Click “Forgot password” on the sign-in page and enter your email address. We send a reset link that is valid for one hour. If the email does not arrive, check your spam folder.

## Two-step verification

Turn on two-step verification in your security settings to protect your account with a code from your phone.`
  },
  {
    title: "Billing",
    body: `## Invoices

Invoices are available under Billing in your account settings. You can download each invoice as a PDF; it lists our VAT number.

## Payment methods

We accept Visa, Mastercard, American Express and PayPal. Your card is charged when the order leaves our warehouse.

## Duplicate charges

If you see two charges for one order, one of them is usually a temporary authorization hold from your bank. It disappears within 3 days.`
  }
]

interface IndexedPassage extends Passage {
  readonly id: string
  readonly title: string
}

/** Indexes articles as the knowledge base does: each passage as title + heading + text. */
const indexArticles = (input: ReadonlyArray<{ readonly title: string; readonly body: string }>) => {
  const passages: Array<IndexedPassage> = input.flatMap((article, a) =>
    chunk(article.body).map((passage, p) => ({ ...passage, id: `${a}-${p}`, title: article.title }))
  )
  const index = buildIndex(
    passages.map((p) => ({ id: p.id, terms: tokenize(`${p.title} ${p.heading ?? ""} ${p.text}`) }))
  )
  const byId = new Map(passages.map((p) => [p.id, p]))
  return {
    passages,
    search: (query: string, limit = 3) => index.search(query, limit),
    /** The heading of the best passage for `query`. */
    best: (query: string) => {
      const [top] = index.search(query, 1)
      return top === undefined ? undefined : byId.get(top.id)?.heading
    }
  }
}

describe("tokenize", () => {
  it("folds case and drops stopwords and one-letter words", () => {
    expect(tokenize("Where is my REFUND?")).toEqual(["refund"])
    expect(tokenize("How do I get a refund, please")).toEqual(["refund"])
    expect(tokenize("the and of to a I")).toEqual([])
    expect(tokenize("")).toEqual([])
  })

  it("folds accents", () => {
    expect(tokenize("Café Crème RÉSUMÉ naïve")).toEqual(tokenize("cafe creme resume naive"))
    expect(tokenize("Réfunds")).toEqual(["refund"])
  })

  it("stems plurals to the singular's token", () => {
    expect(tokenize("Refunds")).toEqual(tokenize("refund"))
    expect(tokenize("Refunds")).toEqual(["refund"])
    expect(tokenize("passwords")).toEqual(["password"])
    expect(tokenize("policies")).toEqual(tokenize("policy"))
    expect(tokenize("addresses")).toEqual(tokenize("address"))
    expect(tokenize("boxes")).toEqual(tokenize("box"))
    expect(tokenize("invoices parcels orders")).toEqual(tokenize("invoice parcel order"))
  })

  it("leaves words in -ss, -us and -is alone", () => {
    expect(tokenize("address status analysis")).toEqual(["address", "status", "analysis"])
  })

  it("keeps numbers and splits on punctuation", () => {
    expect(tokenize("30 days, 2-step")).toEqual(["30", "day", "step"])
    expect(tokenize("e-mail support@shop.com")).toEqual(["mail", "support", "shop", "com"])
  })

  it("gives every inflection of a word one token (-s, -ed, -ing, silent e, doubled consonant)", () => {
    const families = [
      ["charge", "charges", "charged", "charging"],
      ["change", "changes", "changed", "changing"],
      ["ship", "ships", "shipped", "shipping"],
      ["reset", "resets", "resetting"],
      ["update", "updates", "updated", "updating"]
    ]
    for (const family of families) {
      const tokens = family.map((word) => tokenize(word).join(" "))
      expect(new Set(tokens).size, `${family.join("/")} → ${tokens.join("/")}`).toBe(1)
      expect(tokens[0]).not.toBe("")
    }
  })
})

describe("chunk", () => {
  it("cuts Markdown by headings, keeping each heading with its text", () => {
    expect(chunk(articles[1]!.body)).toEqual([
      {
        heading: "Returning an item",
        text:
          "You can return any unused item within 30 days of delivery. Print the prepaid return label from your account and drop the parcel at any post office."
      },
      {
        heading: "Refunds",
        text:
          "Refunds are issued to the original payment method within 5 business days after we receive the returned item. You will get an email when the refund is processed."
      }
    ])
  })

  it("keeps text before the first heading without a heading, and a heading's text on the next line", () => {
    expect(chunk("Welcome to the help center.\n\n### Opening hours\nMonday to Friday, 9 to 5.\r\n\r\nClosed on holidays."))
      .toEqual([
        { heading: null, text: "Welcome to the help center." },
        { heading: "Opening hours", text: "Monday to Friday, 9 to 5.\n\nClosed on holidays." }
      ])
  })

  it("skips empty sections and treats #hashtags as text", () => {
    expect(chunk("# Empty\n\n# Full\n\n#hashtag is not a heading")).toEqual([
      { heading: "Full", text: "#hashtag is not a heading" }
    ])
  })

  it("cuts long text by paragraphs into passages of at most ~700 characters, each keeping its heading", () => {
    const paragraph = (i: number) => `Paragraph ${i}. ${"Lorem ipsum dolor sit amet, consectetur adipiscing elit. ".repeat(3)}`.trim()
    const paragraphs = Array.from({ length: 10 }, (_, i) => paragraph(i))
    expect(paragraphs[0]!.length).toBeGreaterThan(180)
    expect(paragraphs[0]!.length).toBeLessThan(230)
    const passages = chunk(`## Long section\n\n${paragraphs.join("\n\n")}\n\n## Short section\n\nThe end.`)
    expect(passages).toEqual([
      { heading: "Long section", text: paragraphs.slice(0, 3).join("\n\n") },
      { heading: "Long section", text: paragraphs.slice(3, 6).join("\n\n") },
      { heading: "Long section", text: paragraphs.slice(6, 9).join("\n\n") },
      { heading: "Long section", text: paragraphs[9] },
      { heading: "Short section", text: "The end." }
    ])
    for (const passage of passages) expect(passage.text.length).toBeLessThanOrEqual(702)
  })

  it("plain text without headings is cut by paragraphs too", () => {
    const paragraphs = Array.from({ length: 6 }, (_, i) => `Step ${i}: ${"x".repeat(300)}`)
    const passages = chunk(paragraphs.join("\n\n"))
    expect(passages.map((p) => p.heading)).toEqual([null, null, null])
    expect(passages.map((p) => p.text)).toEqual([
      paragraphs.slice(0, 2).join("\n\n"),
      paragraphs.slice(2, 4).join("\n\n"),
      paragraphs.slice(4, 6).join("\n\n")
    ])
  })

  it("a heading line directly after a paragraph line (no blank line) still starts a passage", () => {
    expect(chunk("# Shipping\nWe ship worldwide.\n## Returns\nReturns are free.")).toEqual([
      { heading: "Shipping", text: "We ship worldwide." },
      { heading: "Returns", text: "Returns are free." }
    ])
  })
})

describe("buildIndex(...).search", () => {
  const kb = indexArticles(articles)

  it("ranks the relevant passage first for realistic support questions", () => {
    const cases: Array<readonly [string, string]> = [
      ["How long does delivery take?", "Delivery times"],
      ["Where is my refund?", "Refunds"],
      ["When will I get my money back for a returned item? Refund status", "Refunds"],
      ["How can I track my parcel?", "Tracking your order"],
      ["I forgot my password, how do I reset it?", "Forgotten password"],
      ["Where can I download my invoice?", "Invoices"],
      ["Do you accept PayPal?", "Payment methods"],
      ["Can I return an item I bought three weeks ago?", "Returning an item"],
      ["Who pays customs duties on international orders?", "International orders"]
    ]
    for (const [question, heading] of cases) expect(kb.best(question), question).toBe(heading)
  })

  it("ranks the duplicate-charges passage first for \"Why was I charged twice?\"", () => {
    for (const question of ["Why was I charged twice? I see two charges", "Why was I charged twice?"]) {
      expect(kb.best(question), question).toBe("Duplicate charges")
    }
  })

  it("reports coverage as the share of the question's distinct terms found in the passage", () => {
    const index = buildIndex([
      { id: "refunds", terms: tokenize("Refund policy: refunds go to the original card") },
      { id: "shipping", terms: tokenize("Shipping policy") }
    ])
    // refund, shipping, policy, card → distinct terms; "refund" twice counts once.
    const results = index.search("refund refunds shipping policy card", 10)
    expect(results.map((r) => [r.id, r.coverage])).toEqual([["refunds", 3 / 4], ["shipping", 2 / 4]])
    const full = index.search("refund card", 10)
    expect(full.map((r) => [r.id, r.coverage])).toEqual([["refunds", 1]])
  })

  it("scores with Okapi BM25 (k1 = 1.2, b = 0.75) and a non-negative idf", () => {
    const index = buildIndex([
      { id: "a", terms: ["refund"] },
      { id: "b", terms: ["ship"] }
    ])
    // idf = ln(1 + (2 - 1 + 0.5) / (1 + 0.5)) = ln 2; tf part = 1 × 2.2 / (1 + 1.2 × 1) = 1.
    const [hit] = index.search("refund", 5)
    // Relevance: the score over the question's total idf; here the one term, so exactly 1.
    expect(hit).toEqual({ id: "a", score: expect.closeTo(Math.LN2, 12), relevance: expect.closeTo(1, 12), coverage: 1 })
    // A term in every document still scores above zero.
    const everywhere = buildIndex([{ id: "a", terms: ["order"] }, { id: "b", terms: ["order"] }]).search("order", 5)
    expect(everywhere.map((r) => r.id)).toEqual(["a", "b"])
    for (const r of everywhere) expect(r.score).toBeCloseTo(Math.log(1 + 0.5 / 2.5), 12)
  })

  it("ranks a passage that repeats a term above one that mentions it once, and a rarer term above a common one", () => {
    const index = buildIndex([
      { id: "once", terms: tokenize("refund order delivery parcel") },
      { id: "twice", terms: tokenize("refund refund order parcel") },
      { id: "other", terms: tokenize("order parcel") }
    ])
    expect(index.search("refund", 5).map((r) => r.id)).toEqual(["twice", "once"])
    // "delivery" is in one passage, "order" in all three.
    expect(index.search("delivery order", 5)[0]!.id).toBe("once")
  })

  it("returns [] for a question with no known terms, only stopwords, or an empty index", () => {
    // "pay" is no word of the corpus ("payment" and "paid" are), nor is "cryptocurrency".
    expect(kb.search("Can I pay with cryptocurrency?")).toEqual([])
    expect(kb.search("xylophone zeppelin")).toEqual([])
    expect(kb.search("Is it the same as this or that?")).toEqual([])
    expect(kb.search("")).toEqual([])
    expect(buildIndex([]).search("refund", 3)).toEqual([])
  })

  it("honours the limit, best first", () => {
    const all = kb.search("order parcel delivery email account", 100)
    expect(all.length).toBeGreaterThan(3)
    expect(kb.search("order parcel delivery email account", 3)).toEqual(all.slice(0, 3))
    for (let i = 1; i < all.length; i++) expect(all[i - 1]!.score).toBeGreaterThanOrEqual(all[i]!.score)
  })

  it("is deterministic: same results twice, from the same or a rebuilt index; ties break by id", () => {
    const question = "My parcel has not arrived, can I get a refund?"
    const first = kb.search(question, 5)
    expect(first.length).toBeGreaterThan(0)
    expect(kb.search(question, 5)).toEqual(first)
    expect(indexArticles(articles).search(question, 5)).toEqual(first)
    const tied = buildIndex([
      { id: "b", terms: ["refund"] },
      { id: "a", terms: ["refund"] },
      { id: "c", terms: ["refund"] }
    ])
    expect(tied.search("refund", 3).map((r) => r.id)).toEqual(["a", "b", "c"])
  })
})
