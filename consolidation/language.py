"""Which language a log entry is in, and where its sentences end.

Language: `lingua-language-detector` (its models ship inside the wheel, so
nothing is downloaded) restricted to the languages an enterprise deployment
meets most, built once per process in low-accuracy mode. Measured on this
machine (docs/consolidation.md): the detector loads in about 0.3 s and
grows the process by about 23 MB; a short entry takes about 0.1 ms. The
high-accuracy mode needs about 8 s and 340 MB for the same languages and
adds little on chat-length text, where lingua alone is weakest anyway: a
one- or two-word entry ("Thanks!", "Call me Dana.") is decided by the
function words of the four languages the heuristic reads, which are
reliable on exactly that kind of text.

Sentences: `pysbd`, one segmenter per language, so "Dr. Weber", "z. B."
and "e.g." do not end a sentence. Text without a terminator inside it (most
chat) never reaches pysbd.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import Any

# The four languages the heuristic backend's patterns read.
SUPPORTED = ("en", "de", "es", "fr")

# ISO 639-1 codes of the languages the detector chooses from: the four, and
# the others a European or global support desk meets most often.
DETECTED = ("en", "de", "es", "fr", "it", "pt", "nl", "pl", "sv", "tr", "ru", "uk", "ja", "zh", "ko", "ar")
# Below this confidence lingua's answer is not taken (short or mixed text).
MIN_CONFIDENCE = 0.5

_WORD = re.compile(r"[^\W\d_][\w'’-]*", re.UNICODE)
# Function words that mark a language even in a two-word chat line.
_FUNCTION_WORDS = {
    "en": {"the", "and", "is", "are", "to", "of", "i", "i'm", "i'd", "you", "my", "for", "with", "that", "please",
           "from", "now", "on", "remember", "prefer", "it", "in", "be", "me", "this", "always", "never", "until",
           "can", "what", "how", "not", "do", "have", "will", "want", "like", "call", "thanks", "user", "prefers",
           "we", "our", "at", "by", "an", "a", "runs", "uses", "actually", "sorry", "meant"},
    "de": {"ich", "und", "der", "die", "das", "ist", "nicht", "mit", "für", "bitte", "mir", "mich", "ein", "eine",
           "zu", "auf", "bis", "ab", "jetzt", "merk", "dir", "dass", "bevorzuge", "mein", "meine", "wohne", "immer",
           "nie", "danke", "sie", "wir", "auch", "wie", "was", "kannst", "du", "habe", "bin", "eigentlich", "nutzen"},
    "es": {"el", "la", "los", "las", "que", "y", "en", "por", "para", "con", "mi", "me", "prefiero", "hasta",
           "favor", "es", "un", "una", "siempre", "nunca", "recuerda", "vivo", "soy", "estoy", "gracias", "del",
           "puedes", "no", "ahora", "gusta", "llamo", "correo", "hola"},
    "fr": {"le", "la", "les", "des", "et", "est", "je", "j'", "pour", "avec", "que", "mon", "ma", "mes", "jusqu'",
           "préfère", "s'il", "vous", "tu", "une", "un", "merci", "pas", "ne", "du", "au", "toujours", "jamais",
           "souviens-toi", "rappelle-toi", "habite", "suis", "désormais", "plaît", "m'appelle", "bonjour"},
}


@functools.cache
def detector() -> Any:
    """The process's one lingua detector (built on first use)."""
    from lingua import IsoCode639_1, Language, LanguageDetectorBuilder

    languages = [Language.from_iso_code_639_1(getattr(IsoCode639_1, code.upper())) for code in DETECTED]
    return LanguageDetectorBuilder.from_languages(*languages).with_low_accuracy_mode().build()


def _function_word_scores(text: str) -> dict[str, int]:
    words = [w.lower().replace("’", "'") for w in _WORD.findall(text)]
    return {lang: sum(1 for w in words if w in stop) for lang, stop in _FUNCTION_WORDS.items()}


def _lingua(text: str) -> tuple[str, float]:
    values = detector().compute_language_confidence_values(text)
    if not values:
        return "", 0.0
    best = values[0]
    return best.language.iso_code_639_1.name.lower(), float(best.value)


def detect(text: str) -> str:
    """The ISO 639-1 code of `text`'s language, or "unknown" when neither
    lingua nor the function words can tell (too short, no letters). The
    first 1,000 characters decide: enough for any language, and a pasted
    log does not cost a run."""
    return _detect(text[:1000])


@functools.lru_cache(maxsize=8192)
def _detect(text: str) -> str:
    letters = [ch for ch in text if ch.isalpha()]
    if not letters:
        return "unknown"
    latin = sum(1 for ch in letters if unicodedata.name(ch, "").startswith("LATIN"))
    if latin / len(letters) < 0.5:
        code, confidence = _lingua(text)
        return code if code and confidence >= 0.2 else "unknown"
    scores = _function_word_scores(text)
    best = max(scores, key=lambda lang: (scores[lang], lang == "en"))
    runner_up = max((score for lang, score in scores.items() if lang != best), default=0)
    if scores[best] >= 2 and scores[best] >= 2 * runner_up:
        return best
    code, confidence = _lingua(text)
    if code and confidence >= MIN_CONFIDENCE and (code in SUPPORTED or len(_WORD.findall(text)) >= 3):
        return code
    return best if scores[best] else "unknown"


# --- sentences -----------------------------------------------------------------------------------

# A terminator followed by more text: only then is there anything to split.
_INNER_END = re.compile(r"[.!?。！？]\s*\S")


@functools.cache
def _segmenter(language: str) -> Any:
    import pysbd

    return pysbd.Segmenter(language=language if language in SUPPORTED else "en", clean=False)


def sentences(text: str, language: str = "en") -> list[str]:
    """`text` cut into sentences, abbreviations respected; newlines always cut."""
    found: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if not _INNER_END.search(line.rstrip(".!?。！？ ")):
            found.append(line)
            continue
        found.extend(part.strip() for part in _segmenter(language).segment(line) if part.strip())
    return found
