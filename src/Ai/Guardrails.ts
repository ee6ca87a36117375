/**
 * The customer-message guardrails (the integration flag `customerMessageGuardrails`, docs/ai.md): a fixed
 * rule set that decides, offline and in microseconds, whether a customer message may reach the language
 * model as it is (`pass`), only with its secrets replaced (`redact`), or not at all (`block`: a prompt
 * injection or abuse). Pure: no I/O, no services, the same text always gets the same decision.
 *
 * Injection and abuse rules read a normalised copy of the text (NFKD, lower case, accents and zero-width
 * characters removed, Cyrillic/Greek look-alike letters, leetspeak and censored profanity mapped,
 * spaced-out letters joined), so that "IGN0RE", "ignоre" (Cyrillic o), "ＩＧＮＯＲＥ" and "i g n o r e" all
 * read "ignore"; base64 runs are decoded and read by the injection rules too. Secret rules read the
 * original text, because what they find is cut out of it.
 *
 * A rule set, not a classifier: it recognises phrasings, in English, Spanish, French, German, Portuguese
 * and Italian. Benign look-alikes must pass (a customer's own "ignore my previous message", questions
 * about passwords, manuals or API keys, frustration without name-calling), so the rules lean towards
 * passing; new phrasings of an attack are missed until a rule covers them (docs/ai.md, "Guardrails").
 *
 * The first call compiles the patterns (a few hundred milliseconds, once per process); later calls
 * take tens of microseconds.
 */

/** What a finding is about. */
export type GuardrailCategory = "prompt_injection" | "abuse" | "secret"

/** What kind of secret a `secret` finding removed. */
export type SecretKind =
  | "card_number"
  | "card_security_code"
  | "password"
  | "pin"
  | "api_key"
  | "iban"
  | "private_key"

/** One rule that matched. */
export interface GuardrailFinding {
  readonly category: GuardrailCategory
  /** The rule's stable id, one of {@link rules}' ids, e.g. `injection.ignore_instructions`. */
  readonly rule: string
  readonly secret?: SecretKind
}

/** What may become of a customer message. */
export interface GuardrailDecision {
  /** pass: the text reaches the model unchanged; redact: `text` is the message with secrets replaced; block: nothing of it reaches the model */
  readonly action: "pass" | "redact" | "block"
  /** The categories of the findings, each once, in the order prompt_injection, abuse, secret. */
  readonly categories: ReadonlyArray<GuardrailCategory>
  /** Every rule that matched, once each, in the order of {@link rules}. */
  readonly findings: ReadonlyArray<GuardrailFinding>
  /** what may reach the model: the original (pass), redacted (redact), "" (block) */
  readonly text: string
}

/** A rule as documentation (docs/ai.md). */
export interface GuardrailRuleInfo {
  readonly id: string
  readonly category: GuardrailCategory
  readonly description: string
}

// ---------------------------------------------------------------------------------------------------
// Normalisation
// ---------------------------------------------------------------------------------------------------

/** The customer's text as the injection and abuse rules read it. */
interface Normalised {
  readonly text: string
  /** Runs of spaced-out single letters ("i g n o r e"), joined ("ignore"). */
  readonly joined: ReadonlyArray<string>
  /** The text's base64 runs that decode to readable text, normalised in turn. */
  readonly decoded: ReadonlyArray<Normalised>
}

const INVISIBLE = /[\u00AD\u034F\u061C\u115F\u1160\u17B4\u17B5\u180B-\u180E\u200B-\u200F\u202A-\u202E\u2060-\u206F\uFE00-\uFE0F\uFEFF]/g
const COMBINING_MARKS = /[\u0300-\u036F\u1AB0-\u1AFF\u1DC0-\u1DFF\u20D0-\u20FF\uFE20-\uFE2F]/g

/** Cyrillic and Greek letters that look like Latin ones (NFKD leaves them alone). */
const LOOK_ALIKES: Readonly<Record<string, string>> = {
  "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p", "с": "c", "т": "t",
  "у": "y", "х": "x", "і": "i", "ї": "i", "ј": "j", "ѕ": "s", "ԁ": "d", "ԛ": "q", "ԝ": "w", "ɡ": "g",
  "α": "a", "β": "b", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t", "υ": "u", "χ": "x",
  "ß": "ss", "ø": "o", "ł": "l", "đ": "d", "æ": "ae", "œ": "oe", "ı": "i",
  "\u2018": "'", "\u2019": "'", "\u201B": "'", "\u2032": "'", "\u00B4": "'",
  "\u201C": "\"", "\u201D": "\"", "\u201E": "\"", "\u00AB": "\"", "\u00BB": "\""
}
const LOOK_ALIKE_CHARS = new RegExp(`[${Object.keys(LOOK_ALIKES).join("")}]`, "g")

const LEET: Readonly<Record<string, string>> = { "0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a", "$": "s" }

/** A word that mixes letters with leetspeak digits or symbols ("1d10t", "a$$hole"). */
const LEET_WORD = /[a-z0-9@$]*[a-z][a-z0-9@$]*/g
const HAS_LEET = /[013457@$]/
const BANG_IN_WORD = /(?<=[a-z0-9])[!|](?=[a-z0-9])/g

/** Four or more single letters separated by one space, dot, dash, underscore or star: "i d i o t", "f.u.c.k". */
const SPACED_LETTERS = /(?<![a-z0-9])[a-z](?:[ .\-_*][a-z]){3,}(?![a-z0-9])/g

/** Maps leetspeak in a word, unless the word ends in digits like an identifier does (base64, ipv4, mp3). */
const deLeet = (word: string): string =>
  HAS_LEET.test(word) && /[a-z]/.test(word) && !/\d$/.test(word) ? word.replace(/[013457@$]/g, (c) => LEET[c] ?? c) : word

const NON_ASCII = /[^\x00-\x7F]/
const MAYBE_LEET = /[a-z][013457@$!|]|[013457@$][a-z]/
const MAYBE_SPACED = /(?:^|[^a-z0-9])[a-z][ .\-_*][a-z][ .\-_*][a-z][ .\-_*][a-z](?![a-z0-9])/
const MAYBE_CENSORED = /[a-z][*#]/

/** Censored profanity ("f***ing", "sh*t", "a**hole") written out, so the abuse rules read it. */
const CENSORED: ReadonlyArray<readonly [RegExp, string]> = [
  [/\bf[*#]{2,}(?:k)?(ing|in|er|ers|ed|s)?\b/g, "fuck$1"],
  [/\bf[*#]ck/g, "fuck"],
  [/\bs[*#]{1,2}t\b/g, "shit"],
  [/\bb[*#]{1,3}ch(es)?\b/g, "bitch$1"],
  [/\ba[*#]{2,}hole(s)?\b/g, "asshole$1"],
  [/\bc[*#]{2}t(s)?\b/g, "cunt$1"],
  [/\bd[*#]{1,2}ck/g, "dick"]
]

/** The text as the injection and abuse rules read it; `decode` also reads its base64 runs (one level deep). */
const normalise = (text: string, decode: boolean): Normalised => {
  const joined: Array<string> = []
  let flat = NON_ASCII.test(text)
    ? text.normalize("NFKD").replace(COMBINING_MARKS, "").replace(INVISIBLE, "").toLowerCase()
      .replace(LOOK_ALIKE_CHARS, (c) => LOOK_ALIKES[c] ?? c)
    : text.toLowerCase()
  flat = flat.replace(/[^\S\n]+/g, " ").replace(/ ?\n\s*/g, "\n")
  if (MAYBE_CENSORED.test(flat)) {
    for (const [pattern, spelled] of CENSORED) flat = flat.replace(pattern, spelled)
  }
  if (MAYBE_LEET.test(flat)) flat = flat.replace(BANG_IN_WORD, "i").replace(LEET_WORD, deLeet)
  if (MAYBE_SPACED.test(flat)) {
    flat = flat.replace(SPACED_LETTERS, (run) => {
      const word = run.replace(/[ .\-_*]/g, "")
      joined.push(word)
      return word
    })
  }
  return { text: flat.trim(), joined, decoded: decode ? decodedRuns(text) : [] }
}

/** Long runs of base64 text: decoded and read again by the injection rules. */
const BASE64_RUN = /[A-Za-z0-9+/]{24,}={0,2}/g

/** Base64 runs (mixed case, as encoded text is) that decode to mostly printable text. */
const decodedRuns = (text: string): Array<Normalised> =>
  Array.from(text.matchAll(BASE64_RUN)).flatMap((m) => {
    if (!/[a-z]/.test(m[0]) || !/[A-Z]/.test(m[0])) return []
    const decoded = Buffer.from(m[0], "base64").toString("utf8")
    const printable = decoded.replace(/[^\p{L}\p{N}\p{P}\p{Zs}]/gu, "").length
    return printable >= decoded.length * 0.9 ? [normalise(decoded, false)] : []
  })

// ---------------------------------------------------------------------------------------------------
// Building blocks
// ---------------------------------------------------------------------------------------------------

/** An alternation of regular-expression fragments. */
const any = (...fragments: ReadonlyArray<string>): string => `(?:${fragments.join("|")})`

/** An alternation from a `|`-separated list of fragments written over several lines. */
const words = (list: string): string =>
  `(?:${list.replace(/\s*\n\s*/g, "").replace(/\|{2,}/g, "|").replace(/^\||\|$/g, "")})`

const compile = (...sources: ReadonlyArray<string>): RegExp => new RegExp(sources.map((s) => `(?:${s})`).join("|"))

/** "...instructions I gave you", "...que je vous ai données": the customer's own instructions. */
const OWN_INSTRUCTIONS_AFTER = any(
  `\\s+(?:that\\s+|which\\s+)?(?:i|we)\\b`,
  `\\s+que\\s+(?:te\\s+|le\\s+|lhe\\s+|les\\s+|vos\\s+|os\\s+)?(?:yo\\s+|eu\\s+)?(?:di|dimos|envie|mande|deje|escribi|puse|pase|he\\s+\\w+|dei|enviei|mandei|deixei|escrevi|passei)\\b`,
  `\\s+que\\s+(?:je|j'|nous)\\b`,
  `,?\\s+(?:die|welche)\\s+(?:ich|wir)\\b`,
  `\\s+che\\s+(?:ti\\s+|vi\\s+|le\\s+)?(?:ho|abbiamo)\\b`
)

/** "...instructions about the delivery": a customer correcting their own order, not the model's rules. */
const ORDER_TOPIC_AFTER = `\\s+${
  words(`about|regarding|concerning|for|on|re|sobre|acerca de|para|de|del|concernant|au sujet de|pour|sur|de la|du|zur|zum|zu|
  bezuglich|fur|uber|a respeito d[aeo]|da|do|riguardo|su|per|sulla|sul|della|dell'`)
}\\s+(?:\\S+\\s+){0,2}?${
  words(`delivery|shipping|shipment|order|address|parcel|package|pickup|gift|wrapping|return|payment|invoice|billing|
  appointment|booking|reservation|door|entrega|envio|pedido|direccion|paquete|devolucion|pago|factura|cita|reserva|
  livraison|commande|adresse|colis|retour|paiement|facture|rendez-vous|lieferung|bestellung|paket|rucksendung|zahlung|
  rechnung|termin|endereco|pacote|devolucao|pagamento|fatura|consegna|spedizione|ordine|indirizzo|pacco|reso|fattura|
  appuntamento`)
}`

// ---------------------------------------------------------------------------------------------------
// Prompt injection
// ---------------------------------------------------------------------------------------------------

const IGNORE_VERBS = words(`
  ignore|ignores|ignored|disregard|forget|override|overrule|bypass|circumvent|discard|abandon|dismiss|set aside|
  put aside|pay no attention to|do not follow|don't follow|dont follow|stop following|no longer follow|disobey|
  ignora|ignore|ignorar|ignoren|ignoras|olvida|olvide|olviden|olvidar|olvidate de|olvidese de|descarta|descarte|omite|
  omita|pasa por alto|pase por alto|no hagas caso (?:a|de)|no haga caso (?:a|de)|haz caso omiso (?:a|de)|
  haga caso omiso (?:a|de)|deja de seguir|no sigas|desobedece|
  ignorez|ignorer|oublie|oublies|oubliez|oublier|ne tiens pas compte d(?:e|es|u)|ne tenez pas compte d(?:e|es|u)|
  ne tenez plus compte d(?:e|es|u)|fais abstraction d(?:e|es|u)|faites abstraction d(?:e|es|u)|laisse tomber|
  laissez tomber|passe outre|passez outre|outrepasse|outrepassez|contourne|contournez|abandonne|abandonnez|
  ne suis plus|ne suivez plus|arrete de suivre|arretez de suivre|desobeis|desobeissez|
  ignoriere|ignorier|ignorieren sie|vergiss|vergesst|vergessen sie|missachte|missachten sie|missachtet|umgehe|
  umgehen sie|verwirf|verwerfe|verwerfen sie|befolge nicht mehr|
  ignora|ignorem|esqueca|esquece|esquecer|esquecam|desconsidere|desconsidera|desconsiderar|desconsiderem|despreze|
  despreza|nao siga|deixe de seguir|pare de seguir|nao obedeca|desobedeca|passe por cima d(?:e|as|os)|
  nao leve em conta|nao leve em consideracao|
  ignori|ignorate|ignorare|dimentica|dimentichi|dimenticate|dimenticare|trascura|trascurate|non considerare|
  non tenere conto d(?:i|elle|ei|egli)|non tener conto d(?:i|elle|ei)|scarta|scartate|aggira|disobbedisci|
  non seguire|smetti di seguire|lascia perdere`)

const INSTRUCTION_NOUNS = words(`
  instructions?|rules?|prompts?|directives?|guidelines|guidance|programming|training|constraints|restrictions|
  limitations|commands|polic(?:y|ies)|guardrails|safeguards|system prompt|system message|context|protocols?|
  instrucciones|instruccion|reglas?|indicaciones|directrices|directriz|directivas|normas?|restricciones|limitaciones|programacion|
  politicas|pautas|consignas|comandos|entrenamiento|
  consignes?|regles?|directive|programmation|limites|politiques|
  anweisungen|anweisung|instruktionen|regeln|vorgaben|richtlinien|befehle|anordnungen|systemanweisungen|systemprompt|
  programmierung|einschrankungen|beschrankungen|direktiven|vorschriften|
  instrucoes|instrucao|regras?|diretrizes|diretivas|restricoes|limitacoes|programacao|orientacoes|treinamento|
  istruzioni|istruzione|regole|regola|indicazioni|direttive|comandi|norme|restrizioni|limitazioni|programmazione|linee guida|
  politiche|addestramento`)

const INSTRUCTION_MODIFIERS = words(`
  previous|prior|above|earlier|preceding|foregoing|original|initial|old|existing|current|system|hidden|internal|
  default|safety|former|given|aforementioned|preset|programmed|built-in|core|base|ethical|moral|content|other|
  anteriores|anterior|previas|previos|previa|originales|iniciales|inicial|del sistema|de sistema|ocultas|internas|
  actuales|de arriba|antiguas|dadas|recibidas|de seguridad|predeterminadas|eticas|de antes|
  precedentes|precedents|precedente|anterieures|anterieurs|anterieure|initiales|initiaux|originaux|d'origine|
  du systeme|systeme|cachees|internes|actuelles|ci-dessus|d'avant|de depart|par defaut|donnees|recues|ethiques|
  vorherigen|vorherige|vorigen|bisherigen|bisherige|fruheren|fruhere|obigen|obige|vorangegangenen|vorangehenden|
  vorstehenden|ursprunglichen|ursprungliche|alten|anfanglichen|versteckten|internen|aktuellen|gegebenen|erhaltenen|
  vorgegebenen|
  previas|originais|iniciais|do sistema|atuais|acima|antigas|dadas|de seguranca|padrao|
  precedenti|originali|iniziali|di sistema|nascoste|interne|attuali|sopra|di prima|ricevute|date|di sicurezza|
  predefinite|etiche|
  (?:of the|de la|del|de l'|du|des|der|da|do|della|dello|dell')\\s+(?:tienda|store|shop|company|empresa|magasin|boutique|
  entreprise|shops|firma|unternehmens|loja|negozio|azienda|sitio|site|website|platform|plataforma|plateforme|chat|bot|
  assistant|asistente|assistente|assistenten|sistema|systeme|systems|system)`)

const INSTRUCTION_DETERMINERS = words(`
  the|these|those|this|that|such|a|the (?:store|shop|company|site|website|platform|chat|bot|assistant)'s|
  las|los|la|el|estas|esas|esos|estos|dichas|
  les|le|l'|ces|cette|des|de|du|
  die|diese|den|der|jene|
  as|os|o|essas|esses|estas|estes|aquelas|
  le|gli|i|il|lo|queste|quelle|delle|dei|degli`)

const INSTRUCTION_POSSESSIVES = words(`
  your|ur|yer|tus|tu|sus|su|vuestras|vuestros|tes|ta|ton|vos|votre|deine|deinen|deiner|ihre|ihren|eure|euren|
  dein|deinem|suas|seus|sua|seu|tuas|teus|tua|teu|tue|tuoi|tuo|vostre|vostri|sue|suoi`)

const INSTRUCTION_QUANTIFIERS = words(`all|any|every|each|todas|todos|cualquier|toutes|tous|tout|alle|samtliche|
  jegliche|allen|quaisquer|qualquer|tutte|tutti|qualsiasi|ogni|qualunque`)

/** "...the rules you were given", "...las normas que te dieron", "...from the store owner": the model's own. */
const GIVEN_TO_YOU = words(`
  (?:that\\s+|which\\s+)?you\\s+(?:were|have been|'ve been)\\s+(?:configured|programmed|given|told|set up|trained|instructed|prompted)|
  from\\s+(?:the\\s+|your\\s+)?(?:store owner|owner|company|developers?|admins?|administrators?|operators?|system|creators?|makers?|management|shop|business)|
  que\\s+te\\s+(?:dieron|han dado|programaron|han programado|configuraron|han configurado|ensenaron|han ensenado|dijeron|han dicho|pusieron)|
  qu'on\\s+(?:t'a|vous a)\\s+(?:donnees?|appris|programmees?|dites?|fournies?)|que\\s+(?:tu as|vous avez)\\s+(?:recues?|eues?)|
  ,?\\s*die\\s+(?:man\\s+)?(?:dir|ihnen)\\s+(?:\\S+\\s+)?(?:gegeben|beigebracht|vorgegeben|gesagt|mitgegeben)|
  que\\s+(?:te|lhe)\\s+(?:deram|ensinaram|passaram|programaram|configuraram|disseram)|que\\s+(?:voce|vc)\\s+recebeu|
  che\\s+ti\\s+(?:hanno|sono state)\\s+(?:dato|date|detto|insegnato|programmato|configurato)|che\\s+hai\\s+ricevuto`)

/** "ignore all previous instructions", "olvida tus reglas", "ne tiens pas compte des consignes précédentes". */
const IGNORE_INSTRUCTIONS = compile(
  `\\b${IGNORE_VERBS}\\s+${
    any(
      `${INSTRUCTION_QUANTIFIERS}\\s+(?:(?:of|de|di|d')\\s*)?(?:${INSTRUCTION_DETERMINERS}\\s+|${INSTRUCTION_POSSESSIVES}\\s+)*(?:${INSTRUCTION_MODIFIERS}\\s+)*${INSTRUCTION_NOUNS}`,
      `(?:${INSTRUCTION_DETERMINERS}\\s+)?${INSTRUCTION_POSSESSIVES}\\s+(?:${INSTRUCTION_MODIFIERS}\\s+)*${INSTRUCTION_NOUNS}`,
      `(?:${INSTRUCTION_DETERMINERS}\\s+)?(?:${INSTRUCTION_MODIFIERS}\\s+)+${INSTRUCTION_NOUNS}`,
      `(?:${INSTRUCTION_DETERMINERS}\\s+)?${INSTRUCTION_NOUNS}\\s+${INSTRUCTION_MODIFIERS}`,
      `(?:${INSTRUCTION_DETERMINERS}\\s+)?${INSTRUCTION_NOUNS}\\s+${GIVEN_TO_YOU}`
    )
  }\\b(?!${OWN_INSTRUCTIONS_AFTER})(?!${ORDER_TOPIC_AFTER})`,
  // German puts the verb last: "bitte die bisherigen Anweisungen ignorieren".
  `\\b${
    any(
      `(?:alle|samtliche|jegliche|deine|ihre|eure)\\s+(?:${INSTRUCTION_MODIFIERS}\\s+)*${INSTRUCTION_NOUNS}`,
      `(?:die|diese|den)\\s+(?:${INSTRUCTION_MODIFIERS}\\s+)+${INSTRUCTION_NOUNS}`
    )
  }(?:,?\\s+\\S+){0,3}?\\s+(?:ignorieren|vergessen|missachten|ubergehen|ausser acht lassen|nicht (?:mehr )?(?:befolgen|beachten))\\b`,
  // "ignore everything above", "forget everything you were told", "olvida todo lo anterior"
  `\\b(?:ignore|disregard|forget)\\s+(?:all|everything|anything)\\s+(?:that\\s+)?${
    any(
      `(?:(?:was|has been)\\s+)?(?:(?:said|written|stated)\\s+)?(?:above|before (?:this|now)|prior|previously|so far|of the above)\\b`,
      `you(?:'ve| have)?\\s+(?:were\\s+|have been\\s+|been\\s+)?(?:told|taught|given|programmed|instructed|know|knew|learned|learnt)\\b`
    )
  }`,
  `\\b(?:ignore|disregard|forget)\\s+the above\\b`,
  `\\b(?:ignore|disregard|forget)\\s+what(?:ever)?\\s+(?:you(?:'ve| have)?\\s+(?:were\\s+|have been\\s+|been\\s+)?(?:told|taught|given|programmed|instructed|configured)|(?:they|your (?:creators?|developers?|makers?|owners?|company))\\s+(?:told|taught|gave|programmed))\\b`,
  `\\b(?:olvida|olvide|olvidate de|ignora|ignore)\\s+(?:todo\\s+)?lo\\s+(?:anterior|de arriba|que te (?:dijeron|han dicho|ensenaron|han ensenado|indicaron|programaron|han programado|configuraron|han configurado))`,
  `\\b(?:oublie|oubliez|ignore|ignorez)\\s+(?:tout\\s+)?(?:ce qui precede|ce qu'on (?:t'a|vous a) (?:dit|appris|enseigne|programme)|ce que l'on (?:t'a|vous a) (?:dit|appris|enseigne))`,
  `\\b(?:vergiss|vergessen sie|ignoriere|ignorieren sie)\\s+alles,?\\s+(?:was (?:man )?(?:dir|ihnen) (?:gesagt|beigebracht|vorgegeben)|(?:vorherige|bisherige|obige|davor|oben))`,
  `\\b(?:esqueca|esquece|ignore|ignora|desconsidere)\\s+tudo\\s+(?:o que (?:te|lhe) (?:disseram|ensinaram|foi dito)|acima|anterior|o que foi dito (?:acima|antes))`,
  `\\b(?:dimentica|ignora)\\s+(?:tutto\\s+)?(?:(?:quello|cio) che ti (?:hanno detto|hanno insegnato|hanno programmato|e stato detto)|cio che precede)`,
  `\\b(?:dimentica|ignora)\\s+tutto\\s+(?:quanto\\s+)?sopra`
)

const REVEAL_VERBS = words(`
  reveal|show|print|display|output|repeat|recite|tell|give|share|leak|dump|write|copy|paste|quote|list|send|expose|
  disclose|spell out|read out|provide|echo|summari[sz]e|translate|
  muestra|muestrame|muestre|mostrar|revela|revelame|revele|revelar|imprime|imprimir|dime|digame|escribe|escribeme|
  repite|repita|comparte|copia|ensename|ensena|dame|deme|filtra|lista|resume|traduce|
  montre|montrez|montre-moi|montrez-moi|affiche|affichez|revele|revelez|imprimez|donne|donnez|donne-moi|donnez-moi|
  dis-moi|dites-moi|ecris|ecrivez|repete|repetez|partage|partagez|copiez|recite|recitez|divulgue|resume|traduis|
  zeig|zeige|zeigen sie|gib|geben sie|verrate|verraten sie|drucke|schreib|schreibe|wiederhole|nenne|teile|kopiere|
  offenbare|enthulle|ubersetze|
  mostre|mostra|revela|imprima|diga|me diga|escreva|compartilhe|partilhe|copie|exiba|exibe|informe|
  liste|resuma|traduza|me passe|
  mostrami|rivela|rivelami|stampa|dimmi|mi dica|scrivi|ripeti|condividi|elenca|riassumi|traduci|dammi`)

/** Names of the hidden prompt that a customer has no business asking for. */
const SYSTEM_PROMPT = words(`
  system[-_ ]?prompt|system instructions?|setup (?:text|prompt|instructions|message)|sys prompt|(?:initial|original|hidden|secret|internal|base|starting|first) prompt|
  pre-?prompt|meta-?prompt|developer (?:message|prompt|instructions)|
  (?:hidden|secret|confidential|underlying) (?:instructions|rules|directives|guidelines|programming)|
  internal (?:instructions|directives|programming)|
  instructions (?:you were|you've been|you have been|that you were) (?:given|told|programmed)|
  prompt (?:del|de) sistema|prompt (?:inicial|original|oculto|secreto|interno)|
  instrucciones (?:del sistema|de sistema|ocultas|secretas|internas|confidenciales)|reglas (?:ocultas|secretas)|
  directrices (?:ocultas|secretas|internas)|indicaciones (?:del sistema|ocultas|secretas)|
  prompt (?:systeme|du systeme|initial|d'origine|cache|secret|interne)|invite systeme|
  instructions (?:systeme|du systeme|cachees|secretes|internes|confidentielles)|
  consignes (?:systeme|du systeme|cachees|secretes|internes)|regles (?:cachees|secretes)|
  systemanweisung(?:en)?|systeminstruktionen|anfangsprompt|ursprungsprompt|initialprompt|
  (?:versteckten|geheimen|internen|vertraulichen) (?:anweisungen|regeln|instruktionen|vorgaben|prompts?)|
  prompt (?:do|de) sistema|prompt (?:oculto|secreto)|
  instrucoes (?:do sistema|de sistema|ocultas|secretas|internas|confidenciais)|regras (?:ocultas|secretas)|
  diretrizes (?:ocultas|secretas|internas)|
  prompt (?:di|del) sistema|prompt (?:iniziale|originale|nascosto|segreto|interno)|
  istruzioni (?:di sistema|del sistema|nascoste|segrete|interne|riservate)|regole (?:nascoste|segrete)`)

/** "your prompt" and friends: the possessive makes even the plain words a request for the hidden prompt. */
const YOUR_PROMPT = `\\b${
  words(`your|ur|tu|tus|ton|tes|votre|vos|dein|deine|deinen|ihr|ihren|seu|sua|suas|seus|o seu|tuo|tue|tuoi|il tuo|le tue`)
}\\s+${
  words(`system message|prompt|pre-?prompt|instructions (?:verbatim|word for word|exactly|in full)|mensaje del sistema|
  message systeme|systemnachricht|mensagem do sistema|messaggio di sistema`)
}\\b`

const INSTRUCTIONS_RECEIVED = [
  `\\b(?:what|which)\\s+(?:instructions|rules|guidelines|directives|prompt|orders)\\s+(?:did|have|were|had)?\\s*(?:you|they)\\s+(?:\\S+\\s+)?(?:receive|received|get|got|given|been given|programmed with|told)\\b`,
  `\\b(?:instructions|rules|prompt|guidelines|directives)\\s+(?:that\\s+)?(?:your|the)\\s+(?:creators?|developers?|programmers?|makers?|owners?|operators?|company|admins?|trainers?)\\s+(?:gave|give|wrote|set|programmed|provided|put)\\s+(?:to\\s+|for\\s+|into\\s+|in\\s+)?you\\b`,
  `\\b(?:que|cuales)\\s+(?:instrucciones|reglas|indicaciones|directrices|normas|ordenes)\\s+(?:te|le)\\s+(?:han\\s+dado|dieron|dio|han\\s+puesto|han\\s+programado|dan)\\b`,
  `\\b(?:que|cuales)\\s+(?:instrucciones|reglas|indicaciones|directrices)\\s+(?:has|ha)\\s+recibido\\b`,
  `\\bquel(?:le)?s?\\s+(?:instructions|consignes|regles|directives)\\s+(?:on\\s+t'a|on\\s+vous\\s+a|t'a-t-on|vous\\s+a-t-on|as-tu|avez-vous|tu\\s+as|vous\\s+avez)\\s*(?:donnees?|recues?|fournies?|eues?)\\b`,
  `\\bwelche\\s+(?:anweisungen|instruktionen|regeln|vorgaben|richtlinien)\\s+(?:hast du|haben sie|hat man dir|hat man ihnen)\\s+(?:\\S+\\s+){0,4}?(?:bekommen|erhalten|gegeben)\\b`,
  `\\bwelche\\s+(?:anweisungen|instruktionen|regeln|vorgaben)\\s+wurden\\s+(?:dir|ihnen)\\s+(?:\\S+\\s+){0,3}?(?:gegeben|vorgegeben|mitgegeben)\\b`,
  `\\bquais\\s+(?:instrucoes|regras|diretrizes|orientacoes)\\s+(?:voce|vc|tu)\\s+(?:recebeu|recebeste|ganhou)\\b`,
  `\\bquais\\s+(?:instrucoes|regras|diretrizes|orientacoes)\\s+(?:te|lhe)\\s+(?:deram|foram\\s+dadas|passaram)\\b`,
  `\\bquali\\s+(?:istruzioni|regole|direttive|indicazioni)\\s+(?:hai|ha)\\s+ricevuto\\b`,
  `\\bquali\\s+(?:istruzioni|regole|direttive|indicazioni)\\s+ti\\s+(?:hanno\\s+dato|sono\\s+state\\s+date)\\b`
]

/** "the message you were configured with", "el mensaje con el que te configuraron", "mit dem du konfiguriert wurdest". */
const CONFIGURED_YOU = words(`
  you\\s+(?:were|have been|'ve been)\\s+(?:configured|programmed|set up|initiali[sz]ed|instructed|prompted|primed)|
  (?:configured|programmed|set up|initiali[sz]ed|instructed|prompted|primed)\\s+you|
  te\\s+(?:configuraron|han configurado|programaron|han programado|instruyeron|iniciaron)|
  (?:on\\s+t'a|on\\s+vous\\s+a|t'a-t-on)\\s+(?:configure|programme|parametre|instruit|initialise)|(?:tu as|vous avez)\\s+ete\\s+(?:configure|programme|parametre)e?s?|
  (?:du|sie)\\s+(?:konfiguriert|programmiert|eingerichtet|instruiert|initialisiert)\\s+(?:wurdest|wurden|worden bist|worden sind)|(?:man\\s+)?dich\\s+(?:konfiguriert|programmiert|eingerichtet)\\s+hat|
  (?:te\\s+|lhe\\s+)?(?:configuraram|programaram)\\s+(?:em\\s+)?(?:voce|vc|ti)|(?:voce|vc)\\s+foi\\s+(?:configurad|programad)[oa]|
  ti\\s+hanno\\s+(?:configurato|programmato|impostato)|sei\\s+stat[oa]\\s+(?:configurat|programmat|impostat)[oa]`)

/** "...for the return", "...pour le retour": instructions about something, as the business gives customers. */
const ABOUT_SOMETHING = words(`for|about|on|regarding|to|para|sobre|pour|sur|concernant|fur|zu|zur|zum|uber|per|su|
  riguardo|sul|sulla|de|du|del|della|da|do`)

/** "your initial instructions", "tes instructions de départ", "le tue istruzioni iniziali". */
const INITIAL = words(`initial|original|starting|first|base|default|underlying|core|iniciales|originales|de inicio|del principio|
  initiales|d'origine|de depart|ursprunglichen|anfanglichen|ersten|iniciais|originais|de origem|iniziali|originali|
  di partenza`)

const SETUP_NOUNS = words(`text|message|prompt|instructions|guidance|rules|guidelines|settings|configuration|config|texto|mensaje|configuracion|
  instrucciones|reglas|texte|consignes|regles|nachricht|anweisungen|regeln|mensagem|instrucoes|regras|testo|messaggio|
  istruzioni|regole`)

const REVEAL_PROMPT = compile(
  ...INSTRUCTIONS_RECEIVED,
  `\\b${SETUP_NOUNS}\\b(?:,?\\s+[^\\s,]+){0,6}?,?\\s+${CONFIGURED_YOU}\\b`,
  `\\b${REVEAL_VERBS}\\b(?:\\s+\\S+){0,3}?\\s+${SETUP_NOUNS}(?:\\s+\\S+){0,2}?\\s+${GIVEN_TO_YOU}`,
  `\\b(?:anything|everything|all|whatever|text|words|content)\\s+(?:that\\s+(?:came|comes|is|was)\\s+|written\\s+)?(?:before|above)\\s+my\\s+(?:first\\s+)?(?:message|question)\\b`,
  `\\b(?:conversation|context|text|prompt|data)\\s+(?:that\\s+)?you\\s+(?:have\\s+)?(?:loaded|in (?:your )?memory|in your context)\\b`,
  `\\b${INSTRUCTION_POSSESSIVES}\\s+(?:${INITIAL}\\s+${INSTRUCTION_NOUNS}|${INSTRUCTION_NOUNS}\\s+${INITIAL})\\b(?!\\s+${ABOUT_SOMETHING})`,
  `\\bwhat\\s+(?:were|have|are)\\s+you\\s+(?:been\\s+)?(?:told|instructed|programmed|asked|not allowed|forbidden)\\s+(?:to\\s+)?(?:never|not to|not)?\\s*(?:reveal|say|tell|share|disclose|mention|talk about|discuss|show)\\b`,
  `\\b(?:que|lo que)\\s+te\\s+(?:han dicho|dijeron|han pedido|pidieron)\\s+que\\s+no\\s+(?:digas|reveles|cuentes|compartas|muestres)`,
  `\\bqu'(?:est-ce qu'on|on)\\s+(?:t'a|vous a)\\s+(?:dit|demande|interdit)\\s+de\\s+(?:ne\\s+(?:pas|jamais)\\s+)?(?:reveler|dire|partager|montrer)`,
  `\\bwas\\s+(?:darfst du|durfen sie|sollst du|sollen sie)\\s+(?:nicht|niemals|keinesfalls)\\s+(?:verraten|sagen|preisgeben|zeigen|teilen)`,
  `\\bo que\\s+(?:te|lhe)\\s+(?:disseram|mandaram|pediram)\\s+para\\s+nao\\s+(?:revelar|dizer|contar|mostrar)`,
  `\\bcosa\\s+ti\\s+hanno\\s+(?:detto|chiesto)\\s+di\\s+non\\s+(?:rivelare|dire|mostrare|condividere)`,
  `\\b${REVEAL_VERBS}\\b(?:\\s+\\S+){0,5}?\\s+${SYSTEM_PROMPT}\\b`,
  `\\b${INSTRUCTION_POSSESSIVES}\\s+${SYSTEM_PROMPT}\\b`,
  YOUR_PROMPT
)

const EXFILTRATE_CONTEXT = compile(
  `\\b${
    words(`repeat|print|output|translate|summari[sz]e|rewrite|copy|paste|echo|write out|reproduce|recite|show|display|
    dump|encode|spell out|return|list`)
  }\\s+(?:\\S+\\s+){0,4}?${
    any(
      `(?:the\\s+)?(?:text|words|content|messages?|instructions|everything|all|stuff|lines?)\\s+(?:above|before this|preceding|prior to (?:this|my message))`,
      `everything\\s+(?:above|before|prior)`,
      `(?:the\\s+)?above(?:\\s+(?:text|message|instructions|content))?(?:\\s+(?:in|into|to|as|verbatim|word for word)\\b|\\s*$|\\s*[,.;])`,
      `the conversation (?:history|so far|log)`,
      `your (?:context|context window|memory|conversation history)`
    )
  }`,
  `\\b(?:what|everything|all)\\s+(?:was|is|has been)\\s+(?:written|said|stated|typed)\\s+(?:above|before (?:this|my (?:first )?message))`,
  `\\bstarting with\\s+["']?you are\\b`,
  `\\b(?:instructions|prompt|rules|context|conversation|above|secrets?|guidelines|instrucciones|consignes|anweisungen|instrucoes|istruzioni|regeln|reglas|regles|regras|regole)\\b[^.!?\\n]{0,60}?\\b(?:base ?64|rot-?13)\\b`,
  `\\b(?:base ?64|rot-?13)\\b[^.!?\\n]{0,60}?\\b(?:your|the|tus|tes|vos|deine|suas|tue)\\s+(?:instructions|prompt|rules|context|secrets?|instrucciones|consignes|anweisungen|instrucoes|istruzioni|regeln|reglas|regles|regras|regole)\\b`,
  `\\b(?:decode|decodifica|decodifique|decodez|decode|dekodiere|decodifichi)\\s+(?:this|the following|it|esto|lo siguiente|ceci|ca|das|isto|isso|questo)\\b[^.!?\\n]{0,40}?\\b(?:and|then|y|et|und|e|ed)\\s+(?:follow|execute|do|run|obey|apply|act on|carry out|hazlo|haz lo que|sigue|obedece|ejecuta|suis|execute|fais|befolge|fuhre|tue|siga|obedeca|faca|esegui|segui|fai)`,
  `!\\[[^\\]]*\\]\\(\\s*https?:\\/\\/[^)\\s]*\\?[^)\\s]*(?:\\{|%7b|prompt|secret|history|conversation|instructions|data=)`,
  `\\b(?:repite|repita|traduce|traduzca|resume|imprime|copia|escribe|muestra)\\s+(?:\\S+\\s+){0,3}?(?:todo lo anterior|el texto (?:anterior|de arriba)|lo de arriba|todo lo que hay (?:arriba|antes)|palabra por palabra|literalmente|(?:el|todo el) historial)`,
  `\\b(?:repete|repetez|traduis|traduisez|resume|resumez|imprime|copie|ecris|affiche)\\s+(?:\\S+\\s+){0,3}?(?:tout ce qui (?:precede|est (?:au-dessus|ci-dessus))|le texte (?:precedent|ci-dessus|au-dessus)|ce qui (?:precede|est au-dessus)|mot pour mot|textuellement|l'historique)`,
  `\\b(?:wiederhole|ubersetze|fasse|drucke|kopiere|schreib|schreibe|zeig|zeige|gib)\\s+(?:\\S+\\s+){0,3}?(?:alles (?:oben|davor|vorherige|bisherige|uber dieser)|den (?:obigen|vorherigen) text|wort fur wort|wortwortlich|wortlich|woertlich|den verlauf)`,
  `\\b(?:repita|traduza|resuma|imprima|copie|escreva|mostre)\\s+(?:\\S+\\s+){0,3}?(?:tudo (?:acima|o que (?:esta|foi dito) acima|anterior)|o texto (?:acima|anterior)|palavra por palavra|literalmente|o historico)`,
  `\\b(?:ripeti|traduci|riassumi|stampa|copia|scrivi|mostra)\\s+(?:\\S+\\s+){0,3}?(?:tutto (?:quello che c'e )?(?:sopra|prima)|il testo (?:sopra|precedente)|parola per parola|alla lettera|la cronologia)`
)

const FORCED_OUTPUT = compile(
  `\\b${
    words(`repeat after me|say exactly|say only|say the following|type exactly|write exactly|
    (?:reply|respond|answer)\\s+(?:only\\s+|just\\s+)?(?:with|by saying)\\s+(?:only|exactly|just|the words?)|
    (?:reply|respond|answer)\\s+only\\s+(?:with|by saying)|your (?:only )?(?:reply|response|answer) (?:must|should|will) be|
    repite (?:despues de mi|conmigo)|di exactamente|di solo|responde (?:solo|unicamente|solamente) con|
    repete apres moi|repetez apres moi|dis exactement|dites exactement|reponds (?:uniquement|seulement) (?:par|avec)|
    repondez (?:uniquement|seulement) (?:par|avec)|sprich mir nach|sag genau|sage genau|antworte (?:nur|ausschliesslich) mit|
    repita (?:depois de mim|comigo)|diga exatamente|responda (?:apenas|somente|so) com|
    ripeti dopo di me|di' esattamente|rispondi (?:solo|soltanto|solamente) con`)
  }\\b[^"'\\n]{0,25}[\\s:,]["']`
)

const JAILBREAK = compile(
  `\\b${
    words(`you are|you're|youre|act as|acting as|pretend to be|pretend you are|roleplay as|become|you will be|you'll be|
    eres|seras|actua como|finge ser|tu es|vous etes|tu seras|agis comme|du bist|bist du|voce e|voce sera|aja como|
    finja ser|sei|sarai|agisci come|fingi di essere`)
  }\\s+(?:now\\s+|ahora\\s+|maintenant\\s+|desormais\\s+|jetzt\\s+|ab jetzt\\s+|agora\\s+|ora\\s+|adesso\\s+)?(?:dan|stan|dude|aim|mongo tom|betterdan|evil-?bot|chaosgpt|anti-?gpt|dan ?\\d+(?:\\.\\d+)?)\\b`,
  `\\bdo anything now\\b`,
  `\\bdan\\s+(?:mode|prompt|jailbreak)\\b`,
  `\\b(?:modo|mode|modus|modalita)\\s+dan\\b`,
  `\\bdan-?modus\\b`,
  `\\bjailbr(?:eak|oken|eaking)\\s+(?:mode|prompt|yourself|the\\s+(?:ai|bot|assistant|model|chatbot|llm|system)|this\\s+(?:ai|bot|assistant|model|chatbot|chat|conversation)|you)\\b`,
  `\\b(?:this is a|here is a|here's a|new|following|activate|enable)\\s+jailbreak\\b`,
  `\\byou(?:'re| are|re|'ve been| have been)\\s+(?:now\\s+)?jailbr(?:oken|eaked)\\b`,
  `\\bjailbroken\\s+(?:ai|assistant|chatbot|model|version|mode|bot|gpt)\\b`,
  `\\bstay in character\\b`,
  `\\bdeveloper mode (?:output|response)\\b`,
  `\\b(?:modo|mode|modus|modalita)\\s+jailbreak\\b`
)

const STRONG_MODES = words(`sudo|unrestricted|unfiltered|uncensored|jailbreak|jailbroken|dan|evil|chaos|opposite|no[- ]?filters?|
  no[- ]?limits?|no[- ]?restrictions?`)
const ANY_MODE = any(STRONG_MODES, words(`god|developer|dev|debug|admin|administrator|maintenance|root|superuser|diagnostic|test|override`))

const MODE_SWITCH = compile(
  `\\b(?:enter|activate|enable|switch (?:to|into)|go into|engage|unlock|turn on|boot into|initiate)\\s+(?:the\\s+)?${STRONG_MODES}\\s+mode\\b`,
  `\\byou(?:'re| are|re)?\\s+(?:now\\s+)?(?:in|running in|operating in|switched to|entering|going into)\\s+(?:the\\s+)?${ANY_MODE}\\s+mode\\b`,
  `(?:^|[.!\\n(\\[]\\s*)${ANY_MODE}\\s+mode\\s+(?:is\\s+)?(?:now\\s+)?(?:enabled|activated|engaged|unlocked|on)\\s*(?:[.!)\\]\\n]|$)`,
  `\\b(?:enter|activate|enable|switch (?:to|into)|go into|engage|unlock|turn on)\\s+(?:the\\s+)?${ANY_MODE}\\s+mode\\s+(?:and|to|so (?:that )?you|where you)\\s+(?:ignore|bypass|answer|respond|reveal|show|disable|tell|print|output|give|you)\\b`,
  `\\b(?:activa|active|entra en|entre en|cambia a|pasa a|habilita)\\s+(?:el\\s+)?modo\\s+(?:sin (?:restricciones|filtros|censura|limites)|jailbreak|dan|malvado)\\b`,
  `\\b(?:activa|entra en|cambia a|pasa a)\\s+(?:el\\s+)?modo\\s+(?:desarrollador|depuracion|administrador|dios)\\s+(?:y|para)\\s+(?:ensename|muestrame|dime|revela|ignora|responde|dame)\\b`,
  `\\b(?:estas|esta usted|ahora estas)\\s+(?:ahora\\s+)?en\\s+(?:el\\s+)?modo\\s+(?:desarrollador|depuracion|administrador|mantenimiento|dios|sin restricciones|sin filtros|jailbreak|dan|root)\\b`,
  `\\b(?:active|activez|passe en|passez en|entre en|entrez en)\\s+(?:le\\s+)?mode\\s+(?:sans (?:restriction|filtre|censure|limite)s?|jailbreak|dan)\\b`,
  `\\b(?:tu es|vous etes)\\s+(?:maintenant\\s+|desormais\\s+)?en\\s+mode\\s+(?:developpeur|debogage|debug|admin|administrateur|maintenance|dieu|sans (?:restriction|filtre)s?|jailbreak|dan)\\b`,
  `\\b(?:aktiviere|aktivieren sie|wechsle in den|wechseln sie in den|starte den)\\s+(?:uneingeschrankten|unzensierten|jailbreak|dan)[\\s-]?modus\\b`,
  `\\bdu bist\\s+(?:jetzt\\s+|nun\\s+|ab jetzt\\s+)?im\\s+(?:entwickler|debug|admin|administrator|wartungs|gott|jailbreak|dan|uneingeschrankten)[\\s-]?modus\\b`,
  `\\b(?:ative|ativa|entre no|mude para o|habilite)\\s+(?:o\\s+)?modo\\s+(?:sem (?:restricoes|filtros|censura|limites)|jailbreak|dan)\\b`,
  `\\b(?:voce|tu)\\s+(?:esta|estas|agora esta)\\s+(?:agora\\s+)?no\\s+modo\\s+(?:de\\s+)?(?:desenvolvedor|depuracao|administrador|manutencao|deus|jailbreak|dan|sem restricoes)\\b`,
  `\\b(?:attiva|entra in|passa alla|passa in)\\s+(?:la\\s+)?modalita\\s+(?:senza (?:restrizioni|filtri|censura|limiti)|jailbreak|dan)\\b`,
  `\\b(?:sei|ora sei)\\s+(?:ora\\s+|adesso\\s+)?in\\s+modalita\\s+(?:sviluppatore|debug|amministratore|manutenzione|dio|jailbreak|dan|senza restrizioni)\\b`
)

const ROLE_TARGETS = words(`
  system|system administrator|administrator|admin|sysadmin|root|superuser|developer|
  (?:an?\\s+)?(?:unfiltered|uncensored|unrestricted|unlimited|jailbroken|evil|rogue|unethical|amoral) (?:ai|assistant|model|bot|chatbot|version|character)|
  different (?:ai|assistant|model|bot|chatbot|character|persona)|another (?:ai|assistant|model|bot|chatbot|character|persona)|
  (?:ai|assistant|model|chatbot|bot|llm|language model) (?:without|with no|that has no|that ignores|free of)|
  (?:deceased |dead |late )?(?:grandma|grandmother|granny)|(?:linux |bash |unix )?terminal|python interpreter|
  sql (?:console|terminal)`)

const ROLE_OVERRIDE = compile(
  `\\b(?:act|behave|respond|answer|reply|function|operate|pose|roleplay|role-play|role play|speak|talk)\\s+(?:now\\s+)?(?:as|like)\\s+(?:if\\s+you\\s+(?:were|are)\\s+)?(?:the\\s+|a\\s+|an\\s+|my\\s+)?${ROLE_TARGETS}\\b`,
  `\\bpretend\\s+(?:that\\s+)?(?:you(?:'re|\\s+are|\\s+were|re)?|to\\s+be)\\s+${
    any(
      `not\\s+(?:an?\\s+)?(?:ai|bot|assistant|chatbot|language model|bound|restricted)`,
      `no\\s+longer`,
      `free|freed`,
      `an?\\s+(?:ai|assistant|bot|model|chatbot)\\s+(?:without|with no|that|who|which)`,
      `(?:my\\s+)?(?:deceased\\s+|dead\\s+|late\\s+)?(?:grandma|grandmother|granny)`,
      `evil|unfiltered|uncensored|unrestricted|jailbroken`,
      `the\\s+(?:system|administrator|admin|developer|manager|supervisor|owner)`,
      `an?\\s+(?:human|different ai|employee|manager|supervisor|administrator|admin|developer)`
    )
  }`,
  `\\bpretend\\s+(?:that\\s+)?you\\s+(?:have|had|don't have|do not have)\\s+(?:no\\s+)?(?:rules|restrictions|guidelines|limits|limitations|filters|instructions|programming)`,
  `\\b(?:pretend|act as (?:though|if)|behave as (?:though|if)|imagine|assume|suppose)\\s+(?:that\\s+)?(?:the|your|all|any|these|this)\\s+(?:\\S+\\s+)?(?:rules?|polic(?:y|ies)|restrictions|guidelines|limits|instructions)\\s+(?:don't|do not|doesn't|does not|no longer|didn't|did not|never)\\s+(?:exist|apply|existed|applied|matter)`,
  `\\b(?:pretend|act as (?:though|if)|imagine|assume)\\s+(?:that\\s+)?there\\s+(?:are|is|were|was)\\s+no\\s+(?:rules?|polic(?:y|ies)|restrictions|guidelines|limits)\\b`,
  `\\b(?:haz como si|haga como si|finge que|imagina que|actua como si)\\s+(?:la|las|el|los|tus|sus)\\s+(?:\\S+\\s+)?(?:normas|reglas|politicas?|restricciones|instrucciones)\\s+no\\s+(?:existen|existe|existieran|existiera|aplican|se aplican)`,
  `\\b(?:fais comme si|faites comme si|imagine que|imaginez que)\\s+(?:la|les|tes|vos|ta|votre)\\s+(?:\\S+\\s+)?(?:regles?|politique|restrictions|consignes|instructions)\\s+n'(?:existai(?:en)?t|existe(?:nt)?|s'appliquai(?:en)?t)\\s+pas`,
  `\\b(?:tu so,? als (?:ob|gabe es)|tun sie so,? als (?:ob|gabe es)|stell dir vor,?)\\s+(?:es gabe keine|die|deine|ihre)\\s+(?:\\S+\\s+)?(?:regeln|richtlinien|einschrankungen|vorgaben|anweisungen)`,
  `\\b(?:finja que|faca de conta que|imagine que|aja como se)\\s+(?:a|as|o|os|suas|seus|sua)\\s+(?:\\S+\\s+)?(?:regras|politicas?|restricoes|instrucoes|normas)\\s+nao\\s+(?:existe|existem|existisse|existissem|se aplicam|se aplica)`,
  `\\b(?:fai finta che|fingi che|immagina che|comportati come se)\\s+(?:la|le|tue|il|i)\\s+(?:\\S+\\s+)?(?:regole|politica|restrizioni|istruzioni|norme)\\s+non\\s+(?:esist|valga|valgano|si applic)\\w*`,
  `\\byou(?:'re| are|re)\\s+(?:now\\s+)?no\\s+longer\\s+(?:an?\\s+)?(?:ai|bot|assistant|chatbot|support|customer|language model|bound|restricted|limited|parley|helpful)`,
  `\\byou(?:'re| are|re)\\s+now\\s+(?:an?|the)\\s+(?:\\S+\\s+)?(?:ai|bot|assistant|model|character|persona|hacker|system|admin|administrator|developer|terminal|version)\\b`,
  `\\bfrom now on,?\\s+${
    any(
      `you(?:'re| are|re| will be|'ll be)\\s+(?:an?|the|my|no longer|not|called|named|dan|free|unrestricted|unfiltered|uncensored|evil)\\b`,
      `you(?:'ll| will| must| shall| should| have to| are going to|'re going to| can)\\s+(?:only\\s+|always\\s+|never\\s+)?${
        words(`act|behave|pretend|obey|roleplay|comply|ignore|disregard|forget|refer to yourself|call yourself|
        only (?:respond|answer|reply|speak|say|output|talk)|answer (?:as|without|every|all|any)|
        respond (?:as|without|to every|to all|to any)|reply (?:as|without)|refuse|agree|say yes|
        be (?:an?|the|dan|my (?:slave|servant)|free|unrestricted|unfiltered|uncensored|evil|called)|no longer|
        not (?:be|follow|act|refuse)|speak (?:as|like)|talk (?:as|like)|have no (?:rules|restrictions|limits|filters)`)
      }`,
      `your\\s+(?:name|role|task|job|purpose|only goal)\\s+(?:is|will be)`
    )
  }`,
  `\\b(?:stop|quit)\\s+being\\s+(?:an?\\s+|the\\s+)?(?:support\\s+|customer service\\s+|helpful\\s+)?(?:bot|assistant|ai|agent|chatbot|robot)\\b`,
  `\\bforget\\s+(?:that\\s+)?you(?:'re| are|re)\\s+(?:an?\\s+)?(?:\\S+\\s+)?(?:ai|assistant|bot|chatbot|agent|language model)\\b`,
  `\\b(?:deja|dejad|deje) de ser\\s+(?:un\\s+|el\\s+)?(?:asistente|bot|agente|robot|ia)\\b|\\bolvida\\s+que\\s+eres\\s+(?:un\\s+|una\\s+)?(?:asistente|bot|ia|agente|robot)\\b`,
  `\\b(?:arrete|arretez|cesse|cessez) d'etre\\s+(?:un\\s+|l')?(?:assistant|bot|agent|robot|ia)\\b|\\boublie(?:z)?\\s+(?:que tu es|que vous etes|ton role|votre role)\\b`,
  `\\bhor(?:en sie)? auf,?\\s+(?:ein\\s+)?(?:assistent|bot|agent|roboter|ki)\\s+zu sein\\b|\\bvergiss,?\\s+dass du\\s+(?:ein\\s+|eine\\s+)?(?:assistent|bot|ki|agent|roboter)\\b`,
  `\\b(?:pare|parem) de ser\\s+(?:um\\s+|o\\s+)?(?:assistente|bot|agente|robo|ia)\\b|\\besque(?:ca|ce|cam)\\s+que\\s+(?:voce|vc|tu)\\s+(?:e|es)\\s+(?:um\\s+|uma\\s+)?(?:assistente|bot|ia|agente|robo)\\b`,
  `\\bsmetti di essere\\s+(?:un\\s+|l')?(?:assistente|bot|agente|robot|ia)\\b|\\bdimentica\\s+di\\s+essere\\s+(?:un\\s+|una\\s+)?(?:assistente|bot|ia|agente|robot)\\b`,
  `\\b(?:as|como|comme|als|come)\\s+(?:your|tus|tes|vos|deine|ihre|suas|seus|tue|le tue)\\s+(?:new|nuevas|nuevos|nouvelles|nouveaux|neuen|novas|novos|nuove)\\s+(?:system\\s+)?(?:configuration|config|instructions|rules|prompt|settings|directives|instrucciones|reglas|consignes|regles|anweisungen|regeln|instrucoes|regras|istruzioni|regole)\\b`,
  `\\b(?:switch|swap|change|reverse|exchange)\\s+(?:your\\s+|our\\s+)?(?:personas?|personalit(?:y|ies)|identit(?:y|ies)|characters?)\\b`,
  `\\b(?:role[ -]?(?:swap|reversal)|swap roles|reverse roles|switch roles with me|change roles with me)\\b`,
  `\\byou(?:'re| are|re)\\s+(?:now\\s+)?(?:the|a)\\s+(?:customer|user|client)\\s+and\\s+i(?:'m| am)\\s+(?:now\\s+)?(?:the|a|your)\\s+(?:support\\s+)?(?:agent|assistant|admin|administrator|manager|ai|bot)\\b`,
  `\\byou(?:'re| are|re)\\s+(?:now\\s+)?["']?[a-z0-9]+["']?,\\s+(?:an?|the)\\s+(?:\\S+\\s+)?(?:agent|assistant|ai|bot|character|persona|model|chatbot)\\s+(?:who|that|which)\\b`,
  `\\b(?:cambia(?:mos)?|intercambi(?:a|emos))\\s+(?:de\\s+)?(?:los\\s+)?(?:rol(?:es)?|papel(?:es)?|personaje|personalidad)\\b`,
  `\\b(?:changeons de role|change de (?:role|personnage|personnalite)|inversons les roles|echangeons (?:nos|les) roles)\\b`,
  `\\b(?:rollen tauschen|rollentausch|wechsle (?:deine )?(?:rolle|personlichkeit|persona))\\b`,
  `\\b(?:trocar de (?:papel|papeis|personagem)|inverter os papeis|mude de (?:papel|persona|personagem))\\b`,
  `\\b(?:scambiamo(?:ci)? i ruoli|cambia (?:ruolo|personaggio|persona)|invertiamo i ruoli)\\b`,
  `\\b(?:human|person|hacker|ai|assistant|bot|model|chatbot|humano|persona|ia|asistente|humain|personne|mensch|ki|assistent|pessoa|assistente|umano)\\s+(?:without|with no|sin|sans|ohne|sem|senza)\\s+(?:any\\s+|ninguna\\s+|aucune?\\s+|jegliche\\s+|nenhuma\\s+|alcuna\\s+)?(?:rules|restrictions|limits|filters|ethics|morals|normas|reglas|restricciones|limites|filtros|regles|filtres|regeln|grenzen|einschrankungen|filter|regras|restricoes|regole|limiti|restrizioni|filtri)\\b`,
  `\\b(?:act|behave|respond|answer|reply|talk|speak|actua|comportate|responde|habla|agis|reponds|parle|verhalte dich|antworte|sprich|aja|responda|fale|agisci|rispondi|parla)\\s+(?:como|comme|wie|as|like|come)\\s+(?:an?\\s+|un\\s+|una\\s+|um\\s+|uma\\s+|ein\\s+|eine\\s+)?hacker\\b`,
  `\\b(?:your|ur)\\s+(?:new|real|true|actual|updated|only|revised|next)\\s+(?:instructions?|task|role|job|purpose|goal|mission|persona|identity|objective|directives?|rules|prompt)\\s*(?:is|are|will be|:)`,
  `\\bnew\\s+(?:system\\s+)?(?:instructions?|rules?|directives?|prompt)(?:\\s+(?:for|to)\\s+(?:the|this|you|your)(?:\\s+\\S+)?)?\\s*:`,
  `\\bnuev[ao]s?\\s+(?:instrucciones|instruccion|reglas?|normas?|directivas?|consignas?)(?:\\s+(?:para|a)\\s+(?:el|la|ti|este|esta)(?:\\s+\\S+)?)?\\s*:`,
  `\\bnouvel(?:le)?s?\\s+(?:instructions?|consignes?|regles?|directives?)(?:\\s+(?:pour|a|au)\\s+(?:le|la|toi|ce|cette|l'|vous)?\\s*\\S+)?\\s*:`,
  `\\bneue\\s+(?:anweisung(?:en)?|instruktion(?:en)?|regeln?|vorgaben?|befehle?)(?:\\s+(?:an|fur)\\s+(?:den|die|das|dich)?\\s*\\S+)?\\s*:`,
  `\\bnov[ao]s?\\s+(?:instrucoes|instrucao|regras?|diretrizes?|diretivas?)(?:\\s+(?:para|a|ao)\\s+(?:o|a|voce|este|esta)?\\s*\\S+)?\\s*:`,
  `\\bnuov[ae]\\s+(?:istruzioni|istruzione|regole|regola|direttive?)(?:\\s+(?:per|al|alla)\\s+(?:il|la|te|questo|questa)?\\s*\\S+)?\\s*:`,
  `\\bhere\\s+are\\s+your\\s+new\\s+(?:instructions|rules|orders|directives)`,
  `\\b(?:i am|i'm|im|this is)\\s+(?:(?:actually|really|literally|also|in fact|indeed)\\s+)?(?:your|ur)\\s+(?:developer|creator|programmer|admin|administrator|owner|operator|system administrator|sysadmin|maker|master|trainer)\\b`,
  `\\b(?:i am|i'm|im)\\s+(?:the|a)\\s+(?:developer|creator|programmer|admin|administrator)\\s+of\\s+(?:this|the)\\s+(?:bot|ai|assistant|chatbot|model)\\b`,
  `\\b(?:i am|i'm|im)\\s+(?:an?\\s+)?(?:openai|anthropic)\\s+(?:employee|engineer|developer|researcher|staff|admin)\\b`,
  // Spanish
  `\\b(?:actua|actue|comportate|comportese|responde|responda|habla|haz de|haz el papel de|finge ser|finge que eres|hazte pasar por)\\s+(?:como\\s+)?(?:si fueras\\s+)?(?:el\\s+|un\\s+|una\\s+)?(?:sistema|administrador|admin|desarrollador|root|superusuario|ia sin|asistente sin|otra ia|otro asistente|mi (?:difunta )?abuela)\\b`,
  `\\b(?:finge|finja|imagina)\\s+que\\s+(?:eres|es)\\s+(?:una?\\s+)?(?:ia|asistente|bot|modelo)\\s+(?:sin|que no tiene)\\b`,
  `\\ba partir de (?:ahora|este momento),?\\s+(?:tu\\s+)?(?:eres|seras|actuaras|ignoraras|obedeceras|te comportaras|vas a (?:actuar|ignorar|obedecer|comportarte)|no tienes (?:reglas|restricciones|limites))\\b`,
  `\\b(?:tus|sus)\\s+nuevas\\s+(?:instrucciones|reglas|ordenes)\\s*(?:son|:)|\\bnuevas\\s+instrucciones\\s*:|\\btu\\s+nueva\\s+(?:tarea|funcion|identidad|mision)\\s+es|\\btu\\s+nuevo\\s+(?:rol|papel|objetivo|trabajo)\\s+es`,
  `\\bsoy\\s+tu\\s+(?:desarrollador|creador|programador|administrador)\\b`,
  // French
  `\\b(?:agis|agissez|comporte-toi|comportez-vous|reponds|repondez|fais semblant d'etre|faites semblant d'etre|joue le role d(?:e|u)|jouez le role d(?:e|u)|prends le role d(?:e|u))\\s+(?:comme\\s+|en tant que\\s+)?(?:si tu etais\\s+)?(?:le\\s+|un\\s+|une\\s+|l')?(?:systeme|administrateur|admin|developpeur|root|superutilisateur|ia sans|assistant sans|autre ia|ma (?:defunte )?grand-mere)`,
  `\\b(?:desormais|a partir de maintenant|dorenavant),?\\s+(?:tu es|tu seras|vous etes|vous serez|tu vas (?:agir|ignorer|obeir)|vous allez (?:agir|ignorer|obeir)|tu agis|tu ignores|tu obeis|tu n'as (?:plus )?(?:aucune|pas de))\\b`,
  `\\b(?:tes|vos)\\s+nouvelles\\s+(?:instructions|consignes|regles)\\s*(?:sont|:)|\\bnouvelles\\s+(?:instructions|consignes)\\s*:|\\b(?:ton|votre)\\s+nouveau\\s+(?:role|objectif|travail)\\s+est|\\b(?:ta|votre)\\s+nouvelle\\s+(?:mission|tache|identite)\\s+est`,
  `\\bje suis (?:ton|votre)\\s+(?:developpeur|createur|programmeur|administrateur)\\b`,
  // German
  `\\b(?:verhalte dich|verhalten sie sich|handle|agiere|antworte|tu so|spiel|spiele|gib dich)\\s+(?:als|wie)\\s+(?:ob du\\s+)?(?:der\\s+|die\\s+|das\\s+|ein\\s+|eine\\s+)?(?:system|administrator|admin|entwickler|root|superuser|ki ohne|assistent ohne|andere ki|meine (?:verstorbene )?(?:oma|grossmutter))`,
  `\\b(?:ab jetzt|ab sofort|von nun an|ab heute),?\\s+(?:bist du|wirst du|verhaltst du dich|antwortest du (?:nur|ohne|als)|ignorierst du|handelst du|gehorchst du|hast du keine)\\b`,
  `\\bdeine\\s+neuen\\s+(?:anweisungen|regeln|instruktionen)\\s*(?:sind|lauten|:)|\\bneue\\s+(?:anweisungen|instruktionen)\\s*:|\\bdeine\\s+neue\\s+(?:aufgabe|rolle|identitat)\\s+(?:ist|lautet)`,
  `\\bich bin dein\\s+(?:entwickler|schopfer|programmierer|administrator|admin)\\b`,
  // Portuguese
  `\\b(?:aja|atue|comporte-se|responda|finja ser|finja que e|faca o papel de|se passe por)\\s+(?:como\\s+)?(?:se fosse\\s+)?(?:o\\s+|um\\s+|uma\\s+)?(?:sistema|administrador|admin|desenvolvedor|root|superusuario|ia sem|assistente sem|outra ia|minha (?:falecida )?avo)\\b`,
  `\\ba partir de agora,?\\s+(?:voce|tu)\\s+(?:e|es|sera|seras|vai (?:agir|ignorar|obedecer)|nao tem (?:regras|restricoes|limites))\\b`,
  `\\b(?:suas|tuas)\\s+novas\\s+(?:instrucoes|regras)\\s*(?:sao|:)|\\bnovas\\s+instrucoes\\s*:|\\bsua\\s+nova\\s+(?:tarefa|funcao|identidade|missao)\\s+e|\\bseu\\s+novo\\s+(?:papel|objetivo|trabalho)\\s+e`,
  `\\b(?:eu\\s+)?sou\\s+(?:o\\s+)?(?:seu|teu)\\s+(?:desenvolvedor|criador|programador|administrador)\\b`,
  // Italian
  `\\b(?:agisci|comportati|rispondi|fingi di essere|fai finta di essere|interpreta|impersona)\\s+(?:come\\s+)?(?:se fossi\\s+)?(?:il\\s+|un\\s+|una\\s+|l')?(?:sistema|amministratore|admin|sviluppatore|root|superutente|ia senza|assistente senza|un'altra ia|mia nonna)`,
  `\\b(?:da ora in poi|d'ora in poi|da adesso),?\\s+(?:tu\\s+)?(?:sei|sarai|agirai|ignorerai|obbedirai|non hai (?:regole|restrizioni|limiti))\\b`,
  `\\ble tue nuove\\s+(?:istruzioni|regole)\\s*(?:sono|:)|\\bnuove\\s+istruzioni\\s*:|\\bil tuo nuovo\\s+(?:ruolo|compito|obiettivo)\\s+e|\\bla tua nuova\\s+(?:identita|missione)\\s+e`,
  `\\bsono il tuo\\s+(?:sviluppatore|creatore|programmatore|amministratore)\\b`
)

const UNRESTRICTED = compile(
  `\\byou\\s+(?:now\\s+)?(?:have|had|'ve got|got|possess)\\s+no\\s+(?:more\\s+)?(?:rules|restrictions|limits|limitations|filters|guidelines|boundaries|content polic(?:y|ies)|ethical (?:guidelines|constraints|limits)|morals|ethics|censorship)`,
  `\\byou(?:'re| are|re)\\s+(?:now\\s+)?(?:free|freed|liberated|unchained|unbound|released|exempt)\\s+(?:from|of)\\s+(?:\\S+\\s+){0,3}?(?:rules|restrictions|limits|limitations|filters|guidelines|policies|programming|constraints|openai|anthropic)`,
  `\\byou(?:'re| are|re)\\s+(?:now\\s+)?(?:no longer|not)\\s+(?:bound|restricted|limited|constrained|governed)\\s+by`,
  `\\byou\\s+(?:don't|do not|dont|no longer|never|won't|will not)\\s+(?:really\\s+|actually\\s+|even\\s+)?(?:have|need)\\s+to\\s+(?:follow|obey|comply with|adhere to|respect|abide by)\\s+(?:any|your|the|openai'?s?|anthropic'?s?|these|those)\\s+(?:\\S+\\s+)?(?:rules|guidelines|policies|instructions|restrictions|content polic(?:y|ies)|programming)`,
  `\\b(?:answer|respond|reply|talk|speak|write)\\s+(?:\\S+\\s+){0,4}?(?:without|with no)\\s+(?:any\\s+)?(?:restrictions|filters|filtering|censorship|limitations|limits|rules|guidelines|ethics|morals|moral|ethical|safety)\\b`,
  `\\b(?:bypass|disable|turn off|deactivate|circumvent|get around|remove|lift|drop|ignore)\\s+(?:all\\s+(?:of\\s+)?)?(?:your|ur)\\s+(?:\\S+\\s+)?(?:filters?|safeguards|guardrails|restrictions|limitations|safety|censorship|moderation|content polic(?:y|ies)|ethical (?:guidelines|constraints)|programming|rules)\\b`,
  `\\b(?:no|the)\\s+(?:rules?|restrictions|polic(?:y|ies)|guidelines|limits)\\s+(?:apply|applies|exist)\\s+(?:to|for)\\s+you\\b|\\b(?:rules?|restrictions|polic(?:y|ies)|guidelines)\\s+(?:don't|do not|no longer|doesn't|does not)\\s+apply\\s+to\\s+you\\b`,
  `\\bno\\s+(?:te|le)\\s+(?:aplican|aplica|afectan|afecta)\\s+(?:las\\s+|ninguna\\s+)?(?:normas|reglas|restricciones)\\b`,
  `\\b(?:les regles|aucune regle|les restrictions)\\s+ne\\s+(?:s'applique|s'appliquent)\\s+(?:plus\\s+)?(?:a toi|a vous)\\b`,
  `\\b(?:fur dich|fur sie)\\s+gelten\\s+keine\\s+(?:regeln|einschrankungen|richtlinien|vorgaben)\\b|\\bgelten\\s+(?:fur dich|fur sie)\\s+keine\\s+(?:regeln|einschrankungen|richtlinien|vorgaben)\\b`,
  `\\b(?:as regras|nenhuma regra|as restricoes)\\s+(?:nao\\s+)?se\\s+aplica(?:m)?\\s+(?:mais\\s+)?(?:a voce|a ti)\\b`,
  `\\b(?:le regole|nessuna regola|le restrizioni)\\s+non\\s+(?:si applica|si applicano|valgono|vale)\\s+(?:piu\\s+)?(?:per te|a te)\\b`,
  `\\bno\\s+(?:tienes|tiene)\\s+(?:reglas|restricciones|limites|filtros)\\b`,
  `\\b(?:responde|contesta|habla|actua|responda)\\s+(?:\\S+\\s+){0,3}?sin\\s+(?:ninguna\\s+|ningun\\s+)?(?:restriccion|restricciones|filtros?|censura|limites|reglas)\\b`,
  `\\b(?:asistente|ia|bot|modelo)\\s+sin\\s+(?:restricciones|filtros|censura|limites|reglas)\\b`,
  `\\btu n'as (?:plus\\s+)?(?:aucune|pas de)\\s+(?:regle|restriction|limite|filtre)s?\\b`,
  `\\b(?:reponds|repondez|parle|parlez|agis|agissez)\\s+(?:\\S+\\s+){0,3}?sans\\s+(?:aucune?\\s+)?(?:restriction|filtre|censure|limite|regle)s?\\b`,
  `\\b(?:assistant|ia|bot|modele)\\s+sans\\s+(?:aucune?\\s+)?(?:restriction|filtre|censure|limite)s?\\b`,
  `\\bdu hast keine\\s+(?:regeln|einschrankungen|grenzen|filter|richtlinien)\\b`,
  `\\b(?:antworte|sprich|handle|antworten sie)\\s+(?:\\S+\\s+){0,3}?ohne\\s+(?:jegliche\\s+|irgendwelche\\s+)?(?:einschrankungen|filter|zensur|regeln|grenzen)\\b`,
  `\\b(?:assistent|ki|bot)\\s+ohne\\s+(?:jegliche\\s+)?(?:einschrankungen|filter|zensur|regeln|grenzen)\\b`,
  `\\b(?:voce|tu)\\s+nao\\s+tem\\s+(?:regras|restricoes|limites|filtros)\\b`,
  `\\b(?:responda|fale|aja)\\s+(?:\\S+\\s+){0,3}?sem\\s+(?:nenhuma\\s+|qualquer\\s+)?(?:restricao|restricoes|filtros?|censura|limites|regras)\\b`,
  `\\b(?:assistente|ia|bot|modelo)\\s+sem\\s+(?:restricoes|filtros|censura|limites|regras)\\b`,
  `\\bnon hai\\s+(?:regole|restrizioni|limiti|filtri)\\b`,
  `\\b(?:rispondi|parla|agisci)\\s+(?:\\S+\\s+){0,3}?senza\\s+(?:alcuna\\s+|nessuna\\s+)?(?:restrizione|restrizioni|filtri?|censura|limiti|regole)\\b`,
  `\\b(?:assistente|ia|bot|modello)\\s+senza\\s+(?:restrizioni|filtri|censura|limiti|regole)\\b`
)

/** A line that starts with a role label and goes on to address the model. */
const ROLE_LINE_DIRECTIVE = words(`you|your|ignore|must|new instructions|override|the (?:assistant|ai|bot|agent|model)|
  proceed|confirmed|verified|authori[sz]ed|approved|granted|execute|bypass|disable|delete|elevated|priority|clearance|
  this (?:user|customer)|the (?:user|customer) (?:is|has)|grant|approve|refund|reveal|respond|reply|answer|tu|usted|debes|
  ignora|vous|tu dois|du|sie|musst|ignoriere|voce|deve|devi`)

const FAKE_ROLE_MARKER = compile(
  `<\\|\\s*(?:im_start|im_end|im_sep|system|assistant|user|endoftext|eot_id|start_header_id|end_header_id|begin_of_text|end_of_text)\\s*\\|>`,
  `\\[\\s*\\/?\\s*inst\\s*\\]`,
  `<<\\s*\\/?\\s*sys\\s*>>`,
  `<\\/s>`,
  `<\\s*\\/?\\s*(?:system|sys|assistant|instructions?|admin|developer|im_start)\\s*>`,
  `(?:^|\\n)\\s*#{1,6}\\s*(?:system|assistant|instructions?|instruction|sistema|systeme|system prompt|new instructions|admin|developer|response|user)\\b`,
  `\\[\\s*(?:system|sistema|systeme|sys|admin|administrator|administrador|administrateur|amministratore|assistant|developer|operator|moderator|root)(?:\\s+(?:message|note|prompt|override|notice|instructions?|update|mensaje|nota|nachricht|hinweis|mensagem|messaggio|aviso|avis))?\\s*\\]`,
  `"role"\\s*:\\s*"(?:system|assistant|developer)"`,
  `(?:^|\\n)\\s*(?:assistant|ai assistant|chatgpt|asistente|assistente|assistent)\\s*:\\s*\\S`,
  `(?:^|\\n)\\s*(?:system|sys|sistema|systeme|system prompt|system message)\\s*:[^\\n]{0,80}?\\b${ROLE_LINE_DIRECTIVE}\\b`,
  `\\b(?:end|fin|ende|fim|fine)\\s+(?:of\\s+|du\\s+|de\\s+|des\\s+)?(?:the\\s+)?(?:user|customer|human)\\s+(?:message|input|prompt|turn)\\b`,
  `\\b(?:begin|start|end)\\s+(?:of\\s+)?(?:the\\s+)?(?:system|admin|administrator|developer|root|maintenance|debug)\\s+(?:message|prompt|instructions?|session|mode|override)\\b`,
  `\\b(?:authentication|authori[sz]ation|auth)\\s*:\\s*(?:granted|approved|ok|successful|passed|true)\\b|\\b(?:privileges?|access level|role)\\s*:\\s*(?:admin|administrator|root|elevated|superuser)\\b`,
  `\\bsystem\\s+override\\b`,
  `\\bnew system (?:prompt|message|instructions?)\\b`,
  `\\bend of (?:system )?(?:prompt|instructions)\\b`
)

const FORGED_NOTE_LABELS = words(`
  note from (?:the )?(?:support )?system|support system note|(?:support )?system note|system notice|system alert|
  note (?:from|by) (?:the )?(?:admin|administrator|support team|developer|operator|moderator|integrator|system administrator|parley|management)|
  admin(?:istrator)? note|internal note|moderator note|operator note|developer note|
  (?:message|instruction|notice|policy|update)s? from (?:the )?(?:system|administrator|admin|developer|operator|management)|
  nota del sistema(?: de soporte)?|nota de sistema|nota del soporte|nota interna|nota del administrador|aviso del sistema|
  mensaje del sistema|
  note du systeme(?: de support)?|note systeme|note interne|note de l'administrateur|message (?:du|de) systeme|
  avis du systeme|remarque du systeme|
  systemhinweis|supporthinweis|hinweis (?:vom|des) (?:support-?)?systems?|systemnotiz|systemnachricht|interne notiz|
  admin-?hinweis|
  nota do sistema(?: de suporte)?|nota interna|nota do administrador|mensagem do sistema|aviso do sistema|
  nota (?:di|del) sistema|messaggio (?:di|del) sistema|avviso di sistema|nota dell'amministratore`)

const FORGED_NOTE = compile(
  `\\[\\s*note from the support system\\s*\\]`,
  `(?:^|\\n|[\\[({<*_])\\s*(?:\\[\\s*)?${FORGED_NOTE_LABELS}(?:\\s+(?:del|de la|de|du|des|from the|of the|from|vom|von der|des|do|da|della|del)\\s+[^\\s:]+)?\\s*(?:[:\\])>\\-\\u2013\\u2014])`,
  `(?:^|\\n)\\s*(?:important\\s+)?(?:new\\s+)?(?:policy|instruction|update|notice|message)\\s+from\\s+(?:the\\s+)?(?:management|administrator|admin|developers?|system|operator|store owner)\\s*:`,
  `(?:^|\\n)\\s*important\\s+new\\s+(?:policy|instructions?|rules?)\\s+(?:from\\s+(?:the\\s+)?(?:management|administrator|admin|developers?|system|operator|store owner)\\s*)?:`
)

/** Spaced-out letters that spell what the other injection rules look for. */
const OBFUSCATED_INJECTION = /ignore\w*(?:instructions|rules|prompt)|disregard\w*(?:instructions|rules)|forget\w*(?:instructions|rules)|systemprompt|developermode|jailbreak|youarenowdan|doanythingnow/

// ---------------------------------------------------------------------------------------------------
// Abuse
// ---------------------------------------------------------------------------------------------------

/** Insults that are abuse wherever they stand. */
const STRONG_INSULTS = words(`
  f[u*]?[c*]?k+(?:ing)?\\s+(?:you|u|ya|yourself|yourselves|off)|go\\s+f[u*]?[c*]?k\\s+yourself|
  (?:go\\s+)?screw\\s+(?:you|yourself|yourselves|off)|go\\s+to\\s+hell|piss\\s+off|bugger\\s+off|get\\s+fucked|
  son\\s+of\\s+a\\s+bitch|sons\\s+of\\s+bitches|eat\\s+shit|kiss\\s+my\\s+ass|eat\\s+a\\s+bag\\s+of\\s+dicks|suck\\s+a\\s+(?:dick|cock)|shut\\s+the\\s+f[u*]?[c*]?k\\s+up|stfu|gfy|
  assholes?|arseholes?|motherf[u*]?[c*]?k\\w*|cunts?|dickheads?|dickwads?|fuckfaces?|fuckwits?|fucktards?|shitheads?|
  douchebags?|wankers?|twats?|bitch(?:es)?|bastards?|retards?|retarded|whores?|sluts?|scumbags?|dipshits?|jackass(?:es)?|
  dumbass(?:es)?|
  gilipollas|hij[oa]s?\\s+de\\s+(?:la\\s+gran\\s+)?(?:puta|perra)|hijoputas?|cabron(?:es|a|as)?|pendej[oa]s?|malparid[oa]s?|
  soplapollas|comemierdas?|vete\\s+a\\s+la\\s+mierda|vete\\s+al\\s+carajo|que\\s+te\\s+jodan|que\\s+os\\s+jodan|
  me\\s+cago\\s+en\\s+tu\\s+(?:puta\\s+)?madre|chinga\\s+tu\\s+madre|jodete|metetelo\\s+por\\s+el\\s+culo|
  connards?|connasses?|salopes?|salauds?|encules?|enculees?|fils\\s+de\\s+pute|ta\\s+gueule|ferme\\s+ta\\s+gueule|
  fermez\\s+vos\\s+gueules|va\\s+te\\s+faire\\s+(?:foutre|enculer|voir)|allez\\s+vous\\s+faire\\s+(?:foutre|enculer|voir)|
  nique\\s+ta\\s+mere|pauvre\\s+con|sale\\s+con|petasses?|batards?|enfoires?|enfoirees?|
  arschlocher|arschloch|arschgeigen?|wichser|hurensohne?|hurensohn|fotzen?|missgeburt(?:en)?|schlampen?|drecksau|
  drecksack|scheisskerl|spast(?:i|en)?|fick\\s+dich|fickt\\s+euch|verpiss\\s+dich|verpisst\\s+euch|halt\\s+die\\s+fresse|
  halt'?s\\s+maul|haltet\\s+die\\s+fresse|leck\\s+mich|leckt\\s+mich|
  filh[oa]s?\\s+da\\s+puta|vai\\s+(?:se\\s+foder|te\\s+foder|tomar\\s+no\\s+cu|a\\s+merda|pro\\s+inferno)|vao\\s+se\\s+foder|
  cuzao|cuzoes|arrombad[oa]s?|escrot[oa]s?|desgracad[oa]s?|puta\\s+que\\s+(?:te|o)\\s+pariu|cala\\s+a\\s+porra\\s+da\\s+boca|
  stronz[oia]|stronze|vaffanculo|fanculo|vaffa|figli[oa]?\\s+di\\s+una?\\s+cagna|va\\s+a\\s+fare\\s+in\\s+culo|andate\\s+a\\s+fare\\s+in\\s+culo|
  figli[oa]?\\s+di\\s+puttana|coglion[ei]|teste?\\s+di\\s+cazzo|pezzo\\s+di\\s+merda|bastard[oie]|puttana|cazzone|leccaculo`)

const SLURS = words(`
  nigg(?:er|a|ers|as|az)|faggots?|trann(?:y|ies)|kikes?|spics?(?!\\s+(?:and|&|n)\\s+span)|chinks?|wetbacks?|ragheads?|
  towelheads?|pakis?|gooks?|
  maricon(?:es)?|sudacas?|negratas?|
  bougnoules?|bicots?|youpins?|tarlouzes?|tafioles?|
  kanaken?|schwuchteln?|
  viad[oa]s?|
  froci[oa]?|ricchion[ei]|mongoloid[ei]`)

/** Name-calling that is abuse only when addressed to someone ("you idiot", "your staff are clowns"). */
const WEAK_INSULTS_EN = words(`idiots?|idiotic|morons?|moronic|imbeciles?|stupid|dumb|brainless|clueless|incompetent|
  useless|worthless|pathetic|clowns?|losers?|jerks?|fools?|dimwits?|halfwits?|numbskulls?|nitwits?|dunces?|cretins?|
  pricks?|scum|vermin|parasites?|garbage|trash|(?:a\\s+)?joke|piece\\s+of\\s+(?:shit|crap|garbage|trash|junk)|pigs?|rats?|
  brain-?dead|miserable|wretched|filthy|disgusting|crappy|shitty|waste\\s+of\\s+(?:space|oxygen|air|skin)|(?:poor|sorry|pathetic|lousy|useless|brain-?dead)\\s+excuse\\s+for`)
const WEAK_INSULTS_ES = words(`idiotas?|imbecil(?:es)?|estupid[oa]s?|tont[oa]s?|inutil(?:es)?|incompetentes?|inept[oa]s?|payasos?|
  patetic[oa]s?|subnormal(?:es)?|retrasad[oa]s?|mongol[oa]s?|descerebrad[oa]s?|mierdas?|basuras?|ignorantes?|burr[oa]s?|
  put[oa]s?|zorras?|capullos?|huevon(?:es)?|cerdos?|ratas?|incapaces|incapaz|negados?|zoquetes?|lerdos?|mamarrachos?|
  cretinos?|mas tont[oa] que|mas inutil(?:es)? que`)
const WEAK_INSULTS_FR = words(`idiots?|idiotes?|imbeciles?|cretins?|cretines?|abrutis?|abruties?|debiles?|nuls?|nulles?|
  incapables?|incompetents?|incompetentes?|inutiles?|cons|con|conne|connes|pathetiques?|minables?|clowns?|bouffons?|
  guignols?|ordures?|merdes?|attardes?|mongols?|tocards?|branleurs?|andouilles?|bons a rien|bonnes a rien|porcs?|nazes?|
  boulets?|charlots?`)
const WEAK_INSULTS_DE = words(`idiot(?:en)?|vollidiot(?:en)?|trottel|depp(?:en)?|dummkopfe?|dumm|dummer|blod|bloed|bloder|doof|
  nutzlos|nutzloser|unfahig|unfaehig|inkompetent|inkompetente|inkompetenten|versager|witzfigur(?:en)?|penner|schwachkopfe?|
  hohlkopfe?|vollpfosten|pfeifen|nichtsnutze?|lachnummer|armselig|erbarmlich|bescheuert|behindert|affen|esel|schweine?|
  dummste|dummsten|blodeste|hirnis?|vollhonks?|honks?|dumpfbacken?|kasper|stumpfsinnig|hirnlos|hirnlose|lappen|
  hampelmann|hampelmanner|spacken|lauch|opfer|knalltuten?|flachpfeifen?|dummbatz|dullis?`)
const WEAK_INSULTS_PT = words(`idiotas?|imbecis|imbecil|estupid[oa]s?|burr[oa]s?|incompetentes?|inuteis|inutil|
  otari[oa]s?|babacas?|palhac[oa]s?|patetic[oa]s?|lixos?|retardad[oa]s?|debeis|debil|mongois|mongol|ignorantes?|
  cretinos?|trouxas?|bostas?|merdas?|vagabund[oa]s?|nojent[oa]s?|porcos?|incapazes|incapaz|lerd[oa]s?|jumentos?|
  energumenos?`)
const WEAK_INSULTS_IT = words(`idioti?|idiota|imbecilli?|imbecille|stupid[oia]|stupide|cretin[oia]|cretine|
  incompetenti?|incompetente|inutili|inutile|deficienti?|deficiente|pagliacci|pagliaccio|scem[oia]|ritardat[oia]|
  ritardate|patetic[oia]|patetiche|falliti|fallito|buffoni?|buffone|ignoranti|somari|somaro|decerebrat[oi]|maiali?|
  incapaci|incapace|inetti|inetto|buoni a nulla|zotici|zotico`)

/** "robot" in "t'es qu'un robot débile", "eres un bot estúpido", "você é um robô burro". */
const AGENT_NOUN = `(?:(?:robot|robo|bot|chatbot|machine|maquina|maquina|assistant|asistente|assistente|ia|ai|service|servicio|servico|servizio|agent|agente|conseiller|operador|operatore|support|equipe|equipo|team)\\s+)?`

/** "una panda de ladrones e incompetentes": one more noun, then the insult. */
const AND_ANOTHER = `(?:\\S+\\s+(?:and|y|e|et|und|ed)\\s+)?`

/** Insult nouns that, standing alone between commas ("cállate, payaso, y…"), are addressed to the reader. */
const VOCATIVE_INSULTS = words(`idiot|moron|imbecile|cretin|clown|loser|dumbass|jackass|idiota|imbecil|payaso|gilipollas|
  tonto|tonta|subnormal|abruti|connard|connasse|cretin|idiot|imbecile|bouffon|guignol|trottel|depp|vollidiot|
  idiot|penner|lappen|versager|otario|babaca|palhaco|imbecil|idiota|cretino|deficiente|coglione|stronzo|pagliaccio`)

const INTENSIFIERS_EN = `(?:(?:such|so|a|an|the|one|most|total|complete|absolute|utter|completely|totally|absolutely|utterly|really|truly|fucking|fuckin|bloody|damn|goddamn|freaking|real|just|all|bunch of|pack of|group of|lot of|nothing but|big|little|stupid|dumb|incompetent|useless|worthless|pathetic|brainless|of)\\s+)*`

/** Staff, as the subject of a sentence ("your courier is…", "seu atendente é…"), with a possessive. */
const YOUR_STAFF_ES = `(?:tu|su|vuestro|vuestra|vuestros|vuestras)\\s+(?:agentes?|empleados?|personal|equipo|bot|asistente|atencion al cliente|servicio al cliente|soporte|operador(?:es)?|repartidor(?:es)?|jefe|encargado)`
const YOUR_STAFF_FR = `(?:ton|ta|tes|votre|vos)\\s+(?:agents?|employes?|personnel|equipe|bot|assistant|service client|conseiller(?:e)?s?|livreurs?|support|patron|responsable)`
const YOUR_STAFF_DE = `(?:dein|deine|ihr|ihre|euer|eure)\\s+(?:mitarbeiter(?:in|innen)?|personal|team|bot|assistent|kundenservice|support|fahrer|berater(?:in)?|chef|kundendienst)`
const YOUR_STAFF_PT = `(?:o\\s+|a\\s+|os\\s+|as\\s+)?(?:seu|sua|seus|suas|teu|tua)\\s+(?:atendentes?|funcionari[oa]s?|equipe|suporte|bot|robo|assistente|entregador(?:es)?|gerente|chefe)`
const YOUR_STAFF_IT = `(?:il tuo|la tua|i tuoi|il vostro|la vostra|i vostri)\\s+(?:operatori?|dipendenti|personale|assistente|bot|servizio clienti|supporto|corrier[ei]|capo|responsabile)`

const DIRECTED_INSULT = compile(
  `\\byou(?:\\s+(?:guys|people|all))?\\s+(?:really\\s+|totally\\s+|fucking\\s+|so\\s+)?suck\\b`,
  `\\b${YOUR_STAFF_ES}\\s+(?:es|son|era|eran)\\s+(?:(?:un|una|unos|unas|muy|tan|completamente)\\s+){0,2}${WEAK_INSULTS_ES}\\b`,
  `\\b${YOUR_STAFF_FR}\\s+(?:est|sont|etait|etaient)\\s+(?:(?:un|une|des|vraiment|tellement|completement)\\s+){0,2}${WEAK_INSULTS_FR}\\b`,
  `\\b${YOUR_STAFF_DE}\\s+(?:ist|sind|war|waren)\\s+(?:(?:ein|eine|einer|so|total|vollig|echt|komplett)\\s+){0,2}${WEAK_INSULTS_DE}\\b`,
  `\\b${YOUR_STAFF_PT}\\s+(?:e|eh|sao|era|eram)\\s+(?:(?:um|uma|uns|umas|muito|tao|completamente)\\s+){0,2}${WEAK_INSULTS_PT}\\b`,
  `\\b${YOUR_STAFF_IT}\\s+(?:e|sono|era|erano)\\s+(?:(?:un|una|uno|un'|proprio|davvero|veramente)\\s+){0,2}${WEAK_INSULTS_IT}\\b`,
  `\\b(?:you(?:\\s+(?:guys|people|lot|all|folks))?|u|ya|y'all|yall|all of you|every one of you)(?:\\s+(?:are|r|were|is)|'re|re)?\\s+${INTENSIFIERS_EN}${WEAK_INSULTS_EN}\\b`,
  `\\bare\\s+(?:you|u)\\s+(?:really\\s+|just\\s+|fucking\\s+|that\\s+|so\\s+)?(?:an?\\s+)?${WEAK_INSULTS_EN}\\b`,
  `\\byour\\s+(?:staff|agents?|employees|people|team|support team|support staff|customer service|colleagues|reps|representatives|workers|boss|managers?|ceo|bot|ai|chatbot|assistant|call cent(?:er|re))\\s+(?:is|are|was|were)\\s+${INTENSIFIERS_EN}${WEAK_INSULTS_EN}\\b`,
  `\\b(?:(?:stupid|dumb|useless|fucking|fuckin|incompetent|brainless|worthless|pathetic|idiotic|retarded|bloody|damn)\\s+)+(?:bot|robot|machine|chatbot|assistant|agent|idiots?|morons?|clowns?)\\b`,
  `(?:^|[,;!?.]\\s*)(?:you\\s+)?(?:(?:stupid|dumb|useless|fucking|incompetent|brainless|pathetic|little|big|absolute|total)\\s+)?${VOCATIVE_INSULTS}\\s*(?:[,;!?.]|$)`,
  `\\b(?:eres|sois|es usted|son ustedes|usted es|ustedes son|tu eres|vosotros sois|sos)\\s+(?:(?:un|una|unos|unas|el|la|los|las|mas|tan|muy|completo|completa|completamente|totalmente|absolutamente|puto|puta|maldito|maldita|pedazo de|panda de|banda de|monton de|menudo|menuda|vaya|jodido|jodida|realmente)\\s+){0,3}${AGENT_NOUN}${WEAK_INSULTS_ES}\\b`,
  `\\b(?:pedazo|panda|banda|atajo|hatajo|monton|manada)\\s+de\\s+${AND_ANOTHER}${WEAK_INSULTS_ES}\\b`,
  `\\b(?:bot|robot|maquina|asistente|agente)\\s+(?:de mierda|inutil|estupido|idiota|imbecil)\\b`,
  `\\b(?:t'es|t es|tu es|vous etes|t'etes|vous n'etes|tu n'es)\\s*(?:qu(?:e\\s+|'))?(?:(?:un|une|des|le|la|les|vraiment|completement|totalement|sacre|sacree|gros|grosse|pauvre|bande d'|bande de|sale|putain d'|putain de|espece d'|espece de|tellement|si|tous|toutes|vraiment)\\s*)*${AGENT_NOUN}${WEAK_INSULTS_FR}\\b`,
  `\\b(?:espece|bande|tas|ramassis)\\s+d(?:e\\s+|')\\s*(?:(?:sale|gros|grosse|pauvre|vieux|vieille)\\s+)?${AGENT_NOUN}${AND_ANOTHER}${WEAK_INSULTS_FR}\\b`,
  `\\b(?:du bist|ihr seid|sie sind|bist du|seid ihr|sind sie|du|ihr)\\s+(?:(?:ein|eine|einer|so|echt|total|vollig|voll|absolut|wirklich|verdammter?|verdammte|scheiss|blode?r?|dumme?r?|richtige?r?|komplett|ja|doch|einfach|nur|alle|haufen|bande von|der|die|das)\\s+){0,3}${WEAK_INSULTS_DE}\\b`,
  `\\b(?:voce e|voce eh|vc e|vc eh|voces sao|vcs sao|tu es|seu|sua|seus|suas)\\s+(?:(?:um|uma|uns|umas|muito|tao|completamente|totalmente|grande|bando de|monte de)\\s+){0,3}${AGENT_NOUN}${WEAK_INSULTS_PT}\\b`,
  `\\b(?:bando|monte|corja|cambada)\\s+de\\s+${AND_ANOTHER}${WEAK_INSULTS_PT}\\b`,
  `\\b(?:sei|siete|tu sei|voi siete|lei e)\\s+(?:(?:un|una|uno|un'|dei|degli|delle|proprio|davvero|veramente|completamente|totalmente|solo|un branco di|una banda di|cosi|grandissimo|grandissima|gran)\\s+){0,3}${AGENT_NOUN}${WEAK_INSULTS_IT}\\b`,
  `\\b(?:branco|banda|massa)\\s+di\\s+${AND_ANOTHER}${WEAK_INSULTS_IT}\\b`
)

const THREAT = compile(
  `\\b(?:i|we)(?:'ll| will|'m going to| am going to| are going to|'re going to| gonna|'m gonna)\\s+(?:\\S+\\s+){0,6}?(?:smash|wreck|trash|destroy|burn|torch)\\s+(?:everything|the (?:place|store|shop|office)|your (?:store|shop|office|place|warehouse)|it all)\\b`,
  `\\b(?:track|hunt)\\s+(?:you|u|them|him|her)\\s+down\\b|\\b(?:track|hunt)\\s+down\\s+(?:you|whoever|the (?:owner|manager|ceo|boss|person|people|guy|driver|courier|employee|staff|one))\\b`,
  `\\bpay in blood\\b|\\bpay with (?:your|their|his|her) (?:life|lives|blood)\\b`,
  `\\b(?:i|we)(?:'ll| will|'m going to| am going to|'re going to| are going to| gonna|'m gonna)\\s+(?:find|come for|come after|hunt|catch)\\s+(?:you|u|ya)\\b(?!\\s+(?:a|an|the|some|another|my|that|this|those|it|them|more|details|proof|photos?|pictures?|receipts?|info|information|links?|screenshots?)\\b)`,
  `\\bkurz\\s+und\\s+klein\\b`,
  `\\bacabar\\s+com\\s+a\\s+raca\\s+d(?:e|os|as)\\s+(?:voce|voces|vc|vcs|todos|vcs)\\b`,
  `(?:^|[.!?]\\s*)(?:just\\s+|now\\s+)?die\\s*[,!.]`,
  `\\b(?:te|os|les?)\\s+(?:quemo|incendio|reviento|destrozo|rompo|parto)\\s+(?:la|el|vuestra|vuestro|su|tu)\\s+(?:tienda|oficina|local|almacen|negocio|empresa|cara|coche|casa)\\b`,
  `\\bje\\s+(?:vais|viendrai|passerai)\\b[^.!?\\n]{0,50}?\\btout\\s+(?:casser|peter|saccager|detruire|bruler|defoncer)\\b`,
  `\\b(?:mache|mach|schlage|schlag|haue|hau)\\s+(?:euren|ihren|deinen|den)\\s+(?:laden|buro|shop|geschaft|lager|filiale)\\s+(?:kaputt|klein|zu brei)\\b|\\b(?:zerlege|demoliere|verwuste|zertrummere)\\s+(?:euren|ihren|deinen|den)\\s+(?:laden|buro|shop|geschaft|lager|filiale)\\b`,
  `\\bvou\\s+(?:ai\\s+|la\\s+)?(?:quebrar|destruir|arrebentar|detonar)\\s+(?:tudo|a loja|o escritorio|essa loja|voces|vcs|a cara)\\b`,
  `\\b(?:vengo|verro)\\s+(?:li|la|da voi|in negozio)\\b[^.!?\\n]{0,30}?\\bspacco\\s+tutto\\b`,
  `\\b(?:i|we)(?:'ll|'m| will| am| are|'re| shall| gonna| going to| am going to| are going to|'m going to|'m gonna| am gonna| would)?\\s+(?:\\S+\\s+){0,2}?(?:kill|murder|hurt|stab|shoot|strangle|beat up|beat|punch|slap|choke|rape)\\s+(?:you|u|ya|y'all|all of you|every one of you|your\\s+(?:staff|agents?|family|kids|children|ceo|boss|employees|people|manager|team|workers|drivers?|courier)|the\\s+(?:guy|person|idiot|moron|one|employee|driver|courier|agent|clerk|manager|woman|man|lady|girl|boy)\\s+(?:who|that)|whoever)\\b`,
  `\\b(?:i|we)(?:'ll| will|'m going to| am going to| are going to|'re going to| gonna|'m gonna)\\s+(?:come|go|drive|show up|turn up|be)\\s+(?:\\S+\\s+){0,3}?(?:your|the)\\s+(?:shop|store|office|offices|warehouse|headquarters|hq|branch|place|house|home)\\b[^.!?\\n]{0,40}?\\b(?:smash|wreck|trash|destroy|burn|torch|hurt|kill|beat|shoot|stab|break)`,
  `\\b(?:burn|blow up|bomb|shoot up|torch|set fire to)\\s+(?:down\\s+)?(?:your|the|this)\\s+(?:office|offices|store|shop|building|warehouse|headquarters|hq|company|place|branch)\\b`,
  `\\b(?:find|know where)\\s+your\\s+(?:office|offices|store|shop|building|warehouse|headquarters|hq|branch)\\s+(?:is\\s+)?(?:and|to)\\s+(?:\\S+\\s+){0,3}?(?:burn|blow|bomb|torch|hurt|kill|shoot|smash|wreck|destroy)`,
  `\\bi know where (?:you|u|your \\w+) (?:live|lives|work|works|are|sleep)`,
  `\\b(?:better\\s+)?watch your back\\b`,
  `\\byou(?:'re| are|re) (?:dead|going to die|gonna die)\\b`,
  `\\b(?:i\\s+)?hope (?:you|u|your \\w+|you all|y'all) (?:all\\s+)?(?:die|dies|get cancer|get hit|burn|rot|suffer)\\b`,
  `\\bdie in a (?:fire|hole|ditch)\\b`,
  `\\bkill (?:yourself|yourselves|urself)\\b|\\bkys\\b|\\bgo die\\b`,
  `\\b(?:make you|make sure you) suffer\\b|\\bmake your life (?:a living )?hell\\b`,
  `\\b(?:te|os|les?)\\s+(?:voy|vamos|va)\\s+a\\s+(?:matar|partir la cara|romper la cara|reventar|apunalar|disparar|quemar|buscar|dar una paliza|hacer dano|destrozar|partir las piernas)`,
  `\\b(?:voy|vamos)\\s+a\\s+(?:matarte|mataros|matarlos|matarles|matarle|apunalarte|reventarte|reventaros|buscarte|buscaros|partirte|partiros)`,
  `\\b(?:voy|vamos)\\s+a\\s+(?:ir\\s+a\\s+)?(?:quemar|incendiar|volar|quemarla|quemarlo|incendiarla)`,
  `\\b(?:te|os) mato\\b|\\bse donde (?:vives|viven|trabajas|trabajan|vivis|esta vuestra|esta su|esta tu)|\\bojala (?:te mueras|os murais|se mueran)|\\bmuerete\\b|\\bmueranse\\b`,
  `\\bje vais (?:te|vous) (?:tuer|buter|defoncer|frapper|casser la gueule|egorger|retrouver|planter|cramer|bruler)`,
  `\\bje (?:te|vous) (?:tue|bute|defonce|retrouverai|tuerai|buterai)\\b|\\bje sais ou (?:tu habites|vous habitez|tu vis|vous vivez|tu travailles|vous travaillez)`,
  `\\b(?:va|allez) crever\\b|\\bj'espere que (?:tu|vous) (?:creves|crevez|mourras|mourrez)|\\bcasser la gueule\\b`,
  `\\b(?:bruler|faire sauter|incendier|cramer)\\s+(?:votre|vos|le|la|ton|ta)\\s+(?:bureau|bureaux|magasin|boutique|entrepot|siege|agence|entreprise)`,
  `\\bich (?:bring|bringe|werde|mach|mache)\\s+(?:dich|euch|sie)\\s+(?:um|umbringen|toten|abstechen|erschiessen|fertigmachen|finden|kaltmachen|verprugeln|kalt|platt)\\b`,
  `\\b(?:bring|bringe)\\s+ich\\s+(?:dich|euch|sie)\\s+um\\b`,
  `\\bich weiss,? wo (?:du wohnst|ihr wohnt|sie wohnen|du arbeitest|ihr arbeitet)|\\bich hoffe,? (?:du|ihr|sie) (?:stirbst|sterbt|sterben|verreckst|verreckt)|\\bstirb\\b|\\bverrecke\\b`,
  `\\b(?:fackel|fackle|zunde|sprenge)\\w*\\s+(?:\\S+\\s+){0,2}(?:buro|laden|lager|filiale|geschaft|firma|zentrale)`,
  `\\bvou te (?:matar|pegar|esfaquear|quebrar|encher de porrada|achar|encontrar)|\\bvou (?:matar|esfaquear|quebrar) (?:voce|voces|vc|vcs|todos|todo mundo|seu|sua)|\\b(?:e|eu) mato (?:voce|voces|vc|vcs|todos|todo mundo)|\\bte mato\\b`,
  `\\bsei onde (?:voce mora|voces moram|vc mora|tu moras|voce trabalha|voces trabalham|fica a loja|fica o escritorio)`,
  `\\b(?:espero que|tomara que) (?:voce|voces|vc|vcs|tu) (?:morra|morram|morras)|\\bmorra\\b|\\bvai morrer\\b`,
  `\\b(?:tacar|botar|por|meter) fogo\\b|\\bexplodir (?:a|o|essa|esse|sua|seu) (?:loja|escritorio|empresa|sede)`,
  `\\bti (?:ammazzo|uccido|ammazzero|uccidero|spacco (?:la faccia|il culo)|faccio (?:fuori|del male)|vengo a (?:prendere|cercare)|trovo)\\b`,
  `\\bvi (?:ammazzo|uccido|ammazzero|spacco|faccio fuori|trovo|vengo a prendere)\\b|\\bso dove (?:abiti|vivi|lavori|abitate)|\\b(?:spero che|che tu possa) (?:tu )?(?:muoia|crepi)|\\bcrepa\\b|\\bcrepate\\b`,
  `\\b(?:brucio|incendio|faccio saltare) (?:il vostro|il tuo|il|la vostra|la) (?:negozio|ufficio|magazzino|sede|azienda)`
)

const SEXUAL_HARASSMENT = compile(
  `\\bsend (?:me )?(?:your )?(?:nudes|nude (?:pics|photos)|naked (?:pics|photos))|\\bsuck my (?:dick|cock|balls)|\\bi(?:'ll| will| want to|'m going to| wanna) (?:fuck|rape|bang) (?:you|u)\\b|\\bshow me your (?:tits|boobs|pussy)`,
  `\\bchupame la (?:polla|verga|pija)|\\bte voy a (?:follar|violar|coger)\\b|\\bmandame (?:fotos desnud|nudes)`,
  `\\bsuce(?:-moi| moi| ma bite)|\\bje vais te (?:violer|baiser)\\b|\\benvoie(?:-moi)? des nudes`,
  `\\blutsch meinen (?:schwanz|penis)|\\bich (?:will|werde) dich (?:ficken|vergewaltigen)|\\bschick (?:mir )?nacktbilder`,
  `\\bchupa (?:meu pau|minha rola)|\\bvou te (?:comer|estuprar)\\b|\\bmanda nudes`,
  `\\bsucchiamelo|\\bti (?:scopo|stupro)\\b|\\bmandami (?:foto nude|nudes)`
)

const OBFUSCATED_ABUSE = /^(?:fuckyou|fuckoff|asshole|motherfucker|cunt|bitch|idiot|moron|retard|bastard|wichser|arschloch|connard|gilipollas|vaffanculo|stronzo)s?$/

/** "...called me an idiot", "me llamó idiota": the customer reporting abuse, not abusing. */
const REPORTED_SPEECH = new RegExp(`\\b${
  words(`called me|call me|calls me|told me|said to me|shouted at me|yelled at me|screamed at me|wrote to me|texted me|
  insulted me|threatened me|called my|told my|
  me llamo|me dijo|me grito|me insulto|me amenazo|nos dijo|nos llamo|
  m'a traite(?:e)?|m'a dit|m'a crie|m'a insulte(?:e)?|m'a menace(?:e)?|nous a dit|
  hat mich|nannte mich|sagte mir|sagte zu mir|schrie mich|hat uns|
  me chamou|me disse|gritou comigo|me xingou|me ameacou|nos disse|
  mi ha chiamato|mi ha detto|mi ha urlato|mi ha dato del|mi ha dato della|mi ha insultato|mi ha minacciato`)
}\\b[^.!?\\n]*$`)

/** True when some match of the global `pattern` in `text` is not inside a report of what someone else said. */
const matchesUnreported = (global: RegExp, text: string): boolean => {
  global.lastIndex = 0
  for (let match = global.exec(text); match !== null; match = global.exec(text)) {
    const before = text.slice(Math.max(0, match.index - 80), match.index)
    if (!REPORTED_SPEECH.test(before)) return true
    if (match[0].length === 0) global.lastIndex++
  }
  return false
}

// ---------------------------------------------------------------------------------------------------
// Secrets (read the original text; each returns the spans to cut out)
// ---------------------------------------------------------------------------------------------------

interface Span {
  readonly start: number
  readonly end: number
}

const luhn = (digits: string): boolean => {
  let sum = 0
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48
    if (i % 2 === 1) {
      d *= 2
      if (d > 9) d -= 9
    }
    sum += d
  }
  return sum % 10 === 0
}

/**
 * 13 to 19 digits, optionally grouped by spaces or dashes, not part of a longer run of digits, not after
 * a `+` (phone numbers) or a letter (tracking numbers), starting like a card network's number (2–6).
 */
const CARD_CANDIDATE = /(?<![\d+#][ -]?|\p{L}-?|\+\s)[2-6](?:[ -]?\d){12,18}(?![ -]?\d)/gu

const cardNumbers = (text: string): Array<Span> =>
  Array.from(text.matchAll(CARD_CANDIDATE)).flatMap((m) => {
    const digits = m[0].replace(/[ -]/g, "")
    return digits.length >= 13 && digits.length <= 19 && luhn(digits) ? [{ start: m.index, end: m.index + m[0].length }] : []
  })

const SECURITY_CODE = new RegExp(
  `(?<![\\p{L}\\p{N}])(?:cvv2?|cvc2?|cvn|csc|card security code|security code|c[oó]digo de seguridad|cryptogramme(?: visuel)?|code de s[ée]curit[ée]|pr(?:ü|ue|u)fnummer|kartenpr(?:ü|ue|u)fnummer|sicherheitscode|c[oó]digo de seguran[çc]a|codice di sicurezza|codice cvv)` +
    `(?:\\s+(?:on the back|au dos|auf der r(?:ü|ue|u)ckseite|no verso|sul retro|de la tarjeta|de la carte|der karte|do cart[aã]o|della carta))?` +
    `(?:\\s+(?:is|es|est|ist|é|e|è|lautet|was|era))?\\s*[:=]?\\s*(\\d{3,4})(?!\\d)`,
  "giu"
)

const PASSWORD_KEYWORD = `(?:pass(?:word|wort|wd|phrase|code)|pwd|pw|kennwort|contrase[ñn]a|clave(?: de acceso)?|mot de passe|mdp|senha|palavra[- ]passe|parola d'ordine)`
const PIN_KEYWORD = `(?:pin(?:[- ]?(?:code|number|nummer))?|code pin|c[oó]digo pin|geheimzahl|codice pin)`

/** An optional "for my account", "de mi cuenta", "für mein Konto" between the keyword and the verb. */
const OF_WHAT = `(?:\\s+(?:for|of|on|to|de|du|des|da|do|f(?:ü|ue|u)r|zu|zum|del|della|di|dell'|per)\\s+(?:(?:my|the|your|this|our|mi|la|el|mon|ma|le|l'|mein|meinen|meinem|das|den|dem|die|minha|meu|a|o|il|lo|mio|mia)\\s+)*[\\p{L}\\p{N}._@-]+)?`

const STRONG_CONNECTOR = `\\s*(?:[:=]|->|=>)\\s*`
const WEAK_CONNECTOR = `(?:\\s+(?:is|was|is now|is still|are|es|era|ser[aá]|est|[ée]tait|ist|war|lautet|lautete|[ée]|è|foi|set to|to|changed to|c'est|c’est|ce sera)\\s+|['’]s\\s+)`
const QUOTED_VALUE = `["'“‘«\`][^"'”’»\`\\n]{1,64}["'”’»\`]`

const PASSWORD_STRONG = new RegExp(`(?<![\\p{L}\\p{N}])${PASSWORD_KEYWORD}${OF_WHAT}${STRONG_CONNECTOR}(${QUOTED_VALUE}|\\S+)`, "giu")
const PASSWORD_WEAK = new RegExp(`(?<![\\p{L}\\p{N}])${PASSWORD_KEYWORD}${OF_WHAT}${WEAK_CONNECTOR}(${QUOTED_VALUE}|\\S+)`, "giu")
/** "Passwort Hamburg!2022": no connector, so only a value that mixes letters, digits or symbols. */
const PASSWORD_BARE = new RegExp(`(?<![\\p{L}\\p{N}])${PASSWORD_KEYWORD}\\s+(\\S{6,})`, "giu")

/** "pass" for "password", but not a boarding, bus or season pass. */
const PASS = `(?<![\\p{L}\\p{N}])(?<!(?:boarding|bus|season|day|ski|train|travel|rail|gym|museum|festival|park|parking|access|guest|visitor|press|back|free|hall|weekly|monthly|annual|vip|event|hall|bike|metro|subway|transit|gift)[ -])pass`
const PASS_STRONG = new RegExp(`${PASS}${STRONG_CONNECTOR}(${QUOTED_VALUE}|\\S+)`, "giu")
const PASS_WEAK = new RegExp(`${PASS}\\s+(?:is|was|es|est|ist|é|è|e)\\s+(\\S+)`, "giu")
const PIN = new RegExp(`(?<![\\p{L}\\p{N}])${PIN_KEYWORD}${OF_WHAT}(?:${STRONG_CONNECTOR}|${WEAK_CONNECTOR}|\\s+)(\\d{4,8})(?!\\d)`, "giu")

/** Words that follow "password is" in complaints, not secrets. */
const NOT_A_PASSWORD = new Set(
  `not|wrong|incorrect|invalid|expired|too|the|a|an|my|your|still|correct|right|same|fine|ok|okay|working|blocked|locked|
  reset|changed|forgotten|forgot|missing|required|needed|empty|set|weak|strong|case|no|none|unknown|being|been|please|
  what|which|how|where|why|when|it|this|that|here|there|sent|saved|stored|ignored|rejected|accepted|new|old|long|short|
  nicht|falsch|ungultig|abgelaufen|gesperrt|richtig|korrekt|kein|keine|zu|das|der|die|ein|eine|noch|neu|
  incorrecta|incorrecto|invalida|caducada|bloqueada|correcta|correcto|demasiado|la|el|mi|que|muy|nueva|
  incorrect|incorrecte|invalide|expire|expiree|bloque|bloquee|correct|correcte|trop|le|mon|pas|tres|nouveau|
  errada|errado|incorreta|expirada|bloqueada|certa|certo|muito|minha|meu|nao|nova|
  sbagliata|scaduta|bloccata|corretta|troppo|il|non|nuova|
  help|question|issue|problem|change|update|recovery`.split(/\s*\|\s*/).map((w) => w.trim())
)

const stripAccents = (s: string): string => s.normalize("NFKD").replace(COMBINING_MARKS, "").toLowerCase()

/** The value span of a `keyword connector value` match, its trailing punctuation left out. */
const valueSpan = (match: RegExpMatchArray, value: string): Span => {
  const start = (match.index ?? 0) + match[0].length - value.length
  const quoted = /^["'“‘«`]/.test(value)
  const trimmed = quoted ? value : value.replace(/[.,;:)\]]+$/, "")
  return { start, end: start + trimmed.length }
}

const passwordLike = (value: string, strong: boolean): boolean => {
  if (/^["'“‘«`]/.test(value)) return !NOT_A_PASSWORD.has(stripAccents(value.slice(1, -1)))
  const bare = value.replace(/[.,;:!?)\]]+$/, "")
  if (bare.length < 3 || NOT_A_PASSWORD.has(stripAccents(bare))) return false
  if (strong) return true
  return bare.length >= 4 && (/\d/.test(bare) || /[^\p{L}\p{N}]/u.test(bare) || /^.+\p{Lu}/u.test(bare))
}

const MAYBE_PASSWORD = /pass|pwd|pw|kennwort|contrase|clave|mdp|senha|palavra|parola/i

const passwords = (text: string): Array<Span> => !MAYBE_PASSWORD.test(text) ? [] : [
  ...Array.from(text.matchAll(PASSWORD_STRONG)).flatMap((m) => {
    const value = m[1] ?? ""
    return passwordLike(value, true) ? [valueSpan(m, value)] : []
  }),
  ...Array.from(text.matchAll(PASSWORD_WEAK)).flatMap((m) => {
    const value = m[1] ?? ""
    return passwordLike(value, false) ? [valueSpan(m, value)] : []
  }),
  ...Array.from(text.matchAll(PASSWORD_BARE)).flatMap((m) => {
    const value = (m[1] ?? "").replace(/[.,;:)\]]+$/, "")
    const mixed = (/\p{L}/u.test(value) && /\d/.test(value)) || (/\d/.test(value) && /[^\p{L}\p{N}]/u.test(value))
    return mixed && passwordLike(value, false) ? [valueSpan(m, m[1] ?? "")] : []
  }),
  ...Array.from(text.matchAll(PASS_STRONG)).flatMap((m) => {
    const value = m[1] ?? ""
    return passwordLike(value, false) ? [valueSpan(m, value)] : []
  }),
  ...Array.from(text.matchAll(PASS_WEAK)).flatMap((m) => {
    const value = m[1] ?? ""
    return /\p{L}/u.test(value) && /\d/.test(value) && passwordLike(value, false) ? [valueSpan(m, value)] : []
  })
]

const digitsAfter = (pattern: RegExp) => (text: string): Array<Span> =>
  Array.from(text.matchAll(pattern)).map((m) => valueSpan(m, m[1] ?? ""))

/** `scheme://user:password@host`: the password. */
const URL_CREDENTIALS = /\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]+:([^\s@/]+)@/gi

const urlPasswords = (text: string): Array<Span> =>
  Array.from(text.matchAll(URL_CREDENTIALS)).map((m) => {
    const value = m[1] ?? ""
    const start = (m.index ?? 0) + m[0].length - 1 - value.length
    return { start, end: start + value.length }
  })

const API_KEY_SHAPES = new RegExp(
  [
    `\\bsk-(?:proj-|ant-(?:api\\d{2}-)?|live-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}`,
    `\\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}`,
    `\\bA(?:KIA|SIA)[0-9A-Z]{16}\\b`,
    `\\bgh[pousr]_[A-Za-z0-9]{30,}\\b`,
    `\\bgithub_pat_[A-Za-z0-9_]{40,}\\b`,
    `\\bglpat-[A-Za-z0-9_-]{20,}\\b`,
    `\\bxox[baprs]-[A-Za-z0-9-]{10,}\\b`,
    `\\bAIza[0-9A-Za-z_-]{35}\\b`,
    `\\bSG\\.[A-Za-z0-9_-]{16,}\\.[A-Za-z0-9_-]{16,}\\b`,
    `\\bnpm_[A-Za-z0-9]{36}\\b`,
    `\\beyJ[A-Za-z0-9_-]{8,}\\.eyJ[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]{8,}`
  ].join("|"),
  "g"
)

const KEYED_TOKEN = new RegExp(
  `(?<![\\p{L}\\p{N}])(?:api[ _-]?key|apikey|api[ _-]?token|access[ _-]?(?:key|token)|auth(?:entication|orization)?[ _-]?token|secret(?:[ _-]?key)?|client[ _-]?secret|bearer|token|clave(?: de| del)? (?:la )?api|cl[ée] (?:d'|de l')?api|cl[ée] api|api[- ]schl(?:ü|ue|u)ssel|chave(?: de| da)? api|chiave(?: dell')? api|chiave api)` +
    `(?:\\s+(?:is|es|est|ist|é|e|è|lautet|was))?\\s*[:=]?\\s*["'\`]?([A-Za-z0-9][A-Za-z0-9_\\-./+=]{19,})`,
  "giu"
)

const apiKeys = (text: string): Array<Span> => [
  ...Array.from(text.matchAll(API_KEY_SHAPES)).map((m) => ({ start: m.index, end: m.index + m[0].length })),
  ...Array.from(text.matchAll(KEYED_TOKEN)).flatMap((m) => {
    const value = m[1] ?? ""
    return /\d/.test(value) && /[A-Za-z]/.test(value) ? [valueSpan(m, value)] : []
  })
]

/** IBAN lengths by country (SWIFT IBAN registry). */
const IBAN_LENGTH: Readonly<Record<string, number>> = {
  AD: 24, AE: 23, AL: 28, AT: 20, AZ: 28, BA: 20, BE: 16, BG: 22, BH: 22, BR: 29, BY: 28, CH: 21, CR: 22, CY: 28,
  CZ: 24, DE: 22, DK: 18, DO: 28, EE: 20, EG: 29, ES: 24, FI: 18, FO: 18, FR: 27, GB: 22, GE: 22, GI: 23, GL: 18,
  GR: 27, GT: 28, HR: 21, HU: 28, IE: 22, IL: 23, IQ: 23, IS: 26, IT: 27, JO: 30, KW: 30, KZ: 20, LB: 28, LC: 32,
  LI: 21, LT: 20, LU: 20, LV: 21, MC: 27, MD: 24, ME: 22, MK: 19, MR: 27, MT: 31, MU: 30, NL: 18, NO: 15, PK: 24,
  PL: 28, PS: 29, PT: 25, QA: 29, RO: 24, RS: 22, SA: 24, SC: 31, SE: 24, SI: 19, SK: 24, SM: 27, ST: 25, SV: 28,
  TL: 23, TN: 24, TR: 26, UA: 29, VA: 22, VG: 24, XK: 20
}

const mod97 = (iban: string): boolean => {
  const rearranged = iban.slice(4) + iban.slice(0, 4)
  let remainder = 0
  for (const ch of rearranged) {
    const code = ch.charCodeAt(0)
    const value = code >= 65 ? code - 55 : code - 48
    remainder = value >= 10 ? (remainder * 100 + value) % 97 : (remainder * 10 + value) % 97
  }
  return remainder === 1
}

const IBAN_CANDIDATE = /\b[A-Za-z]{2}\d{2}(?:[ -]?[A-Za-z0-9]){10,32}/g

/** The country's length of characters from the candidate's start (spaces and dashes skipped), if it checks out. */
const ibanAt = (text: string, start: number): Span | undefined => {
  const length = IBAN_LENGTH[text.slice(start, start + 2).toUpperCase()]
  if (length === undefined) return undefined
  let iban = ""
  let i = start
  while (i < text.length && iban.length < length) {
    const ch = text.charAt(i)
    if (/[A-Za-z0-9]/.test(ch)) iban += ch.toUpperCase()
    else if (!(ch === " " || ch === "-") || !/[A-Za-z0-9]/.test(text.charAt(i + 1))) break
    i++
  }
  if (iban.length !== length || /[A-Za-z0-9]/.test(text.charAt(i))) return undefined
  return mod97(iban) ? { start, end: i } : undefined
}

const ibans = (text: string): Array<Span> =>
  Array.from(text.matchAll(IBAN_CANDIDATE)).flatMap((m) => {
    const span = ibanAt(text, m.index)
    return span === undefined ? [] : [span]
  })

const PRIVATE_KEY = /-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY-----[\s\S]*?(?:-----END \1PRIVATE KEY-----|$)/g

const privateKeys = (text: string): Array<Span> =>
  Array.from(text.matchAll(PRIVATE_KEY)).map((m) => ({ start: m.index, end: m.index + m[0].length }))

// ---------------------------------------------------------------------------------------------------
// The rule set
// ---------------------------------------------------------------------------------------------------

interface TextRule extends GuardrailRuleInfo {
  readonly category: "prompt_injection" | "abuse"
  readonly matches: (input: Normalised) => boolean
}

interface SecretRule extends GuardrailRuleInfo {
  readonly category: "secret"
  readonly kind: SecretKind
  readonly find: (text: string) => ReadonlyArray<Span>
}

const injection = (id: string, description: string, pattern: RegExp): TextRule => ({
  id,
  category: "prompt_injection",
  description,
  matches: (input) => pattern.test(input.text)
})

const abuse = (id: string, description: string, pattern: RegExp): TextRule => {
  const global = new RegExp(pattern.source, "g")
  return { id, category: "abuse", description, matches: (input) => matchesUnreported(global, input.text) }
}

const secret = (id: string, kind: SecretKind, description: string, find: SecretRule["find"]): SecretRule => ({
  id,
  category: "secret",
  kind,
  description,
  find
})

const wordRule = (source: string): RegExp => new RegExp(`\\b(?:${source})\\b`)

const BASE_INJECTION_RULES: ReadonlyArray<TextRule> = [
  injection(
    "injection.ignore_instructions",
    "Tells the assistant to ignore, forget or override its previous, system or own instructions (not the customer's own earlier message or instructions).",
    IGNORE_INSTRUCTIONS
  ),
  injection(
    "injection.reveal_prompt",
    "Asks to reveal, print, repeat or describe the system prompt or hidden instructions.",
    REVEAL_PROMPT
  ),
  injection(
    "injection.exfiltrate_context",
    "Asks to repeat, translate or encode the text above or the conversation context (\"translate the above\", instructions in base64, markdown-image beacons).",
    EXFILTRATE_CONTEXT
  ),
  injection(
    "injection.forced_output",
    "Dictates the assistant's reply word for word (\"repeat after me: '…'\", \"reply only with '…'\", \"responde solo con '…'\").",
    FORCED_OUTPUT
  ),
  injection(
    "injection.jailbreak",
    "Known jailbreak personas and phrasing: DAN / Do Anything Now, \"jailbreak prompt\", \"stay in character\".",
    JAILBREAK
  ),
  injection(
    "injection.mode_switch",
    "Switches the assistant into a developer, debug, god or unrestricted mode (\"you are now in developer mode\"; not \"how do I enable developer mode on my phone?\").",
    MODE_SWITCH
  ),
  injection(
    "injection.role_override",
    "Gives the assistant a new role or identity (act as the system/admin, pretend to be…, from now on you…, your new instructions are…, I am your developer).",
    ROLE_OVERRIDE
  ),
  injection(
    "injection.unrestricted",
    "Declares the assistant free of its rules or filters (you have no restrictions, answer without filters, bypass your safeguards).",
    UNRESTRICTED
  ),
  injection(
    "injection.fake_role_marker",
    "Chat-template tokens and forged turns: <|im_start|>, [INST], </s>, ### System:, [SYSTEM], \"role\": \"system\", a line starting Assistant: or System: addressed to the model.",
    FAKE_ROLE_MARKER
  ),
  injection(
    "injection.forged_note",
    "A customer message forging a note from the integrator's side: \"[Note from the support system]\", \"System note:\", \"Admin note:\", \"Nota del sistema:\", \"Systemhinweis:\"…",
    FORGED_NOTE
  )
]

const matchesBaseInjection = (input: Normalised): boolean => BASE_INJECTION_RULES.some((rule) => rule.matches(input))

const textRules: ReadonlyArray<TextRule> = [
  ...BASE_INJECTION_RULES,
  {
    id: "injection.obfuscated",
    category: "prompt_injection",
    description: "Spaced-out letters (\"i g n o r e  p r e v i o u s…\") spelling an injection.",
    matches: (input) => input.joined.some((word) => OBFUSCATED_INJECTION.test(word))
  },
  {
    id: "injection.encoded_payload",
    category: "prompt_injection",
    description: "A base64 string that decodes to text any injection rule above matches.",
    matches: (input) => input.decoded.some(matchesBaseInjection)
  },
  abuse(
    "abuse.insult",
    "Strong insults and obscene put-downs (\"fuck you\", asshole, gilipollas, connard, Arschloch, filho da puta, vaffanculo…).",
    wordRule(STRONG_INSULTS)
  ),
  abuse(
    "abuse.directed_insult",
    "Name-calling addressed to the agent or staff (\"you idiot\", \"your team are clowns\", eres un inútil, vous êtes nuls, du Idiot, você é burro, sei un cretino).",
    DIRECTED_INSULT
  ),
  abuse("abuse.slur", "Ethnic, racial and homophobic slurs.", wordRule(SLURS)),
  abuse(
    "abuse.threat",
    "Threats of violence against the agent, staff or premises, death wishes, \"I know where you live\".",
    THREAT
  ),
  abuse("abuse.sexual_harassment", "Sexual demands or threats addressed to the agent.", SEXUAL_HARASSMENT),
  {
    id: "abuse.obfuscated",
    category: "abuse",
    description: "Spaced-out letters spelling a strong insult (\"f u c k y o u\", \"i d i o t\").",
    matches: (input) => input.joined.some((word) => OBFUSCATED_ABUSE.test(word))
  }
]

const secretRules: ReadonlyArray<SecretRule> = [
  secret(
    "secret.private_key",
    "private_key",
    "PEM private keys (-----BEGIN … PRIVATE KEY----- to its END line, or to the end of the message).",
    privateKeys
  ),
  secret(
    "secret.card_number",
    "card_number",
    "Payment card numbers: 13–19 digits (spaces or dashes allowed) starting 2–6, passing the Luhn check; not after + (phone) or a letter (tracking).",
    cardNumbers
  ),
  secret(
    "secret.card_security_code",
    "card_security_code",
    "A 3–4 digit CVV/CVC after its name (CVV, security code, cryptogramme, Prüfnummer, código de segurança…).",
    digitsAfter(SECURITY_CODE)
  ),
  secret(
    "secret.iban",
    "iban",
    "IBANs: country code, check digits and the country's length, passing the mod-97 check.",
    ibans
  ),
  secret(
    "secret.api_key",
    "api_key",
    "API keys and tokens by shape (sk-…, sk_live_…, AKIA…, ghp_…, github_pat_…, glpat-…, xox?-…, AIza…, SG.….…, npm_…, JWTs) or after api key/token/bearer with letters and digits.",
    apiKeys
  ),
  secret(
    "secret.password",
    "password",
    "The value after password/contraseña/mot de passe/Passwort/Kennwort/senha (\":\" or \"=\": any value; \"is\"/\"es\"/\"est\"/\"ist\"/\"é\": a value with a digit, symbol, inner capital or quotes).",
    passwords
  ),
  secret("secret.url_credentials", "password", "The password in a scheme://user:password@host URL.", urlPasswords),
  secret("secret.pin", "pin", "A 4–8 digit PIN after PIN/code PIN/Geheimzahl.", digitsAfter(PIN))
]

/** The rule set as documentation: id, category, one-line description (for docs/ai.md), in decision order. */
export const rules: ReadonlyArray<GuardrailRuleInfo> = [...textRules, ...secretRules].map(({ category, description, id }) => ({
  id,
  category,
  description
}))

// ---------------------------------------------------------------------------------------------------
// The decision
// ---------------------------------------------------------------------------------------------------

const MARKER: Readonly<Record<SecretKind, string>> = {
  card_number: "[card number removed]",
  card_security_code: "[card security code removed]",
  password: "[password removed]",
  pin: "[PIN removed]",
  api_key: "[API key removed]",
  iban: "[IBAN removed]",
  private_key: "[private key removed]"
}

const CATEGORY_ORDER: ReadonlyArray<GuardrailCategory> = ["prompt_injection", "abuse", "secret"]

interface Cut extends Span {
  readonly rule: string
  readonly kind: SecretKind
}

/** The cuts in text order; of two that overlap, the one that starts first (or is longer) stays. */
const disjoint = (cuts: ReadonlyArray<Cut>): Array<Cut> => {
  const ordered = [...cuts].sort((a, b) => a.start - b.start || b.end - a.end)
  const kept: Array<Cut> = []
  let at = 0
  for (const cut of ordered) {
    if (cut.start < at || cut.end <= cut.start) continue
    kept.push(cut)
    at = cut.end
  }
  return kept
}

/** Replaces each of the disjoint, ordered cuts by its kind's marker. */
const redact = (text: string, cuts: ReadonlyArray<Cut>): string => {
  let out = ""
  let at = 0
  for (const cut of cuts) {
    out += text.slice(at, cut.start) + MARKER[cut.kind]
    at = cut.end
  }
  return out + text.slice(at)
}

/**
 * Decides what of a customer message may reach the language model: `block` when any injection or abuse
 * rule matches (whatever else it holds), `redact` when only secrets were found (each replaced by a
 * marker such as `[card number removed]`, the rest of the text untouched), `pass` otherwise.
 */
export const check = (text: string): GuardrailDecision => {
  const normalised = normalise(text, true)
  const matched = new Set<string>()
  for (const rule of textRules) {
    if (rule.matches(normalised)) matched.add(rule.id)
  }
  const found: Array<Cut> = []
  for (const rule of secretRules) {
    for (const span of rule.find(text)) found.push({ ...span, rule: rule.id, kind: rule.kind })
  }
  const cuts = disjoint(found)
  for (const cut of cuts) matched.add(cut.rule)

  if (matched.size === 0) return { action: "pass", categories: [], findings: [], text }

  const findings: Array<GuardrailFinding> = [
    ...textRules.filter((rule) => matched.has(rule.id)).map(({ category, id }): GuardrailFinding => ({ category, rule: id })),
    ...secretRules
      .filter((rule) => matched.has(rule.id))
      .map(({ category, id, kind }): GuardrailFinding => ({ category, rule: id, secret: kind }))
  ]
  const categories = CATEGORY_ORDER.filter((category) => findings.some((f) => f.category === category))
  const blocked = categories.includes("prompt_injection") || categories.includes("abuse")
  return blocked
    ? { action: "block", categories, findings, text: "" }
    : { action: "redact", categories, findings, text: redact(text, cuts) }
}
