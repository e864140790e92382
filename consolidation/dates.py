"""Dates in memory entries: relative phrases made absolute, so entries can
expire or turn into history.

Two kinds of dated entry, in English, German, Spanish and French:

- **A state until a date**: "I'm away until Friday", "the office is closed
  until the end of the month", "for two weeks". Said on Monday 2026-11-30
  it is stored as "… until 2026-12-04"; a run after that day removes it
  (`expire`): it no longer holds.
- **An event on a date**: "I'm out of office next Friday", "the report is
  due in two weeks", "I'm traveling to Singapore in July". Stored as "… on
  2026-12-11" or "… in July 2027"; once the date has passed the entry is
  not removed but rewritten in the past tense ("Traveled to Singapore in
  July 2027."), as the seed article's Singapore example asks: the fact
  stays, as history.

Phrases are found by the patterns below; what they mean is resolved by
`dateparser` (relative offsets, weekdays, absolute dates, month names, in
its 200 locales) against the moment the log entry was written, in the
user's time zone when USER.md states one ("Time zone is Asia/Tokyo"). The
few forms dateparser does not read ("the end of the month", "fin de mes",
"nächsten Freitag", "el próximo viernes") are resolved here. A weekday
without a relative word ("on Friday", "on Fridays") is left alone: it is
usually a habit, not a date.
"""

from __future__ import annotations

import calendar
import functools
import re
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

# How an absolute date is written back, per language.
UNTIL = {"en": "until", "de": "bis", "es": "hasta el", "fr": "jusqu'au"}
ON = {"en": "on", "de": "am", "es": "el", "fr": "le"}
FROM = {"en": "from", "de": "ab", "es": "desde el", "fr": "à partir du"}
MONTH_NAMES = {
    "en": list(calendar.month_name)[1:],
    "de": ["Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August", "September", "Oktober",
           "November", "Dezember"],
    "es": ["enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto", "septiembre", "octubre",
           "noviembre", "diciembre"],
    "fr": ["janvier", "février", "mars", "avril", "mai", "juin", "juillet", "août", "septembre", "octobre",
           "novembre", "décembre"],
}
IN_MONTH = {"en": "in {month} {year}", "de": "im {month} {year}", "es": "en {month} de {year}",
            "fr": "en {month} {year}"}

WEEKDAYS = {
    "monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4, "saturday": 5, "sunday": 6,
    "montag": 0, "dienstag": 1, "mittwoch": 2, "donnerstag": 3, "freitag": 4, "samstag": 5, "sonntag": 6,
    "lunes": 0, "martes": 1, "miércoles": 2, "miercoles": 2, "jueves": 3, "viernes": 4, "sábado": 5, "sabado": 5,
    "domingo": 6,
    "lundi": 0, "mardi": 1, "mercredi": 2, "jeudi": 3, "vendredi": 4, "samedi": 5, "dimanche": 6,
}
MONTHS = {name.lower(): index + 1 for names in MONTH_NAMES.values() for index, name in enumerate(names)}
MONTHS.update({"jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9,
               "oct": 10, "nov": 11, "dec": 12, "marz": 3, "fevrier": 2, "aout": 8, "decembre": 12})
_NUMBER_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                 "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "ein": 1, "eine": 1, "einem": 1, "einer": 1,
                 "zwei": 2, "drei": 3, "vier": 4, "fünf": 5, "un": 1, "una": 1, "uno": 1, "dos": 2, "tres": 3,
                 "cuatro": 4, "cinco": 5, "une": 1, "deux": 2, "trois": 3, "quatre": 4, "cinq": 5}
_UNIT_OF = {
    "day": "day", "days": "day", "tag": "day", "tage": "day", "tagen": "day", "día": "day", "días": "day",
    "dia": "day", "dias": "day", "jour": "day", "jours": "day",
    "week": "week", "weeks": "week", "woche": "week", "wochen": "week", "semana": "week", "semanas": "week",
    "semaine": "week", "semaines": "week",
    "month": "month", "months": "month", "monat": "month", "monate": "month", "monaten": "month", "monats": "month",
    "mes": "month", "meses": "month", "mois": "month",
    "quarter": "quarter", "quartal": "quarter", "quartals": "quarter", "trimestre": "quarter",
    "year": "year", "years": "year", "jahr": "year", "jahres": "year", "jahre": "year", "año": "year",
    "años": "year", "année": "year", "an": "year", "ans": "year",
}

_DAY = "|".join(sorted(WEEKDAYS, key=len, reverse=True))
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_COUNT = r"\d{1,3}|" + "|".join(sorted((re.escape(w) for w in _NUMBER_WORDS), key=len, reverse=True))
_UNIT = "|".join(sorted(_UNIT_OF, key=len, reverse=True))

# "until", in each language, as a prefix that makes a phrase a state's end.
_UNTIL_WORD = (r"(?:until|till|til|through|thru|up\s+to|bis(?:\s+zum|\s+zur|\s+ende)?|hasta(?:\s+el|\s+la)?|"
               r"jusqu['’](?:à|au|a)(?:\s+la|\s+l['’])?)")

# Each phrase: its pattern (named groups read by _resolve), the kind it
# gives without an "until" before it ("event" or "until"), and how to read it.
_PHRASES: list[tuple[re.Pattern[str], str, str]] = [
    # the end of a period: "the end of the month", "Ende des Monats", "fin de mes", "la fin du mois"
    (re.compile(r"(?:the\s+)?end\s+of\s+(?:the\s+|this\s+)?(?P<unit>week|month|quarter|year)|"
                r"(?:for\s+)?the\s+rest\s+of\s+(?:the\s+|this\s+)?(?P<unit2>week|month|quarter|year)|"
                r"ende\s+(?:der\s+|des\s+|dieser\s+|dieses\s+)?(?P<unit3>woche|monats?|quartals?|jahr(?:es)?)|"
                r"(?:el\s+)?fin(?:al)?\s+de(?:l)?\s+(?:la\s+|este\s+|esta\s+)?(?P<unit4>semana|mes|trimestre|año)|"
                r"(?:la\s+)?fin\s+(?:de\s+la\s+|du\s+|de\s+l['’]|de\s+cette\s+|de\s+ce\s+)(?P<unit5>semaine|mois|"
                r"trimestre|année)", re.I), "until", "end_of"),
    # "this month", "diese Woche", "este mes", "ce mois-ci": until its end
    (re.compile(r"\b(?:this|diese[nms]?|este|esta|cette|ce)\s+(?P<unit>week|month|quarter|year|woche|monat|"
                r"quartal|jahr|semana|mes|trimestre|año|semaine|mois|année)(?:-ci)?\b", re.I), "until", "end_of"),
    # "for two weeks", "für zwei Wochen", "durante dos semanas", "pendant deux semaines"
    (re.compile(rf"\b(?:for|für|durante|pendant)\s+(?:the\s+next\s+)?(?P<count>{_COUNT})\s+(?P<unit>{_UNIT})\b",
                re.I), "until", "for"),
    # "in two weeks", "in zwei Wochen", "en dos semanas", "dans deux semaines"
    (re.compile(rf"\b(?:in|en|dans)\s+(?P<count>{_COUNT})\s+(?P<unit>{_UNIT})\b", re.I), "event", "in"),
    # "next week", "nächste Woche", "la próxima semana", "la semaine prochaine"
    (re.compile(r"\b(?:next\s+(?P<unit>week|month)|nächste[nr]?\s+(?P<unit2>woche|monat)|"
                r"(?:la\s+|el\s+)?próxim[oa]\s+(?P<unit3>semana|mes)|(?:la\s+|le\s+)?(?P<unit4>semaine|mois)\s+"
                r"prochaine?)\b", re.I), "event", "next_unit"),
    # "until Friday", "bis Freitag", "hasta el viernes", "jusqu'à vendredi": a weekday needs no "next" then
    (re.compile(rf"{_UNTIL_WORD}\s+(?:the\s+|el\s+|le\s+|zum\s+)?(?P<day>{_DAY})\b", re.I), "until", "weekday"),
    # "next Friday", "nächsten Freitag", "el próximo viernes", "vendredi prochain", "this Friday"
    (re.compile(rf"\b(?:(?P<rel>next|this|coming|nächsten|kommenden|diesen|(?:el\s+)?próximo|(?:el\s+)?este|ce)\s+"
                rf"(?P<day>{_DAY})|(?P<day2>{_DAY})\s+(?P<rel2>prochain|qui\s+vient))\b", re.I), "event", "weekday"),
    # "tomorrow", "the day after tomorrow", "morgen", "übermorgen", "mañana", "demain", "après-demain"
    (re.compile(r"\b(?P<rel>the\s+day\s+after\s+tomorrow|tomorrow|today|tonight|übermorgen|morgen|heute|"
                r"pasado\s+mañana|mañana(?!\s+por)|hoy|après-demain|demain|aujourd['’]hui|ce\s+soir)\b(?!\s+(?:morning|"
                r"früh))", re.I), "event", "relday"),
    # "December 24", "24 December", "24. Dezember", "24 de diciembre", "le 24 décembre"
    (re.compile(rf"\b(?:(?P<month>{_MONTH})\.?\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s+(?P<year>\d{{4}}))?|"
                rf"(?P<day2>\d{{1,2}})(?:st|nd|rd|th|\.|er)?\s+(?:of\s+|de\s+)?(?P<month2>{_MONTH})"
                rf"(?:\s+(?:de\s+)?(?P<year2>\d{{4}}))?)\b", re.I), "event", "absolute"),
    # a month: "in July", "im Juli", "en julio", "en juillet"
    (re.compile(rf"\b(?:in|im|en|au\s+mois\s+de)\s+(?P<month>{_MONTH})\b(?!\s+\d)(?!\s+(?:de\s+)?\d{{4}})", re.I),
     "event", "month"),
]

# The weekday a relative word points at, when dateparser reads the
# weekday alone: "next" and its equivalents mean the first one after today.
_SAME_WEEK = ("this", "diesen", "este", "el este", "ce")
# "from", "starting", "ab": an event phrase after it is a start date.
_FROM_WORD = r"\b(?:from|starting(?:\s+on)?|beginning|ab|desde|à\s+partir\s+de|dès)\s*$"


@dataclass(frozen=True)
class Resolved:
    phrase: str  # as said
    start: int  # offsets in the text
    end: int
    kind: str  # "until" | "event" | "from" (an event that lasts a while)
    day: date  # the date (the last day of the month for a month)
    precision: str  # "day" | "month"
    month_start: date | None = None
    how: str = ""

    def written(self, language: str) -> str:
        lang = language if language in UNTIL else "en"
        if self.kind == "until":
            return f"{UNTIL[lang]} {self.day.isoformat()}"
        if self.kind == "from":
            return f"{FROM[lang]} {self.day.isoformat()}"
        if self.precision == "month":
            first = self.month_start or self.day
            return IN_MONTH[lang].format(month=MONTH_NAMES[lang][first.month - 1], year=first.year)
        return f"{ON[lang]} {self.day.isoformat()}"


@functools.cache
def _dateparser() -> Any:
    import dateparser  # type: ignore[import-untyped]  # no stubs published

    return dateparser


@functools.lru_cache(maxsize=4096)
def _parse(phrase: str, *, base: date, language: str) -> date | None:
    """dateparser on one phrase, against `base`. Cached: a run resolves the
    same few phrases against the same day for every entry of a session."""
    languages = [language] if language in UNTIL else ["en"]
    moment = _dateparser().parse(
        phrase,
        languages=languages,
        settings={"RELATIVE_BASE": datetime.combine(base, datetime.min.time()), "PREFER_DATES_FROM": "future",
                  "RETURN_AS_TIMEZONE_AWARE": False, "STRICT_PARSING": False},
    )
    return moment.date() if moment is not None else None


def _end_of(unit: str, at: date) -> date:
    if unit == "week":
        return at + timedelta(days=6 - at.weekday())
    if unit == "month":
        return at.replace(day=calendar.monthrange(at.year, at.month)[1])
    if unit == "quarter":
        last_month = ((at.month - 1) // 3) * 3 + 3
        return date(at.year, last_month, calendar.monthrange(at.year, last_month)[1])
    return date(at.year, 12, 31)


def add_months(at: date, months: int) -> date:
    month = at.month - 1 + months
    year = at.year + month // 12
    month = month % 12 + 1
    return date(year, month, min(at.day, calendar.monthrange(year, month)[1]))


def _count(raw: str) -> int:
    raw = " ".join(raw.lower().split())
    return int(raw) if raw.isdigit() else _NUMBER_WORDS.get(raw, 1)


def _group(match: re.Match[str], *names: str) -> str:
    return next((match.group(name) for name in names if name in match.re.groupindex and match.group(name)), "")


def _resolve(how: str, match: re.Match[str], *, base: date, language: str) -> tuple[date, str, date | None] | None:
    if how == "end_of":
        unit = _UNIT_OF.get(_group(match, "unit", "unit2", "unit3", "unit4", "unit5").lower().rstrip("s"), "")
        unit = unit or _UNIT_OF.get(_group(match, "unit", "unit2", "unit3", "unit4", "unit5").lower(), "month")
        return _end_of(unit, base), "day", None
    if how in ("for", "in"):
        count, unit = _count(match.group("count")), _UNIT_OF[match.group("unit").lower()]
        if how == "in":
            parsed = _parse(f"in {count} {unit}s", base=base, language="en")
            if parsed is not None:
                return parsed, "day", None
        if unit == "day":
            return base + timedelta(days=count), "day", None
        if unit == "week":
            return base + timedelta(weeks=count), "day", None
        if unit == "quarter":
            return add_months(base, 3 * count), "day", None
        if unit == "year":
            return add_months(base, 12 * count), "day", None
        return add_months(base, count), "day", None
    if how == "next_unit":
        unit = _UNIT_OF[_group(match, "unit", "unit2", "unit3", "unit4").lower()]
        if unit == "week":
            return base + timedelta(days=7 - base.weekday()), "day", None
        first = add_months(base.replace(day=1), 1)
        return _end_of("month", first), "month", first
    if how == "weekday":
        day_word = _group(match, "day", "day2").lower()
        target = WEEKDAYS[day_word]
        relative = " ".join(_group(match, "rel", "rel2").lower().split())
        # The next such weekday after the day it was said, as dateparser
        # reads a weekday (preferring the future); plain arithmetic here.
        parsed = base + timedelta(days=(target - base.weekday()) % 7 or 7)
        if relative in _SAME_WEEK and parsed - base > timedelta(days=6 - base.weekday()):
            parsed -= timedelta(days=7)
        return parsed, "day", None
    if how == "relday":
        word = " ".join(match.group("rel").lower().split())
        offsets = {"the day after tomorrow": 2, "übermorgen": 2, "pasado mañana": 2, "après-demain": 2,
                   "tomorrow": 1, "morgen": 1, "mañana": 1, "demain": 1}
        return base + timedelta(days=offsets.get(word, 0)), "day", None
    if how == "absolute":
        month_word = _group(match, "month", "month2").lower().rstrip(".")
        month = MONTHS.get(month_word)
        if month is None:
            return None
        day_number = int(_group(match, "day", "day2"))
        year_text = _group(match, "year", "year2")
        try:
            resolved = date(int(year_text) if year_text else base.year, month, day_number)
        except ValueError:
            return None
        if not year_text and resolved < base:
            resolved = resolved.replace(year=base.year + 1)
        return resolved, "day", None
    if how == "month":
        month = MONTHS.get(match.group("month").lower())
        word = match.group("month")
        # "may" is a verb far more often than a month in English.
        if month is None or (word.lower() == "may" and word != "May"):
            return None
        year = base.year if month >= base.month else base.year + 1
        first = date(year, month, 1)
        return _end_of("month", first), "month", first
    return None


_ISO_NEARBY = re.compile(r"\d{4}-\d{2}-\d{2}")


def find(text: str, *, at: datetime, language: str = "en", tz: tzinfo | None = None) -> list[Resolved]:
    """The relative and absolute date phrases of `text`, resolved against
    `at` (seen in `tz`), in text order, not overlapping."""
    base = at.astimezone(tz or UTC).date()
    found: list[Resolved] = []
    taken: list[tuple[int, int]] = []
    for pattern, kind, how in _PHRASES:
        for match in pattern.finditer(text):
            start, end = match.span()
            if any(s < end and start < e for s, e in taken):
                continue
            resolved = _resolve(how, match, base=base, language=language)
            if resolved is None:
                continue
            day, precision, month_start = resolved
            before = text[:start]
            until = re.search(rf"\b{_UNTIL_WORD}\s*$", before, re.I)
            since = None if until else re.search(_FROM_WORD, before, re.I)
            phrase_kind = "until" if until else "from" if since and kind == "event" else kind
            if until:
                start = until.start()
            elif since and kind == "event":
                start = since.start()
            elif precision == "day":
                lead = re.search(r"\b(?:on|am|el|le|by|for|in|at)\s+(?:the\s+)?$", before, re.I)
                if lead and how != "in":
                    start = lead.start()
            found.append(Resolved(text[start:end], start, end, phrase_kind, day, precision, month_start, how))
            taken.append((start, end))
    found.sort(key=lambda r: r.start)
    # "in two weeks I'm in Tokyo for a week": the "for" is how long the
    # event lasts, not a state's end; the event is written "from <date>".
    events = [r for r in found if r.kind == "event" and r.precision == "day"]
    if events and any(r.how == "for" for r in found):
        found = [replace(r, kind="from") if r in events else r for r in found if r.how != "for"]
    return found


def resolve_relative(text: str, *, at: datetime, language: str = "en", tz: tzinfo | None = None) -> str:
    """`text` with each relative or unanchored date phrase replaced by an
    absolute one ("until 2026-12-04", "on 2026-12-11", "in July 2027"), in
    the entry's language; unchanged when it has none or is already absolute."""
    if not _might_have_dates(text):
        return text
    pieces: list[str] = []
    cursor = 0
    for resolved in find(text, at=at, language=language, tz=tz):
        if _ISO_NEARBY.search(text[resolved.start:resolved.end]):
            continue
        pieces.append(text[cursor:resolved.start])
        pieces.append(resolved.written(language))
        cursor = resolved.end
    if not pieces:
        return text
    pieces.append(text[cursor:])
    return re.sub(r"\s{2,}", " ", "".join(pieces))


_CHEAP_GATE = re.compile(
    rf"\d|\b(?:{_DAY}|{_MONTH}|tomorrow|today|tonight|morgen|übermorgen|heute|mañana|hoy|demain|aujourd|"
    r"weeks?|months?|quarters?|years?|woche[n]?|monat\w*|quartal\w*|jahr\w*|semanas?|mes(?:es)?|trimestres?|"
    r"años?|semaines?|mois|années?|ans?|days?|tage?n?|días?|jours?)\b",
    re.I,
)


def _might_have_dates(text: str) -> bool:
    return _CHEAP_GATE.search(text) is not None


# --- reading stored entries back ------------------------------------------------------------------

_EXPIRY = re.compile(
    rf"\b(?P<phrase>(?:{_UNTIL_WORD}|expires?(?:\s+on)?|valid\s+until)\s+(?P<date>\d{{4}}-\d{{2}}-\d{{2}}))\b",
    re.IGNORECASE,
)
_EVENT_DAY = re.compile(
    r"(?<!since\s)(?<!seit\s)(?<!depuis\s)(?<!as\sof\s)\b(?P<date>\d{4}-\d{2}-\d{2})\b"
    r"(?P<span>\s+for\s+(?P<count>" + _COUNT + r")\s+(?P<unit>" + _UNIT + r"))?",
    re.IGNORECASE,
)
_EVENT_MONTH = re.compile(rf"\b(?P<phrase>(?:in|im|en|au\s+mois\s+de)\s+(?P<month>{_MONTH})\s+(?:de\s+)?"
                          rf"(?P<year>\d{{4}}))\b", re.IGNORECASE)


def expiry_of(text: str) -> tuple[str, date] | None:
    """The stated end of a state ("until 2026-12-04"), if any."""
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


def event_of(text: str) -> tuple[str, date] | None:
    """The date an event entry is about (its last day), when it states one
    and no expiry: "on 2026-12-11", "from 2026-12-28 for a week", "in July 2027"."""
    if expiry_of(text) is not None:
        return None
    latest: tuple[str, date] | None = None
    for match in _EVENT_DAY.finditer(text):
        try:
            day = date.fromisoformat(match.group("date"))
        except ValueError:
            continue
        if match.group("span"):
            count, unit = _count(match.group("count")), _UNIT_OF[match.group("unit").lower()]
            if unit == "day":
                day += timedelta(days=count)
            elif unit == "week":
                day += timedelta(weeks=count)
            else:
                day = add_months(day, count * {"month": 1, "quarter": 3, "year": 12}[unit])
        if latest is None or day > latest[1]:
            latest = (match.group(0).strip(), day)
    for match in _EVENT_MONTH.finditer(text):
        month = MONTHS.get(match.group("month").lower())
        if month is None:
            continue
        day = _end_of("month", date(int(match.group("year")), month, 1))
        if latest is None or day > latest[1]:
            latest = (match.group("phrase"), day)
    return latest


def is_past_event(text: str, now: datetime) -> bool:
    found = event_of(text)
    return found is not None and found[1] < now.date() and past_tense(text) != text


# --- the past tense -----------------------------------------------------------------------------------

_EN_IRREGULAR = {"fly": "flew", "go": "went", "come": "came", "leave": "left", "meet": "met", "have": "had",
                 "take": "took", "see": "saw", "speak": "spoke", "give": "gave", "run": "ran", "drive": "drove",
                 "ride": "rode", "begin": "began", "get": "got", "make": "made", "do": "did", "sit": "sat",
                 "stay": "stayed", "travel": "traveled", "visit": "visited", "move": "moved", "attend": "attended",
                 "start": "started", "work": "worked", "host": "hosted", "present": "presented", "study": "studied"}
_EN_BE = (
    (re.compile(r"^(?:is|are)\s+(?P<verb>[a-z]+?)ing\b", re.I), "ing"),
    (re.compile(r"^will\s+(?P<verb>[a-z]+)\b", re.I), "will"),
    (re.compile(r"^(?:is|are)\s+going\s+to\s+(?P<verb>[a-z]+)\b", re.I), "will"),
)
_EN_SIMPLE = (
    (re.compile(r"^is\b", re.I), "Was"), (re.compile(r"^are\b", re.I), "Were"), (re.compile(r"^has\b", re.I), "Had"),
    (re.compile(r"^have\b", re.I), "Had"),
)
_EN_INNER = ((re.compile(r"\b(?:is|are)\s+due\b", re.I), "was due"), (re.compile(r"\bis\b"), "was"),
             (re.compile(r"\bare\b"), "were"), (re.compile(r"\bhas\b"), "had"), (re.compile(r"\bwill\s+be\b"), "was"))
_DE = ((re.compile(r"^Ist\b"), "War"), (re.compile(r"^Sind\b"), "Waren"), (re.compile(r"^Hat\b"), "Hatte"),
       (re.compile(r"^Fliegt\b"), "Flog"), (re.compile(r"^Reist\b"), "Reiste"), (re.compile(r"^Fährt\b"), "Fuhr"),
       (re.compile(r"\bist\b"), "war"), (re.compile(r"\bhat\b"), "hatte"))
_ES = ((re.compile(r"^Está\b"), "Estuvo"), (re.compile(r"^Es\b"), "Fue"), (re.compile(r"^Tiene\b"), "Tuvo"),
       (re.compile(r"^Viaja\b"), "Viajó"), (re.compile(r"^Vuela\b"), "Voló"), (re.compile(r"\bestá\b"), "estuvo"),
       (re.compile(r"\btiene\b"), "tuvo"))
_FR = ((re.compile(r"^Est\b"), "Était"), (re.compile(r"^A\b"), "Avait"), (re.compile(r"^Voyage\b"), "A voyagé"),
       (re.compile(r"^Part\b"), "Est parti"), (re.compile(r"\best\b"), "était"), (re.compile(r"\ba\b"), "avait"))
_EN_PAST_INSIDE = re.compile(r"\b(?:was|were|had)\b")
_EN_PRESENT_INSIDE = re.compile(r"\b(?:is|are|has|have|will)\b")
PAST_MARK = {"en": "(past)", "de": "(vergangen)", "es": "(pasado)", "fr": "(passé)"}
_ALREADY_PAST = re.compile(
    r"^(?:was|were|had|did|went|flew|came|left|met|took|saw|spoke|gave|ran|drove|rode|began|got|made|sat|\w+ed|"
    r"war|waren|hatte|flog|reiste|fuhr|estuvo|fue|tuvo|viajó|voló|était|avait|a\s+voyagé|est\s+parti)\b"
    r"|\((?:past|vergangen|pasado|passé)\)\.?$",
    re.I,
)


def _en_past(verb: str) -> str:
    verb = verb.lower()
    if verb in _EN_IRREGULAR:
        return _EN_IRREGULAR[verb]
    if verb.endswith("e"):
        return verb + "d"
    if verb.endswith("y") and len(verb) > 2 and verb[-2] not in "aeiou":
        return verb[:-1] + "ied"
    return verb + "ed"


def _ing_stem(stem: str) -> str:
    """The verb of "<stem>ing": "travell" → "travel", "fly" → "fly", "mov" → "move"."""
    if len(stem) > 3 and stem[-1] == stem[-2] and stem[-1] not in "ls":
        return stem[:-1]
    if stem.endswith("ll"):
        return stem[:-1]
    if stem in ("mov", "leav", "com", "hav", "driv", "rid", "giv", "tak", "mak", "us", "attend"):
        return stem + ("e" if not stem.endswith("d") else "")
    return stem


def past_tense(text: str, language: str = "en") -> str:
    """The entry as history: "Is traveling to Singapore in July 2027." →
    "Traveled to Singapore in July 2027."; an entry whose verb it cannot
    find gets a "(past)" mark. Idempotent."""
    body = text.rstrip()
    if _ALREADY_PAST.search(body):
        return text
    end = "." if body.endswith(".") else ""
    core = body[:-1] if end else body
    lang = language if language in PAST_MARK else "en"
    if lang == "en" and _EN_PAST_INSIDE.search(core) and not _EN_PRESENT_INSIDE.search(core):
        return text
    if lang == "en":
        for pattern, how in _EN_BE:
            match = pattern.match(core)
            if match:
                verb = _ing_stem(match.group("verb")) if how == "ing" else match.group("verb")
                rewritten = _en_past(verb) + core[match.end():]
                return rewritten[:1].upper() + rewritten[1:] + end
        for pattern, word in _EN_SIMPLE:
            if pattern.match(core):
                return pattern.sub(word, core, count=1) + end
        for pattern, word in _EN_INNER:
            if pattern.search(core):
                return pattern.sub(word, core, count=1) + end
    else:
        table = {"de": _DE, "es": _ES, "fr": _FR}[lang]
        for pattern, word in table:
            if pattern.search(core):
                return pattern.sub(word, core, count=1) + end
    return f"{core} {PAST_MARK[lang]}{end}"


# --- the user's time zone -------------------------------------------------------------------------------

_IANA = re.compile(r"\b(?:[A-Z][a-z]+(?:_[A-Z][a-z]+)*/[A-Z][A-Za-z_]+(?:/[A-Z][A-Za-z_]+)?|UTC|GMT)\b")
_OFFSET = re.compile(r"\b(?:UTC|GMT)\s*(?P<sign>[+-−])\s*(?P<hours>\d{1,2})(?::?(?P<minutes>\d{2}))?\b")
_ZONE_WORD = re.compile(r"time\s*zone|timezone|zeitzone|zona\s+horaria|fuseau", re.I)


def user_timezone(entries: list[str] | tuple[str, ...]) -> tzinfo | None:
    """The time zone USER.md states ("Time zone is Asia/Tokyo", "UTC+9"), if any."""
    from datetime import timezone as fixed

    for entry in entries:
        if not _ZONE_WORD.search(entry) and not _IANA.search(entry):
            continue
        offset = _OFFSET.search(entry)
        if offset:
            sign = -1 if offset.group("sign") in "-−" else 1
            delta = timedelta(hours=int(offset.group("hours")), minutes=int(offset.group("minutes") or 0))
            return fixed(sign * delta)
        for name in _IANA.findall(entry):
            try:
                return ZoneInfo(name)
            except (ZoneInfoNotFoundError, ValueError):
                continue
    return None
