"""From a sentence in a session log to a memory entry a reviewer can approve
as written: a third-person directive ("Prefers email for routine updates."),
never a chat fragment ("I'd prefer email for routine stuff, honestly").

The heuristic backend finds candidate facts here, in English, German,
Spanish and French:

- "remember (that) …" and its equivalents: a fact to keep;
- "from now on …", "please always/never …": a standing directive;
- first-person statements about the person ("I prefer …", "I live in …",
  "my timezone is …", "call me …", "ich bevorzuge …", "prefiero …",
  "je préfère …"), rewritten in the third person;
- the agent's notes; a note about the user ("User prefers …") goes to
  USER.md, others to MEMORY.md.

`detect_language` tells which of the four a text is in, or that it is in
another language the heuristic does not understand: the run reports those
entries instead of ignoring them.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

USER = "USER.md"
MEMORY = "MEMORY.md"
SUPPORTED = ("en", "de", "es", "fr")

_STOP = {
    "en": {"the", "and", "is", "are", "to", "of", "i", "i'm", "i'd", "you", "my", "for", "with", "that", "please",
           "from", "now", "on", "remember", "prefer", "it", "in", "be", "me", "this", "always", "never", "until",
           "can", "what", "how", "not", "do", "have", "will", "want", "like", "call", "thanks", "user", "prefers",
           "we", "our", "at", "by", "an", "a", "runs", "uses"},
    "de": {"ich", "und", "der", "die", "das", "ist", "nicht", "mit", "für", "bitte", "mir", "mich", "ein", "eine",
           "zu", "auf", "bis", "ab", "jetzt", "merk", "dir", "dass", "bevorzuge", "mein", "meine", "wohne", "immer",
           "nie", "danke", "sie", "wir", "auch", "wie", "was", "kannst", "du", "habe", "bin"},
    "es": {"el", "la", "los", "las", "que", "y", "en", "por", "para", "con", "mi", "me", "prefiero", "hasta",
           "favor", "es", "un", "una", "siempre", "nunca", "recuerda", "vivo", "soy", "estoy", "gracias", "del",
           "puedes", "no", "ahora", "gusta", "llamo", "correo"},
    "fr": {"le", "la", "les", "des", "et", "est", "je", "j'", "pour", "avec", "que", "mon", "ma", "mes", "jusqu'",
           "préfère", "s'il", "vous", "tu", "une", "un", "merci", "pas", "ne", "du", "au", "toujours", "jamais",
           "souviens-toi", "rappelle-toi", "habite", "suis", "désormais", "plaît", "m'appelle"},
    "it": {"il", "della", "che", "per", "non", "sono", "preferisco", "mi", "ricorda", "grazie", "sempre", "gli",
           "questo", "io", "abito", "lavoro", "chiamami", "vorrei", "ciao", "di", "mai"},
    "pt": {"o", "os", "da", "do", "que", "não", "eu", "prefiro", "para", "com", "meu", "minha", "lembre",
           "obrigado", "sempre", "nunca", "moro", "sou", "estou", "você", "uma", "um", "em"},
    "nl": {"de", "het", "een", "en", "ik", "niet", "van", "voor", "mijn", "graag", "altijd", "nooit", "woon",
           "werk", "bedankt", "dat", "je", "is", "onthoud", "liever"},
    "sv": {"jag", "och", "är", "inte", "för", "med", "att", "min", "mitt", "alltid", "aldrig", "tack", "bor"},
    "pl": {"jestem", "nie", "się", "dla", "mój", "moja", "zawsze", "nigdy", "dziękuję", "proszę", "mieszkam"},
    "tr": {"ve", "bir", "bu", "için", "ben", "benim", "her", "zaman", "lütfen", "teşekkürler", "tercih"},
}
_WORD = re.compile(r"[^\W\d_][\w'’-]*", re.UNICODE)
_LATIN_HINT = "LATIN"


@dataclass(frozen=True)
class Directive:
    text: str  # the entry: one line, third person, ending with a full stop
    target: str  # USER.md | MEMORY.md
    why: str  # for the reviewer: "a stated preference", …
    language: str  # en | de | es | fr


def detect_language(text: str) -> str:
    """en, de, es or fr; "other" for another script, or a Latin-script text
    that reads clearly as another language; "unknown" when it cannot tell
    (the heuristic then tries every pattern it knows)."""
    letters = [ch for ch in text if ch.isalpha()]
    if not letters:
        return "unknown"
    latin = sum(1 for ch in letters if unicodedata.name(ch, "").startswith(_LATIN_HINT))
    if latin / len(letters) < 0.5:
        return "other"
    words = [w.lower().replace("’", "'") for w in _WORD.findall(text)]
    scores = {lang: sum(1 for w in words if w in stop) for lang, stop in _STOP.items()}
    best = max(scores, key=lambda lang: (scores[lang], lang in SUPPORTED))
    if best in SUPPORTED:
        return best if scores[best] else "unknown"
    # Another language only on clear evidence: two of its common words and
    # more than any of the four.
    return "other" if scores[best] >= 2 else "unknown"


# --- cleaning ---------------------------------------------------------------------------

_LEADING_NOISE = re.compile(
    r"^(?:(?:oh|ok|okay|well|so|also|and|btw|by\s+the\s+way|hey|hi|hello|thanks|thank\s+you|one\s+more\s+thing|"
    r"just\s+so\s+you\s+know|fyi|for\s+the\s+record|for\s+future\s+reference|honestly|actually|basically|"
    r"übrigens|ach\s+ja|also|hola|oye|por\s+cierto|bueno|au\s+fait|bon|alors|d['’]ailleurs)\b[,!.:;\s-]*)+",
    re.IGNORECASE,
)
_TRAILING_NOISE = re.compile(
    r"(?:[,;]?\s*(?:honestly|please|thanks|thank\s+you|if\s+possible|if\s+you\s+can|tbh|lol|haha|"
    r"ok\??|danke|bitte|por\s+favor|gracias|s['’]il\s+(?:te|vous)\s+plaît|merci))+[\s.!]*$",
    re.IGNORECASE,
)
_INNER_FILLER = re.compile(r"\s+(?:really|honestly|actually|kind\s+of|sort\s+of|wirklich|ehrlich\s+gesagt|"
                           r"realmente|vraiment)(?=\s)", re.IGNORECASE)


def finish(text: str) -> str:
    """One line, no chat noise, a capital first letter and a full stop."""
    text = " ".join(text.split()).strip(" \"'`“”«»")
    text = _LEADING_NOISE.sub("", text)
    text = _TRAILING_NOISE.sub("", text)
    text = _INNER_FILLER.sub("", text)
    text = text.strip(" ,;:-").rstrip(" .!?…")
    if not text:
        return ""
    return text[:1].upper() + text[1:] + "."


# --- first person → third person ------------------------------------------------------------

_EN_REST = [
    (re.compile(r"\bI\s+am\b"), "they are"), (re.compile(r"\bI'm\b|\bI’m\b"), "they're"),
    (re.compile(r"\bI\s+was\b"), "they were"), (re.compile(r"\bI've\b|\bI’ve\b"), "they've"),
    (re.compile(r"\bI'd\b|\bI’d\b"), "they'd"), (re.compile(r"\bI'll\b|\bI’ll\b"), "they'll"),
    (re.compile(r"\bI\b"), "they"), (re.compile(r"\bmyself\b", re.I), "themselves"),
    (re.compile(r"\bmine\b", re.I), "theirs"), (re.compile(r"\bmy\b", re.I), "their"),
    (re.compile(r"\bme\b", re.I), "the user"),
]
_DE_REST = [(re.compile(r"\bmir\b", re.I), "dem Nutzer"), (re.compile(r"\bmich\b", re.I), "den Nutzer")]
_ES_REST = [(re.compile(r"\bmis\b", re.I), "sus"), (re.compile(r"\bmi\b", re.I), "su")]
_FR_REST = [(re.compile(r"\bmoi\b", re.I), "lui"), (re.compile(r"\bmon\b", re.I), "son"),
            (re.compile(r"\bma\b", re.I), "sa"), (re.compile(r"\bmes\b", re.I), "ses")]
_REST = {"en": _EN_REST, "de": _DE_REST, "es": _ES_REST, "fr": _FR_REST}


def third_person(text: str, language: str) -> str:
    for pattern, replacement in _REST.get(language, ()):
        text = pattern.sub(replacement, text)
    return text


_EN_VERBS = {"prefer": "prefers", "like": "likes", "love": "loves", "enjoy": "enjoys", "hate": "dislikes",
             "dislike": "dislikes", "live": "lives", "work": "works", "use": "uses", "speak": "speaks",
             "drink": "drinks", "eat": "eats", "avoid": "avoids", "own": "owns", "drive": "drives",
             "commute": "commutes", "read": "reads", "need": "needs", "want": "wants"}
_DE_VERBS = {"bevorzuge": "bevorzugt", "mag": "mag", "liebe": "liebt", "hasse": "hasst", "wohne": "wohnt",
             "lebe": "lebt", "arbeite": "arbeitet", "nutze": "nutzt", "benutze": "benutzt", "verwende": "verwendet",
             "spreche": "spricht", "trinke": "trinkt", "esse": "isst", "möchte": "möchte", "brauche": "braucht",
             "fahre": "fährt", "hätte": "hätte", "bin": "ist"}
_ES_VERBS = {"prefiero": "prefiere", "vivo": "vive", "trabajo": "trabaja", "uso": "usa", "utilizo": "utiliza",
             "hablo": "habla", "bebo": "bebe", "como": "come", "odio": "odia", "quiero": "quiere",
             "necesito": "necesita", "evito": "evita"}
_FR_VERBS = {"préfère": "préfère", "prefere": "préfère", "aime": "aime", "adore": "adore", "déteste": "déteste",
             "habite": "habite", "vis": "vit", "travaille": "travaille", "utilise": "utilise", "parle": "parle",
             "bois": "boit", "mange": "mange", "veux": "veut", "voudrais": "voudrait", "évite": "évite"}

_STATE = (r"(?:based|located|from|allergic|vegetarian|vegan|lactose|gluten|diabetic|left-handed|colou?r-?blind|"
          r"deaf|blind|pregnant|on\s+(?:vacation|holiday|leave|parental\s+leave|call|sabbatical)|"
          r"out\s+of\s+(?:the\s+)?office|away|travell?ing|in\s+the\s+[\w/+-]+\s+time\s*zone|"
          r"an?\s+(?:nurse|teacher|doctor|developer|engineer|manager|designer|student|lawyer|accountant|"
          r"consultant|architect|researcher|\w+ist|\w+ian))\b")
_VAGUE_OBJECT = re.compile(r"^(?:it|that|this|these|those|what|how|your|yours|the\s+way\s+you|to\s+see|"
                           r"when\s+you)\b", re.IGNORECASE)

_FIRST_PERSON: dict[str, list[tuple[re.Pattern[str], str]]] = {
    "en": [
        (re.compile(r"^(?P<pre>(?:for|when|on|in|during|at|with|after|before)\s+[^,]+?),?\s+i(?:'d|’d|\s+would)?\s+"
                    r"(?:much\s+|really\s+)?prefer\s+(?P<rest>.+)", re.I | re.S), "Prefers {rest} {pre}"),
        (re.compile(r"^i(?:'d|’d|\s+would)\s+(?:much\s+|really\s+|strongly\s+)?(?:prefer|rather\s+have)\s+(?P<rest>.+)",
                    re.I | re.S), "Prefers {rest}"),
        (re.compile(r"^i\s+(?:don't|don’t|do\s+not|never)\s+(?P<verb>like|want|use|eat|drink|drive|work)\s+"
                    r"(?P<rest>.+)", re.I | re.S), "Does not {verb} {rest}"),
        (re.compile(r"^i\s+(?:much\s+|really\s+|strongly\s+|generally\s+|usually\s+|always\s+)?"
                    r"(?P<verb>prefer|like|love|enjoy|hate|dislike|live|work|use|speak|drink|eat|avoid|own|drive|"
                    r"commute)\s+(?P<rest>.+)", re.I | re.S), "{verb3} {rest}"),
        (re.compile(rf"^i(?:'m|’m|\s+am)\s+(?P<rest>{_STATE}.*)", re.I | re.S), "Is {rest}"),
        (re.compile(r"^my\s+(?P<what>(?:first\s+|last\s+|preferred\s+|nick)?name|surname|timezone|time\s+zone|"
                    r"pronouns|role|title|job|job\s+title|e-?mail(?:\s+address)?|phone\s+number|birthday|manager|"
                    r"team|company|employer|department|office|address|home\s+town|favou?rite\s+\w+)\s+"
                    r"(?P<is>is|are)\s+(?P<rest>.+)", re.I | re.S), "{What} {is} {rest}"),
        (re.compile(r"^(?:please\s+)?call\s+me\s+(?P<rest>.+)", re.I | re.S), "Wants to be called {rest}"),
    ],
    "de": [
        # A clause after "dass" puts the verb last: "dass ich bis Freitag im Urlaub bin".
        (re.compile(r"^ich\s+(?P<rest>.+?)\s+(?P<verb>bin|bevorzuge|mag|liebe|wohne|lebe|arbeite|nutze|benutze|"
                    r"verwende|spreche|trinke|esse)[.!]?$", re.I | re.S), "{verb3} {rest}"),
        (re.compile(r"^ich\s+(?P<verb>bevorzuge|mag|liebe|hasse|wohne|lebe|arbeite|nutze|benutze|verwende|spreche|"
                    r"trinke|esse|fahre)\s+(?P<rest>.+)", re.I | re.S), "{verb3} {rest}"),
        (re.compile(r"^ich\s+(?P<verb>möchte|hätte)\s+(?P<rest>(?:lieber|gern|gerne)\s+.+)", re.I | re.S),
         "{verb3} {rest}"),
        (re.compile(r"^ich\s+bin\s+(?P<rest>(?:vegetarier|vegetarierin|veganer|veganerin|allergisch|im\s+urlaub|"
                    r"bis|in\s+elternzeit|nicht\s+im\s+büro|aus|von)\b.*)", re.I | re.S), "Ist {rest}"),
        (re.compile(r"^mein\s+(?P<what>name|vorname|nachname|spitzname)\s+ist\s+(?P<rest>.+)", re.I | re.S),
         "{What} ist {rest}"),
        (re.compile(r"^meine\s+(?P<what>zeitzone|rolle|e-?mail(?:-adresse)?|telefonnummer|abteilung|firma)\s+ist\s+"
                    r"(?P<rest>.+)", re.I | re.S), "{What} ist {rest}"),
        (re.compile(r"^(?:bitte\s+)?nenn(?:en\s+sie|e)?\s+mich\s+(?P<rest>.+)", re.I | re.S),
         "Möchte {rest} genannt werden"),
    ],
    "es": [
        (re.compile(r"^(?:yo\s+)?(?P<verb>prefiero|vivo|trabajo|uso|utilizo|hablo|bebo|odio|evito)\s+(?P<rest>.+)",
                    re.I | re.S), "{verb3} {rest}"),
        (re.compile(r"^(?:a\s+mí\s+)?no\s+me\s+gusta(?P<n>n?)\s+(?P<rest>.+)", re.I | re.S), "No le gusta{n} {rest}"),
        (re.compile(r"^(?:a\s+mí\s+)?me\s+gusta(?P<n>n?)\s+(?P<rest>.+)", re.I | re.S), "Le gusta{n} {rest}"),
        (re.compile(r"^(?:yo\s+)?(?:soy|estoy)\s+(?P<rest>(?:vegetarian[oa]|vegan[oa]|alérgic[oa]|de\s+vacaciones|"
                    r"de\s+baja|fuera\s+de\s+la\s+oficina|de)\b.*)", re.I | re.S), "Está {rest}"),
        (re.compile(r"^(?:me\s+llamo|mi\s+nombre\s+es)\s+(?P<rest>.+)", re.I | re.S), "Se llama {rest}"),
        (re.compile(r"^mi\s+(?P<what>zona\s+horaria|correo|rol|equipo|empresa)\s+es\s+(?P<rest>.+)", re.I | re.S),
         "{What} es {rest}"),
        (re.compile(r"^(?:por\s+favor,?\s+)?llámame\s+(?P<rest>.+)", re.I | re.S), "Quiere que le llamen {rest}"),
    ],
    "fr": [
        (re.compile(r"^(?:je\s+|j['’])(?P<verb>préfère|prefere|aime|adore|déteste|habite|vis|travaille|utilise|"
                    r"parle|bois|mange|évite)\s+(?P<rest>.+)", re.I | re.S), "{verb3} {rest}"),
        (re.compile(r"^je\s+suis\s+(?P<rest>(?:végétarien(?:ne)?|végane?|allergique|en\s+vacances|en\s+congé|"
                    r"absent(?:e)?|basée?|de)\b.*)", re.I | re.S), "Est {rest}"),
        (re.compile(r"^(?:je\s+m['’]appelle|mon\s+nom\s+est)\s+(?P<rest>.+)", re.I | re.S), "S'appelle {rest}"),
        (re.compile(r"^mon\s+(?P<what>fuseau\s+horaire|rôle|équipe|e-?mail)\s+est\s+(?P<rest>.+)", re.I | re.S),
         "{What} est {rest}"),
        (re.compile(r"^(?:s['’]il\s+(?:te|vous)\s+plaît,?\s+)?appelle(?:z)?-moi\s+(?P<rest>.+)", re.I | re.S),
         "Veut être appelé {rest}"),
    ],
}
_VERBS = {"en": _EN_VERBS, "de": _DE_VERBS, "es": _ES_VERBS, "fr": _FR_VERBS}

_REMEMBER = {
    "en": re.compile(r"^(?:please\s+)?(?:remember|keep\s+in\s+mind|make\s+a\s+note|note|don't\s+forget|"
                     r"do\s+not\s+forget)(?:\s+that|\s+to)?\s*[,:]?\s+(?P<rest>.+)$", re.I | re.S),
    "de": re.compile(r"^(?:bitte\s+)?(?:merk(?:e)?\s+dir|bitte\s+merken|denk(?:e)?\s+daran|vergiss\s+nicht|"
                     r"notier(?:e)?\s+dir)(?:\s*,)?(?:\s+dass)?\s*[,:]?\s+(?P<rest>.+)$", re.I | re.S),
    "es": re.compile(r"^(?:por\s+favor,?\s+)?(?:recuerda|recuérdalo|acuérdate\s+de|ten\s+en\s+cuenta|"
                     r"no\s+olvides)(?:\s+que)?\s*[,:]?\s+(?P<rest>.+)$", re.I | re.S),
    "fr": re.compile(r"^(?:rappelle-toi|souviens-toi|retiens|n['’]oublie\s+pas|garde\s+en\s+tête|note)"
                     r"(?:\s+que\s+|\s+qu['’]|\s*[,:]\s*|\s+)(?P<rest>.+)$", re.I | re.S),
}
_FROM_NOW_ON = {
    "en": re.compile(r"^(?:from\s+now\s+on|going\s+forward|in\s+(?:the\s+)?future|henceforth|"
                     r"for\s+all\s+future\s+\w+)\s*[,:]?\s+(?P<rest>.+)$", re.I | re.S),
    "de": re.compile(r"^(?:ab\s+jetzt|von\s+nun\s+an|ab\s+sofort|in\s+zukunft|künftig|zukünftig)\s*[,:]?\s+"
                     r"(?P<rest>.+)$", re.I | re.S),
    "es": re.compile(r"^(?:de\s+ahora\s+en\s+adelante|a\s+partir\s+de\s+ahora|desde\s+ahora|en\s+el\s+futuro)"
                     r"\s*[,:]?\s+(?P<rest>.+)$", re.I | re.S),
    "fr": re.compile(r"^(?:à\s+partir\s+de\s+maintenant|désormais|dorénavant|à\s+l['’]avenir)\s*[,:]?\s+"
                     r"(?P<rest>.+)$", re.I | re.S),
}
_ALWAYS = {
    "en": re.compile(r"^(?:please\s*,?\s+)?(?P<rest>(?:always|never)\s+.+)$", re.I | re.S),
    "de": re.compile(r"^(?:bitte\s+)?(?P<rest>(?:immer|nie|niemals)\s+.+)$", re.I | re.S),
    "es": re.compile(r"^(?:por\s+favor,?\s+)?(?P<rest>(?:siempre|nunca)\s+.+)$", re.I | re.S),
    "fr": re.compile(r"^(?:s['’]il\s+(?:te|vous)\s+plaît,?\s+)?(?P<rest>(?:toujours|ne\s+jamais|jamais)\s+.+)$",
                     re.I | re.S),
}
_DONT_EVER = re.compile(r"^(?:please\s+)?(?:don't|don’t|do\s+not)\s+ever\s+(?P<rest>.+)$", re.I | re.S)
_ABOUT_USER = re.compile(
    r"^(?:the\s+)?user(?:['’]s|s['’])?\s+(?P<rest>.+)$|^(?:der\s+|die\s+)?(?:nutzer(?:in)?|benutzer(?:in)?)\s+"
    r"(?P<rest_de>.+)$|^(?:el\s+|la\s+)?usuari[oa]\s+(?P<rest_es>.+)$|^l['’]utilisat(?:eur|rice)\s+(?P<rest_fr>.+)$",
    re.I | re.S,
)
_NOTE_LEAD = re.compile(r"^(?:note|learned|learnt|lesson|til|fyi|memo)\s*[:-]\s*", re.I)
_FIRST_PERSON_MARK = re.compile(
    r"\b(?:i|i'm|i’m|i've|i'd|i'll|my|me|mine|myself|ich|mich|mir|mein\w*|yo|mi|mis|me|je|j['’]|moi|mon|ma|mes)\b"
    r"|^call\s+me\b",
    re.I,
)
_LANGUAGE_OF_TEXT = ("en", "de", "es", "fr")


def _first_person(sentence: str, language: str) -> str | None:
    for pattern, template in _FIRST_PERSON.get(language, ()):
        match = pattern.match(sentence)
        if match is None:
            continue
        groups = {k: (v or "") for k, v in match.groupdict().items()}
        rest = groups.get("rest", "").strip().rstrip(" .!…")
        if not rest or _VAGUE_OBJECT.match(rest):
            return None
        verb = groups.get("verb", "")
        values = {
            "rest": third_person(rest, language),
            "verb": verb.lower(),
            "verb3": _VERBS[language].get(verb.lower(), verb).capitalize() if verb else "",
            "What": " ".join(groups.get("what", "").split()).capitalize(),
            "is": groups.get("is", "is").lower(),
            "n": groups.get("n", ""),
            "pre": groups.get("pre", "").lower(),
        }
        return template.format(**values)
    return None


def _languages(preferred: str) -> tuple[str, ...]:
    if preferred in SUPPORTED:
        return (preferred, *(lang for lang in _LANGUAGE_OF_TEXT if lang != preferred))
    return _LANGUAGE_OF_TEXT


def from_user(sentence: str, *, language: str) -> Directive | None:
    """The entry a user's sentence asks to keep, or None for ordinary chat."""
    sentence = _LEADING_NOISE.sub("", " ".join(sentence.split())).strip()
    if not sentence or sentence.endswith("?"):
        return None
    for lang in _languages(language):
        if match := _REMEMBER[lang].match(sentence):
            rest = _LEADING_NOISE.sub("", match.group("rest")).strip()
            about_person = _first_person(rest, lang)
            if about_person is not None:
                return Directive(finish(about_person), USER, "the user asked to remember it", lang)
            if _FIRST_PERSON_MARK.search(rest):
                return Directive(finish(third_person(rest, lang)), USER, "the user asked to remember it", lang)
            return Directive(finish(rest), MEMORY, "the user asked to remember it", lang)
        if match := _FROM_NOW_ON[lang].match(sentence):
            rest = match.group("rest")
            about_person = _first_person(rest, lang)
            text = about_person if about_person is not None else third_person(rest, lang)
            return Directive(finish(text), USER, "a standing directive from the user", lang)
        if match := _ALWAYS[lang].match(sentence):
            return Directive(finish(third_person(match.group("rest"), lang)), USER,
                             "a standing directive from the user", lang)
        if lang == "en" and (match := _DONT_EVER.match(sentence)):
            return Directive(finish("Never " + third_person(match.group("rest"), lang)), USER,
                             "a standing directive from the user", lang)
        about_person = _first_person(sentence, lang)
        if about_person is not None:
            return Directive(finish(about_person), USER, "a statement by the user about themselves", lang)
    return None


def from_note(line: str, *, language: str) -> Directive | None:
    """The entry an agent's note makes: about the user → USER.md, else MEMORY.md."""
    line = _NOTE_LEAD.sub("", line.strip())
    for lang in _languages(language):
        if match := _REMEMBER[lang].match(line):
            line = match.group("rest")
            break
    match = _ABOUT_USER.match(line)
    if match is not None:
        rest = next(value for value in match.groupdict().values() if value)
        return Directive(finish(rest), USER, "the agent noted it", language if language in SUPPORTED else "en")
    text = finish(line)
    return Directive(text, MEMORY, "the agent noted it", language if language in SUPPORTED else "en") if text else None


def rewrite(text: str, *, language: str | None = None) -> str:
    """A model's entry as a directive: a first-person statement is rewritten
    in the third person (with chat noise removed and a full stop); anything
    else is returned as written, whitespace normalised."""
    language = language or detect_language(text)
    for lang in _languages(language):
        about_person = _first_person(_LEADING_NOISE.sub("", text.strip()), lang)
        if about_person is not None:
            return finish(about_person)
    return " ".join(text.split())
