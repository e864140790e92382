"""Slots: what an entry is *about*, so that a newer value replaces an older
one wherever it is written (USER.md or MEMORY.md).

A slot is an attribute of the user or of their work that holds one value
at a time: the package manager, the indentation, the time zone, the reply
language, the editor, the seat, when to call, where they live, their
address, who their manager is, an account number, the time of an
appointment, the port of a service. `slots(entry)` reads the slots an
entry fills; `supersedes(old, new)` says why `new` replaces `old` (the same
attribute with another value, or `new` ruling out the value `old` states:
"4 spaces instead of tabs", "pnpm statt yarn", "not npm"), or None when
both can stand ("email for routine updates" and "a phone call for urgent
updates" are two slots).

Values are compared in a canonical form (`pnpm`, `2 spaces`, `english`,
`asia/singapore`), so "Antworten auf Englisch" and "reply in English" are
the same language, and "two spaces" and "2-space" the same indentation.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from consolidation import text

_I = re.IGNORECASE


@dataclass(frozen=True)
class Slot:
    attribute: str
    value: str

    @property
    def label(self) -> str:
        kind, _, detail = self.attribute.partition(":")
        if kind in ("role", "id") and detail:
            return detail
        if detail:
            return f"{kind.replace('_', ' ')} ({detail})"
        return kind.replace("_", " ")


# --- value vocabularies ------------------------------------------------------------------------

_VALUES: dict[str, dict[str, str]] = {
    "js_package_manager": {"npm": "npm", "pnpm": "pnpm", "yarn": "yarn", "bun": "bun"},
    "python_package_manager": {"pip": "pip", "poetry": "poetry", "uv": "uv", "conda": "conda", "pipenv": "pipenv",
                               "pdm": "pdm"},
    "editor": {"vs code": "vs code", "vscode": "vs code", "visual studio code": "vs code", "neovim": "neovim",
               "nvim": "neovim", "vim": "vim", "emacs": "emacs", "intellij": "intellij", "pycharm": "pycharm",
               "sublime": "sublime", "zed": "zed", "helix": "helix", "webstorm": "webstorm"},
    "python_tests": {"pytest": "pytest", "unittest": "unittest", "nose": "nose"},
    "js_tests": {"jest": "jest", "vitest": "vitest", "mocha": "mocha", "jasmine": "jasmine"},
    "seat": {"aisle": "aisle", "window": "window", "middle": "middle", "gang": "aisle", "fenster": "window",
             "pasillo": "aisle", "ventanilla": "window", "couloir": "aisle", "hublot": "window"},
    "channel": {"email": "email", "e-mail": "email", "emails": "email", "e-mails": "email", "mail": "email",
                "emailing": "email", "correo": "email", "courriel": "email", "call": "call", "calls": "call",
                "calling": "call", "phone": "call", "telephone": "call", "téléphone": "call", "telefon": "call",
                "teléfono": "call", "anruf": "call", "llamada": "call", "appel": "call", "sms": "sms", "text": "sms",
                "texts": "sms", "slack": "slack", "teams": "teams", "whatsapp": "whatsapp", "signal": "signal",
                "telegram": "telegram", "post": "post", "letter": "post", "letters": "post", "brief": "post",
                "briefe": "post", "carta": "post", "cartas": "post", "courrier": "post", "lettre": "post"},
    "format": {"csv": "csv", "excel": "excel", "xlsx": "excel", "pdf": "pdf", "json": "json", "markdown": "markdown",
               "docx": "docx", "word": "docx", "html": "html"},
    "daytime": {"morning": "morning", "mornings": "morning", "afternoon": "afternoon", "afternoons": "afternoon",
                "evening": "evening", "evenings": "evening", "matin": "morning", "après-midi": "afternoon",
                "soir": "evening", "vormittags": "morning", "morgens": "morning", "nachmittags": "afternoon",
                "abends": "evening", "tarde": "afternoon", "noche": "evening"},
    "language": {"english": "english", "englisch": "english", "inglés": "english", "ingles": "english",
                 "anglais": "english", "german": "german", "deutsch": "german", "alemán": "german",
                 "allemand": "german", "spanish": "spanish", "spanisch": "spanish", "español": "spanish",
                 "espagnol": "spanish", "french": "french", "französisch": "french", "francés": "french",
                 "français": "french", "dutch": "dutch", "niederländisch": "dutch", "italian": "italian",
                 "italienisch": "italian", "italiano": "italian", "portuguese": "portuguese",
                 "portugiesisch": "portuguese", "portugués": "portuguese", "japanese": "japanese",
                 "japanisch": "japanese", "russian": "russian", "russisch": "russian", "chinese": "chinese"},
}
_VALUE_OF: dict[str, tuple[str, str]] = {}
for _value_kind, _vocabulary in _VALUES.items():
    for _spelling, _value in _vocabulary.items():
        _VALUE_OF.setdefault(_spelling, (_value_kind, _value))
        _VALUE_OF.setdefault(text.stem(_spelling), (_value_kind, _value))
# Kinds whose value words are ordinary words elsewhere ("text", "post",
# "call", "window"): read as values only where the kind's context is.
_CONTEXT = {
    "seat": re.compile(r"\b(?:seats?|sitz\w*|platz|asientos?|sièges?|places?)\b", _I),
    "daytime": re.compile(r"\b(?:call\w*|contact\w*|reach\w*|phon\w*|ring|anruf\w*|erreich\w*|kontakt\w*|llam\w*|"
                          r"appel\w*|joindre|joignable)\b", _I),
}
_MULTIWORD = re.compile(r"\b(?:vs\s+code|visual\s+studio\s+code)\b", _I)


def _words(entry: str) -> list[str]:
    return [w.strip(".,;:()'\"").lower() for w in re.split(r"\s+", entry) if w.strip(".,;:()'\"")]


def values_in(entry: str) -> dict[str, set[str]]:
    """{kind: canonical values} the entry names."""
    found: dict[str, set[str]] = {}
    lowered = entry.lower()
    if _MULTIWORD.search(lowered):
        found.setdefault("editor", set()).add("vs code")
    for word in _words(entry):
        hit = _VALUE_OF.get(word) or _VALUE_OF.get(text.stem(word))
        if hit is None:
            continue
        kind, canonical = hit
        context = _CONTEXT.get(kind)
        if context is not None and not context.search(entry):
            continue
        found.setdefault(kind, set()).add(canonical)
    return found


# --- ruled out -----------------------------------------------------------------------------------

_RULING_OUT = re.compile(
    r"\b(?:not|instead\s+of|rather\s+than|over|statt|anstatt|anstelle\s+von|nicht|en\s+lugar\s+de|en\s+vez\s+de|"
    r"plutôt\s+que|au\s+lieu\s+de|pas)\s+(?:the\s+|die\s+|der\s+|das\s+|el\s+|la\s+|le\s+|les\s+|des\s+|por\s+)?"
    r"(?P<object>[\w'.+#/-]+(?:\s+code)?)",
    _I,
)


@functools.lru_cache(maxsize=8192)
def ruled_out(entry: str) -> frozenset[tuple[str, str]]:
    """(kind, value) pairs the entry rules out ("not npm" → js_package_manager/npm);
    a plain word ("not London") as ("word", its stem)."""
    found: set[tuple[str, str]] = set()
    for match in _RULING_OUT.finditer(entry):
        word = match.group("object").lower().rstrip(".,;:")
        hit = _VALUE_OF.get(word) or _VALUE_OF.get(text.stem(word))
        if hit is not None:
            found.add(hit)
        else:
            found.add(("word", text.stem(word)))
    return frozenset(found)


# --- slots ------------------------------------------------------------------------------------

_IANA = re.compile(r"\b[A-Z][a-z]+(?:_[A-Z][a-z]+)*/[A-Z][A-Za-z_]+\b")
_NAMED_ZONE = re.compile(r"\b(?P<zone>pacific|eastern|central|mountain|atlantic)\s+(?:standard\s+)?time\b|"
                         r"\b(?P<abbr>CET|CEST|GMT|BST|EST|EDT|PST|PDT|JST|IST|SGT|AEST|"
                         r"UTC(?:\s*[+-]\s*\d{1,2})?)\b", _I)
_ZONE_WORD = re.compile(r"time\s*zone|timezone|zeitzone|zona\s+horaria|fuseau|\btime\b", _I)
_COMMUNICATION = re.compile(
    r"\b(?:repl(?:y|ies)|answer\w*|respon\w*|writ\w*|letters?|correspondence|communicat\w*|messages?|speak\s+to|"
    r"talk\s+to|antwort\w*|schreib\w*|briefe?|korrespondenz|respuest\w*|escrib\w*|cartas?|répon\w*|écri\w*|"
    r"lettres?|courrier)\b", _I)
_LANGUAGE_SCOPE = re.compile(r"\b(?:commit\w*|code|comments?|documentation|docs|variable\w*|kommentar\w*|"
                             r"dokumentation)\b", _I)
_INDENT_CONTEXT = re.compile(r"\b(?:indent\w*|einrück\w*|sangr\w*|tabs?|tabulat\w*|spaces?|leerzeichen|espacios|"
                             r"espaces)\b|\d[\s-]*space", _I)
_SPACES = re.compile(r"\b(?P<n>\d|two|four|eight|zwei|vier|dos|cuatro|deux|quatre)[\s-]*(?:spaces?|space|"
                     r"leerzeichen|espacios|espaces)\b", _I)
_TABS = re.compile(r"\b(?:tabs?|tabulat\w*|tabulaciones)\b", _I)
_NUMBERS = {"two": "2", "four": "4", "eight": "8", "zwei": "2", "vier": "4", "dos": "2", "cuatro": "4",
            "deux": "2", "quatre": "4"}
_HOME = re.compile(r"^(?:(?:lives|wohnt|lebt|vive|habite|vit)\s+(?:jetzt\s+|now\s+|ahora\s+|maintenant\s+)?"
                   r"(?:in|at|en|à|a|au|bei)|(?:has\s+)?(?:moved|relocated)\s+to|ist\s+nach|zog\s+nach|"
                   r"se\s+mudó\s+a|a\s+déménagé\s+à)\s+(?P<value>[^,.;]+?)(?:\s+(?:last|this|in|now|jetzt|"
                   r"letzten|el\s+mes)\b.*)?[.!]?\s*$", _I)
_ADDRESS = re.compile(r"^(?:(?:new|home|current)\s+)?(?:address|adresse|dirección|direccion)\s+(?:is|ist|es|est)\s+"
                      r"(?P<value>.+?)\.?$", _I)
_OFFICE = re.compile(r"\b(?:office|büro|oficina|bureau)\s+(?:is|ist|está|es|est)\s+(?:now\s+|jetzt\s+)?"
                     r"(?:in|at|en|à|a)\s+(?P<value>[A-ZÄÖÜÉ][\w-]+)", _I)
_ROLE = re.compile(
    r"^(?:their\s+|his\s+|her\s+|the\s+)?(?P<role>(?:[\w-]+\s+){0,3}?(?:manager|lead|boss|approver|supervisor|"
    r"advisor|adviser|owner|contact(?:\s+person)?|ansprechpartner\w*|betreuer\w*|chef\w*|vorgesetzte\w*|jefe|"
    r"responsable|interlocuteur))(?:\s+for\s+[\w\s]+?)?\s+(?:is|ist|es|est)\s+(?P<value>[^,.;]+)", _I)
_IDENTIFIER = re.compile(
    r"^(?:their\s+|his\s+|her\s+|the\s+|su\s+|son\s+|sa\s+|seine?\s+)?(?P<what>(?:[\w-]+\s+){0,3}?(?:number|id|no\.?|"
    r"nummer|nr\.?|número|numéro|code|account))\s+(?:is|ist|es|est)\s+(?:le\s+|la\s+)?(?P<value>\S+)", _I)
_NAME = re.compile(r"^(?:(?:first\s+|preferred\s+|nick)?name\s+(?:is|ist)|wants\s+to\s+be\s+called|"
                   r"se\s+llama|s['’]appelle|möchte\s+(?P<de>.+)\s+genannt\s+werden|quiere\s+que\s+le\s+llamen|"
                   r"veut\s+être\s+appelé|prefers\s+to\s+be\s+(?:addressed|called)\s+as)\s*(?P<value>[^,.;]*)", _I)
_EMPLOYER = re.compile(r"^(?:works\s+(?:at|for)|arbeitet\s+(?:bei|für)|trabaja\s+(?:en|para)|"
                       r"travaille\s+(?:chez|pour))\s+(?P<value>[^,.;]+)", _I)
_PRONOUNS = re.compile(r"^pronouns\s+are\s+(?P<value>[^,.;]+)", _I)
_APPOINTMENT = re.compile(r"\b(?P<what>appointment|follow-up|follow\s+up|check-?up|consultation|visit|termin|"
                          r"nachuntersuchung|cita|consulta|rendez-vous|rdv)\b", _I)
_DOCTOR = re.compile(r"\b(?:dr\.?|doctor|doktor|docteur|prof\.?)\s+(?P<name>[A-ZÄÖÜ][\w-]+)", _I)
_ISO = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_CLOCK = re.compile(r"\b\d{1,2}[:.h]\d{2}\b|\b\d{1,2}\s*(?:am|pm)\b", _I)
_LABELLED = re.compile(r"\b(?P<label>port|version|limit)\s+#?(?P<value>\d[\w.:,-]*\d|\d)\b", _I)
_HEAD_SKIP = frozenset({"now", "jetzt", "ahora", "maintenant", "still", "also"})
# A product and its version: "Gradle 8", "Python 3.12", "Postgres 16".
_VERSIONED = re.compile(r"\b(?P<name>[A-Z][\w+#-]*[a-z][\w+#-]*)\s+v?(?P<version>\d+(?:\.\d+){0,2})"
                        r"(?!\.?\d)(?![\w:/-])")
_NOT_A_PRODUCT = frozenset({"port", "version", "limit", "room", "floor", "gate", "seat", "platform", "ticket", "order",
                            "step", "day", "week", "level", "page", "chapter", "team", "building", "office", "line",
                            "terminal", "zone", "size", "flight", "account", "case", "contract", "vertrag", "nr",
                            "no", "number", "tests", "coverage", "rows", "columns", "files", "entries"})


def _zone(entry: str) -> str | None:
    iana = _IANA.search(entry)
    if iana and "/" in iana.group() and (_ZONE_WORD.search(entry) or iana):
        return iana.group().lower()
    named = _NAMED_ZONE.search(entry)
    if named and _ZONE_WORD.search(entry):
        return " ".join((named.group("zone") or named.group("abbr")).lower().split())
    return None


def _head(entry: str, label: str) -> str:
    """The words before a label ("Staging Postgres listens on port …" → "staging postgres")."""
    before = entry.lower().split(label.lower(), 1)[0]
    words = [w for w in text.content_words(before) if w not in _HEAD_SKIP][:2]
    return " ".join(text.stem(w) for w in words)


@functools.lru_cache(maxsize=8192)
def slots(entry: str) -> tuple[Slot, ...]:
    """The slots `entry` fills, most specific first."""
    found: list[Slot] = []
    stripped = entry.strip()
    values = values_in(stripped)
    ruled = {value for _, value in ruled_out(stripped)}

    def pick(kind: str) -> str | None:
        chosen = sorted(values.get(kind, set()) - ruled)
        return chosen[0] if len(chosen) == 1 else None

    if (zone := _zone(stripped)) is not None:
        found.append(Slot("timezone", zone))
    if "language" in values and _COMMUNICATION.search(stripped):
        language = pick("language")
        if language is not None:
            scope = "code" if _LANGUAGE_SCOPE.search(stripped) else "reply"
            found.append(Slot(f"language:{scope}", language))
    for kind in ("js_package_manager", "python_package_manager", "editor", "python_tests", "js_tests", "seat"):
        value = pick(kind)
        if value is not None:
            found.append(Slot(kind, value))
    if _INDENT_CONTEXT.search(stripped):
        spaces, tabs = _SPACES.search(stripped), _TABS.search(stripped)
        excluded = {value for kind, value in ruled_out(stripped) if kind == "word"}
        no_tabs = any(value.startswith("tab") for value in excluded)
        no_spaces = any(value.startswith("spac") for value in excluded)
        if spaces and (not tabs or no_tabs) and not no_spaces:
            count = spaces.group("n").lower()
            found.append(Slot("indentation", f"{_NUMBERS.get(count, count)} spaces"))
        elif tabs and (not spaces or no_spaces) and not no_tabs:
            found.append(Slot("indentation", "tabs"))
    if "daytime" in values:
        daytime = pick("daytime")
        if daytime is not None:
            found.append(Slot("contact_time", daytime))
    for pattern, attribute in ((_HOME, "home"), (_ADDRESS, "address"), (_EMPLOYER, "employer"),
                               (_PRONOUNS, "pronouns")):
        match = pattern.search(stripped)
        if match:
            found.append(Slot(attribute, _canonical(match.group("value"))))
    if (office := _OFFICE.search(stripped)) is not None:
        found.append(Slot("office", office.group("value").lower()))
    if (name := _NAME.search(stripped)) is not None:
        found.append(Slot("name", _canonical(name.group("de") or name.group("value"))))
    if (role := _ROLE.search(stripped)) is not None:
        found.append(Slot(f"role:{_canonical(role.group('role'))}", _canonical(role.group("value"))))
    elif (identifier := _IDENTIFIER.search(stripped)) is not None:
        found.append(Slot(f"id:{_canonical(identifier.group('what'))}", identifier.group("value").rstrip(".,;")))
    if (appointment := _APPOINTMENT.search(stripped)) is not None:
        doctor = _DOCTOR.search(stripped)
        who = doctor.group("name").lower() if doctor else text.stem(appointment.group("what").lower())
        when = " ".join([*_ISO.findall(stripped), *(m.group().lower() for m in _CLOCK.finditer(stripped))])
        if when:
            found.append(Slot(f"appointment:{who}", when))
    for match in _LABELLED.finditer(stripped):
        found.append(Slot(f"{match.group('label').lower()}:{_head(stripped, match.group(0))}", match.group("value")))
    for match in _VERSIONED.finditer(stripped):
        if match.group("name").lower() in _NOT_A_PRODUCT:
            continue
        found.append(Slot(f"version:{match.group('name').lower()}", match.group("version")))
    return tuple(found)


def _same_subject(old: str, new: str, old_value: str, new_value: str) -> bool:
    """The words around a version say the same subject: one entry's key
    words (without the versions) inside the other's."""
    left = text.fact_key(old) - {old_value}
    right = text.fact_key(new) - {new_value}
    return bool(left) and bool(right) and (left <= right or right <= left)


def _canonical(value: str) -> str:
    return " ".join(value.lower().strip(" .,;:").split())


def _scope(entry: str) -> frozenset[str]:
    """What a channel preference is for ("for routine updates" → {routin, updat})."""
    match = re.search(r"\b(?:for|für|para|pour)\s+(?P<what>[^,.;]+)", entry, _I)
    return text.fact_key(match.group("what")) if match else frozenset()


@functools.lru_cache(maxsize=8192)
def supersedes(old: str, new: str) -> str | None:
    """Why `new` replaces `old`, or None when both can stand."""
    old_slots = {slot.attribute: slot for slot in slots(old)}
    for slot in slots(new):
        before = old_slots.get(slot.attribute)
        if before is None or before.value == slot.value:
            continue
        if slot.attribute.startswith("version:") and not _same_subject(old, new, before.value, slot.value):
            continue  # "service A uses Python 3.11" and "service B uses Python 3.12" both stand
        return f"both give the {slot.label} ({before.value} → {slot.value})"
    excluded = ruled_out(new)
    if not excluded:
        return None
    old_values = values_in(old)
    for kind, value in sorted(excluded):
        if kind == "word":
            continue
        if value in old_values.get(kind, set()) and (kind, value) not in ruled_out(old):
            if kind == "channel" and _scope(old) and _scope(new) and _scope(old) != _scope(new):
                continue
            return f'the newer one rules out "{value}"'
    return None


def same_value(old: str, new: str) -> bool:
    """Both fill a slot with the same value (a duplicate across files)."""
    old_slots = {slot.attribute: slot.value for slot in slots(old)}
    return any(old_slots.get(slot.attribute) == slot.value for slot in slots(new))
