"""Relative dates become absolute, so that entries can expire.

"I'm away until Friday", said on Monday 2026-11-30, is stored as "… until
2026-12-04"; a run on 2026-12-05 expires it. A relative phrase stored
verbatim would never expire (and would mean another day every time it is
read). Resolution uses the time of the log entry that said it (UTC), in
English, German, Spanish and French.

`expiry_of` reads the stated expiry back ("until|bis|hasta|jusqu'au
YYYY-MM-DD"); entries without one never expire.
"""

from __future__ import annotations

import calendar
import re
from datetime import date, datetime, timedelta

WEEKDAYS = {
    # English, German, Spanish, French → Monday = 0
    "monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4, "saturday": 5, "sunday": 6,
    "montag": 0, "dienstag": 1, "mittwoch": 2, "donnerstag": 3, "freitag": 4, "samstag": 5, "sonntag": 6,
    "lunes": 0, "martes": 1, "miércoles": 2, "miercoles": 2, "jueves": 3, "viernes": 4, "sábado": 5, "sabado": 5,
    "domingo": 6,
    "lundi": 0, "mardi": 1, "mercredi": 2, "jeudi": 3, "vendredi": 4, "samedi": 5, "dimanche": 6,
}
MONTHS = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4, "may": 5,
    "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8, "september": 9, "sep": 9, "sept": 9,
    "october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12,
    "januar": 1, "februar": 2, "märz": 3, "mai": 5, "juni": 6, "juli": 7, "oktober": 10, "dezember": 12,
    "enero": 1, "febrero": 2, "marzo": 3, "abril": 4, "mayo": 5, "junio": 6, "julio": 7, "agosto": 8,
    "septiembre": 9, "octubre": 10, "noviembre": 11, "diciembre": 12,
    "janvier": 1, "février": 2, "mars": 3, "avril": 4, "juin": 6, "juillet": 7, "août": 8, "septembre": 9,
    "octobre": 10, "novembre": 11, "décembre": 12,
}
# How "until <date>" is written back, per language.
UNTIL = {"en": "until", "de": "bis", "es": "hasta el", "fr": "jusqu'au"}

_DAY = "|".join(sorted(WEEKDAYS, key=len, reverse=True))
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_NUMBER_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                 "eight": 8, "nine": 9, "ten": 10, "ein": 1, "eine": 1, "zwei": 2, "drei": 3, "vier": 4,
                 "un": 1, "una": 1, "dos": 2, "tres": 3, "cuatro": 4, "une": 1, "deux": 2, "trois": 3,
                 "quatre": 4}
_COUNT = r"\d{1,3}|" + "|".join(_NUMBER_WORDS)

_UNTIL_WORD = r"(?:until|till|til|through|thru|bis(?:\s+zum|\s+zur)?|hasta(?:\s+el)?|jusqu['’](?:à|au))"
_EXPIRY = re.compile(
    rf"\b(?P<phrase>(?:{_UNTIL_WORD}|expires?(?:\s+on)?|valid\s+until)\s+(?P<date>\d{{4}}-\d{{2}}-\d{{2}}))\b",
    re.IGNORECASE,
)

_RULES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(rf"\b{_UNTIL_WORD}\s+(?:the\s+|el\s+|le\s+)?(?P<next>next\s+|nächsten\s+|kommenden\s+|"
                rf"próximo\s+)?(?P<day>{_DAY})(?P<next2>\s+prochain)?\b", re.IGNORECASE), "weekday"),
    (re.compile(rf"\b{_UNTIL_WORD}\s+(?:tomorrow|morgen|mañana|demain)\b", re.IGNORECASE), "tomorrow"),
    (re.compile(rf"\b{_UNTIL_WORD}\s+(?:today|tonight|heute|hoy|aujourd['’]hui|ce\s+soir)\b", re.IGNORECASE),
     "today"),
    (re.compile(r"\b(?:until|till|through)\s+next\s+week\b|\bbis\s+nächste\s+woche\b|\bhasta\s+la\s+próxima\s+"
                r"semana\b|\bjusqu['’]à\s+la\s+semaine\s+prochaine\b", re.IGNORECASE), "next_week"),
    (re.compile(rf"\b{_UNTIL_WORD}\s+(?:(?P<month1>{_MONTH})\.?\s+(?P<day1>\d{{1,2}})(?:st|nd|rd|th)?|"
                rf"(?P<day2>\d{{1,2}})(?:st|nd|rd|th|\.)?\s+(?:of\s+|de\s+)?(?P<month2>{_MONTH}))\b",
                re.IGNORECASE), "month_day"),
    (re.compile(r"\b(?:(?:until|till|through)\s+the\s+end\s+of\s+(?:the\s+|this\s+)?|for\s+the\s+rest\s+of\s+"
                r"(?:the\s+|this\s+)?|this\s+)(?P<unit>week|month|quarter|year)\b", re.IGNORECASE), "end_of"),
    (re.compile(r"\b(?:bis\s+ende\s+(?:der\s+|des\s+|dieser\s+|dieses\s+)?|diese[nms]?\s+)"
                r"(?P<unit>woche|monats?|quartals?|jahr(?:es)?)\b", re.IGNORECASE), "end_of"),
    (re.compile(r"\b(?:hasta\s+(?:el\s+)?fin(?:al)?\s+de(?:l)?\s+(?:la\s+|este\s+|esta\s+)?|(?:esta|este)\s+)"
                r"(?P<unit>semana|mes|trimestre|año)\b", re.IGNORECASE), "end_of"),
    (re.compile(r"\b(?:jusqu['’]à\s+la\s+fin\s+(?:de\s+la\s+|du\s+|de\s+l['’]|de\s+cette\s+|de\s+ce\s+)|"
                r"(?:cette|ce)\s+)(?P<unit>semaine|mois|trimestre|année)(?:-ci)?\b", re.IGNORECASE), "end_of"),
    (re.compile(rf"\b(?:for|für|durante|pendant)\s+(?:the\s+next\s+)?(?P<count>{_COUNT})\s+"
                r"(?P<unit>days?|weeks?|months?|tage?n?|wochen?|monate?n?|días|dias|semanas?|meses|jours?|"
                r"semaines?)\b", re.IGNORECASE), "for"),
]
_UNITS = {
    "week": "week", "woche": "week", "semana": "week", "semaine": "week",
    "month": "month", "monat": "month", "monats": "month", "mes": "month", "mois": "month",
    "quarter": "quarter", "quartal": "quarter", "quartals": "quarter", "trimestre": "quarter",
    "year": "year", "jahr": "year", "jahres": "year", "año": "year", "année": "year",
}


def _end_of(unit: str, at: date) -> date:
    if unit == "week":
        return at + timedelta(days=6 - at.weekday())
    if unit == "month":
        return at.replace(day=calendar.monthrange(at.year, at.month)[1])
    if unit == "quarter":
        last_month = ((at.month - 1) // 3) * 3 + 3
        return date(at.year, last_month, calendar.monthrange(at.year, last_month)[1])
    return date(at.year, 12, 31)


def _add_months(at: date, months: int) -> date:
    month = at.month - 1 + months
    year = at.year + month // 12
    month = month % 12 + 1
    return date(year, month, min(at.day, calendar.monthrange(year, month)[1]))


def _resolve(kind: str, match: re.Match[str], at: date) -> date | None:
    if kind == "weekday":
        target = WEEKDAYS[match.group("day").lower()]
        ahead = (target - at.weekday()) % 7 or 7
        resolved = at + timedelta(days=ahead)
        # "next Friday" said on Monday is the Friday of the week after.
        if (match.group("next") or match.group("next2")) and resolved - at <= timedelta(days=6 - at.weekday()):
            resolved += timedelta(days=7)
        return resolved
    if kind == "tomorrow":
        return at + timedelta(days=1)
    if kind == "today":
        return at
    if kind == "next_week":
        return at + timedelta(days=7 - at.weekday())
    if kind == "month_day":
        month = MONTHS[(match.group("month1") or match.group("month2")).lower()]
        day = int(match.group("day1") or match.group("day2"))
        try:
            resolved = date(at.year, month, day)
        except ValueError:
            return None
        return resolved if resolved >= at else resolved.replace(year=at.year + 1)
    if kind == "end_of":
        return _end_of(_UNITS[match.group("unit").lower()], at)
    if kind == "for":
        raw = match.group("count").lower()
        count = int(raw) if raw.isdigit() else _NUMBER_WORDS[raw]
        unit = match.group("unit").lower()
        if unit.startswith(("day", "tag", "día", "dia", "jour")):
            return at + timedelta(days=count)
        if unit.startswith(("week", "woche", "semana", "semaine")):
            return at + timedelta(weeks=count)
        return _add_months(at, count)
    return None


def resolve_relative(text: str, *, at: datetime, language: str = "en") -> str:
    """`text` with its first relative expiry phrase replaced by an absolute
    "until YYYY-MM-DD" (in the entry's language); unchanged when it has none."""
    if _EXPIRY.search(text):
        return text
    day = at.date()
    for pattern, kind in _RULES:
        match = pattern.search(text)
        if match is None:
            continue
        resolved = _resolve(kind, match, day)
        if resolved is None:
            continue
        until = UNTIL.get(language, "until")
        return text[: match.start()] + f"{until} {resolved.isoformat()}" + text[match.end():]
    return text


def expiry_of(text: str) -> tuple[str, date] | None:
    match = _EXPIRY.search(text)
    if not match:
        return None
    try:
        return match.group("phrase"), date.fromisoformat(match.group("date"))
    except ValueError:
        return None


def is_expired(text: str, now: datetime) -> bool:
    found = expiry_of(text)
    return found is not None and found[1] < now.date()
