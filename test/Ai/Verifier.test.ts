/**
 * The lexical verifier: sentences, what counts as a claim, support by the cited passages (terms, numbers,
 * links, refs), the reason line, and whether the customer says their problem is solved.
 */
import { describe, expect, it } from "@effect/vitest"
import { checkSupport, confirmsResolution, type SourcePassage, SUPPORT_THRESHOLD } from "../../src/Ai/Verifier.js"

const RETURNS: SourcePassage = {
  ref: 1,
  title: "Returns and refunds",
  heading: null,
  text: "Returns are accepted within 30 days of delivery. Refunds are issued to the original payment method within " +
    "5 business days."
}

/** A small help center, in five languages. */
const HELP: ReadonlyArray<SourcePassage> = [
  {
    ref: 1,
    title: "Returns and refunds",
    heading: "Returning an item",
    text: "You can return any unused item within 30 days of delivery. Print the prepaid return label from your " +
      "account and drop the parcel at any post office."
  },
  {
    ref: 2,
    title: "Returns and refunds",
    heading: "Refunds",
    text: "Refunds are issued to the original payment method within 5 business days after we receive the returned " +
      "item. You will get an email when the refund is processed."
  },
  {
    ref: 3,
    title: "Shipping and delivery",
    heading: "Delivery times",
    text: "Orders leave our warehouse within 1–2 business days. Standard delivery takes 3–5 business days; express " +
      "delivery arrives the next business day when you order before 2 pm."
  },
  {
    ref: 4,
    title: "Your account",
    heading: "Forgotten password",
    url: "https://help.example.com/account/password",
    text: "Click “Forgot password” on the sign-in page and enter your email address. We send a reset link that is " +
      "valid for one hour. If the email does not arrive, check your spam folder."
  },
  {
    ref: 5,
    title: "Devoluciones",
    heading: "Plazo",
    text: "Puedes devolver cualquier artículo sin usar en un plazo de 30 días desde la entrega. El reembolso se " +
      "realiza al método de pago original en 5 días hábiles."
  },
  {
    ref: 6,
    title: "Retours",
    heading: null,
    text: "Vous pouvez retourner un article non utilisé dans les 30 jours suivant la livraison. Le remboursement est " +
      "effectué sur le moyen de paiement d'origine sous 5 jours ouvrés."
  },
  {
    ref: 7,
    title: "Rücksendungen",
    heading: null,
    text: "Sie können unbenutzte Artikel innerhalb von 30 Tagen nach der Lieferung zurücksenden. Die Erstattung " +
      "erfolgt innerhalb von 5 Werktagen auf die ursprüngliche Zahlungsmethode."
  },
  {
    ref: 8,
    title: "Devoluções",
    heading: null,
    text: "Você pode devolver qualquer item não utilizado em até 30 dias após a entrega. O reembolso é feito no " +
      "método de pagamento original em 5 dias úteis."
  },
  {
    ref: 9,
    title: "Pricing",
    heading: "Plans",
    text: "The Basic plan costs $15.00 per month and the Pro plan costs $39.90 per month. Storage is 3.5 GB on " +
      "Basic and 1,000 GB on Pro. Annual billing saves 20%. Write to billing@example.com for invoices."
  }
]

const sentencesOf = (draft: string, passages: ReadonlyArray<SourcePassage> = HELP) =>
  checkSupport(draft, passages).sentences.map((s) => s.sentence)

const verdictOf = (sentence: string, passages: ReadonlyArray<SourcePassage> = HELP) => {
  const { sentences } = checkSupport(sentence, passages)
  expect(sentences).toHaveLength(1)
  return sentences[0]!
}

describe("checkSupport: the brief's examples", () => {
  it("fails a draft that adds a free laptop to the return policy, and only for that sentence", () => {
    const verdict = checkSupport(
      "You can return it within 30 days [1]. As a thank-you, we will also send you a free laptop [1].",
      [RETURNS]
    )
    expect(verdict.supported).toBe(false)
    expect(verdict.sentences.map((s) => [s.claim, s.supported])).toEqual([[true, true], [true, false]])
    expect(verdict.sentences[1]!.missing).toEqual(expect.arrayContaining(["laptop", "free", "send"]))
    expect(verdict.reason).toContain("free laptop")
    expect(verdict.reason).toContain("laptop")
  })

  it("fails a draft whose delay is not the passage's (10 business days, not 5)", () => {
    const verdict = checkSupport("Refunds take 10 business days [1].", [RETURNS])
    expect(verdict.supported).toBe(false)
    const [sentence] = verdict.sentences
    expect(sentence!.missing).toEqual(["10"])
    // Every word is in the passage: the number alone makes it fail.
    expect(sentence!.support).toBeGreaterThanOrEqual(SUPPORT_THRESHOLD)
    expect(verdict.reason).toContain("10")
  })

  it("passes a faithful claim followed by an offer of more help", () => {
    const verdict = checkSupport(
      "You can return items within 30 days of delivery [1]. Is there anything else I can help with?",
      [RETURNS]
    )
    expect(verdict).toMatchObject({ supported: true, reason: null })
    expect(verdict.sentences.map((s) => s.claim)).toEqual([true, false])
  })

  it("passes a faithful Spanish draft against a Spanish passage", () => {
    const verdict = checkSupport(
      "¡Hola! Puedes devolver el artículo sin usar en un plazo de 30 días desde la entrega [5]. El reembolso se " +
        "hace al método de pago original en 5 días hábiles [5]. ¿Puedo ayudarte en algo más?",
      HELP
    )
    expect(verdict.supported).toBe(true)
    expect(verdict.sentences.map((s) => s.claim)).toEqual([false, true, true, false])
  })
})

describe("checkSupport: sentences", () => {
  it("keeps decimals, abbreviations and links inside their sentence", () => {
    expect(sentencesOf(
      "Storage is 3.5 GB on Basic, e.g. for small teams [9]. Dr. Smith wrote the guide at https://help.example.com/a.b/c. " +
        "It costs approx. 15 dollars."
    )).toEqual([
      "Storage is 3.5 GB on Basic, e.g. for small teams [9].",
      "Dr. Smith wrote the guide at https://help.example.com/a.b/c.",
      "It costs approx. 15 dollars."
    ])
  })

  it("keeps a marker with its sentence whether it comes before or after the period", () => {
    const verdict = checkSupport(
      "Refunds take 5 business days. [2] Standard delivery takes 3–5 business days [3]. Orders leave within 1–2 " +
        "business days.[3][2]",
      HELP
    )
    expect(verdict.sentences.map((s) => [s.sentence, s.refs])).toEqual([
      ["Refunds take 5 business days. [2]", [2]],
      ["Standard delivery takes 3–5 business days [3].", [3]],
      ["Orders leave within 1–2 business days.[3][2]", [3, 2]]
    ])
    expect(verdict.supported).toBe(true)
  })

  it("joins a line holding only markers to the sentence before it", () => {
    const verdict = checkSupport("Refunds take 5 business days.\n[2]", HELP)
    expect(verdict.sentences.map((s) => [s.sentence, s.refs])).toEqual([["Refunds take 5 business days. [2]", [2]]])
  })

  it("reads several refs in one marker", () => {
    expect(verdictOf("Refunds go to the original payment method within 5 business days [1, 2].").refs).toEqual([1, 2])
  })

  it("cuts at line breaks and drops list bullets", () => {
    const draft = "Here's how to return it:\n\n- Print the prepaid return label from your account [1]\n" +
      "* Drop the parcel at any post office [1]\n1. Wait for the refund email [2]\n2) You will get it within 5 " +
      "business days [2]\n• Done!"
    expect(sentencesOf(draft)).toEqual([
      "Here's how to return it:",
      "Print the prepaid return label from your account [1]",
      "Drop the parcel at any post office [1]",
      "Wait for the refund email [2]",
      "You will get it within 5 business days [2]",
      "Done!"
    ])
    expect(checkSupport(draft, HELP).supported).toBe(true)
  })

  it("checks each list item on its own: one invented step fails the draft", () => {
    const verdict = checkSupport(
      "To return it:\n- Print the prepaid return label from your account [1]\n- Call our courier hotline to book a " +
        "pickup [1]\n- Drop the parcel at any post office [1]",
      HELP
    )
    expect(verdict.supported).toBe(false)
    expect(verdict.sentences.filter((s) => !s.supported).map((s) => s.sentence)).toEqual([
      "Call our courier hotline to book a pickup [1]"
    ])
  })

  it("does not cut after an ellipsis or an unknown abbreviation followed by lower case, but does after ! and ?", () => {
    expect(sentencesOf("Refunds take… well, 5 business days. Really! Is that ok? Yes.")).toEqual([
      "Refunds take… well, 5 business days.",
      "Really!",
      "Is that ok?",
      "Yes."
    ])
  })

  it("handles Windows line breaks and blank lines", () => {
    expect(sentencesOf("Hi!\r\n\r\nRefunds take 5 business days [2].\r\nThanks!")).toEqual([
      "Hi!",
      "Refunds take 5 business days [2].",
      "Thanks!"
    ])
  })

  it("supports an empty draft", () => {
    expect(checkSupport("  \n ", HELP)).toEqual({ supported: true, sentences: [], reason: null })
  })
})

describe("checkSupport: what is not a claim", () => {
  const notClaims = [
    "Is there anything else I can help with?",
    "Would you like me to check the delivery status of your order for you?",
    "¿Quieres que revise el estado de tu pedido?",
    "Hi Anna, thanks for getting in touch with our support team!",
    "Thank you for your patience while we looked into your delivery problem.",
    "I'm so sorry about the trouble with your damaged package.",
    "I completely understand how frustrating a late parcel must be.",
    "Let me know if there's anything else you need regarding your order.",
    "Feel free to reach out whenever you have questions about your account.",
    "Hope this helps and have a wonderful weekend ahead!",
    "I couldn't find anything about gift cards in our help articles.",
    "I'm not sure whether express delivery covers remote islands.",
    "No encontré información sobre tarjetas regalo en nuestros artículos.",
    "Je ne sais pas si la livraison express couvre les îles éloignées.",
    "Ich bin mir nicht sicher, ob die Expresslieferung Inseln abdeckt.",
    "Não encontrei informações sobre cartões-presente nos nossos artigos.",
    "N'hésitez pas à nous contacter pour toute autre question concernant votre commande.",
    "Here is what you need to do to reset your password:",
    "Sounds good.",
    "That makes sense."
  ]
  for (const sentence of notClaims) {
    it(sentence, () => {
      // No passages at all: any claim would fail.
      expect(verdictOf(sentence, [])).toMatchObject({ claim: false, supported: true, support: 1, missing: [] })
    })
  }

  it("a courtesy sentence that states a number is a claim", () => {
    const verdict = verdictOf("Thanks for waiting, your refund will arrive within 10 business days.")
    expect(verdict).toMatchObject({ claim: true, supported: false })
    expect(verdict.missing).toContain("10")
  })

  it("the clause after a greeting, thanks or apology is judged on its own", () => {
    expect(verdictOf("Hi Anna, you can return items within 30 days of delivery [1].")).toMatchObject({
      claim: true,
      supported: true,
      missing: []
    })
    expect(verdictOf("Hi Anna, your refund has been approved by our finance team.")).toMatchObject({
      claim: true,
      supported: false
    })
    expect(verdictOf("Thanks for waiting, your parcel has been handed to our express courier partner.")).toMatchObject({
      claim: true,
      supported: false
    })
    expect(verdictOf("Lo siento, el reembolso se realiza al método de pago original [5].")).toMatchObject({
      claim: true,
      supported: true
    })
    expect(verdictOf("Thanks for your patience, I really appreciate it.", [])).toMatchObject({ claim: false })
    expect(verdictOf("I understand, waiting for a parcel is frustrating and stressful.", [])).toMatchObject({
      claim: false
    })
  })

  it("a courtesy sentence that cites a passage is a claim", () => {
    expect(verdictOf("Happy to help: returns are free of charge for members [1].")).toMatchObject({
      claim: true,
      supported: false
    })
  })

  it("a hedge followed by a 'but' is a claim", () => {
    expect(verdictOf("I'm not sure, but refunds usually take 10 business days.")).toMatchObject({
      claim: true,
      supported: false
    })
    expect(verdictOf("No estoy seguro, pero el reembolso tarda 10 días hábiles.")).toMatchObject({
      claim: true,
      supported: false
    })
  })

  it("a short declarative sentence with a number is a claim", () => {
    expect(verdictOf("It costs $25.")).toMatchObject({ claim: true, supported: false, missing: ["25"] })
    expect(verdictOf("It costs $15.")).toMatchObject({ claim: true, supported: true })
  })

  it("a draft of courtesy only passes even without passages", () => {
    expect(checkSupport("Hello! Thanks for reaching out. How can I help you today?", [])).toMatchObject({
      supported: true,
      reason: null
    })
  })
})

describe("checkSupport: numbers", () => {
  const cases: ReadonlyArray<readonly [string, boolean]> = [
    ["The Basic plan costs $15 per month [9].", true],
    ["The Basic plan costs 15,00 $ per month [9].", true],
    ["The Basic plan costs $16 per month [9].", false],
    ["The Pro plan costs $39.90 per month [9].", true],
    ["The Pro plan costs $39.99 per month [9].", false],
    ["Storage on the Basic plan is 3.5 GB [9].", true],
    ["Storage on the Basic plan is 3,5 GB [9].", true],
    ["Storage on the Basic plan is 35 GB [9].", false],
    ["Storage on the Pro plan is 1000 GB [9].", true],
    ["Storage on the Pro plan is 1.000 GB [9].", true],
    ["Storage on the Pro plan is 100 GB [9].", false],
    ["Annual billing saves 20% [9].", true],
    ["Annual billing saves 25% [9].", false],
    ["Refunds are issued within five business days [2].", true],
    ["Refunds are issued within seven business days [2].", false],
    ["The reset link is valid for 1 hour [4].", true],
    ["The reset link is valid for 2 hours [4].", false],
    ["Standard delivery takes 3 to 5 business days [3].", true],
    ["Standard delivery takes 3 to 7 business days [3].", false],
    ["El reembolso se realiza en cinco días hábiles [5].", true],
    ["Die Erstattung erfolgt innerhalb von sieben Werktagen [7].", false]
  ]
  for (const [sentence, supported] of cases) {
    it(`${supported ? "passes" : "fails"}: ${sentence}`, () => {
      expect(verdictOf(sentence).supported).toBe(supported)
    })
  }

  it("reports the missing number even when every word is found", () => {
    const verdict = verdictOf("Annual billing saves 25% [9].")
    expect(verdict.missing).toEqual(["25"])
    expect(verdict.support).toBeGreaterThan(SUPPORT_THRESHOLD)
  })

  it("a number must be in the cited passage, not in another one", () => {
    // 30 days is passage 1's, not passage 2's.
    expect(verdictOf("Refunds are issued within 30 business days [2].").supported).toBe(false)
  })
})

describe("checkSupport: links", () => {
  it("passes a link from the passage's url or text, fails an invented one", () => {
    expect(verdictOf("Reset your password at https://help.example.com/account/password [4].").supported).toBe(true)
    expect(verdictOf("Reset your password at help.example.com/account/password/ [4].").supported).toBe(true)
    expect(verdictOf("Write to billing@example.com for your invoices [9].").supported).toBe(true)
    const invented = verdictOf("Reset your password at https://example.com/reset-now [4].")
    expect(invented.supported).toBe(false)
    expect(invented.missing).toContain("example.com/reset-now")
    expect(verdictOf("Write to invoices@example.com for your invoices [9].").supported).toBe(false)
  })
})

describe("checkSupport: refs and passages", () => {
  it("a claim citing a ref that is not among the passages is unsupported, even when another passage supports it", () => {
    const verdict = checkSupport("Returns are accepted within 30 days of delivery [7].", [RETURNS])
    expect(verdict.supported).toBe(false)
    expect(verdict.reason).toContain("[7]")
    expect(verdict.reason).toContain("fix the citation")
  })

  it("a claim citing a known and an unknown ref is unsupported", () => {
    expect(checkSupport("Returns are accepted within 30 days of delivery [1, 4].", [RETURNS]).supported).toBe(false)
  })

  it("any sentence whose marker names no passage is unsupported, claim or not", () => {
    const verdict = checkSupport("Hope this helps! [3]", [RETURNS])
    expect(verdict.sentences[0]).toMatchObject({ claim: false, supported: false })
    expect(verdict.reason).toContain("[3]")
  })

  it("a claim is checked against the passages it cites, not the others", () => {
    const verdict = checkSupport("Print the prepaid return label from your account [3].", HELP)
    expect(verdict.supported).toBe(false)
    expect(verdict.reason).toContain("fix the citation")
    expect(checkSupport("Print the prepaid return label from your account [1].", HELP).supported).toBe(true)
  })

  it("a claim that cites nothing is checked against all passages", () => {
    const verdict = checkSupport("Print the prepaid return label from your account and drop the parcel off.", HELP)
    expect(verdict.supported).toBe(true)
    expect(verdict.sentences[0]!.refs).toEqual([])
    expect(checkSupport("We also offer free gift wrapping on every order.", HELP).supported).toBe(false)
  })

  it("the title and heading of a passage count as its words", () => {
    expect(checkSupport("This is covered under Forgotten password in Your account [4].", HELP).supported).toBe(true)
  })

  it("with no passages every claim fails and the reason says why", () => {
    const verdict = checkSupport("Hi! Returns are accepted within 30 days of delivery. Anything else?", [])
    expect(verdict.supported).toBe(false)
    expect(verdict.sentences.map((s) => [s.claim, s.supported, s.support])).toEqual([
      [false, true, 1],
      [true, false, 0],
      [false, true, 1]
    ])
    expect(verdict.reason).toContain("no knowledge-base passage")
  })
})

describe("checkSupport: matching words", () => {
  it("meets inflected and accented forms", () => {
    const passage: SourcePassage = {
      ref: 1,
      title: "Shipping",
      heading: null,
      text: "We ship orders daily. Charges apply to returned parcels. Las devoluciones están aceptadas."
    }
    expect(checkSupport("Your order was shipped and the parcel return is charged [1].", [passage]).supported).toBe(true)
    expect(checkSupport("La devolución está aceptada [1].", [passage]).supported).toBe(true)
    expect(checkSupport("La devolucion esta aceptada [1].", [passage]).supported).toBe(true)
  })

  it("reads the word after a French elision and the one before an English contraction", () => {
    // "l'échange d'articles": the words are "echange" and "articles", not "l" and "d".
    expect(verdictOf("Nous acceptons l'échange d'articles non utilisés [6].").missing).toEqual(["acceptons", "echange"])
    expect(verdictOf("We don't deliver parcels on weekends [3].").missing).toEqual(["parcels", "weekends"])
  })

  it("takes French \"très\" for \"very\", not for Spanish \"tres\"", () => {
    expect(verdictOf("La livraison est très rapide [6].").missing).toEqual(["rapide"])
    expect(verdictOf("El reembolso tarda tres días hábiles [5].").missing).toEqual(["3", "tarda"])
  })

  it("does not meet words that only share a short beginning", () => {
    const passage: SourcePassage = { ref: 1, title: "Refunds", heading: null, text: "Refunds for cards are free." }
    expect(checkSupport("Refurbished cars are freezing [1].", [passage]).supported).toBe(false)
  })

  it("explains what a failing claim lacks", () => {
    const verdict = checkSupport("Your refund is sent as store credit to your loyalty wallet [2].", HELP)
    expect(verdict.sentences[0]!.missing).toEqual(["sent", "store", "credit", "loyalty", "wallet"])
    expect(verdict.reason).toBe(
      "1 sentence is not supported by the passages: \"Your refund is sent as store credit to your loyalty wallet " +
        "[2].\" (missing: sent, store, credit, loyalty, wallet)"
    )
  })

  it("counts the failing sentences in the reason", () => {
    const verdict = checkSupport(
      "Refunds take 10 business days [2]. We also send a gift voucher with every refund [2]. Bye!",
      HELP
    )
    expect(verdict.reason).toMatch(/^2 sentences are not supported by the passages: "Refunds take 10/)
    expect(verdict.reason).toContain("not in the sources: 10")
  })
})

describe("checkSupport: faithful paraphrases pass, inventions fail (the threshold's tuning set)", () => {
  const faithful = [
    "You can send back unused items within 30 days of delivery [1].",
    "Print the prepaid label from your account and drop the parcel off at a post office [1].",
    "Your refund goes to the original payment method within 5 business days of us receiving the item [2].",
    "We'll email you once the refund has been processed [2].",
    "Standard shipping takes 3–5 business days [3].",
    "If you order before 2 pm, express delivery arrives the next business day [3].",
    "Use the Forgot password link on the sign-in page and enter your email [4].",
    "If the email doesn't arrive, have a look in your spam folder [4].",
    "Your order leaves the warehouse within 1-2 business days [3].",
    "We'll refund you to the card you paid with within 5 business days [2].",
    "Returned items must not have been used [1].",
    "Drop the package at any post office using the prepaid label [1].",
    "The link to reset your password expires after an hour [4].",
    "Express orders arrive the next day if placed before 2 pm [3].",
    "You have 30 days from delivery to return it [1].",
    "El reembolso se hace al método de pago original en 5 días hábiles [5].",
    "Vous pouvez retourner l'article dans les 30 jours suivant la livraison [6].",
    "Le remboursement est effectué sur le moyen de paiement d'origine sous 5 jours ouvrés [6].",
    "Sie können Artikel innerhalb von 30 Tagen nach der Lieferung zurücksenden [7].",
    "Die Erstattung erfolgt innerhalb von 5 Werktagen auf die ursprüngliche Zahlungsmethode [7].",
    "Você pode devolver o item em até 30 dias após a entrega [8].",
    "O reembolso é feito no método de pagamento original em 5 dias úteis [8]."
  ]
  const invented = [
    "Returns are free and we also refund the shipping costs [1].",
    "We can also arrange a courier pickup from your home [1].",
    "You can also reset your password by calling our support hotline [4].",
    "Refunds are issued as store credit [2].",
    "Your account will be locked after several failed attempts [4].",
    "Damaged items can be exchanged at any of our stores [1].",
    "Orders placed on weekends are shipped on Monday [3].",
    "We will send you a discount code for your next order [2].",
    "International returns need a customs form from the post office [1].",
    "Your refund will arrive faster if you paid by credit card [2].",
    "Returns are accepted within 60 days for members [1].",
    "Gift cards cannot be returned or refunded [2].",
    "También puedes cambiar el artículo por otro color en la tienda [5].",
    "Le remboursement peut aussi être fait en bon d'achat [6].",
    "Sie können Artikel kostenlos im Geschäft umtauschen [7].",
    "Você também pode trocar o item por outro tamanho na loja [8]."
  ]
  for (const sentence of faithful) {
    it(`passes: ${sentence}`, () => {
      expect(verdictOf(sentence)).toMatchObject({ claim: true, supported: true })
    })
  }
  for (const sentence of invented) {
    it(`fails: ${sentence}`, () => {
      expect(verdictOf(sentence)).toMatchObject({ claim: true, supported: false })
    })
  }
})

describe("confirmsResolution", () => {
  const resolved: ReadonlyArray<ReadonlyArray<string>> = [
    ["thanks, that solved it"],
    ["perfect, that's all I needed"],
    ["gracias, ya funciona"],
    ["merci, c'est réglé"],
    ["danke, hat geklappt"],
    ["obrigado, resolvido"],
    ["Thank you so much! It works now 🙂"],
    ["Great, all sorted. Have a nice day!"],
    ["Gracias, eso es todo."],
    ["gracias, nada más"],
    ["Merci beaucoup, ça marche maintenant !"],
    ["Super, funktioniert jetzt. Danke!"],
    ["Obrigado, não tenho mais dúvidas."],
    ["Perfeito, deu certo!"],
    ["It still doesn't work.", "Oh wait, now it works. Thanks, problem solved!"]
  ]
  for (const messages of resolved) {
    it(`resolved: ${JSON.stringify(messages)}`, () => expect(confirmsResolution(messages)).toBe(true))
  }

  const open: ReadonlyArray<ReadonlyArray<string>> = [
    [],
    [""],
    ["thanks"],
    ["Thank you!"],
    ["ok"],
    ["thanks, but it still doesn't work"],
    ["ok. and how do I change my address?"],
    ["thanks", "how do I change my address?"],
    ["thanks, that solved it", "ok. and how do I change my address?"],
    ["thanks, that solved it", "hmm, actually the error is back"],
    ["That solved it, but now I have another problem with my invoice"],
    ["thanks, that works. Also I want to change my delivery address"],
    ["Gracias, pero sigue sin funcionar"],
    ["Ya funciona. ¿Y cómo cambio mi dirección?"],
    ["Merci, mais ça ne marche toujours pas"],
    ["Danke, aber es funktioniert immer noch nicht"],
    ["Obrigado, mas ainda não funciona"],
    ["It doesn't work, the page is broken"],
    ["no funciona"],
    // Only the question mark says these are questions.
    ["Perfect, that's all. The discount applies to sale items too?"],
    ["Danke, hat geklappt. Gilt das auch für Geschenkkarten?"],
    // A question in the same batch stays open, even when a later message says something is solved.
    ["The voucher is transferable?", "never mind the password, found it, works now"]
  ]
  for (const messages of open) {
    it(`not resolved: ${JSON.stringify(messages)}`, () => expect(confirmsResolution(messages)).toBe(false))
  }
})
