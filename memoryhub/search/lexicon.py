"""Synonyms and near relations of English words from WordNet, when it is
installed: an optional aid to the keyword ranking (index._word_term).

WordNet 3.0 (Princeton's lexical database) ships in Debian's
`wordnet-base` package as its plain dict files (`/usr/share/wordnet`);
no PyPI wheel here carries the data (the `wn` and `nltk` packages download
it at first use, which cannot happen here), and nltk's own reader refuses
paths outside its data folder and wants a `lexnames` file Debian does not
ship. The two files read here, `index.<pos>` and `data.<pos>`, are
documented in wndb(5WN) and have not changed format since 2006, so this
module reads them itself: the lemma's synsets from the index, each synset's
words and pointers from the data file at its byte offset.

MEMORYHUB_WORDNET_DIR names the folder (default `/usr/share/wordnet`; an
empty value turns the lexicon off). Without it every lookup answers
nothing and search ranks as without expansion: WordNet helps paraphrases
(docs/benchmarks.md has the figures both ways), nothing depends on it.
"""

from __future__ import annotations

import os
import threading
from functools import lru_cache
from typing import BinaryIO

from django.conf import settings

DEFAULT_DIR = "/usr/share/wordnet"
_POS = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
# WordNet's own detachment rules (morphy), for the query's inflected forms.
_DETACH = {
    "n": (("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"), ("men", "man"),
          ("ies", "y")),
    "v": (("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"), ("ing", "")),
    "a": (("er", ""), ("est", ""), ("er", "e"), ("est", "e")),
    "r": (),
}
# Relations followed one step from the word's own synsets: hypernym (a
# helmet is headgear), hyponym (a saddle is a seat), similar adjective,
# derivation (reduce/reduction) and pertainym.
_FOLLOWED = ("@", "@i", "~", "~i", "&", "+", "\\")
# The first senses only: WordNet lists a lemma's senses by frequency, and
# the rare ones ("back" as a football position) are where expansion goes wrong.
SENSES = 3

_lock = threading.Lock()
_loaded: dict[str, tuple[dict[str, list[int]], BinaryIO]] | None = None


def folder() -> str:
    return str(getattr(settings, "MEMORYHUB_WORDNET_DIR", os.environ.get("MEMORYHUB_WORDNET_DIR", DEFAULT_DIR)))


def _load() -> dict[str, tuple[dict[str, list[int]], BinaryIO]]:
    global _loaded
    with _lock:
        if _loaded is None:
            _loaded = {}
            root = folder()
            if root and all(os.path.exists(os.path.join(root, f"data.{name}")) for name in _POS.values()):
                for pos, name in _POS.items():
                    offsets: dict[str, list[int]] = {}
                    with open(os.path.join(root, f"index.{name}"), encoding="utf-8") as index_file:
                        for line in index_file:
                            if line.startswith(" "):  # the licence header
                                continue
                            fields = line.split()
                            pointers = int(fields[3])
                            offsets[fields[0]] = [int(o) for o in fields[4 + pointers + 2 :]]
                    _loaded[pos] = (offsets, open(os.path.join(root, f"data.{name}"), "rb"))  # noqa: SIM115
        return _loaded


def available() -> bool:
    return bool(_load())


def _synset(pos: str, offset: int) -> tuple[list[str], list[tuple[str, str, int]]]:
    """The synset's words and its (pointer symbol, pos, offset) pointers."""
    data = _load()[pos][1]
    with _lock:
        data.seek(offset)
        line = data.readline().decode("utf-8")
    fields = line.split("|", 1)[0].split()
    count = int(fields[3], 16)
    words = [fields[4 + 2 * i] for i in range(count)]
    at = 4 + 2 * count
    pointers = []
    for n in range(int(fields[at])):
        symbol, target, target_pos = fields[at + 1 + 4 * n : at + 4 + 4 * n]
        pointers.append((symbol, "a" if target_pos == "s" else target_pos, int(target)))
    return words, pointers


def _lemmas(word: str, pos: str) -> list[str]:
    offsets = _load()[pos][0]
    found = [word] if word in offsets else []
    for ending, replacement in _DETACH[pos]:
        if word.endswith(ending) and (base := word[: -len(ending)] + replacement) in offsets and base not in found:
            found.append(base)
    return found


def _clean(lemma: str) -> str:
    # Adjectives carry a syntactic marker ("big(a)").
    return lemma.split("(", 1)[0].lower()


@lru_cache(maxsize=20_000)
def related(word: str) -> frozenset[str]:
    """Single words WordNet relates to `word` (lower-case, any of its first
    SENSES senses per part of speech): synonyms, and one step along the
    relations in _FOLLOWED. Empty without WordNet."""
    loaded = _load()
    if not loaded or not word.isalpha():
        return frozenset()
    word = word.lower()
    out: set[str] = set()
    for pos in _POS:
        for lemma in _lemmas(word, pos):
            for offset in loaded[pos][0][lemma][:SENSES]:
                words, pointers = _synset(pos, offset)
                out.update(words)
                for symbol, target_pos, target in pointers:
                    if symbol in _FOLLOWED and target_pos in loaded:
                        out.update(_synset(target_pos, target)[0])
    return frozenset(_clean(w) for w in out if "_" not in w and "-" not in w) - {word}
