"""How search reads text: the same tokens for an entry and for a query, in
Python, so SQLite and PostgreSQL give the same answers by construction.

A text becomes words with their spans (`words`). Each word yields index
terms (`terms_of`):

- the word case-folded (ß → ss) and accent-folded (é → e, ö → o; also the
  German spelling oe/ae/ue and ss, so "Strasse", "Straße" and "STRASSE"
  are one term);
- a punctuated form — an id, a price, a version, an address — as a whole
  (`42.90`, `a-99812`, `v2.14.3`, `kc-204511`) and each of its parts
  (`42`, `90`, `a`, `99812`, `v2`, `2.14.3`, `14`, `3`): a query for any
  of them finds it;
- a light stem (English, German, Spanish and French plurals and verb
  endings; `stem`), marked with a leading `~` so an exact match can rank
  above a stemmed one;
- CJK text (Han, kana, Hangul) has no spaces: each run becomes its single
  characters and character bigrams, so a two-character Japanese word is
  found inside a longer run.

Typos are handled at query time against the scope's own vocabulary
(`near`): a query word of four letters or more that is not in the scope
matches the scope's words within one edit (two for words of eight letters
or more), or with a trigram similarity of at least 0.5.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache

# A word: letters/digits, possibly joined by . - / : , + into an id or
# a number (the joiner must sit between two alphanumerics).
_WORD = re.compile(r"[^\W_]+(?:[.\-/:,+'’@][^\W_]+)*")
_PART = re.compile(r"[^\W_]+")
_DIGITS_LETTERS = re.compile(r"\d+|[^\W\d_]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
STEM_MARK = "~"


@dataclass(frozen=True)
class Word:
    text: str
    start: int
    end: int


@lru_cache(maxsize=200_000)
def fold(text: str) -> str:
    """Case and accents away; the German umlaut spellings folded too."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = text.replace("ä", "a").replace("ö", "o").replace("ü", "u")
    text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return text


def _german_spelling(word: str) -> str:
    # "Strasse"/"Straße" fold to the same through casefold; "Koeln"/"Köln" and
    # "Muenchen"/"München" through this (only between consonants and letters,
    # which is where the transliteration occurs).
    return re.sub(r"(?<=[^aeiou\W\d])(ae|oe|ue)(?=[^\W\d])", lambda m: m.group(1)[0], word)


def words(text: str) -> Iterator[Word]:
    for match in _WORD.finditer(text):
        yield Word(match.group(0), match.start(), match.end())


_SUFFIXES = (
    # longest first; each with the shortest stem it may leave
    ("ungen", 4), ("ences", 4), ("ence", 4), ("ances", 4), ("ance", 4), ("ations", 4), ("ation", 4),
    ("ements", 4), ("ement", 4), ("iones", 3), ("ciones", 3),
    ("ments", 4), ("ment", 4), ("nesses", 4), ("ness", 4), ("ings", 3), ("ing", 3), ("ies", 3), ("ied", 3),
    ("ung", 4), ("heit", 4), ("keit", 4), ("chen", 4), ("ern", 4), ("ens", 4), ("est", 4), ("er", 4), ("en", 3),
    ("es", 3), ("ed", 3), ("ly", 4), ("s", 3), ("e", 4), ("n", 4),
)


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light stemmer for the four languages of the corpus: strips one
    common inflectional ending, keeping at least three or four letters.
    Rough on purpose: it only needs to bring the forms of a word together
    (service/services/serviced, Rechnung/Rechnungen, factura/facturas)."""
    if not word.isalpha() or len(word) < 4:
        return word
    for suffix, keep in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= keep:
            base = word[: -len(suffix)]
            if suffix in ("ies", "ied"):
                base += "y"
            # doubled consonant before -ing/-ed: "stopped" → "stop"
            if suffix in ("ing", "ed", "er") and len(base) > 3 and base[-1] == base[-2] and base[-1] not in "aeiouls":
                base = base[:-1]
            return base.rstrip("e") if len(base) > 4 else base
    return word.rstrip("e") if len(word) > 4 else word


def _cjk_terms(run: str) -> list[str]:
    out = list(run)
    out += [run[i : i + 2] for i in range(len(run) - 1)]
    return out


@lru_cache(maxsize=200_000)
def terms_of(word: str) -> tuple[str, ...]:
    """The index terms of one word (see the module docstring)."""
    folded = fold(word)
    found: list[str] = []
    parts = _PART.findall(folded)
    if len(parts) > 1:
        whole = folded.replace("’", "'")
        found.append(whole)
        # the id without its letter prefix: "v2.14.3" → "2.14.3"
        lead = _DIGITS_LETTERS.findall(parts[0])
        if len(lead) > 1 and lead[0].isalpha():
            found.append(whole[len(lead[0]):].lstrip(".-/:,+"))
        if all(p.isdigit() for p in parts) and "," in whole:
            found.append(whole.replace(",", "."))  # 42,90 → 42.90
    for part in parts:
        for cjk in _CJK.findall(part):
            found += _cjk_terms(cjk)
        rest = _CJK.sub(" ", part).split()
        for piece in rest:
            found.append(piece)
            pieces = _DIGITS_LETTERS.findall(piece)
            if len(pieces) > 1:  # "v2" → "v", "2"; "12km" → "12", "km"
                found += pieces
            if piece.isdigit():
                continue
            found.append(STEM_MARK + stem(piece))
            german = _german_spelling(piece)
            if german != piece:
                found += [german, STEM_MARK + stem(german)]
    return tuple(dict.fromkeys(found))


def index_terms(text: str) -> list[str]:
    """Every term of a text, in order, repeated as often as they occur."""
    return [term for word in words(text) for term in terms_of(word.text)]


def trigrams(word: str) -> frozenset[str]:
    padded = f"  {word} "
    return frozenset(padded[i : i + 3] for i in range(len(padded) - 2))


def within_one_edit(a: str, b: str, budget: int) -> bool:
    """Damerau–Levenshtein distance (adjacent transpositions) at most `budget`."""
    if abs(len(a) - len(b)) > budget:
        return False
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, start=1):
            cost = 0 if ca == cb else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        if min(cur) > budget:
            return False
        prev2, prev = prev, cur
    return prev[-1] <= budget


def near(word: str, vocabulary: Iterable[str]) -> list[str]:
    """Words of the vocabulary that `word` is probably a typo of."""
    if len(word) < 4 or not word.isalpha():
        return []
    budget = 2 if len(word) >= 8 else 1
    grams = trigrams(word)
    out = []
    for candidate in vocabulary:
        if candidate == word or candidate.startswith(STEM_MARK) or abs(len(candidate) - len(word)) > budget:
            continue
        if not candidate.isalpha():
            continue
        if candidate[0] != word[0] and candidate[-1] != word[-1]:
            continue
        other = trigrams(candidate)
        similarity = len(grams & other) / len(grams | other)
        if similarity >= 0.5 or within_one_edit(word, candidate, budget):
            out.append(candidate)
    return out
