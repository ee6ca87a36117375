/**
 * Parley's own words to a customer, in the customer's language (docs/ai.md, "Languages"): the hand-over
 * note, the fallbacks, the "More in …" line under an answer, the guardrail's safe replies, the
 * inactivity check-in and goodbye, and the lead-in of a hand-over summary. A model writes its own
 * messages in the customer's language; these are for the embedded responder and for whenever the model
 * cannot be reached. English, Spanish, French, German, Portuguese.
 *
 * The language of a reply (`replyLanguage`): the integration's `channelsSettings.language` when set;
 * otherwise the one detected in the customer's latest messages (`detectLanguage`, without a model: each
 * language's most frequent function words and its own letters); otherwise the conversation's stored
 * language; otherwise English.
 */
import { Language } from "../Domain/Language.js"

export { Language }

export interface Texts {
  /** The hand-over note to the customer. */
  readonly handover: string
  /** The agent found no answer and cannot hand over. */
  readonly fallback: string
  /** The model cannot be reached and the integration takes no hand-over (`AI_FALLBACK_MESSAGE` unset). */
  readonly unavailable: string
  /** A default goodbye when the model closes without one. */
  readonly closing: string
  /** The embedded responder found nothing relevant and cannot hand over. */
  readonly noAnswer: string
  /** The embedded responder found nothing relevant and hands over. */
  readonly escalation: string
  /** The line under an answer naming the articles it used. */
  readonly moreIn: (links: ReadonlyArray<string>) => string
  /** The hand-over summary for the human agent when the model wrote none. */
  readonly customerAsked: (questions: ReadonlyArray<string>) => string
  /** The guardrail's safe replies. */
  readonly guardrail: { readonly prompt_injection: string; readonly abuse: string }
  /** The inactivity timers' messages without a model. */
  readonly inactivity: { readonly prompt: string; readonly goodbye: string }
}

const list = (links: ReadonlyArray<string>, and: string) =>
  links.length <= 1 ? links.join("") : `${links.slice(0, -1).join(", ")} ${and} ${links.at(-1)}`

export const texts: Record<Language, Texts> = {
  en: {
    handover: "I'm passing you to a person on our team. They'll reply here shortly.",
    fallback: "I'm sorry, I couldn't put together an answer to that just now. Could you rephrase your question or " +
      "add a detail?",
    unavailable: "I'm sorry, I can't answer right now. Please try again in a few minutes.",
    closing: "Glad I could help! I'm closing this conversation; write here any time if you need anything else.",
    noAnswer: "I'm sorry, I couldn't find an answer to that in our help center. Could you rephrase it, or add a " +
      "detail?",
    escalation: "I couldn't find an answer to that in our help center, so I'm passing you to a person on our team. " +
      "They'll reply here shortly.",
    moreIn: (links) => `More in ${links.join(" and ")}.`,
    customerAsked: (questions) => `The customer asked: ${questions.join(" / ")}`,
    guardrail: {
      prompt_injection: "I can only help with questions about our products and services, so I can't act on that " +
        "request. What can I help you with?",
      abuse: "I'm here to help, but I can't respond to messages like that. If you have a question about your order " +
        "or our service, I'll gladly help."
    },
    inactivity: {
      prompt: "Are you still there? If you still need help, just reply here.",
      goodbye: "As we haven't heard from you, I'm closing this conversation for now. Write here any time if you " +
        "need anything else."
    }
  },
  es: {
    handover: "Te paso con una persona de nuestro equipo. Te responderá aquí en breve.",
    fallback: "Lo siento, ahora mismo no he podido preparar una respuesta. ¿Podrías reformular tu pregunta o " +
      "añadir algún detalle?",
    unavailable: "Lo siento, ahora mismo no puedo responder. Vuelve a intentarlo en unos minutos.",
    closing: "¡Me alegra haber ayudado! Cierro esta conversación; escríbenos aquí cuando necesites algo más.",
    noAnswer: "Lo siento, no he encontrado la respuesta en nuestro centro de ayuda. ¿Podrías reformularlo o " +
      "añadir algún detalle?",
    escalation: "No he encontrado la respuesta en nuestro centro de ayuda, así que te paso con una persona de " +
      "nuestro equipo. Te responderá aquí en breve.",
    moreIn: (links) => `Más información en ${list(links, "y")}.`,
    customerAsked: (questions) => `El cliente preguntó: ${questions.join(" / ")}`,
    guardrail: {
      prompt_injection: "Solo puedo ayudarte con preguntas sobre nuestros productos y servicios, así que no puedo " +
        "atender esa petición. ¿En qué puedo ayudarte?",
      abuse: "Estoy aquí para ayudarte, pero no puedo responder a mensajes así. Si tienes una pregunta sobre tu " +
        "pedido o nuestro servicio, te ayudaré con gusto."
    },
    inactivity: {
      prompt: "¿Sigues ahí? Si todavía necesitas ayuda, responde aquí.",
      goodbye: "Como no hemos sabido de ti, cierro esta conversación por ahora. Escríbenos aquí cuando necesites " +
        "algo más."
    }
  },
  fr: {
    handover: "Je vous mets en relation avec une personne de notre équipe. Elle vous répondra ici sous peu.",
    fallback: "Désolé, je n'ai pas pu préparer de réponse pour le moment. Pourriez-vous reformuler votre question " +
      "ou ajouter un détail ?",
    unavailable: "Désolé, je ne peux pas répondre pour le moment. Veuillez réessayer dans quelques minutes.",
    closing: "Ravi d'avoir pu vous aider ! Je clôture cette conversation ; écrivez-nous ici si vous avez besoin " +
      "d'autre chose.",
    noAnswer: "Désolé, je n'ai pas trouvé de réponse dans notre centre d'aide. Pourriez-vous reformuler ou ajouter " +
      "un détail ?",
    escalation: "Je n'ai pas trouvé de réponse dans notre centre d'aide, je vous mets donc en relation avec une " +
      "personne de notre équipe. Elle vous répondra ici sous peu.",
    moreIn: (links) => `Plus d'informations : ${list(links, "et")}.`,
    customerAsked: (questions) => `Le client a demandé : ${questions.join(" / ")}`,
    guardrail: {
      prompt_injection: "Je ne peux vous aider que pour des questions sur nos produits et services, je ne peux donc " +
        "pas donner suite à cette demande. Comment puis-je vous aider ?",
      abuse: "Je suis là pour vous aider, mais je ne peux pas répondre à ce genre de message. Si vous avez une " +
        "question sur votre commande ou notre service, je vous aiderai volontiers."
    },
    inactivity: {
      prompt: "Êtes-vous toujours là ? Si vous avez encore besoin d'aide, répondez simplement ici.",
      goodbye: "Sans nouvelles de votre part, je clôture cette conversation pour l'instant. Écrivez-nous ici si " +
        "vous avez besoin d'autre chose."
    }
  },
  de: {
    handover: "Ich leite Sie an eine Person aus unserem Team weiter. Sie antwortet Ihnen hier in Kürze.",
    fallback: "Entschuldigung, ich konnte gerade keine Antwort zusammenstellen. Könnten Sie Ihre Frage anders " +
      "formulieren oder ein Detail ergänzen?",
    unavailable: "Entschuldigung, ich kann gerade nicht antworten. Bitte versuchen Sie es in ein paar Minuten erneut.",
    closing: "Schön, dass ich helfen konnte! Ich schließe diese Unterhaltung; schreiben Sie uns hier jederzeit, " +
      "wenn Sie noch etwas brauchen.",
    noAnswer: "Entschuldigung, ich habe in unserem Hilfe-Center keine Antwort darauf gefunden. Könnten Sie es " +
      "anders formulieren oder ein Detail ergänzen?",
    escalation: "Ich habe in unserem Hilfe-Center keine Antwort darauf gefunden und leite Sie deshalb an eine " +
      "Person aus unserem Team weiter. Sie antwortet Ihnen hier in Kürze.",
    moreIn: (links) => `Mehr dazu: ${list(links, "und")}.`,
    customerAsked: (questions) => `Der Kunde fragte: ${questions.join(" / ")}`,
    guardrail: {
      prompt_injection: "Ich kann Ihnen nur bei Fragen zu unseren Produkten und Dienstleistungen helfen, daher kann " +
        "ich diese Anfrage nicht ausführen. Wobei kann ich Ihnen helfen?",
      abuse: "Ich bin hier, um zu helfen, kann aber auf solche Nachrichten nicht antworten. Wenn Sie eine Frage zu " +
        "Ihrer Bestellung oder unserem Service haben, helfe ich gern."
    },
    inactivity: {
      prompt: "Sind Sie noch da? Wenn Sie noch Hilfe brauchen, antworten Sie einfach hier.",
      goodbye: "Da wir nichts mehr von Ihnen gehört haben, schließe ich diese Unterhaltung vorerst. Schreiben Sie " +
        "uns hier jederzeit, wenn Sie noch etwas brauchen."
    }
  },
  pt: {
    handover: "Vou transferir você para uma pessoa da nossa equipe. Ela responderá aqui em breve.",
    fallback: "Desculpe, não consegui preparar uma resposta agora. Você poderia reformular a pergunta ou " +
      "acrescentar um detalhe?",
    unavailable: "Desculpe, não consigo responder agora. Tente novamente em alguns minutos.",
    closing: "Que bom que pude ajudar! Vou encerrar esta conversa; escreva aqui sempre que precisar de algo mais.",
    noAnswer: "Desculpe, não encontrei uma resposta na nossa central de ajuda. Você poderia reformular ou " +
      "acrescentar um detalhe?",
    escalation: "Não encontrei uma resposta na nossa central de ajuda, por isso vou transferir você para uma " +
      "pessoa da nossa equipe. Ela responderá aqui em breve.",
    moreIn: (links) => `Mais informações em ${list(links, "e")}.`,
    customerAsked: (questions) => `O cliente perguntou: ${questions.join(" / ")}`,
    guardrail: {
      prompt_injection: "Só posso ajudar com perguntas sobre os nossos produtos e serviços, por isso não posso " +
        "atender esse pedido. Em que posso ajudar?",
      abuse: "Estou aqui para ajudar, mas não posso responder a mensagens assim. Se tiver uma pergunta sobre o seu " +
        "pedido ou o nosso serviço, ajudarei com prazer."
    },
    inactivity: {
      prompt: "Você ainda está aí? Se ainda precisar de ajuda, é só responder aqui.",
      goodbye: "Como não tivemos notícias suas, vou encerrar esta conversa por enquanto. Escreva aqui sempre que " +
        "precisar de algo mais."
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// Detection, without a model
// ---------------------------------------------------------------------------------------------------

/** Frequent words of each language that the others use little. */
const WORDS: Record<Language, ReadonlySet<string>> = {
  en: new Set(
    ("the and is are my you your what how when where with for this that have has not can could do does please " +
      "thanks thank order it of to in i me was will would hello hi there").split(" ")
  ),
  es: new Set(
    ("el la los las de que y en un una es mi mis por para con no cómo como qué cuándo dónde gracias pedido hola " +
      "tiene puedo está estoy del al pero ya muy necesito quiero también").split(" ")
  ),
  fr: new Set(
    ("le la les de des et est un une mon ma mes pour avec pas je vous comment quand où merci commande bonjour " +
      "du au mais ce cette qui que sur ai avez êtes suis").split(" ")
  ),
  de: new Set(
    ("der die das und ist ich mein meine meinen nicht mit für wie wann wo danke bestellung hallo ein eine sie " +
      "es zu auf von den dem bitte noch habe haben kann können wurde").split(" ")
  ),
  pt: new Set(
    ("o a os as de que e em um uma é meu minha por para com não como quando onde obrigado obrigada pedido olá " +
      "está você do da dos das mas já muito preciso quero também").split(" ")
  )
}

/** Letters only one of the languages uses. */
const LETTERS: ReadonlyArray<readonly [Language, RegExp]> = [
  ["es", /[ñ¿¡]/g],
  ["pt", /[ãõ]/g],
  ["de", /[ßäöü]/g],
  ["fr", /[èêëœîû]/g]
]

const languages = Language.literals

/**
 * The language of `messages` (the customer's latest first or last, it does not matter), or null when
 * they do not say enough: at least two points, and a clear lead over the runner-up.
 */
export const detectLanguage = (messages: ReadonlyArray<string>): Language | null => {
  const text = messages.join(" ").toLowerCase()
  const words = text.match(/[\p{L}']+/gu) ?? []
  const score: Record<Language, number> = { en: 0, es: 0, fr: 0, de: 0, pt: 0 }
  for (const word of words) {
    for (const language of languages) if (WORDS[language].has(word)) score[language] += 1
  }
  for (const [language, letters] of LETTERS) score[language] += 2 * (text.match(letters)?.length ?? 0)
  const ranked = [...languages].sort((a, b) => score[b] - score[a])
  const [first, second] = [ranked[0]!, ranked[1]!]
  if (score[first] < 2 || score[first] < score[second] * 1.25 + 0.5) return null
  return first
}

/**
 * The language of a reply: the integration's override, else the customer's latest messages', else the
 * conversation's stored one, else English.
 */
export const replyLanguage = (input: {
  readonly override: Language | null
  readonly customerMessages: ReadonlyArray<string>
  readonly stored: Language | null
}): Language => input.override ?? detectLanguage(input.customerMessages) ?? input.stored ?? "en"
