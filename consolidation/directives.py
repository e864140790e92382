"""From a sentence in a session log to a memory entry a reviewer can approve
as written: a third-person directive ("Prefers email for routine updates."),
never a chat fragment ("I'd prefer email for routine stuff, honestly").

The heuristic backend finds candidate facts here, in English, German,
Spanish and French:

- "remember (that) …" and its equivalents, also at the end ("…, remember
  that"): a fact to keep;
- "from now on …" (anywhere in the sentence), "please always/never …": a
  standing directive;
- first-person statements about the person ("I prefer …", "I live in …",
  "my <anything> is …", "call me …", "ich bevorzuge …", "prefiero …",
  "je préfère …"), rewritten in the third person; "we …" statements are
  facts about the work and go to MEMORY.md;
- a correction after a lead-in word ("Actually, …", "Sorry, I meant …",
  "Correction: …", "Korrektur: …", "Eigentlich …", "En fait, …",
  "Pardon, …"): a newer statement, marked so that it replaces the entry of
  the same slot;
- the agent's notes; a note about the user ("User prefers …", "Customer
  prefers …") goes to USER.md, others to MEMORY.md.

A trailing reason ("…, it's faster", "…, she got married", "…, I relocated
last month") is left out of the entry: memory keeps the current directive,
the log keeps the reasons.

`detect_language` tells which of the four a text is in, or that it is in
another language the heuristic does not understand (lingua, see
consolidation.language): the run reports those entries instead of ignoring
them, or sends them to the llm backend.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from consolidation import language
from consolidation.language import SUPPORTED

USER = "USER.md"
MEMORY = "MEMORY.md"
__all__ = ("MEMORY", "SUPPORTED", "USER", "Directive", "detect_language", "finish", "from_note", "from_user",
           "rewrite", "third_person")


@dataclass(frozen=True)
class Directive:
    text: str  # the entry: one line, third person, ending with a full stop
    target: str  # USER.md | MEMORY.md
    why: str  # for the reviewer: "a stated preference", …
    language: str  # en | de | es | fr
    correction: bool = False  # said after a lead-in correction ("Actually, …")
    standing: bool = False  # a standing directive ("from now on", "always")
    # Kept only if it replaces an entry of the same slot (a correction that
    # fits no pattern: "Actually, the team agreed on 2-space indentation").
    conditional: bool = False


def detect_language(text: str) -> str:
    """en, de, es or fr; "other" for a language the heuristic does not read
    (`language.detect` names it); "unknown" when it cannot tell (the
    heuristic then tries every pattern it knows)."""
    code = language.detect(text)
    if code in SUPPORTED or code == "unknown":
        return code
    return "other"


# --- cleaning ---------------------------------------------------------------------------

_LEADING_NOISE = re.compile(
    r"^(?:(?:oh|ok|okay|well|so|also|and|btw|by\s+the\s+way|hey|hi|hello|thanks|thank\s+you|one\s+more\s+thing|"
    r"just\s+so\s+you\s+know|fyi|for\s+the\s+record|for\s+future\s+reference|honestly|actually|basically|"
    r"übrigens|ach\s+ja|also|und|hola|oye|por\s+cierto|bueno|y|au\s+fait|bon|alors|et|d['’]ailleurs|"
    r"danke|merci|gracias|please|bitte|por\s+favor|s['’]il\s+(?:te|vous)\s+plaît)\b[,!.:;\s-]*)+",
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


# Greetings and fillers before a correction ("Oh, sorry, I meant …"); the
# correction words themselves are read by _CORRECTION.
_LEADING_NOISE_KEEP_CORRECTIONS = re.compile(
    r"^(?:(?:oh|ok|okay|well|so|and|hey|hi|hello|hmm|ah|und|y|et)\b[,!.:;\s-]*)+", re.IGNORECASE)
# A lead-in that corrects what was said before. The rest of the sentence is
# a newer statement of the same slot.
_CORRECTION = re.compile(
    r"^(?:(?:sorry|oops|wait|no|nope|correction|to\s+correct\s+that|actually|in\s+fact|scratch\s+that|"
    r"i\s+(?:meant|mean)|what\s+i\s+meant\s+(?:is|was)|let\s+me\s+correct\s+that|"
    r"korrektur|berichtigung|eigentlich|nein|sorry|entschuldigung|ich\s+meinte|ich\s+meine|"
    r"en\s+realidad|perdón|perdon|corrección|correccion|quise\s+decir|mejor|"
    r"en\s+fait|pardon|correction|je\s+voulais\s+dire|plutôt)\b[,!.:;\s-]*)+",
    re.IGNORECASE,
)
# "…, remember that." at the end: a request to remember what came before.
_TRAILING_REMEMBER = re.compile(
    r"[,;:\s-]*\b(?:(?:please\s+)?remember\s+(?:that|it|this)|(?:don't|do\s+not)\s+forget\s+(?:that|it)|"
    r"keep\s+that\s+in\s+mind|merk\s+dir\s+das|bitte\s+merken|recuérdalo|recuerda\s+eso|retiens(?:-le)?|"
    r"souviens-t['’]en|n['’]oublie\s+pas)\b[\s.!]*$",
    re.IGNORECASE,
)
# "Quick one: remember that …", "Oh and, please remember: …": a short lead
# before the request to remember.
_REMEMBER_AFTER_LEAD = re.compile(
    r"^[^,:;.!?]{1,30}[,:;]\s*(?:and\s+)?(?:please\s+)?(?:remember|keep\s+in\s+mind|don't\s+forget|merk\s+dir|"
    r"recuerda|rappelle-toi|souviens-toi)(?:\s+(?:that|dass|que|qu['’]))?\s*[,:]?\s+",
    re.IGNORECASE,
)
# "from now on" said anywhere in the sentence.
_STANDING_ANYWHERE = re.compile(
    r"[,;]?\s*\b(?:from\s+now\s+on|going\s+forward|from\s+today\s+on|ab\s+jetzt|ab\s+sofort|von\s+nun\s+an|"
    r"künftig|zukünftig|a\s+partir\s+de\s+ahora|de\s+ahora\s+en\s+adelante|desde\s+ahora|désormais|dorénavant|"
    r"à\s+partir\s+de\s+maintenant|à\s+l['’]avenir)\b\s*,?",
    re.IGNORECASE,
)
# A clause after a comma that gives the reason, not the directive: "…, it's
# faster", "…, she got married", "…, I relocated last month", "…, because …".
_REASON_TAIL = re.compile(
    r",\s+(?:(?:it|that|this)(?:['’]s|\s+is|\s+was|\s+always|\s+said)\b|i(?:['’]m|\s+am|\s+was|\s+only|\s+have|"
    r"['’]ve|\s+relocated|\s+moved|['’]ll|\s+will|\s+take)\b|(?:she|he|they|we)\s+\w+|the\s+manager\b|"
    r"my\s+\w+\s+(?:is|are|was)\b|(?:\w+\s+)?is\s+(?:easier|better|faster|simpler|quicker|more)\b|"
    r"\w+\s+said\s+so\b|(?:because|since|as|so|though|although|otherwise)\b|finance\s+asked|black\s+enforces|"
    r"c['’]est\b|es\s+(?:más|que)\b|weil\b|da\s+\w+|denn\b|porque\b|ya\s+que\b|parce\s+que\b|car\b)"
    r".*$",
    re.IGNORECASE,
)


def _without_reason(text: str) -> str:
    return _REASON_TAIL.sub("", text).strip()


# --- first person → third person ------------------------------------------------------------

_EN_REST = [
    (re.compile(r"\bI\s+am\b"), "they are"), (re.compile(r"\bI'm\b|\bI’m\b"), "they're"),
    (re.compile(r"\bI\s+was\b"), "they were"), (re.compile(r"\bI've\b|\bI’ve\b"), "they've"),
    (re.compile(r"\bI'd\b|\bI’d\b"), "they'd"), (re.compile(r"\bI'll\b|\bI’ll\b"), "they'll"),
    (re.compile(r"\bI\b"), "they"), (re.compile(r"\bmyself\b", re.I), "themselves"),
    (re.compile(r"\bmine\b", re.I), "theirs"), (re.compile(r"\bmy\b", re.I), "their"),
    (re.compile(r"\bme\b", re.I), "them"),
]
_DE_REST = [(re.compile(r"\bmir\b", re.I), "dem Nutzer"), (re.compile(r"\bmich\b", re.I), "den Nutzer"),
            (re.compile(r"\bmeine\b"), "seine"), (re.compile(r"\bmeinen\b"), "seinen"),
            (re.compile(r"\bmeinem\b"), "seinem"), (re.compile(r"\bmeiner\b"), "seiner"),
            (re.compile(r"\bmein\b"), "sein")]
# Spanish object and possessive pronouns: "que me escriban" → "que le escriban".
_ES_REST = [(re.compile(r"\bmis\b", re.I), "sus"), (re.compile(r"\bmi\b", re.I), "su"),
            (re.compile(r"\bme\b", re.I), "le"), (re.compile(r"\bconmigo\b", re.I), "con él"),
            (re.compile(r"\bmí\b", re.I), "él")]
_FR_REST = [(re.compile(r"\bmoi\b", re.I), "lui"), (re.compile(r"\bmon\b", re.I), "son"),
            (re.compile(r"\bma\b", re.I), "sa"), (re.compile(r"\bmes\b", re.I), "ses"),
            (re.compile(r"\bme\b", re.I), "le"), (re.compile(r"\bm['’]", re.I), "l'")]
_REST = {"en": _EN_REST, "de": _DE_REST, "es": _ES_REST, "fr": _FR_REST}


def third_person(text: str, language: str) -> str:
    for pattern, replacement in _REST.get(language, ()):
        text = pattern.sub(replacement, text)
    return text


_EN_VERBS = {"prefer": "prefers", "like": "likes", "love": "loves", "enjoy": "enjoys", "hate": "dislikes",
             "dislike": "dislikes", "live": "lives", "work": "works", "use": "uses", "speak": "speaks",
             "drink": "drinks", "eat": "eats", "avoid": "avoids", "own": "owns", "drive": "drives",
             "commute": "commutes", "read": "reads", "need": "needs", "want": "wants", "review": "reviews",
             "write": "writes", "check": "checks", "start": "starts", "finish": "finishes", "travel": "travels",
             "fly": "flies", "deploy": "deploys", "run": "runs", "code": "codes", "teach": "teaches",
             "manage": "manages", "lead": "leads", "report": "reports", "study": "studies", "ride": "rides",
             "bike": "bikes", "walk": "walks", "go": "goes", "have": "has", "keep": "keeps", "take": "takes",
             "switched": "switched", "moved": "moved", "changed": "changed", "stopped": "stopped",
             "started": "started", "joined": "joined", "left": "left", "relocated": "relocated"}
_DE_VERBS = {"bevorzuge": "bevorzugt", "mag": "mag", "liebe": "liebt", "hasse": "hasst", "wohne": "wohnt",
             "lebe": "lebt", "arbeite": "arbeitet", "nutze": "nutzt", "benutze": "benutzt", "verwende": "verwendet",
             "spreche": "spricht", "trinke": "trinkt", "esse": "isst", "möchte": "möchte", "brauche": "braucht",
             "fahre": "fährt", "hätte": "hätte", "bin": "ist", "habe": "hat", "fliege": "fliegt",
             "reise": "reist", "komme": "kommt", "gehe": "geht", "lese": "liest", "schreibe": "schreibt",
             "prüfe": "prüft"}
_ES_VERBS = {"prefiero": "prefiere", "vivo": "vive", "trabajo": "trabaja", "uso": "usa", "utilizo": "utiliza",
             "hablo": "habla", "bebo": "bebe", "como": "come", "odio": "odia", "quiero": "quiere",
             "necesito": "necesita", "evito": "evita", "tengo": "tiene", "viajo": "viaja", "vuelo": "vuela",
             "soy": "es", "estoy": "está", "reviso": "revisa", "escribo": "escribe"}
_FR_VERBS = {"préfère": "préfère", "prefere": "préfère", "aime": "aime", "adore": "adore", "déteste": "déteste",
             "habite": "habite", "vis": "vit", "travaille": "travaille", "utilise": "utilise", "parle": "parle",
             "bois": "boit", "mange": "mange", "veux": "veut", "voudrais": "voudrait", "évite": "évite",
             "ai": "a", "voyage": "voyage", "pars": "part", "suis": "est"}
_VERBS = {"en": _EN_VERBS, "de": _DE_VERBS, "es": _ES_VERBS, "fr": _FR_VERBS}

_STATE = (r"(?:based|located|from|allergic|vegetarian|vegan|lactose|gluten|diabetic|left-handed|colou?r-?blind|"
          r"deaf|blind|pregnant|on\s+(?:vacation|holiday|leave|parental\s+leave|call|sabbatical|the\s+[\w -]+team)|"
          r"out\s+of\s+(?:the\s+)?office|away|travell?ing|flying|working\s+from|in\s+the\s+[\w/+-]+\s+time\s*zone|"
          r"part\s+of|in\s+charge\s+of|responsible\s+for|"
          r"an?\s+(?:nurse|teacher|doctor|developer|engineer|manager|designer|student|lawyer|accountant|"
          r"consultant|architect|researcher|\w+ist|\w+ian))\b")
_VAGUE_OBJECT = re.compile(r"^(?:it|that|this|these|those|what|how|your|yours|the\s+way\s+you|to\s+see|"
                           r"when\s+you)\b", re.IGNORECASE)
# Adjectives that say "this replaces an earlier value": "my new address is".
_NEWNESS = re.compile(r"^(?:new|current|present|updated|latest|neue[nrs]?|aktuelle[nrs]?|nuev[oa]|actual|"
                      r"nouvel(?:le)?|nouveau|actuel(?:le)?)\s+", re.IGNORECASE)

_FIRST_PERSON: dict[str, list[tuple[re.Pattern[str], str]]] = {
    "en": [
        (re.compile(r"^(?P<pre>(?:for|when|on|in|during|at|with|after|before)\s+[^,]+?),?\s+i(?:'d|’d|\s+would)?\s+"
                    r"(?:much\s+|really\s+)?prefer\s+(?P<rest>.+)", re.I | re.S), "Prefers {rest} {pre}"),
        (re.compile(r"^i(?:'d|’d|\s+would)\s+(?:much\s+)?rather\s+(?:get|have|use|receive|be\s+sent)\s+"
                    r"(?P<rest>.+?)\s+than\s+(?P<other>.+)", re.I | re.S), "Prefers {rest} over {other}"),
        (re.compile(r"^i(?:'d|’d|\s+would)\s+(?:much\s+|really\s+|strongly\s+)?(?:prefer|rather\s+have)\s+(?P<rest>.+)",
                    re.I | re.S), "Prefers {rest}"),
        (re.compile(r"^i\s+(?:don't|don’t|do\s+not|never)\s+(?P<verb>like|want|use|eat|drink|drive|work)\s+"
                    r"(?P<rest>.+)", re.I | re.S), "Does not {verb} {rest}"),
        (re.compile(r"^i\s+(?:much\s+|really\s+|strongly\s+|generally\s+|usually\s+|always\s+|mostly\s+|only\s+|also\s+|"
                    r"now\s+|still\s+)?"
                    r"(?P<verb>prefer|like|love|enjoy|hate|dislike|live|work|use|speak|drink|eat|avoid|own|drive|"
                    r"commute|review|write|travel|deploy|code|teach|manage|lead|study|ride|bike|walk|keep|take|have|"
                    r"switched|moved|changed|stopped|started|joined|relocated)\s+(?P<rest>.+)", re.I | re.S),
         "{verb3} {rest}"),
        (re.compile(rf"^i(?:'m|’m|\s+am)\s+(?P<rest>{_STATE}.*)", re.I | re.S), "Is {rest}"),
        (re.compile(r"^(?:make\s+it|switch\s+(?:it\s+)?to|change\s+(?:it\s+)?to|go\s+with)\s+(?P<rest>.+)",
                    re.I | re.S), "Prefers {rest}"),
        (re.compile(r"^my\s+(?P<what>(?:[\w'’./-]+\s+){0,4}?[\w'’./-]+)\s+(?P<is>is|are)\s+(?P<rest>.+)",
                    re.I | re.S), "{What} {is} {rest}"),
        (re.compile(r"^(?i:please\s+)?(?i:call)\s+(?i:me)\s+(?P<rest>[A-Z]\w*(?:\s+[A-Z]\w*)?)[.!]?$", re.S),
         "Wants to be called {rest}"),
    ],
    "de": [
        # A clause after "dass" puts the verb last: "dass ich bis Freitag im Urlaub bin".
        (re.compile(r"^ich\s+(?P<rest>.+?)\s+(?P<verb>bin|bevorzuge|mag|liebe|wohne|lebe|arbeite|nutze|benutze|"
                    r"verwende|spreche|trinke|esse|habe|fliege|reise)[.!]?$", re.I | re.S), "{verb3} {rest}"),
        (re.compile(r"^ich\s+(?P<verb>bevorzuge|mag|liebe|hasse|wohne|lebe|arbeite|nutze|benutze|verwende|spreche|"
                    r"trinke|esse|fahre|fliege|reise|prüfe|schreibe|lese)\s+(?P<rest>.+)", re.I | re.S),
         "{verb3} {rest}"),
        (re.compile(r"^ich\s+(?P<verb>möchte|hätte)\s+(?P<rest>(?:lieber|gern|gerne)\s+.+)", re.I | re.S),
         "{verb3} {rest}"),
        (re.compile(r"^ich\s+bin\s+(?P<rest>(?:vegetarier|vegetarierin|veganer|veganerin|allergisch|im\s+urlaub|"
                    r"bis|in\s+elternzeit|nicht\s+im\s+büro|aus|von|jetzt|ab|am|im|in|auf)\b.*)", re.I | re.S),
         "Ist {rest}"),
        (re.compile(r"^mein(?:e)?\s+(?P<what>[A-ZÄÖÜ][\wäöüß-]*)\s+(?P<rest>.+?)\s+ist[.!]?$", re.S),
         "{What} ist {rest}"),
        (re.compile(r"^mein(?:e)?\s+(?P<what>(?:[\wäöüß'-]+\s+){0,3}?[\wäöüß'-]+)\s+ist\s+(?P<rest>.+)",
                    re.I | re.S), "{What} ist {rest}"),
        (re.compile(r"^(?:bitte\s+)?nenn(?:en\s+sie|e)?\s+mich\s+(?P<rest>.+)", re.I | re.S),
         "Möchte {rest} genannt werden"),
    ],
    "es": [
        (re.compile(r"^(?:yo\s+)?(?P<verb>prefiero|vivo|trabajo|uso|utilizo|hablo|bebo|odio|evito|tengo|viajo|"
                    r"reviso|escribo)\s+(?P<rest>.+)", re.I | re.S), "{verb3} {rest}"),
        (re.compile(r"^(?:a\s+mí\s+)?no\s+me\s+gusta(?P<n>n?)\s+(?P<rest>.+)", re.I | re.S), "No le gusta{n} {rest}"),
        (re.compile(r"^(?:a\s+mí\s+)?me\s+gusta(?P<n>n?)\s+(?P<rest>.+)", re.I | re.S), "Le gusta{n} {rest}"),
        (re.compile(r"^(?:yo\s+)?(?P<verb>estoy)\s+(?P<rest>.+)", re.I | re.S), "Está {rest}"),
        (re.compile(r"^(?:yo\s+)?(?P<verb>soy)\s+(?P<rest>.+)", re.I | re.S), "Es {rest}"),
        (re.compile(r"^(?:me\s+llamo|mi\s+nombre\s+es)\s+(?P<rest>.+)", re.I | re.S), "Se llama {rest}"),
        (re.compile(r"^mi\s+(?P<what>(?:[\wáéíóúñ'-]+\s+){0,4}?[\wáéíóúñ'-]+)\s+es\s+(?P<rest>.+)", re.I | re.S),
         "{What} es {rest}"),
        (re.compile(r"^(?:por\s+favor,?\s+)?llámame\s+(?P<rest>.+)", re.I | re.S), "Quiere que le llamen {rest}"),
    ],
    "fr": [
        (re.compile(r"^(?:je\s+|j['’])(?P<verb>préfère|prefere|aime|adore|déteste|habite|vis|travaille|utilise|"
                    r"parle|bois|mange|évite|voyage|pars)\s+(?P<rest>.+)", re.I | re.S), "{verb3} {rest}"),
        (re.compile(r"^je\s+suis\s+(?P<rest>.+)", re.I | re.S), "Est {rest}"),
        (re.compile(r"^(?:je\s+m['’]appelle|mon\s+nom\s+est)\s+(?P<rest>.+)", re.I | re.S), "S'appelle {rest}"),
        (re.compile(r"^(?:mon|ma)\s+(?P<what>(?:[\wàâçéèêëîïôûùüÿœ'-]+\s+){0,4}?[\wàâçéèêëîïôûùüÿœ'-]+)\s+est\s+"
                    r"(?:le\s+|la\s+|l['’])?(?P<rest>.+)", re.I | re.S), "{What} est {rest}"),
        (re.compile(r"^(?:s['’]il\s+(?:te|vous)\s+plaît,?\s+)?appelle(?:z)?-moi\s+(?:plutôt\s+)?(?P<rest>.+)",
                    re.I | re.S), "Veut être appelé {rest}"),
    ],
}


def _en_third(verb: str) -> str:
    lowered = verb.lower()
    if lowered in _EN_VERBS:
        return _EN_VERBS[lowered]
    if lowered.endswith(("s", "sh", "ch", "x", "o")):
        return lowered + "es"
    return lowered + "s"


_REMEMBER = {
    "en": re.compile(r"^(?:please\s+)?(?:remember|keep\s+in\s+mind|make\s+a\s+note|note|don't\s+forget|"
                     r"do\s+not\s+forget)(?:\s+that|\s+to)?\s*[,:]?\s+(?P<rest>.+)$", re.I | re.S),
    "de": re.compile(r"^(?:bitte\s+)?(?:merk(?:e)?\s+dir|bitte\s+merken|denk(?:e)?\s+daran|vergiss\s+nicht|"
                     r"notier(?:e)?\s+dir)(?:\s+bitte)?(?:\s*,)?(?:\s+außerdem|\s+auch)?(?:\s+dass)?\s*[,:]?\s+"
                     r"(?P<rest>.+)$", re.I | re.S),
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
# A note about the person: "User prefers …", "Customer prefers …" (not
# "Customer's router is …" or "Customer asked …", which are about the work).
_PERSON = (r"(?:customer|client|patient|caller|member|kunde|kundin|patientin|cliente|paciente|patiente)")
_ABOUT_USER = re.compile(
    r"^(?:the\s+)?user(?:['’]s|s['’])?\s+(?P<rest>.+)$|^(?:der\s+|die\s+)?(?:nutzer(?:in)?|benutzer(?:in)?)\s+"
    r"(?P<rest_de>.+)$|^(?:el\s+|la\s+)?usuari[oa]\s+(?P<rest_es>.+)$|^l['’]utilisat(?:eur|rice)\s+(?P<rest_fr>.+)$"
    rf"|^(?:the\s+|der\s+|die\s+|el\s+|la\s+|le\s+|this\s+)?{_PERSON}\s+(?P<rest_person>(?:prefers|wants|likes|"
    r"dislikes|speaks|lives|works|is\s+(?:in|based|from|a|an|on)|uses|needs|bevorzugt|möchte|spricht|wohnt|"
    r"prefiere|quiere|habla|vive|préfère|veut|parle|habite)\b.+)$",
    re.I | re.S,
)
_NOTE_LEAD = re.compile(r"^(?:note|learned|learnt|lesson|til|fyi|memo)\s*[:-]\s*", re.I)
_FIRST_PERSON_MARK = re.compile(
    r"\b(?:i|i'm|i’m|i've|i'd|i'll|my|me|mine|myself|ich|mich|mir|mein\w*|yo|mi|mis|me|je|j['’]|moi|mon|ma|mes)\b"
    r"|^call\s+me\b",
    re.I,
)
# "We …" statements are about the work, not the person.
_WE = re.compile(r"^(?P<verb>\w+)\s+wir\b(?P<rest>.*)$|^(?:we|wir|nosotros|nous)\b", re.I | re.S)
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
        what = _NEWNESS.sub("", " ".join(groups.get("what", "").split()))
        if language == "en":
            verb3 = _en_third(verb).capitalize() if verb else ""
        else:
            verb3 = _VERBS[language].get(verb.lower(), verb).capitalize() if verb else ""
        values = {
            "rest": third_person(rest, language),
            "verb": verb.lower(),
            "verb3": verb3,
            "What": third_person(what, language).capitalize(),
            "is": groups.get("is", "is").lower(),
            "n": groups.get("n", ""),
            "pre": groups.get("pre", "").lower(),
            "other": third_person(groups.get("other", "").strip().rstrip(" .!…"), language),
        }
        return template.format(**values)
    return None


def _languages(preferred: str) -> tuple[str, ...]:
    if preferred in SUPPORTED:
        return (preferred, *(lang for lang in _LANGUAGE_OF_TEXT if lang != preferred))
    return _LANGUAGE_OF_TEXT


def _we(sentence: str) -> str | None:
    """A "we" statement as said ("Wir nutzen im Projekt yarn, nicht npm."),
    the verb put back after the subject when a lead-in inverted it."""
    match = _WE.match(sentence)
    if match is None:
        return None
    if match.group("verb"):
        return f"Wir {match.group('verb').lower()}{match.group('rest')}"
    return sentence


def from_user(sentence: str, *, language: str) -> Directive | None:
    """The entry a user's sentence asks to keep, or None for ordinary chat."""
    sentence = " ".join(sentence.split()).strip()
    correction = False
    lead = _CORRECTION.match(_LEADING_NOISE_KEEP_CORRECTIONS.sub("", sentence))
    if lead and lead.end() < len(lead.string):
        sentence, correction = lead.string[lead.end():].strip(), True
    sentence = _LEADING_NOISE.sub("", sentence).strip()
    if not sentence or sentence.endswith("?"):
        return None
    remember = False
    if (tail := _TRAILING_REMEMBER.search(sentence)) and tail.start() > 0:
        sentence, remember = sentence[:tail.start()].strip(), True
    if (inner := _REMEMBER_AFTER_LEAD.match(sentence)) is not None:
        sentence, remember = sentence[inner.end():].strip(), True
    standing = False
    if (mid := _STANDING_ANYWHERE.search(sentence)) and mid.start() > 0:
        sentence = _without_reason(sentence)
        mid = _STANDING_ANYWHERE.search(sentence)
        if mid is not None and mid.start() > 0:
            sentence = (sentence[:mid.start()] + " " + sentence[mid.end():]).strip(" ,")
        standing = True
    found = _read_user(sentence, language=language, remember=remember, standing=standing, correction=correction)
    if found is None:
        return None
    return replace(found, correction=correction or found.correction, standing=standing or found.standing)


def _read_user(sentence: str, *, language: str, remember: bool, standing: bool, correction: bool
               ) -> Directive | None:
    sentence = _without_reason(_LEADING_NOISE.sub("", sentence).strip())
    for lang in _languages(language):
        rest = None
        if match := _REMEMBER[lang].match(sentence):
            rest = _without_reason(_LEADING_NOISE.sub("", match.group("rest")).strip())
        elif remember:
            rest = sentence
        if rest is not None:
            about_person = _first_person(rest, lang) or _state(rest, lang)
            if about_person is not None:
                return Directive(finish(about_person), USER, "the user asked to remember it", lang)
            if _FIRST_PERSON_MARK.search(rest):
                return Directive(finish(third_person(rest, lang)), USER, "the user asked to remember it", lang)
            we = _we(rest)
            return Directive(finish(we or rest), MEMORY, "the user asked to remember it", lang)
        if match := _FROM_NOW_ON[lang].match(sentence):
            rest = _without_reason(match.group("rest"))
            about_person = _first_person(rest, lang)
            text = about_person if about_person is not None else third_person(rest, lang)
            return Directive(finish(text), USER, "a standing directive from the user", lang, standing=True)
        if match := _ALWAYS[lang].match(sentence):
            return Directive(finish(third_person(match.group("rest"), lang)), USER,
                             "a standing directive from the user", lang, standing=True)
        if lang == "en" and (match := _DONT_EVER.match(sentence)):
            return Directive(finish("Never " + third_person(match.group("rest"), lang)), USER,
                             "a standing directive from the user", lang, standing=True)
        about_person = _first_person(sentence, lang)
        if about_person is not None:
            why = "a correction by the user" if correction else "a statement by the user about themselves"
            return Directive(finish(about_person), USER, why, lang)
        if standing:
            return Directive(finish(third_person(sentence, lang)), USER, "a standing directive from the user", lang,
                             standing=True)
        if correction:
            we = _we(sentence)
            if we is not None:
                return Directive(finish(we), MEMORY, "a correction by the user", lang)
    if correction:
        # A correction that fits no pattern ("Actually, the team agreed on
        # 2-space indentation"): kept as said; the backend keeps it only
        # when it replaces an entry of the same slot.
        return Directive(finish(third_person(sentence, language if language in SUPPORTED else "en")), USER,
                         "a correction by the user", language if language in SUPPORTED else "en", correction=True,
                         conditional=True)
    return None


_STATE_ANY = {
    "en": re.compile(r"^i(?:'m|’m|\s+am)\s+(?P<rest>.+)$", re.I | re.S),
    "de": re.compile(r"^ich\s+bin\s+(?P<rest>.+)$", re.I | re.S),
    "es": re.compile(r"^(?:yo\s+)?(?:estoy|soy)\s+(?P<rest>.+)$", re.I | re.S),
    "fr": re.compile(r"^je\s+suis\s+(?P<rest>.+)$", re.I | re.S),
}
_STATE_VERB = {"en": "Is", "de": "Ist", "es": "Está", "fr": "Est"}
# A time phrase said first ("in two weeks I'm in Tokyo"): read the sentence
# as if it came last.
_LEADING_TIME = re.compile(
    r"^(?P<time>(?:in|next|this|on|from|until|by|tomorrow|today|am|ab|bis|im|nächste\w*|morgen|en|el|la|dans|le|"
    r"demain|à\s+partir\s+du)\b[^,]*?),?\s+(?P<rest>(?:i|ich|yo|je)\b.+)$",
    re.I | re.S,
)


def _state(rest: str, language: str) -> str | None:
    """What a remember-request says about the person's state ("remember that
    I'm in Tokyo in two weeks"), in the third person."""
    moved = _LEADING_TIME.match(rest)
    if moved:
        rest = f"{moved.group('rest').rstrip(' .!')} {moved.group('time')}"
        rewritten = _first_person(rest, language)
        if rewritten is not None:
            return rewritten
    match = _STATE_ANY.get(language, _STATE_ANY["en"]).match(rest)
    if match is None:
        return None
    return f"{_STATE_VERB.get(language, 'Is')} {third_person(match.group('rest'), language)}"


def from_note(line: str, *, language: str) -> Directive | None:
    """The entry an agent's note makes: about the user → USER.md, else MEMORY.md."""
    line = _NOTE_LEAD.sub("", line.strip())
    for lang in _languages(language):
        if match := _REMEMBER[lang].match(line):
            line = match.group("rest")
            break
    lang = language if language in SUPPORTED else "en"
    match = _ABOUT_USER.match(line)
    if match is not None:
        rest = next(value for value in match.groupdict().values() if value)
        return Directive(finish(rest), USER, "the agent noted it", lang)
    text = finish(line)
    return Directive(text, MEMORY, "the agent noted it", lang) if text else None


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
