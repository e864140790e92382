"""A seeded support history and the queries an agent would run over it.

Pedalpal, a bike shop's support agent, and its customer Ana (user "ana"):
her USER.md and MEMORY.md, 80 log entries over six months, in English with
some German, Spanish and French, as customers write. Two more pairs hold
look-alike entries that must never be found (another user of the agent, and
another agent with the same user name).

Each query names the entries that answer it: a log entry's key, or a file
name. Kinds:
  exact       the answer uses the query's words as written
  stem        plurals and other forms of the words ("emails" for "email")
  phrase      a "quoted phrase"
  prefix      a word* prefix
  language    a German, Spanish or French word as written
  paraphrase  the answer says it in other words (keyword search is not
              expected to find these; reported apart)
"""

from __future__ import annotations

from dataclasses import dataclass

USER = "ana"

FILES = {
    "USER.md": (
        "- Name: Ana Lindqvist, prefers to be called Ana\n"
        "- Lives in Leeds, commutes 12 km by bike\n"
        "- Rides a Genesis Croix de Fer gravel bike and a Brompton folding bike\n"
        "- Contact: email only, never phone her at work\n"
        "- Speaks English, Swedish and some German\n"
    ),
    "MEMORY.md": (
        "- 2026-06-02 Brompton hinge clamp replaced under warranty\n"
        "- 2026-07-15 Standard service booked for the gravel bike\n"
        "- Prefers Schwalbe Marathon tyres; puncture-prone on the canal path\n"
        "- Allergic to latex: never use latex gloves when handing the bike over\n"
        "- Loyalty discount 10% agreed by the manager in August\n"
    ),
}

# (key, role, content), oldest first.
LOGS: list[tuple[str, str, str]] = [
    ("hello", "user", "Hi, I bought a Brompton from you last year and the hinge clamp is loose."),
    ("hinge-photo", "assistant", "Thanks Ana. Could you send a photo of the hinge clamp and the frame number?"),
    ("warranty-ok", "note", "Hinge clamp covered by the components warranty (2 years). Replacement ordered."),
    ("clamp-arrived", "note", "Replacement clamp arrived; workshop fitted it on 2 June."),
    ("contact-pref", "user", "Please only email me, I can't take phone calls at work."),
    ("email-bounce", "note", "Our email to ana.l@example.org bounced once; the address was mistyped in the CRM."),
    ("crm-fixed", "note", "Corrected the mistyped address in the CRM, confirmed with a test message."),
    ("service-ask", "user", "My gravel bike needs a service, the gears skip under load."),
    ("service-quote", "assistant", "A standard service is GBP 65 and takes about two days."),
    ("service-booked", "note", "Standard service booked for 15 July, drop-off before 10:00."),
    ("chain-worn", "note", "Workshop: chain stretched 0.75%, cassette worn. Customer approved replacing both."),
    ("invoice-sent", "note", "Invoice KC-204511 sent for the service, chain and cassette: GBP 142."),
    ("invoice-question", "user", "Why is the invoice higher than the quote?"),
    ("invoice-explain", "assistant", "The quote covered the labour only; the chain and cassette were extra parts."),
    ("refund-ask", "user", "I think I was charged twice for the service."),
    ("refund-check", "note", "Checked payments: card charged twice on 16 July. Refund of GBP 142 issued."),
    ("refund-confirm", "assistant", "You were refunded GBP 142; it shows on your card within five working days."),
    ("tyres-ask", "user", "Which tyres do you recommend for the canal towpath? I keep getting punctures."),
    ("tyres-rec", "assistant", "Schwalbe Marathon Plus: a thick puncture guard, good on gravel and glass."),
    ("tyres-order", "note", "Ordered two Schwalbe Marathon Plus 700x40 for Ana, click and collect."),
    ("collect-reminder", "note", "Click & collect order waiting at the counter since 3 August; reminder sent."),
    ("latex", "user", "Please tell the mechanics I'm allergic to latex."),
    ("latex-note", "note", "Latex allergy: workshop to use nitrile gloves for her bikes."),
    ("discount", "note", "Manager agreed a 10% loyalty discount on future workshop jobs."),
    ("ebike-curious", "user", "I'm thinking about an e-bike for longer trips. What range do they get?"),
    ("ebike-range", "assistant", "Most of our e-bikes manage 60 to 100 km per charge, less in the cold."),
    ("battery-warranty", "assistant", "E-bike batteries carry a 2-year warranty or 500 charge cycles."),
    ("testride", "note", "Test ride booked on a Tern Vektron for Saturday 11:00."),
    ("testride-done", "note", "Test ride done. She liked the Vektron but found it heavy on stairs."),
    ("stairs", "user", "I live on the third floor with no lift, weight really matters to me."),
    ("weight-advice", "assistant", "The Brompton Electric weighs 17 kg with battery; the Vektron about 22 kg."),
    ("finance-ask", "user", "Do you offer monthly payments?"),
    ("finance-answer", "assistant", "Yes: 0% finance over 12 months on bikes above GBP 1,000, subject to approval."),
    ("brakes", "user", "The rear brake on the gravel bike squeals loudly when it rains."),
    ("brakes-advice", "assistant", "Squealing in the wet means contaminated pads. Stop riding if braking is weak."),
    ("brakes-booked", "note", "Brake check booked; pads replaced, rotor cleaned. No charge (goodwill)."),
    ("delivery-late", "user", "My order of mudguards has not arrived, it's been a week."),
    ("delivery-track", "note", "Royal Mail tracking shows the mudguards parcel held at the depot."),
    ("delivery-resent", "note", "Parcel returned to sender; mudguards re-shipped with a tracked service."),
    ("delivery-done", "note", "Mudguards delivered on 29 August, signed for by a neighbour."),
    ("lights", "user", "Can you fit dynamo lights to the gravel bike?"),
    ("lights-quote", "assistant", "Yes: a SON hub dynamo wheel and lights, about GBP 320 fitted."),
    ("lights-decline", "user", "Too expensive for now, I'll use battery lights this winter."),
    ("de-rechnung", "user", "Könnten Sie mir die Rechnung noch einmal schicken? Ich finde sie nicht."),
    ("de-resend", "note", "Rechnung KC-204511 erneut per E-Mail gesendet."),
    ("es-cumple", "user", "Quiero regalar una bicicleta a mi sobrina por su cumpleaños en octubre."),
    ("es-kids", "assistant", "Para niños de 8 años recomendamos una bici de 24 pulgadas."),
    ("fr-vendredi", "user", "Je passerai vendredi pour récupérer les garde-boue, c'est possible?"),
    ("fr-ok", "assistant", "Oui, la boutique est ouverte vendredi jusqu'à 18h."),
    ("saddle", "user", "The saddle on the Brompton hurts after 20 minutes."),
    ("saddle-fit", "note", "Saddle fitting booked; measured sit bones at 14 cm, recommended a wider saddle."),
    ("saddle-swap", "note", "Swapped to a Brooks B17 saddle, 30-day comfort guarantee."),
    ("lock", "user", "Which lock should I buy? The bike sits outside the station all day."),
    ("lock-rec", "assistant", "A Sold Secure Gold D-lock plus a cable for the front wheel."),
    ("insurance", "user", "Do you sell bicycle insurance?"),
    ("insurance-no", "assistant", "We don't sell insurance ourselves; many home policies cover bikes away from home."),
    ("trade-in", "user", "Could I trade in my old hybrid bike?"),
    ("trade-in-answer", "assistant", "Trade-ins are valued in the shop only; bring it in with proof of purchase."),
    ("hours", "user", "Are you open on bank holidays?"),
    ("hours-answer", "assistant", "We're closed on Sundays and bank holidays; Saturdays 10:00 to 16:00."),
    ("puncture-again", "user", "Another flat tyre on the towpath, even with the new tyres!"),
    ("puncture-advice", "assistant", "Check the rim tape; a sharp spoke hole causes flats from the inside."),
    ("rim-tape", "note", "Rim tape was split; replaced it free of charge."),
    ("newsletter", "user", "Please unsubscribe me from the newsletter."),
    ("newsletter-done", "note", "Unsubscribed her from the marketing newsletter; service emails continue."),
    ("gears-again", "user", "The gears are skipping again after the service."),
    ("gears-fix", "note", "Rear derailleur hanger bent; aligned it and re-indexed the gears. No charge."),
    ("commute", "user", "I commute 12 km each way, mostly on the canal towpath."),
    ("winter", "user", "What should I change for winter riding?"),
    ("winter-advice", "assistant", "Mudguards, good lights, and tyres with more grip; clean the chain weekly."),
    ("helmet", "user", "Do you have helmets with MIPS in size M?"),
    ("helmet-stock", "assistant", "Two MIPS helmets in size M are in stock: Giro Register and Bell Formula."),
    ("helmet-bought", "note", "Sold a Giro Register MIPS helmet, size M, GBP 60 with loyalty discount."),
    ("birthday-bike", "note", "Niece's birthday bike reserved: 24-inch Frog 62 in red, pick-up 20 October."),
    ("bell", "user", "The bell on my Brompton is broken."),
    ("bell-fix", "note", "Replaced the bell under warranty on her next visit."),
    ("review", "user", "Thanks for the great service, I left you a review."),
    ("goodbye", "assistant", "Thank you Ana! Safe riding."),
    ("complaint", "user", "The mechanic left grease marks on my white bag, I'm upset."),
    ("complaint-handled", "note", "Apologised for the grease on her bag; offered a cleaning voucher, accepted."),
    # Ids, numbers, versions and codes, as support notes are full of them.
    ("order-a99812", "note", "Order A-99812 placed: pannier rack and two bottle cages, GBP 42.90."),
    ("order-a99813", "note", "Order A-99813 placed for Bob's shop account, not Ana's: GBP 18.50."),
    ("app-crash", "user", "Your app crashes on login since the update to v2.14.3 on my Pixel."),
    ("app-fixed", "assistant", "Version 2.14.4 fixes the login crash; please update from the store."),
    ("frame-no", "note", "Brompton frame number 2104-77813 recorded for the warranty claim."),
    ("tracking-no", "note", "Royal Mail tracking JD0002219874GB for the re-shipped mudguards."),
    ("postcode", "note", "Delivery address updated: 14 Harehills Lane, Leeds LS8 5QE."),
    ("ticket-no", "note", "Support ticket #55120 opened for the double charge."),
    ("tyre-size", "note", "Measured tyre clearance: 700x42 fits the Croix de Fer with mudguards."),
    ("pressure", "assistant", "Run the Marathon Plus at 4.5 bar on the towpath, 5.0 bar on the road."),
    ("voucher-code", "note", "Cleaning voucher code GREASE-2026-AL issued, valid until 31.12.2026."),
    ("serial-ebike", "note", "Tern Vektron serial TVK-5512-0098 reserved for a second test ride."),
    # Other languages, with their accents, compounds and scripts.
    ("de-strasse", "user", "Ich wohne jetzt in der Hauptstraße 12, bitte die Lieferadresse ändern."),
    ("de-reifen", "user", "Die Fahrradreifen sind nach drei Wochen schon abgenutzt."),
    ("de-garantie", "note", "Garantieverlängerung für den Akku abgelehnt: Kaufbeleg fehlt."),
    ("de-werkstatt", "assistant", "Unsere Werkstätten sind samstags geschlossen; Termine unter der Woche."),
    ("es-pedido", "user", "¿Cuándo llegará mi pedido? Lo pagué hace diez días."),
    ("es-envio", "assistant", "Su pedido salió ayer; el envío tarda entre dos y tres días hábiles."),
    ("fr-reparation", "user", "La réparation du dérailleur coûtera combien à peu près?"),
    ("fr-devis", "assistant", "Le devis pour le dérailleur arrière est de 45 €, pièces comprises."),
    ("sv-tack", "user", "Tack så mycket för hjälpen med cykeln, den går som en klocka nu."),
    ("ja-sharin", "user", "駐輪場で自転車のライトが盗まれました。新しいライトはありますか？"),
    ("ja-reply", "assistant", "前輪用のライトは在庫があります。取り付けは無料です。"),
    ("zh-lock", "user", "我想买一把更结实的车锁，火车站附近经常有人偷自行车。"),
]

# Entries of other pairs that share words with the queries: any of them in a
# result list is a scope leak.
OTHER_USER = [
    "Bob asked for an email invoice for his Brompton hinge clamp.",
    "Bob's rear brake squeals and his gears skip.",
]
OTHER_AGENT = [
    "Ana of another shop wants her invoice by email and a refund.",
    "Rechnung für Ana von einem anderen Laden.",
]


@dataclass(frozen=True)
class Case:
    query: str
    expected: tuple[str, ...]
    kind: str


CASES: list[Case] = [
    # exact
    Case("hinge clamp", ("hello", "warranty-ok"), "exact"),
    Case("frame number", ("hinge-photo",), "exact"),
    Case("CRM", ("email-bounce", "crm-fixed"), "exact"),
    Case("cassette worn", ("chain-worn",), "exact"),
    Case("KC-204511", ("invoice-sent", "de-resend"), "exact"),
    Case("charged twice", ("refund-ask", "refund-check"), "exact"),
    Case("Schwalbe Marathon", ("tyres-rec", "tyres-order"), "exact"),
    Case("nitrile gloves", ("latex-note",), "exact"),
    Case("Tern Vektron", ("testride", "testride-done"), "exact"),
    Case("monthly payments", ("finance-ask",), "exact"),
    Case("rotor", ("brakes-booked",), "exact"),
    Case("Royal Mail tracking", ("delivery-track",), "exact"),
    Case("dynamo", ("lights", "lights-quote"), "exact"),
    Case("sit bones", ("saddle-fit",), "exact"),
    Case("D-lock", ("lock-rec",), "exact"),
    Case("rim tape", ("puncture-advice", "rim-tape"), "exact"),
    Case("derailleur hanger", ("gears-fix",), "exact"),
    Case("MIPS helmet", ("helmet", "helmet-stock", "helmet-bought"), "exact"),
    Case("grease", ("complaint", "complaint-handled"), "exact"),
    Case("latex allergy", ("latex-note", "MEMORY.md"), "exact"),
    # stem
    Case("emails", ("contact-pref", "email-bounce"), "stem"),
    Case("invoices", ("invoice-sent", "invoice-question"), "stem"),
    Case("telephone call", ("contact-pref",), "stem"),
    Case("refunds", ("refund-check", "refund-confirm"), "stem"),
    Case("punctured tyre", ("tyres-ask", "tyres-rec"), "stem"),
    Case("delivering", ("delivery-done",), "stem"),
    Case("booking a test ride", ("testride",), "stem"),
    Case("batteries warranty", ("battery-warranty",), "stem"),
    Case("brake squealing", ("brakes", "brakes-advice"), "stem"),
    Case("saddles", ("saddle", "saddle-fit", "saddle-swap"), "stem"),
    Case("locks", ("lock", "lock-rec"), "stem"),
    Case("helmets", ("helmet", "helmet-stock"), "stem"),
    Case("commuting", ("commute", "USER.md"), "stem"),
    Case("skipped gears", ("service-ask", "gears-again"), "stem"),
    Case("unsubscribing", ("newsletter-done",), "stem"),
    Case("apologising", ("complaint-handled",), "stem"),
    # phrase
    Case('"loyalty discount"', ("discount", "MEMORY.md"), "phrase"),
    Case('"click and collect"', ("tyres-order",), "phrase"),
    Case('"bank holidays"', ("hours", "hours-answer"), "phrase"),
    Case('"standard service"', ("service-quote", "service-booked"), "phrase"),
    Case('"canal towpath"', ("tyres-ask", "commute"), "phrase"),
    # prefix
    Case("mudguard*", ("delivery-late", "delivery-track"), "prefix"),
    Case("insur*", ("insurance", "insurance-no"), "prefix"),
    Case("trade*", ("trade-in", "trade-in-answer"), "prefix"),
    Case("newslet*", ("newsletter", "newsletter-done"), "prefix"),
    # language
    Case("Rechnung", ("de-rechnung", "de-resend"), "language"),
    Case("schicken", ("de-rechnung",), "language"),
    Case("cumpleaños", ("es-cumple",), "language"),
    Case("sobrina", ("es-cumple",), "language"),
    Case("vendredi", ("fr-vendredi", "fr-ok"), "language"),
    Case("garde-boue", ("fr-vendredi",), "language"),
    # paraphrase
    Case("how should I contact the customer", ("contact-pref", "USER.md"), "paraphrase"),
    Case("phone her", ("contact-pref",), "paraphrase"),
    Case("money back", ("refund-check", "refund-confirm"), "paraphrase"),
    Case("flat tyres", ("tyres-ask", "puncture-again"), "paraphrase"),
    Case("electric bicycle range", ("ebike-range",), "paraphrase"),
    Case("what does she ride", ("USER.md",), "paraphrase"),
    Case("parcel never arrived", ("delivery-late",), "paraphrase"),
    Case("seat is uncomfortable", ("saddle",), "paraphrase"),
    Case("bike theft protection", ("lock", "lock-rec"), "paraphrase"),
    Case("opening times", ("hours-answer",), "paraphrase"),
    Case("present for a child", ("es-cumple", "birthday-bike"), "paraphrase"),
    Case("angry customer", ("complaint",), "paraphrase"),
]
