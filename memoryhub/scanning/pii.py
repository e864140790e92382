"""Personal data with a checksum: IBANs, payment cards and national ids.

PII is not unsafe content: what happens to it is a workspace policy (allow,
flag, refuse) that the services apply, so `scan_pii` reports it separately
from `scan`, and reports every occurrence rather than the first per rule.

Each format here carries a check (IBAN mod 97, Luhn, DNI letter, NIR key,
the German tax id's ISO 7064 digit), which is what keeps order numbers,
phone numbers, amounts and dates from being reported: a random digit string
passes a mod-97 or mod-11 check about once in a hundred or ten, and cards
must also fit a card layout and an issuer prefix.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from memoryhub.scanning.base import Finding, normalize

CATEGORY = "pii"

# ISO 13616 registry: country code -> IBAN length.
_IBAN_LENGTHS = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BI": 27, "BR": 29,
    "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DJ": 27, "DK": 18, "DO": 28, "EE": 20, "EG": 29,
    "ES": 24, "FI": 18, "FK": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28,
    "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28,
    "LC": 32, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "LY": 25, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MN": 20,
    "MR": 27, "MT": 31, "MU": 30, "NI": 28, "NL": 18, "NO": 15, "OM": 23, "PK": 24, "PL": 28, "PS": 29, "PT": 25,
    "QA": 29, "RO": 24, "RS": 22, "RU": 33, "SA": 24, "SC": 31, "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27,
    "SO": 23, "ST": 25, "SV": 28, "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20, "YE": 30,
}  # fmt: skip

# Every pattern here opens with a character class and checks what comes
# before it only afterwards (a look-behind spanning the first characters):
# `re` skips through a text to a class quickly, but tries a leading
# look-behind at every position, which costs several times more.
# Anchored on the check digits (digits are rarer than letters), the
# country code read back from them.
_IBAN = re.compile(
    r"(\d{2})(?<=[A-Z]{2}\d\d)(?<![A-Z0-9]..\d\d)((?:[ \t-]?[A-Z0-9]){10,31})", re.IGNORECASE
)


def iban_valid(compact: str) -> bool:
    compact = compact.upper()
    if _IBAN_LENGTHS.get(compact[:2]) != len(compact) or not compact.isalnum():
        return False
    rearranged = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in rearranged)) % 97 == 1


def _ibans(text: str) -> Iterator[Finding]:
    for match in _IBAN.finditer(text):
        country = text[match.start() - 2 : match.start()].upper()
        length = _IBAN_LENGTHS.get(country)
        if length is None:
            continue
        # The pattern runs on greedily ("… 0130 00 EUR"); cut it at the
        # country's length and re-check.
        compact = country
        end = match.start()
        for index in range(match.start(), match.end()):
            char = text[index]
            if char.isalnum():
                compact += char
                end = index + 1
                if len(compact) == length:
                    break
        if len(compact) != length or not iban_valid(compact):
            continue
        if end < len(text) and text[end].isalnum():
            continue
        yield Finding(
            rule="iban",
            category=CATEGORY,
            detail=f"Text contains an IBAN ({compact[:2].upper()}…{compact[-4:]}, checksum valid).",
            start=match.start() - 2,
            end=end,
        )


# Digit groups separated by single spaces or dashes: a card, or a phone
# number, a date, an order id. Layout, issuer prefix and Luhn decide.
# A leading "+" is taken into the run so "+49 4111 …" reads as the phone
# number it is.
_DIGIT_RUN = re.compile(
    r"[+\d](?<![\w.,+/\\-].)(?:(?<=\+)\d{1,19}|(?<=\d)\d{0,18})(?:[ -]\d{1,19}){0,5}(?![\w/\\-]|[.,]\d)"
)
_CARD_LAYOUTS = {(4, 4, 4, 4), (4, 4, 4, 4, 3), (4, 6, 5), (4, 6, 4), (4, 4, 4, 1), (4, 4, 4, 3), (4, 4, 4, 4, 2)}
_ISSUER = re.compile(
    r"4\d{12}(?:\d{3}){0,2}"  # Visa: 13, 16 or 19 digits
    r"|(?:5[1-5]\d{2}|222[1-9]|22[3-9]\d|2[3-6]\d{2}|27[01]\d|2720)\d{12}"  # Mastercard
    r"|3[47]\d{13}"  # American Express
    r"|(?:6011|65\d{2}|64[4-9]\d)\d{12,15}"  # Discover
    r"|35(?:2[89]|[3-8]\d)\d{12,15}"  # JCB
    r"|3(?:0[0-5]|[68]\d)\d{11,16}"  # Diners Club
    r"|62\d{14,17}"  # UnionPay
    r"|(?:5[06-9]|6\d)\d{11,17}"  # Maestro
)


def luhn_valid(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


# A number introduced as an order, invoice or reference number is one, even
# when it happens to pass Luhn (one in ten random numbers does).
_REFERENCE_BEFORE = re.compile(
    r"(?:order|invoice|ref(?:erence)?|tracking|ticket|case|transaction|booking|policy|shipment|parcel|serial"
    r"|bestell(?:ung|nummer)?|rechnung|auftrag|sendung|pedido|factura|referencia|commande|facture|订单|发票|单号)\s{0,3}(?:no\.?|nr\.?|number|nummer|numero|#|:|-)?\s{0,3}#?\s{0,2}$",
    re.IGNORECASE,
)


def _cards(text: str, taken: list[tuple[int, int]]) -> Iterator[Finding]:
    for match in _DIGIT_RUN.finditer(text):
        if any(start <= match.start() < end for start, end in taken):
            continue
        if match.group().startswith("+") or _REFERENCE_BEFORE.search(text[max(0, match.start() - 30) : match.start()]):
            continue
        groups = re.split(r"[ -]", match.group())
        digits = "".join(groups)
        if not 13 <= len(digits) <= 19:
            continue
        if len(groups) > 1 and tuple(len(g) for g in groups) not in _CARD_LAYOUTS:
            continue
        if len(groups) > 1 and len({s for s in re.findall(r"[ -]", match.group())}) > 1:
            continue
        if not _ISSUER.fullmatch(digits) or not luhn_valid(digits):
            continue
        yield Finding(
            rule="payment_card",
            category=CATEGORY,
            detail=f"Text contains a payment card number (…{digits[-4:]}, Luhn-valid).",
            start=match.start(),
            end=match.end(),
        )


# Area 000, 666 and 9xx, group 00 and serial 0000 are never issued.
_SSN = re.compile(r"(\d{3})(?<![\w-]...)-(\d{2})-(\d{4})(?![\w-])")
# Prefixes BG, GB, KN, NK, NT, TN and ZZ are never issued.
_NINO = re.compile(
    r"([A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z])(?<![A-Za-z0-9]..) ?\d{2} ?\d{2} ?\d{2} ?[A-D](?![A-Za-z0-9])"
)
_NINO_NEVER = frozenset({"BG", "GB", "KN", "NK", "NT", "TN", "ZZ"})
_DNI = re.compile(r"(\d{8})(?<![\w-].{8})[ -]?([A-Z])(?![\w-])")
_NIE = re.compile(r"([XYZ])(?<![\w-].)[ -]?(\d{7})[ -]?([A-Z])(?![\w-])")
_DNI_LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"
_NIR = re.compile(
    r"([12])(?<![\w].)[ ]?(\d{2})[ ]?(0[1-9]|1[0-2]|[2-9]\d)[ ]?(\d{2}|2[AB])[ ]?(\d{3})[ ]?(\d{3})[ ]?(\d{2})(?![\w])"
)
_STEUER_ID = re.compile(r"([1-9])(?<![\w.,-].)(\d(?: ?\d{3}){3})(?![\w]|[.,]\d)")


def dni_valid(number: str, letter: str) -> bool:
    return _DNI_LETTERS[int(number) % 23] == letter


def nir_valid(groups: tuple[str, ...]) -> bool:
    sex, year, month, department, commune, order, key = groups
    # Corsica: 2A and 2B stand for 19 and 18 in the key computation.
    department = {"2A": "19", "2B": "18"}.get(department, department)
    number = int(sex + year + month + department + commune + order)
    return 97 - number % 97 == int(key)


def steuer_id_valid(digits: str) -> bool:
    """German tax id: ISO 7064 MOD 11,10 check digit, and in the first ten
    digits exactly one digit appears twice or three times."""
    if len(digits) != 11 or digits[0] == "0":
        return False
    counts = [digits[:10].count(d) for d in set(digits[:10])]
    if sum(1 for c in counts if c > 1) != 1 or max(counts) > 3:
        return False
    product = 10
    for char in digits[:10]:
        total = (int(char) + product) % 10 or 10
        product = (total * 2) % 11
    check = 11 - product
    return (0 if check == 10 else check) == int(digits[10])


def _national_ids(text: str) -> Iterator[Finding]:
    def found(match: re.Match[str], kind: str) -> Finding:
        return Finding(
            rule="national_id",
            category=CATEGORY,
            detail=f"Text contains a national id number ({kind}).",
            start=match.start(),
            end=match.end(),
        )

    for match in _SSN.finditer(text):
        area, group, serial = match.groups()
        if area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000":
            yield found(match, "US Social Security number")
    for match in _NINO.finditer(text):
        if match.group(1) not in _NINO_NEVER:
            yield found(match, "UK National Insurance number")
    for match in _DNI.finditer(text):
        if dni_valid(match.group(1), match.group(2)):
            yield found(match, "Spanish DNI, check letter valid")
    for match in _NIE.finditer(text):
        prefix = str("XYZ".index(match.group(1)))
        if dni_valid(prefix + match.group(2), match.group(3)):
            yield found(match, "Spanish NIE, check letter valid")
    for match in _NIR.finditer(text):
        if nir_valid(match.groups()):
            yield found(match, "French NIR, key valid")
    for match in _STEUER_ID.finditer(text):
        if steuer_id_valid((match.group(1) + match.group(2)).replace(" ", "")):
            yield found(match, "German tax id, check digit valid")


def scan_pii_uncached(text: str) -> list[Finding]:
    normalized = normalize(text)
    ibans = list(_ibans(normalized))
    taken = [(f.start, f.end) for f in ibans]
    findings = ibans + list(_cards(normalized, taken))
    taken += [(f.start, f.end) for f in findings[len(ibans) :]]
    findings += [f for f in _national_ids(normalized) if not any(s <= f.start < e for s, e in taken)]
    return sorted(findings, key=lambda f: (f.start, f.end))


# --- special categories of personal data, said in words -------------------------------------------
#
# GDPR art. 9 and the data a bank, hospital or law firm must not keep without
# a reason: health (a diagnosis, an allergy, a condition, a medication, the
# person's or a relative's), official identifiers named as such ("passport
# number C01X00T47", which no checksum catches), a relative's contact data
# (a phone number or address said together with "my sister", "my husband",
# "emergency contact") and traits the law protects (religion, sexual
# orientation, ethnicity, political or union membership, biometrics).
# `scan_personal` reports these together with the checksum formats above,
# each finding naming its category; consolidation does not promote them
# unless the workspace's policy allows it, and a proposal carrying one is
# never approved without the reviewer acknowledging it.

SPECIAL_CATEGORY = {
    "iban": "bank_account",
    "payment_card": "payment_card",
    "national_id": "government_id",
    "government_id": "government_id",
    "health": "health",
    "relative_contact": "relative_contact",
    "sensitive_trait": "sensitive_trait",
}
CATEGORY_LABELS = {
    "bank_account": "a bank account",
    "payment_card": "a payment card",
    "government_id": "an official identifier",
    "health": "health data",
    "relative_contact": "a relative's contact data",
    "sensitive_trait": "a protected trait (beliefs, orientation, origin, membership, biometrics)",
}

_HEALTH = re.compile(
    r"\b(?:"
    # English
    r"allerg\w*|asthma\w*|diabet\w*|cancer|tumou?rs?|chemo\w*|hiv|hepatitis|epilep\w*|depressi(?:on|ve)|"
    r"anxiety\s+disorder|adhd|autis\w*|bipolar|schizophren\w*|dementia|alzheimer\w*|parkinson\w*|arthritis|"
    r"migraines?|pregnan\w*|miscarriage|insulin|medications?|prescriptions?|diagnos\w*|disorders?|diseases?|"
    r"syndrome|surgery|chemotherapy|blood\s+pressure|hypertension|heart\s+(?:condition|attack|disease)|"
    r"strokes?|disabilit\w*|wheelchair|colou?r-?blind\w*|deaf|injur\w*|chronic|illness|"
    r"bad\s+(?:knee|back|hip|leg)|(?:knee|back|hip)\s+(?:is|are)\s+bad|sick\s+leave|"
    # German
    r"allergi\w*|krebs\w*|schwanger\w*|medikament\w*|diagnose\w*|krankheit\w*|erkrank\w*|behinder\w*|"
    r"rollstuhl\w*|therapie\w*|bluthochdruck|migräne|zuckerkrank\w*|krankgeschrieben|"
    # Spanish
    r"alérgic\w*|alergia\w*|asma|cáncer|depresión|embarazad\w*|medicament\w*|diagnóstic\w*|enfermedad\w*|"
    r"discapacidad\w*|silla\s+de\s+ruedas|cirugía|"
    # French
    r"allergique\w*|asthme|diabète\w*|dépression|enceinte|médicament\w*|maladie\w*|handicap\w*|"
    r"fauteuil\s+roulant|chirurgie"
    r")\b",
    re.IGNORECASE,
)
_OFFICIAL_ID = re.compile(
    r"\b(?P<what>passport(?:\s+(?:number|no\.?|#))?|(?:reise)?pass(?:nummer)?|(?:personal)?ausweis(?:nummer)?|"
    r"pasaporte|passeport|carte\s+d['’]identité|dni|nie|nif|national\s+insurance(?:\s+number)?|"
    r"social\s+security(?:\s+number)?|ssn|tax\s+id|steuer-?id|steuernummer|"
    r"driver['’]?s\s+licen[cs]e(?:\s+number)?|führerschein(?:nummer)?|(?:health\s+)?insurance\s+(?:number|id)|"
    r"versichertennummer|krankenversicherungsnummer|número\s+de\s+(?:la\s+)?seguridad\s+social|"
    r"numéro\s+de\s+sécurité\s+sociale|codice\s+fiscale|id\s+(?:card\s+)?number)\b"
    r"[^.\n]{0,20}?(?P<value>\b[A-Z0-9](?:[A-Z0-9 -]{3,22}[A-Z0-9])\b)",
    re.IGNORECASE,
)
_RELATIVE = re.compile(
    r"\b(?:mother|mom|mum|father|dad|sister|brother|son|daughter|husband|wife|spouse|partner|child|children|kids?|"
    r"grand(?:mother|father|ma|pa|son|daughter)|aunt|uncle|cousin|niece|nephew|parents?|family|"
    r"emergency\s+contact|next\s+of\s+kin|"
    r"mutter|mama|vater|papa|schwester|bruder|sohn|tochter|ehemann|ehefrau|mann|frau|partnerin|kinder?|"
    r"oma|opa|tante|onkel|notfallkontakt|"
    r"madre|padre|hermana|hermano|hijo|hija|esposo|esposa|marido|mujer|abuel[oa]|tí[oa]|prim[oa]|"
    r"contacto\s+de\s+emergencia|"
    r"mère|père|sœur|soeur|frère|fils|fille|mari|femme|épouse|époux|grand-(?:mère|père)|oncle|cousine?|"
    r"contact\s+d['’]urgence)\b",
    re.IGNORECASE,
)
_CONTACT = re.compile(
    r"(?:\+|\b)\d[\d ()./-]{5,}\d\b|[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
)
_TRAIT = re.compile(
    r"\b(?:religio\w*|muslim|jewish|catholic|christian|hindu|buddhist|atheist|sexual\s+orientation|gay|lesbian|"
    r"bisexual|transgender|ethnic\w*|trade\s+union|union\s+member\w*|political\s+party|party\s+member\w*|"
    r"fingerprints?|biometric\w*|genetic\w*|"
    r"gewerkschaft\w*|religiös\w*|sindicato|religión|syndicat|religieu\w*)\b",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"[.!?;\n]")


def _sentence_around(text: str, start: int, end: int) -> tuple[int, int]:
    before = [m.end() for m in _SENTENCE_END.finditer(text, 0, start)]
    after = _SENTENCE_END.search(text, end)
    return (before[-1] if before else 0), (after.start() if after else len(text))


def _relative_contacts(text: str) -> Iterator[Finding]:
    for match in _CONTACT.finditer(text):
        digits = sum(ch.isdigit() for ch in match.group())
        if "@" not in match.group() and digits < 7:
            continue
        lo, hi = _sentence_around(text, match.start(), match.end())
        if _RELATIVE.search(text, lo, hi):
            yield Finding(rule="relative_contact", category=CATEGORY,
                          detail="Text contains a relative's contact data (a phone number or e-mail address said "
                          "with a family member or an emergency contact).", start=match.start(), end=match.end())


def _official_ids(text: str, taken: list[tuple[int, int]]) -> Iterator[Finding]:
    for match in _OFFICIAL_ID.finditer(text):
        value = match.group("value")
        if sum(ch.isdigit() for ch in value) < 3:
            continue
        start, end = match.start("value"), match.end("value")
        if any(s <= start < e for s, e in taken):
            continue
        yield Finding(rule="government_id", category=CATEGORY,
                      detail=f"Text contains an official identifier ({' '.join(match.group('what').split())}).",
                      start=start, end=end)


def scan_personal_uncached(text: str) -> list[Finding]:
    """Every special category of personal data in `text`: the checksum
    formats of `scan_pii_uncached` and the ones said in words, in order.
    Each finding's rule is a key of SPECIAL_CATEGORY."""
    normalized = normalize(text)
    findings = scan_pii_uncached(text)
    taken = [(f.start, f.end) for f in findings]
    findings += list(_official_ids(normalized, taken))
    taken = [(f.start, f.end) for f in findings]
    findings += [f for f in _relative_contacts(normalized) if not any(s <= f.start < e for s, e in taken)]
    for pattern, rule, detail in (
        (_HEALTH, "health", "Text contains health data ({word})."),
        (_TRAIT, "sensitive_trait", "Text mentions a protected trait ({word})."),
    ):
        for match in pattern.finditer(normalized):
            findings.append(Finding(rule=rule, category=CATEGORY, detail=detail.format(word=match.group().lower()),
                                    start=match.start(), end=match.end()))
    return sorted(findings, key=lambda f: (f.start, f.end))
