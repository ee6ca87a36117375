/**
 * Retrieval for the embedded responder: articles cut into passages, ranked with Okapi BM25
 * (k1 = 1.2, b = 0.75). Pure and deterministic: the same articles and question give the same answer.
 */

const STOPWORDS = new Set(
  ("a about above after again against all am an and any are as at be because been before being below between " +
    "both but by can could did do does doing down during each few for from further had has have having he her " +
    "here hers herself him himself his how i if in into is it its itself just me more most my myself no nor not " +
    "now of off on once only or other our ours ourselves out over own same she should so some such than that the " +
    "their theirs them themselves then there these they this those through to too under until up very was we " +
    "were what when where which while who whom why will with would you your yours yourself yourselves hi hello " +
    "hey please thanks thank im ive id dont cant wont get got want need know tell").split(" ")
)

const stripSuffix = (word: string): string => {
  if (word.endsWith("ies") && word.length > 4) return `${word.slice(0, -3)}y`
  if (word.endsWith("sses")) return word.slice(0, -2)
  if (word.endsWith("ing") && word.length > 5) return word.slice(0, -3)
  if (word.endsWith("ed") && word.length > 4) return word.slice(0, -2)
  if (word.endsWith("es") && word.length > 4 && /(sh|ch|x|z|ss)es$/.test(word)) return word.slice(0, -2)
  if (word.endsWith("s") && !word.endsWith("ss") && !word.endsWith("us") && !word.endsWith("is")) return word.slice(0, -1)
  return word
}

/**
 * Strips common English suffixes so that the forms of one word meet: "charged", "charges" and
 * "charging" all become "charg"; "shipped" and "shipping" become "ship".
 */
const stem = (word: string): string => {
  if (word.length <= 3) return word
  let stemmed = stripSuffix(word)
  // shipp(ed) → ship, resett(ing) → reset; but not -ll, -ss, -zz (fall, miss, buzz).
  if (stemmed !== word && /([^aeioulsz])\1$/.test(stemmed)) stemmed = stemmed.slice(0, -1)
  // charge → charg, so that it meets charg(ed) and charg(ing).
  if (stemmed.length > 4 && stemmed.endsWith("e")) stemmed = stemmed.slice(0, -1)
  return stemmed
}

export const tokenize = (text: string): Array<string> =>
  text
    .normalize("NFKD")
    .replace(/\p{M}/gu, "")
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((word) => word.length > 1 && !STOPWORDS.has(word))
    .map(stem)

export interface Passage {
  readonly heading: string | null
  readonly text: string
}

const MAX_PASSAGE = 700

/** Cuts a Markdown or plain-text article into passages: by heading, then by paragraphs up to ~700 chars. */
export const chunk = (body: string): Array<Passage> => {
  const passages: Array<Passage> = []
  let heading: string | null = null
  let current: Array<string> = []
  const flush = () => {
    const text = current.join("\n\n").trim()
    if (text !== "") passages.push({ heading, text })
    current = []
  }
  // A heading line starts a block even without a blank line before it.
  const blocks = body.replace(/\r\n/g, "\n").replace(/\n(?=#{1,6}\s)/g, "\n\n").split(/\n\s*\n/)
  for (const block of blocks) {
    const trimmed = block.trim()
    if (trimmed === "") continue
    const headingMatch = /^#{1,6}\s+(.+)$/m.exec(trimmed)
    if (headingMatch && headingMatch.index === 0) {
      flush()
      heading = (headingMatch[1] ?? "").trim()
      const rest = trimmed.slice(headingMatch[0].length).trim()
      if (rest !== "") current.push(rest)
      continue
    }
    if (current.join("\n\n").length + trimmed.length > MAX_PASSAGE && current.length > 0) flush()
    current.push(trimmed)
  }
  flush()
  return passages
}

export interface Document {
  readonly id: string
  /** What is indexed: title, heading and text. */
  readonly terms: ReadonlyArray<string>
}

export interface Scored {
  readonly id: string
  readonly score: number
  /**
   * The score relative to the sum of the question's term weights (idf): about 1 when the passage has
   * every term of the question, whatever the size of the corpus; unknown terms lower it.
   */
  readonly relevance: number
  /** Share of the question's distinct terms found in the passage. */
  readonly coverage: number
}

export interface Index {
  readonly search: (query: string, limit: number) => Array<Scored>
}

export const buildIndex = (documents: ReadonlyArray<Document>, k1 = 1.2, b = 0.75): Index => {
  // Each document with its term frequencies.
  const indexed = documents.map((doc) => {
    const tf = new Map<string, number>()
    for (const term of doc.terms) tf.set(term, (tf.get(term) ?? 0) + 1)
    return { doc, tf }
  })
  const documentFrequency = new Map<string, number>()
  for (const { tf } of indexed) for (const term of tf.keys()) documentFrequency.set(term, (documentFrequency.get(term) ?? 0) + 1)
  const n = documents.length
  const averageLength = n === 0 ? 0 : documents.reduce((sum, doc) => sum + doc.terms.length, 0) / n
  const idf = (term: string) => {
    const df = documentFrequency.get(term) ?? 0
    return Math.log(1 + (n - df + 0.5) / (df + 0.5))
  }

  return {
    search: (query, limit) => {
      const terms = [...new Set(tokenize(query))]
      if (terms.length === 0 || n === 0) return []
      const scored: Array<Scored> = []
      const ideal = terms.reduce((sum, term) => sum + idf(term), 0)
      indexed.forEach(({ doc, tf }) => {
        let score = 0
        let matched = 0
        for (const term of terms) {
          const f = tf.get(term) ?? 0
          if (f === 0) continue
          matched++
          score += idf(term) * (f * (k1 + 1)) / (f + k1 * (1 - b + b * doc.terms.length / (averageLength || 1)))
        }
        if (matched > 0) scored.push({ id: doc.id, score, relevance: score / ideal, coverage: matched / terms.length })
      })
      return scored.sort((x, y) => y.score - x.score || x.id.localeCompare(y.id)).slice(0, limit)
    }
  }
}
