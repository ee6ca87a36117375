/**
 * The offline (lexical) verifier: whether each claim of a draft reply is supported by the knowledge-base
 * passages it cites, and whether the customer says their problem is solved. Pure and deterministic, no
 * I/O, five languages (en, es, fr, de, pt). It is a cheap guard against invented facts — a number, a link
 * or a policy that the passages do not contain — not an understanding of meaning: a faithful paraphrase
 * in other words can fail it, and a false sentence built from the passages' own words can pass it.
 *
 * Sentences. The draft is cut at every line break (a list item or a line is never joined to the next),
 * list bullets (`-`, `*`, `•`, `1.`, `2)`, `#`) are dropped, then each line is cut after `.`, `!`, `?`,
 * `…` followed by white space or the end. Citation markers (`[1]`, `[1, 2]`) stay with the sentence they
 * follow, whether written before the period (`…days [1].`) or after it (`…days. [1]`), and a line holding
 * only markers joins the sentence before it. A period is not an end when the next word starts in lower
 * case (unknown abbreviations, "e.g. the"), after a known abbreviation ("Dr.", "z.B.", "approx."), or
 * after "No."/"Nr." before a number; decimals ("3.5") and links ("acme.com/a.b") never end a sentence
 * because no white space follows their dots.
 *
 * Claims. Terms are the words of a sentence without stopwords (function words of the five languages,
 * greetings and courtesy words), accent- and case-folded. Numbers (digits, or number words such as
 * "five", "cinco", "fünf") and links (URLs, e-mail addresses) are facts. A sentence is a claim when it is
 * declarative and weighs at least 3, counting each term 1, each fact 2 and a citation marker 1: three
 * terms, or a number with a term, or a cited sentence with two terms. Not claims: questions (ending in
 * "?" or opening with "¿"); hedges ("I couldn't find…", "I don't know", "I'm not sure", "no encontré",
 * "je ne sais pas", "ich bin nicht sicher", "não encontrei"), unless a "but" follows and makes a claim;
 * and, when they carry no fact and no marker, greetings, thanks, apologies, empathy ("I understand…"),
 * offers of more help ("let me know if…", "¿algo más?", "n'hésitez pas") and lines introducing a list
 * (ending in ":"). A courtesy sentence that states a number or cites a passage is checked like any claim,
 * and the clause after a greeting, thanks or apology opener is judged on its own ("Hi Anna, your refund
 * was approved." is a claim about the refund; "Thanks for waiting, I appreciate it." is not a claim).
 *
 * Support. A claim is checked against the passages it cites (title, heading and text), or against all
 * passages when it cites none. A term is found when a source word has the same light stem (plural and
 * English -ed/-ing endings stripped: "days"/"day", "shipped"/"shipping", "meses"/"mes") or shares its
 * first 5 letters or more with it ("return"/"returned", "devolución"/"devoluciones"). `support` is the
 * share of the claim's distinct terms and facts found. A claim is supported when that share is at least
 * 0.6 AND every fact is found exactly: every number (canonical value: "$15.00" = "15", "3,5" = "3.5",
 * "1,000" = "1.000" = "1000"; "five" = "5") and every link. Why 0.6: on the tuning set in the tests
 * (faithful paraphrases in five languages and plausible inventions against the same passages) every
 * faithful sentence scores at least 0.67, while 0.5 lets a claim whose point is half new pass ("Refunds
 * are issued as store credit [2]"); with 0.6 a claim of two terms needs both, of three or four needs
 * all but one, of five needs three. The ratio cannot catch one new word in a long sentence ("Express
 * delivery is free for all orders" scores 0.75); the gate on numbers and links catches the most harmful
 * inventions (prices, delays, percentages, URLs) whatever the ratio. A claim citing no passage that exists, or any
 * sentence carrying a marker that names no passage (it would reach the customer as-is), is unsupported;
 * with no passages at all, every claim is unsupported.
 *
 * Resolution. `confirmsResolution` reads the customer's messages since our last reply: it is true when one
 * of them says the problem is solved ("that solved it", "that's all I needed", "ya funciona", "c'est
 * réglé", "hat geklappt", "resolvido"), no message asks a question or a new request, and neither that
 * message nor a later one complains ("still doesn't work", "sigue sin…", "ne marche pas", "immer noch",
 * "ainda não") or adds a "but". Thanks alone are not a resolution.
 */

/** A knowledge-base passage as the draft cites it: `ref` is its marker's number. */
export interface SourcePassage {
  readonly ref: number
  readonly title: string
  readonly heading: string | null
  readonly text: string
  /** The article's link, when it has one: a link in a claim is found if it is here or in the text. */
  readonly url?: string | null
}

/** The verdict on one sentence of the draft. */
export interface SentenceVerdict {
  /** As in the draft (markers included), without its list bullet. */
  readonly sentence: string
  /** The refs its markers name, in order, without repeats. */
  readonly refs: ReadonlyArray<number>
  /** False for questions, greetings, thanks, offers of further help and hedges ("I couldn't find…"). */
  readonly claim: boolean
  /** True when not a claim, unless it carries a marker naming no passage. */
  readonly supported: boolean
  /**
   * 0..1: share of the claim's content terms and facts found in the cited passages (all passages when it
   * cites none); 1 when not a claim.
   */
  readonly support: number
  /** Content terms, numbers and links not found in the sources; empty when not a claim. */
  readonly missing: ReadonlyArray<string>
}

/** The verdict on a whole draft. */
export interface SupportVerdict {
  readonly supported: boolean
  readonly sentences: ReadonlyArray<SentenceVerdict>
  /** One line for a log or a redraft instruction: which sentences failed and what they lacked; null when supported. */
  readonly reason: string | null
}

/** Least share of a claim's terms and facts found in its sources for it to count as supported. */
export const SUPPORT_THRESHOLD = 0.6

/** Least weight (terms 1, facts 2, a citation marker 1) for a declarative sentence to be a claim. */
export const CLAIM_WEIGHT = 3

// ---------------------------------------------------------------------------------------------------
// Folding and vocabulary
// ---------------------------------------------------------------------------------------------------

/** Lower case, no accents, typographic apostrophes made plain, ß → ss, œ → oe. */
const fold = (text: string): string =>
  text
    .normalize("NFKD")
    .replace(/\p{M}/gu, "")
    .toLowerCase()
    .replace(/[’‘`´]/g, "'")
    .replace(/ß/g, "ss")
    .replace(/œ/g, "oe")
    .replace(/æ/g, "ae")

const words = (list: string): Array<string> => list.split(/\s+/).filter((w) => w !== "")

const STOPWORDS = new Set(
  words(`
    a about above after again against all also am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have having
    he her here hers herself him himself his how i if in into is it its itself just me more most my myself no
    nor not now of off on once only or other our ours ourselves out over own same she should so some such than
    that the their theirs them themselves then there these they this those through to too under until up very
    was we were what when where which while who whom why will with would you your yours yourself yourselves
    may might must shall us within via per etc yes ok okay let lets sure still already simply really usually
    typically generally normally currently either neither whether one ones get gets got getting take takes
    took taken make makes made go goes going went gone able unable cannot there's here's it's that's what's
    don doesn didn isn aren wasn weren couldn wouldn shouldn won hasn haven hadn ll ve re st nd rd th pm
    hi hello hey dear please thanks thank sorry apologies apologise apologize happy glad help helps helped
    hope welcome great good kind kindly regards best cheers
    el la los las lo le les un una unos unas uno de del al en y e o u que se su sus tu tus te ti mi mis me nos
    es son esta estan este estos estas ese esa eso esos esas aquel aquella por para con sin sobre entre hasta
    desde hacia como mas muy ya si pero tambien puede puedes pueden podemos puedo podra hay ha han he hemos has
    haber ser estar fue era sera tiene tienes tienen tener tenemos hacer haz cual cuales quien cuando donde
    todo toda todos todas otro otra otros otras mismo misma cada usted ustedes nosotros ellos ellas ella yo
    solo dentro luego hola gracias favor saludos claro vez veces
    le les des du au aux et ou dans sous pour avec sans ce cet cette ces sa son ses ta ton tes ma mon mes
    une notre votre vos leur leurs je il elle on nous vous ils elles lui qui qu quoi dont sont etre etes suis ai
    as avons avez ont avoir peut peux pouvez pouvons peuvent pas ne plus tres aussi mais donc car comme tous
    toute toutes ca cela ceci fait faire deja encore bien alors ici apres avant jusqu bonjour merci salut svp
    der die das den dem des ein eine einen einem einer eines und oder aber im ins an am auf aus bei mit nach
    von vom zu zum zur fur uber unter vor durch gegen ohne um bis ist sind war waren sein bin bist seid wird
    werden wurde hat haben habe hast hatte kann konnen konnt kannst muss mussen soll sollen will wollen
    mochte ich du er sie es wir ihr ihnen ihre ihren ihrem ihres seine mein meine dein deine unser unsere euer
    nicht kein keine keinen auch noch schon nur sehr wie was wer wo wann warum dass da dann wenn als ob sich
    man hier dort innerhalb bitte danke hallo gerne
    os um uma uns umas do da dos das em na nas ao aos seu sua seus suas meu minha teu tua nosso nossa voce voces ele
    eles elas eu lhe lhes com sem ate muito ja nao sim podem posso estao foi tem temos ter isso isto essa
    aquele apos depois antes aqui entao qual obrigado obrigada ola pode tambem outro outra outros outras
    ainda apenas
  `)
)

const numberWords = (list: string, first: number): Array<[string, string]> =>
  words(list).map((word, i): [string, string] => [word, String(first + i)])

/** Number words, folded; all of them count as numbers in a source. */
const NUMBER_WORDS = new Map<string, string>([
  ...numberWords("zero one two three four five six seven eight nine ten eleven twelve", 0),
  ...numberWords("cero uno dos tres cuatro cinco seis siete ocho nueve diez once doce", 0),
  ...numberWords("deux trois quatre cinq six sept huit neuf dix onze douze", 2),
  ...numberWords("null eins zwei drei vier funf sechs sieben acht neun zehn elf zwolf", 0),
  ...numberWords("um dois tres quatro cinco seis sete oito nove dez onze doze", 1),
  ["un", "1"], ["una", "1"], ["une", "1"], ["ein", "1"], ["eine", "1"], ["uma", "1"], ["duas", "2"],
  ["fifteen", "15"], ["quince", "15"], ["quinze", "15"], ["funfzehn", "15"],
  ["twenty", "20"], ["veinte", "20"], ["vingt", "20"], ["zwanzig", "20"], ["vinte", "20"],
  ["thirty", "30"], ["treinta", "30"], ["trente", "30"], ["dreissig", "30"], ["trinta", "30"]
])

/**
 * Number words that are also common other words ("one", "once", "un" the article, Portuguese "dos" = "of the",
 * "neuf" = new): in a claim they are not taken for numbers, in a source they are.
 */
const AMBIGUOUS_NUMBER_WORDS = new Set(
  words("one once un una uno une ein eine eins um uma dos neuf sept null zero cero")
)

// ---------------------------------------------------------------------------------------------------
// Terms and facts
// ---------------------------------------------------------------------------------------------------

const MARKER = /\[(\d+(?:\s*,\s*\d+)*)\]/g
const LINK = /\b(?:https?:\/\/|www\.)[^\s<>()\]]+|[\p{L}\p{N}._%+-]+@[\p{L}\p{N}-]+(?:\.[\p{L}\p{N}-]+)+/giu
const NUMBER = /(?<![\p{L}\p{N}])\d+(?:[.,:]\d+)*/gu
const WORD = /[\p{L}\p{N}]+(?:'[\p{L}]+)?/gu

/**
 * One value per written number: separators followed by exactly three digits group thousands ("1,000",
 * "1.000"), otherwise the last separator is the decimal point ("3,5", "15.99"); times ("2:30") and
 * versions ("1.2.3") are kept as written.
 */
const canonicalNumber = (written: string): string => {
  if (written.includes(":")) return written
  const groups = written.split(/[.,]/)
  const separators = written.replace(/\d/g, "")
  if (groups.length === 1) return String(Number(written))
  const tail = groups.slice(1)
  if (tail.every((g) => g.length === 3) && new Set(separators).size === 1) return String(Number(groups.join("")))
  if (new Set(separators).size === 2 || groups.length === 2) {
    const decimals = groups[groups.length - 1] ?? ""
    return String(Number(`${groups.slice(0, -1).join("")}.${decimals}`))
  }
  return written
}

const canonicalLink = (link: string): string =>
  fold(link)
    .replace(/^(?:mailto:|https?:\/\/)/, "")
    .replace(/^www\./, "")
    .replace(/[.,;:!?'"]+$/, "")
    .replace(/\/+$/, "")

interface Analysis {
  /** Distinct content terms, folded. */
  readonly terms: ReadonlyArray<string>
  /** Distinct canonical numbers. */
  readonly numbers: ReadonlyArray<string>
  /** Distinct canonical links. */
  readonly links: ReadonlyArray<string>
}

/** French elisions keep the word after the apostrophe ("l'adresse"), English contractions the one before ("don't"). */
const elide = (token: string): string => {
  const [head = "", tail] = token.split("'")
  if (tail === undefined) return head
  return head.length <= 2 || head.endsWith("qu") ? tail : head
}

const analyse = (text: string, side: "claim" | "source"): Analysis => {
  const links = new Set<string>()
  const withoutLinks = text.replace(MARKER, " ").replace(LINK, (link) => {
    links.add(canonicalLink(link))
    return " "
  })
  const numbers = new Set<string>()
  for (const match of withoutLinks.matchAll(NUMBER)) numbers.add(canonicalNumber(match[0]))
  const terms = new Set<string>()
  for (const match of withoutLinks.replace(/[’‘]/g, "'").matchAll(WORD)) {
    const raw = match[0].toLowerCase()
    if (raw === "très") continue // French "very", not Spanish "tres"
    const word = fold(elide(raw)).replace(/^\d+/, "")
    if (word === "" || /^\d+$/.test(word)) continue
    const number = NUMBER_WORDS.get(word)
    if (number !== undefined && (side === "source" || !AMBIGUOUS_NUMBER_WORDS.has(word))) {
      numbers.add(number)
      if (side === "claim") continue
    }
    if (word.length < 2 || STOPWORDS.has(word)) continue
    terms.add(word)
  }
  return { terms: [...terms], numbers: [...numbers], links: [...links] }
}

const SUFFIXES = ["ing", "ed", "es", "en", "s", "e"]

/** Light stem: one plural or English verb ending off (keeping 3 letters), a doubled final consonant undone. */
const stem = (word: string): string => {
  for (const suffix of SUFFIXES) {
    if (word.endsWith(suffix) && word.length - suffix.length >= 3) {
      const base = word.slice(0, -suffix.length)
      return /([^aeiouls])\1$/.test(base) ? base.slice(0, -1) : base
    }
  }
  return word
}

const PREFIX_MATCH = 5

const sharedPrefix = (a: string, b: string): number => {
  let i = 0
  while (i < a.length && i < b.length && a[i] === b[i]) i++
  return i
}

interface SourceIndex {
  readonly terms: ReadonlySet<string>
  readonly stems: ReadonlySet<string>
  readonly numbers: ReadonlySet<string>
  readonly links: ReadonlySet<string>
  /** Folded text, for links written without their scheme. */
  readonly text: string
}

const indexSources = (passages: ReadonlyArray<SourcePassage>): SourceIndex => {
  const all = passages.map((p) => [p.title, p.heading ?? "", p.text, p.url ?? ""].join("\n")).join("\n\n")
  const analysis = analyse(all, "source")
  return {
    terms: new Set(analysis.terms),
    stems: new Set(analysis.terms.map(stem)),
    numbers: new Set(analysis.numbers),
    links: new Set(analysis.links),
    text: fold(all)
  }
}

const termFound = (term: string, sources: SourceIndex): boolean => {
  if (sources.terms.has(term) || sources.stems.has(stem(term))) return true
  if (term.length < PREFIX_MATCH) return false
  for (const source of sources.terms) if (sharedPrefix(term, source) >= PREFIX_MATCH) return true
  return false
}

const linkFound = (link: string, sources: SourceIndex): boolean =>
  sources.links.has(link) || sources.text.includes(link)

// ---------------------------------------------------------------------------------------------------
// Sentences
// ---------------------------------------------------------------------------------------------------

const BULLET = /^\s*(?:#{1,6}|[-*•·‣◦▪–+]|\d{1,2}[.)]|[a-z][)])\s+/
const BOUNDARY = /([.!?…。！？]+)(["'”’»)]*)((?:\s*\[\d+(?:\s*,\s*\d+)*\])*)(?=\s|$)/gu
/** Abbreviations after which a period never ends a sentence. */
const NEVER_END = new Set(
  words("mr mrs ms dr prof st sr sra srta dra mme mlle hr fr e.g i.e z.b d.h u.a p.ej p.ex cf vs approx ca incl bzw")
)
/** Abbreviations after which a period does not end a sentence when a number follows ("No. 5"). */
const BEFORE_NUMBER = new Set(words("no nr num n art p pp vol ch fig tel ext"))

const endsSentence = (line: string, match: RegExpMatchArray): boolean => {
  const index = match.index ?? 0
  const terminator = match[1] ?? ""
  if (/[!?！？]/.test(terminator)) return true
  const next = line.slice(index + match[0].length).trimStart().charAt(0)
  if (next === "") return true
  if (/\p{Ll}/u.test(next)) return false
  const before = fold(/(\S+)$/.exec(line.slice(0, index))?.[1] ?? "").replace(/^[("'“«¿¡]+/, "")
  if (NEVER_END.has(before)) return false
  if (BEFORE_NUMBER.has(before) && /\d/.test(next)) return false
  return true
}

const MARKERS_ONLY = /^[\s.!?…。,;:]*(?:\[\d+(?:\s*,\s*\d+)*\][\s.!?…。,;:]*)+$/

/** The draft's sentences, as written (bullets dropped), with marker-only pieces joined to the sentence before. */
const splitSentences = (draft: string): Array<string> => {
  const sentences: Array<string> = []
  for (const rawLine of draft.replace(/\r\n?/g, "\n").split("\n")) {
    const line = rawLine.replace(BULLET, "").trim()
    if (line === "") continue
    let start = 0
    const pieces: Array<string> = []
    for (const match of line.matchAll(BOUNDARY)) {
      if (!endsSentence(line, match)) continue
      const end = (match.index ?? 0) + match[0].length
      pieces.push(line.slice(start, end).trim())
      start = end
    }
    pieces.push(line.slice(start).trim())
    for (const piece of pieces) {
      if (piece === "") continue
      const last = sentences.length - 1
      if (MARKERS_ONLY.test(piece) && last >= 0) sentences[last] = `${sentences[last]} ${piece}`
      else sentences.push(piece)
    }
  }
  return sentences
}

const readRefs = (sentence: string): Array<number> => {
  const refs: Array<number> = []
  for (const match of sentence.matchAll(MARKER)) {
    for (const n of (match[1] ?? "").split(",")) {
      const ref = Number(n.trim())
      if (!refs.includes(ref)) refs.push(ref)
    }
  }
  return refs
}

// ---------------------------------------------------------------------------------------------------
// What is not a claim
// ---------------------------------------------------------------------------------------------------

/**
 * Alternatives (regular-expression sources, matched against folded text) as one pattern of whole words:
 * anywhere, or only at the start.
 */
const phrases = (alternatives: ReadonlyArray<string>, at: "start" | "anywhere" = "anywhere"): RegExp =>
  new RegExp(`${at === "start" ? "^" : "(?<![\\p{L}\\p{N}])"}(?:${alternatives.join("|")})(?![\\p{L}\\p{N}])`, "u")

/** Greetings, thanks and apologies that open a sentence. */
const OPENER = phrases([
  "hi", "hello", "hey", "dear", "good (?:morning|afternoon|evening)", "greetings", "welcome",
  "(?:many |so )?(?:thanks|thank you|thx)", "(?:i'm |i am |we're |we are )?(?:so |very |really |truly )?sorry",
  "(?:we |i )?apologi[sz]e", "(?:my|our) apologies",
  "hola", "buen(?:os|as) (?:dias|tardes|noches)", "bienvenid[oa]s?", "estimad[oa]s?", "(?:muchas )?gracias",
  "lo (?:siento|sentimos)", "lamento", "lamentamos", "disculp\\p{L}*", "perdon\\p{L}*",
  "bonjour", "bonsoir", "salut", "bienvenue", "chere?", "merci", "(?:je suis |nous sommes )?desole[es]*",
  "toutes mes excuses",
  "hallo", "guten (?:morgen|tag|abend)", "liebe[r]?", "sehr geehrte[r]?", "willkommen", "danke", "vielen dank",
  "es tut (?:mir|uns) leid", "entschuldig\\p{L}*", "verzeihung",
  "ola", "oi", "bom dia", "boa (?:tarde|noite)", "bem-vind[oa]s?", "prezad[oa]s?", "(?:muito )?obrigad[oa]",
  "sinto muito", "desculp\\p{L}*", "pedimos desculpas"
], "start")

/** Empathy: "I understand…", "entiendo…". Unlike an opener, what follows it is not judged apart. */
const EMPATHY = phrases([
  "(?:i|we) (?:completely |totally |fully |really )?(?:understand|can imagine|know how)",
  "entiendo", "comprendo", "je comprends", "nous comprenons", "ich verstehe", "wir verstehen", "entendo", "compreendo"
], "start")

/** Offers of more help and good wishes, anywhere in the sentence. */
const OFFER = phrases([
  "anything else", "something else", "any (?:other|further|more) questions?", "let (?:me|us) know", "feel free",
  "(?:don't|do not) hesitate", "(?:happy|glad) to help", "here to help", "hope (?:this|that|it) helps",
  "have a (?:great|nice|good|wonderful|lovely)",
  "algo mas", "alguna otra (?:pregunta|duda|cosa)", "no dudes?", "avisame", "hazme saber", "estoy aqui para",
  "con gusto", "encantad[oa] de ayudar", "espero que (?:esto|te|le)", "que tengas un",
  "autre chose", "d'autres questions", "autre question", "n'hesite[zs]? pas", "faites-moi savoir", "dites-moi si",
  "je reste a", "avec plaisir", "j'espere que", "bonne (?:journee|soiree)",
  "sonst noch", "weitere fragen", "noch fragen", "zogern sie nicht", "melden sie sich",
  "lassen sie (?:mich|es mich) wissen", "gerne geschehen", "ich hoffe", "schonen tag",
  "algo mais", "mais alguma", "outra (?:duvida|pergunta)", "nao hesite", "me avise", "fico a disposicao",
  "estou aqui para", "espero que (?:isso|isto|tenha)", "tenha um (?:bom|otimo)"
])

/** "I couldn't find…", "I don't know", "I'm not sure", in five languages. */
const HEDGE = phrases([
  "(?:i|we) (?:couldn't|could not|can't|cannot|wasn't able to|was not able to|weren't able to|am unable to|" +
  "are unable to|did not|didn't|don't|do not) " +
  "(?:find|locate|see|confirm|know|have (?:any )?(?:information|details|info))",
  "i'm unable to (?:find|confirm)", "(?:i'm|i am|we're|we are) not (?:sure|certain)",
  "(?:our|the) (?:articles?|knowledge base|help cent(?:er|re)|documentation|passages?) " +
  "(?:doesn't|don't|does not|do not) (?:say|mention|cover|contain|include|explain)",
  "no information (?:about|on)",
  "no (?:he |hemos )?(?:pude|pudimos|puedo|encontre|encontramos|encuentro|tengo informacion|tenemos informacion|" +
  "estoy segur[oa]|sabemos)",
  "no (?:lo )?se(?: si| como| cuando| donde| exactamente|$|[,.])", "no dispongo de",
  "(?:je|nous) n'(?:ai|avons) pas (?:trouve|d'information)", "je ne (?:trouve|sais) pas", "je n'ai trouve aucune?",
  "je ne suis pas (?:sur|certain)", "aucune information",
  "(?:ich|wir) (?:konnte|konnten) (?:leider )?(?:keine|nichts)", "ich weiss (?:es )?nicht",
  "ich bin (?:mir )?nicht sicher", "keine informationen",
  "nao (?:consegui|encontrei|encontramos|sei|tenho (?:certeza|informac\\p{L}*)|temos informac\\p{L}*)",
  "nenhuma informacao"
])

/**
 * A "but" turns a hedge into a claim ("I'm not sure, but refunds take 10 days"). French "mais" and
 * Portuguese "mas" count only after a comma or at the start, where they cannot mean "more".
 */
const CONTRAST =
  /(?:^|[,;.!]\s*)(?:mais|mas|sin embargo|cependant|no entanto)\b|\b(?:but|however|pero|aber|jedoch|porem)\b/

type Kind = "question" | "hedge" | "courtesy" | "intro" | "statement"

const plain = (sentence: string): string =>
  fold(sentence.replace(MARKER, " ").replace(/[*_`]/g, "")).replace(/\s+/g, " ").trim()

/**
 * What follows a greeting, thanks or apology clause ("Hi Anna, …", "Thanks for waiting, …", "Sorry, …"):
 * it is judged on its own, so that an opener neither hides a claim nor counts its words (a name) in it.
 */
const afterOpener = (sentence: string): string | null => {
  const separator = /[,;:–—]/.exec(sentence)
  if (separator === null) return null
  const opener = plain(sentence.slice(0, separator.index)).replace(/^[¡!\s]+/, "")
  if (!OPENER.test(opener) || EMPATHY.test(opener)) return null
  const rest = sentence.slice(separator.index + 1).trim()
  return rest === "" ? null : rest
}

const kindOf = (sentence: string, hasFacts: boolean, cited: boolean): Kind => {
  const body = plain(sentence)
  const bare = body.replace(/["'”’»)\s]+$/, "")
  if (bare.endsWith("?") || bare.endsWith("？") || body.startsWith("¿")) return "question"
  if (HEDGE.test(body) && !CONTRAST.test(body)) return "hedge"
  if (hasFacts || cited) return "statement"
  const start = body.replace(/^[¡!,\s]+/, "")
  if (OPENER.test(start) || EMPATHY.test(start) || OFFER.test(body)) return "courtesy"
  if (bare.endsWith(":")) return "intro"
  return "statement"
}

// ---------------------------------------------------------------------------------------------------
// The check
// ---------------------------------------------------------------------------------------------------

interface Failure {
  readonly sentence: string
  readonly unknownRefs: ReadonlyArray<number>
  readonly missingFacts: ReadonlyArray<string>
  readonly missingTerms: ReadonlyArray<string>
  readonly noPassages: boolean
  /** It cites passages, but none of them exists. */
  readonly noCitedPassage: boolean
  readonly uncitedSupport: boolean
}

const judge = (
  sentence: string,
  passages: ReadonlyArray<SourcePassage>,
  all: SourceIndex
): { readonly verdict: SentenceVerdict; readonly failure: Failure | null } => {
  const refs = readRefs(sentence)
  const known = new Set(passages.map((p) => p.ref))
  const unknownRefs = refs.filter((ref) => !known.has(ref))
  const claimPart = afterOpener(sentence) ?? sentence
  const analysis = analyse(claimPart, "claim")
  const facts = [...analysis.numbers, ...analysis.links]
  const cites = readRefs(claimPart).length > 0
  const weight = analysis.terms.length + 2 * facts.length + (cites ? 1 : 0)
  const claim = kindOf(claimPart, facts.length > 0, cites) === "statement" && weight >= CLAIM_WEIGHT
  const failureBase: Failure = {
    sentence,
    unknownRefs,
    missingFacts: [],
    missingTerms: [],
    noPassages: false,
    noCitedPassage: false,
    uncitedSupport: false
  }

  if (!claim) {
    const supported = unknownRefs.length === 0
    return {
      verdict: { sentence, refs, claim, supported, support: 1, missing: [] },
      failure: supported ? null : failureBase
    }
  }

  const cited = passages.filter((p) => refs.includes(p.ref))
  const sources = refs.length === 0 ? all : indexSources(cited)
  const measure = (index: SourceIndex) => {
    const missingTerms = analysis.terms.filter((t) => !termFound(t, index))
    const missingFacts = [
      ...analysis.numbers.filter((n) => !index.numbers.has(n)),
      ...analysis.links.filter((l) => !linkFound(l, index))
    ]
    const total = analysis.terms.length + facts.length
    const support = total === 0 ? 1 : (total - missingTerms.length - missingFacts.length) / total
    return { missingTerms, missingFacts, support, ok: support >= SUPPORT_THRESHOLD && missingFacts.length === 0 }
  }
  const measured = measure(sources)
  const noPassages = passages.length === 0
  const supported = measured.ok && unknownRefs.length === 0 && !noPassages
  const verdict: SentenceVerdict = {
    sentence,
    refs,
    claim,
    supported,
    support: measured.support,
    missing: [...measured.missingFacts, ...measured.missingTerms]
  }
  if (supported) return { verdict, failure: null }
  return {
    verdict,
    failure: {
      ...failureBase,
      missingFacts: measured.missingFacts,
      missingTerms: measured.missingTerms,
      noPassages,
      noCitedPassage: refs.length > 0 && cited.length === 0,
      uncitedSupport: !noPassages && refs.length > 0 && !measured.ok && measure(all).ok
    }
  }
}

const MAX_QUOTE = 100

const quote = (sentence: string): string => {
  const flat = sentence.replace(/\s+/g, " ").trim()
  return `"${flat.length > MAX_QUOTE ? `${flat.slice(0, MAX_QUOTE - 1).trimEnd()}…` : flat}"`
}

const describeFailure = (failure: Failure): string => {
  const problems: Array<string> = []
  if (failure.noPassages) problems.push("no knowledge-base passage to support it")
  if (failure.unknownRefs.length > 0) {
    problems.push(`cites ${failure.unknownRefs.map((r) => `[${r}]`).join(", ")}, which is not a given passage`)
  }
  const measured = !failure.noPassages && !failure.noCitedPassage
  if (measured && failure.missingFacts.length > 0) {
    problems.push(`not in the sources: ${failure.missingFacts.join(", ")}`)
  }
  if (measured && failure.missingTerms.length > 0 && failure.missingFacts.length === 0) {
    problems.push(`missing: ${failure.missingTerms.join(", ")}`)
  }
  if (failure.uncitedSupport) problems.push("other passages support it: fix the citation")
  return `${quote(failure.sentence)} (${problems.join("; ")})`
}

/**
 * Whether every claim of `draft` is supported by the passages it cites (see the module comment for the
 * rules). An empty draft is supported.
 */
export const checkSupport = (draft: string, passages: ReadonlyArray<SourcePassage>): SupportVerdict => {
  const all = indexSources(passages)
  const judged = splitSentences(draft).map((sentence) => judge(sentence, passages, all))
  const failures = judged.flatMap(({ failure }) => (failure === null ? [] : [failure]))
  return {
    supported: failures.length === 0,
    sentences: judged.map(({ verdict }) => verdict),
    reason: failures.length === 0
      ? null
      : `${failures.length === 1 ? "1 sentence is" : `${failures.length} sentences are`} not supported by the ` +
        `passages: ${failures.map(describeFailure).join("; ")}`
  }
}

// ---------------------------------------------------------------------------------------------------
// Resolution
// ---------------------------------------------------------------------------------------------------

/** The customer says it is solved or that they need nothing more. */
const SOLVED = phrases([
  "solved", "resolved", "fixed", "sorted(?: out)?", "(?:it|that|this|everything) (?:works|worked|did it|did the trick)",
  "works (?:now|again|perfectly|fine|great)", "working (?:now|again)", "all (?:good|set|sorted)",
  "that'?s (?:all|everything|it)(?: i needed)?", "that was (?:all|it|everything)", "(?:i )?found it",
  "got it working", "no (?:more|other|further) questions", "(?:that )?answers my question",
  "resuelto", "solucionado", "arreglado", "(?:ya )?funciona", "funciono", "eso es todo", "nada mas",
  "ya (?:esta|quedo|lo (?:encontre|tengo|consegui))", "me sirvio", "listo",
  "c'est (?:regle|resolu|bon|ok|parfait|tout)", "regle", "resolu", "(?:ca|cela) (?:a )?(?:marche|fonctionne)",
  "tout (?:est bon|fonctionne|marche)", "j'ai trouve", "plus de questions?",
  "(?:hat )?geklappt", "funktioniert(?: jetzt| wieder)?", "gelost", "erledigt", "behoben", "alles klar",
  "das war'?s", "keine (?:weiteren )?fragen mehr",
  "resolvido", "resolveu", "funcionou", "deu certo", "era (?:so )?isso", "e so isso", "consegui", "tudo certo",
  "nao tenho mais (?:duvidas|perguntas)"
])

/** A complaint: the problem goes on or something failed. */
const PROBLEM = phrases([
  "still", "unfortunately", "broken", "error", "fails?", "failed",
  "(?:doesn't|does not|didn't|did not|don't|do not|isn't|is not|wasn't|won't|can't|cannot|couldn't|haven't|" +
  "hasn't|not|never|no longer)(?: \\S+){0,2} (?:work|working|worked|help|helped|fix|fixed|solve|solved|resolve|" +
  "resolved|load|arrive|arrived|find|found)",
  "no (?:me )?(?:funciona|funciono|sirve|sirvio|resuelve|resolvio|arregla|carga|llega|llego)", "siguen?",
  "todavia no", "aun no", "lamentablemente", "desafortunadamente", "falla",
  "(?:marche|fonctionne|regle|resolu|aide)\\S* (?:toujours )?pas", "pas (?:encore )?(?:regle|resolu)",
  "toujours pas", "malheureusement", "erreur",
  "(?:funktioniert|klappt|geht|hilft|gelost|geklappt|behoben)(?: \\S+)? (?:nicht|noch nicht)",
  "nicht (?:gelost|geklappt|funktioniert|behoben)", "immer noch", "noch nicht", "leider", "fehler",
  "nao (?:funciona|funcionou|resolveu|deu certo|ajudou|consegui)", "ainda nao", "continua", "infelizmente", "erro"
])

/** A new question or request, at the start of a clause (the message may have no question mark). */
const REQUEST_START = new RegExp(
  "(?:^|[.!;,\\n]\\s*)(?:(?:and|also|ok|okay|y|et|und|e) )?(?:" + [
    "how (?:do|can|does|to|much|long|many)", "what (?:is|are|do|does|about|if|should|can)",
    "where (?:is|are|do|can)", "when (?:will|is|do|does|can)", "why (?:is|does|do|did)", "can (?:you|i|we)",
    "could (?:you|i)", "is (?:it|there)", "do (?:you|i)", "i (?:would like|want|need)",
    "como (?:puedo|hago|se|cambio)", "donde", "cuando", "por que", "puedes", "puede usted", "quiero", "quisiera",
    "necesito",
    "comment", "pourquoi", "est-ce que", "puis-je", "pouvez-vous", "je voudrais", "je veux", "j'aimerais",
    "wie (?:kann|lange|andere)", "wo (?:ist|kann)", "wann", "warum", "kann ich", "konnen sie", "ich mochte",
    "ich brauche",
    "como (?:posso|faco|altero|mudo)", "onde", "quando", "posso", "pode", "quero", "preciso"
  ].join("|") + ")(?![\\p{L}\\p{N}])",
  "u"
)

/** Another question announced anywhere. */
const REQUEST_ANYWHERE = phrases([
  "another question", "one more (?:thing|question)", "otra (?:pregunta|cosa)", "autre question",
  "noch eine frage", "outra (?:pergunta|duvida)"
])

const asksSomething = (message: string): boolean =>
  message.includes("?") || message.includes("¿") || REQUEST_START.test(message) || REQUEST_ANYWHERE.test(message)

/**
 * Whether the customer's messages since our last reply (oldest first) say their problem is solved: one of
 * them confirms it (thanks alone do not), none asks a question or makes a new request, and neither the
 * confirming message nor a later one complains or adds a "but". False for no messages.
 */
export const confirmsResolution = (customerMessages: ReadonlyArray<string>): boolean => {
  const folded = customerMessages.map((m) => fold(m).replace(/\s+/g, " ").trim())
  if (folded.some(asksSomething)) return false
  let lastSolved = -1
  folded.forEach((m, i) => {
    if (SOLVED.test(m)) lastSolved = i
  })
  if (lastSolved < 0) return false
  return folded.slice(lastSolved).every((m) => !PROBLEM.test(m) && !CONTRAST.test(m))
}
