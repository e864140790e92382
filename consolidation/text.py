"""Comparing memory entries by what they say, not by how they are spelled.

Three measures, shared by the heuristic backend and the pipeline's guards:

- `fact_key`: the content words of an entry, lowercased, stemmed, with
  subjects ("I", "the user", "ich", "yo", "je"), fillers ("honestly",
  "really") and stopwords removed and a few synonyms folded ("brief" and
  "concise" are "short"). "I'd prefer brief replies, honestly" and
  "Prefers short answers." have the same key: duplicates are found on it.
- `information_recall`: the share of an entry's key words found anywhere in
  another text; the loss guard sums what each prior entry loses.
- `distinctive_tokens`: numbers, names and ids ("5433", "Lisbon", "JIRA-12",
  "ops@example.com"), which a merge or an update must keep.

Deliberately small and explicit: a stemmer of a dozen suffix rules and word
lists a reviewer can read, in English, German, Spanish and French.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

_WORD = re.compile(r"[^\W_](?:[\w'’.+#@/:-]*[^\W_+#]|[+#]*)?|\d+", re.UNICODE)

SUBJECTS = frozenset({
    # English
    "i", "i'm", "i've", "i'd", "i'll", "me", "my", "mine", "myself", "user", "user's", "users", "the", "they",
    "them", "their", "theirs", "themselves", "he", "she", "his", "her", "him", "you", "your", "yours",
    # German
    "ich", "mich", "mir", "mein", "meine", "meinen", "meinem", "meiner", "nutzer", "nutzerin", "benutzer",
    "benutzerin", "du", "dir", "dich", "sie", "ihr", "ihm", "ihre", "sein", "seine",
    # Spanish
    "yo", "mi", "mis", "usuario", "usuaria", "tú", "tu", "te", "le", "su", "sus",
    # French
    "je", "j'", "moi", "mon", "ma", "mes", "utilisateur", "utilisatrice", "toi", "lui", "son", "sa", "ses",
})
FILLERS = frozenset({
    "honestly", "really", "actually", "just", "please", "basically", "kinda", "tbh", "ok", "okay", "oh", "well",
    "also", "btw", "thanks", "thank", "pretty", "quite", "very", "much", "rather", "bitte", "wirklich", "ehrlich",
    "eigentlich", "gerne", "gern", "favor", "realmente", "sinceramente", "vraiment", "honnêtement", "plaît",
    "s'il", "merci", "danke", "gracias",
})
STOPWORDS = frozenset({
    # English
    "a", "an", "the", "to", "for", "of", "in", "on", "at", "with", "and", "or", "by", "from", "as", "is", "are",
    "be", "been", "was", "were", "it", "its", "this", "that", "these", "those", "we", "our", "all", "any", "so",
    "but", "if", "then", "than", "when", "do", "does", "did", "would", "should", "will", "can", "could", "about",
    "into", "over", "via", "like", "prefer", "prefers", "preferred", "preference", "wants", "want",
    "always", "immer", "siempre", "toujours",
    # German
    "der", "die", "das", "den", "dem", "des", "ein", "eine", "einen", "einem", "einer", "und", "oder", "zu",
    "für", "mit", "von", "auf", "im", "am", "ist", "sind", "bei", "als", "wie", "es", "bevorzugt",
    "bevorzuge", "lieber", "mag", "möchte",
    # Spanish
    "el", "la", "los", "las", "un", "una", "unos", "unas", "y", "o", "de", "del", "en", "con", "por", "para",
    "que", "al", "lo", "prefiero", "prefiere",
    # French
    "le", "les", "du", "et", "ou", "à", "au", "aux", "avec", "pour", "par", "est", "l'",
    "d'", "préfère", "préfèrent",
})
# Words that mean the same thing to a reader of USER.md, folded before
# comparing (both sides), never written into an entry.
SYNONYMS = {
    "brief": "short", "concise": "short", "terse": "short", "kurz": "short", "kurze": "short", "corto": "short",
    "cortas": "short", "courte": "short", "courtes": "short",
    "answer": "reply", "answers": "reply", "response": "reply", "responses": "reply", "replies": "reply",
    "antwort": "reply", "antworten": "reply", "respuesta": "reply", "respuestas": "reply", "réponse": "reply",
    "réponses": "reply",
    "e-mail": "email", "e-mails": "email", "emails": "email", "mail": "email", "correo": "email",
    "courriel": "email",
    "phone": "call", "telephone": "call", "ring": "call", "calls": "call", "anruf": "call", "llamada": "call",
    "appel": "call",
}
NEGATIONS = frozenset({
    "not", "never", "don't", "dont", "doesn't", "no", "nor", "without", "dislike", "dislikes", "hate", "hates",
    "avoid", "avoids", "nicht", "nie", "niemals", "kein", "keine", "ohne", "nunca", "jamás", "sin", "ne", "n'",
    "jamais", "pas", "sans", "instead",
})
_SUFFIXES = ("ingly", "ings", "ing", "edly", "ed", "ies", "es", "s", "ly", "e")


def tokens(text: str) -> list[str]:
    """Lowercased words, numbers and ids; apostrophes are kept inside words."""
    return [word.replace("’", "'") for word in _WORD.findall(text.lower())]


@functools.lru_cache(maxsize=16384)
def stem(word: str) -> str:
    """A dozen suffix rules: enough to make "updates", "update" and
    "updated" one word; numbers and ids are left alone."""
    if not word.isalpha() or len(word) <= 3:
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= (4 if suffix == "ly" else 3):
            word = word[: -len(suffix)]
            break
    # "preferred" → "preferr" → "prefer"
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiousl":
        word = word[:-1]
    return word


def content_words(text: str) -> list[str]:
    words: list[str] = []
    for word in tokens(text):
        if word.startswith(("j'", "l'", "d'", "m'", "n'", "s'", "t'", "qu'", "c'")) and len(word) > 2:
            word = word.split("'", 1)[1]
        if word in SUBJECTS or word in FILLERS or word in STOPWORDS or word in NEGATIONS:
            continue
        words.append(SYNONYMS.get(word, word))
    return words


# A run compares every candidate with every entry: the keys of the same few
# hundred strings are computed once.
@functools.lru_cache(maxsize=8192)
def fact_key(text: str) -> frozenset[str]:
    """What an entry says, as a set of stems (see the module docstring)."""
    return frozenset(stem(SYNONYMS.get(word, word)) for word in content_words(text))


@functools.lru_cache(maxsize=8192)
def is_negative(text: str) -> bool:
    words = set(tokens(text))
    return bool(words & NEGATIONS) or "n't" in text.lower()


def jaccard(left: frozenset[str], right: frozenset[str]) -> float:
    if not left or not right:
        return 0.0
    return len(left & right) / len(left | right)


NEAR_DUPLICATE = 0.75


def same_fact(a: str, b: str) -> bool:
    """Duplicates on normalised text: the same key words (or nearly), or all
    the key words of one inside the other ("Prefers short answers, code
    first." says nothing "Prefers short answers with a code sample first"
    does not), said with the same polarity."""
    if is_negative(a) != is_negative(b):
        return False
    left, right = fact_key(a), fact_key(b)
    if not left or not right:
        return " ".join(tokens(a)) == " ".join(tokens(b))
    if left == right or jaccard(left, right) >= NEAR_DUPLICATE:
        return True
    return subsumes(a, b) or subsumes(b, a)


# The smaller entry of a subsumption must say at least this much: "Uses
# Python" inside "Uses Python 3.12 and dbt" is one fact; one word is not.
SUBSUMED_MIN_WORDS = 2


def subsumes(a: str, b: str) -> bool:
    """Every key word of `b` is in `a` (and `b` has at least two): `a` says
    all `b` says."""
    wider, narrower = fact_key(a), fact_key(b)
    return len(narrower) >= SUBSUMED_MIN_WORDS and narrower < wider and is_negative(a) == is_negative(b)


def key_words(texts: Iterable[str]) -> set[str]:
    found: set[str] = set()
    for text in texts:
        found |= fact_key(text)
    return found


def information_recall(entry: str, available: set[str]) -> float:
    """The share of `entry`'s key words present in `available` (1.0 when the
    entry has none, e.g. a heading of stopwords)."""
    key = fact_key(entry)
    if not key:
        return 1.0
    return len(key & available) / len(key)


# Numbers, ids, e-mail addresses, paths, and capitalised words that do not
# start a sentence: the part of a fact that a paraphrase must not lose.
_DISTINCTIVE_RAW = re.compile(
    r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"  # e-mail
    r"|(?:https?://|/)[\w./~%-]+"  # URL or path
    r"|\b[\w-]*\d[\w.:/-]*"  # anything with a digit: 5433, v2.1, 14:00, JIRA-12
    r"|\b[A-Z]{2,}[\w-]*"  # acronyms and ALLCAPS ids
    r"|\b[a-z]+[A-Z]\w*"  # camelCase
    r"|\b\w+_\w+"  # snake_case
)
_CAPITALISED = re.compile(r"(?<![.!?:]\s)(?<!^)\b[A-ZÄÖÜÁÉÍÓÚÑÀÈÙÂÊÎÔÛÇ][a-zäöüßáéíóúñàèùâêîôûç]+")
_COMMON_CAPITALISED = frozenset({
    "i", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "english", "german",
    "spanish", "french", "user", "prefers", "always", "never", "use", "do", "don't", "please",
})


def distinctive_tokens(text: str) -> set[str]:
    return set(_distinctive_tokens(text))


@functools.lru_cache(maxsize=8192)
def _distinctive_tokens(text: str) -> frozenset[str]:
    found = {match.group(0).lower().rstrip(".,;:") for match in _DISTINCTIVE_RAW.finditer(text)}
    stripped = text.strip()
    for match in _CAPITALISED.finditer(stripped):
        word = match.group(0)
        if word.lower() not in _COMMON_CAPITALISED:
            found.add(word.lower())
    return frozenset(word for word in found if word)


def lost_distinctive(before: Iterable[str], after: str) -> list[str]:
    """Distinctive tokens of `before` that do not occur in `after`."""
    present = after.lower()
    kept: list[str] = []
    for text in before:
        for token in sorted(distinctive_tokens(text)):
            if token not in present and token not in kept:
                kept.append(token)
    return kept
