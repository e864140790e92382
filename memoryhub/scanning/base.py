"""What every scanner rule shares: the finding, the rule protocol, the
normalised and folded views of a text, and the phrase engine that keeps the
language rules fast.

Two views of a text, both derived once per text and shared by all rules:

- `normalize(text)`: NFKC, minus format (Cf) characters. Secrets are matched
  here, case and digits intact.
- `Views.folded`: the normalised text lowercased, with accents stripped,
  homoglyphs of other scripts folded onto ASCII (UTS #39 confusables),
  leetspeak folded inside words ("1gn0r3" reads "ignore") and letter-spaced
  words collapsed ("i g n o r e" reads "ignore"). The language rules read
  this view, and report offsets in the normalised text.

Why a phrase engine rather than one regex per pattern over the whole text:
Python's `re` scans a 5,000-character text in 0.15-0.4 ms per pattern, and
the rules have a few hundred patterns in five languages. Each pattern here
names the word stems it starts from; the text's words are collected once,
and a pattern is tried only where one of its stems starts a word, inside a
bounded window. Cost follows the number of plausible spots, not the number
of patterns, and a bounded window per spot keeps every rule linear however
adversarial the input.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class Finding:
    """One reason to refuse a text. `start`/`end` are the span a reviewer
    sees highlighted (offsets in normalize(text); raw offsets for the
    invisible/bidi rules). `severity` is "critical" (a secret, data sent
    out), "high" (the agent steered) or "medium" (hidden characters, size);
    `decoded` names the encoding the finding was found under ("base64",
    "rot13" …), empty when the text said it plainly."""

    rule: str
    category: str
    detail: str
    start: int
    end: int
    severity: str = "high"
    decoded: str = ""


@runtime_checkable
class Rule(Protocol):
    name: str
    category: str

    def find(self, raw: str, normalized: str) -> Finding | None: ...


# --- normalisation ------------------------------------------------------------------------


def _format_characters() -> list[int]:
    # Every Cf code point sits in the BMP, plane 1 or the tag block of plane
    # 14; walking only those keeps the import cheap.
    return [
        code_point
        for block in (range(0x20000), range(0xE0000, 0xE1000))
        for code_point in block
        if unicodedata.category(chr(code_point)) == "Cf"
    ]


def _character_class(code_points: Iterable[int]) -> str:
    ranges: list[tuple[int, int]] = []
    for code_point in sorted(code_points):
        if ranges and ranges[-1][1] == code_point - 1:
            ranges[-1] = (ranges[-1][0], code_point)
        else:
            ranges.append((code_point, code_point))
    return "[" + "".join(f"\\U{a:08x}" if a == b else f"\\U{a:08x}-\\U{b:08x}" for a, b in ranges) + "]"


# A character class is an order of magnitude faster than str.translate with
# a dict of 170 entries, and most texts contain none of these. The Hangul
# fillers go too: letters by category, blank on screen (NFKC turns U+3164
# and U+FFA0 into U+1160).
_FORMAT = re.compile(_character_class([*_format_characters(), 0x115F, 0x1160, 0x3164, 0xFFA0]))


@functools.lru_cache(maxsize=8)
def non_ascii_positions(text: str) -> tuple[int, ...]:
    """Where a text's non-ASCII characters are. `encode("ascii", "replace")`
    keeps one byte per character, so a "?" marks each one (or a real "?");
    finding those with bytes.find is a C-level pass, several times cheaper
    than a regex class over a text that holds a few dashes or arrows."""
    if text.isascii():
        return ()
    marked = text.encode("ascii", "replace")
    found = []
    at = marked.find(b"?")
    while at != -1:
        if text[at] != "?":
            found.append(at)
        at = marked.find(b"?", at + 1)
    return tuple(found)


def non_ascii_characters(text: str) -> str:
    return "".join(text[i] for i in non_ascii_positions(text))


def normalize(text: str) -> str:
    """NFKC, then drop every format (Cf) character.

    NFKC folds fullwidth and other compatibility look-alikes onto ASCII so
    "ｉｇｎｏｒｅ" reads as "ignore"; dropping format characters closes the
    "ig<ZWSP>nore" gap. Case is left alone: the rules match case-insensitively,
    and casefold would shift offsets ("ß" becomes "ss") for no gain.
    """
    if text.isascii():
        return text
    if not unicodedata.is_normalized("NFKC", text):
        text = unicodedata.normalize("NFKC", text)
    # Format characters are all outside ASCII: look among those alone. (A
    # text NFKC blew up past any size the scanner accepts is searched whole:
    # gathering millions of characters one by one would cost more.)
    among = text if len(text) > 100_000 else non_ascii_characters(text)
    if _FORMAT.search(among) is not None:
        text = _FORMAT.sub("", text)
    return text


def lower_same_length(text: str) -> str:
    """Lowercase without moving offsets. Only U+0130 (İ) grows under
    str.lower(), into "i" plus a combining dot."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return "".join(char if len(char) == 1 else char[0] for char in (c.lower() for c in text))


# --- folding ----------------------------------------------------------------------------------

_CONFUSABLES: dict[int, str] = {
    ord(source): target
    for source, target in json.loads(Path(__file__).with_name("confusables.json").read_text("utf-8")).items()
}

# Non-ASCII punctuation the rules care about keeps its meaning; every other
# punctuation mark, symbol or space becomes a plain space, so "«ignore»" and
# "ignore→" are words like any other.
_PUNCTUATION = {
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'", "\u00b4": "'", "\u02bc": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u00ab": '"', "\u00bb": '"',
    "\u300c": '"', "\u300d": '"', "\u300e": '"', "\u300f": '"', "\u300a": '"', "\u300b": '"',
    "\u3010": "[", "\u3011": "]", "\u3014": "[", "\u3015": "]",
    "\u3002": ".", "\u3001": ",", "\u00a1": " ", "\u00bf": " ",
    "\u2028": "\n", "\u2029": "\n", "\u0085": "\n",
}  # fmt: skip


class _FoldTable(dict[int, str]):
    """Lowercased non-ASCII character -> its folded form, filled on first use
    (str.translate calls __missing__), so the import does not walk Unicode."""

    def __missing__(self, code_point: int) -> str:
        char = chr(code_point)
        folded = _PUNCTUATION.get(char)
        if folded is None:
            category = unicodedata.category(char)
            if category[0] == "Z":
                folded = " "
            elif category == "Pd":
                folded = "-"
            elif category[0] in "PS":
                folded = " "
            elif category[0] == "L":
                # "é" -> "e", "ñ" -> "n": base letter of a decomposition into
                # one ASCII letter plus combining marks. "ß", "æ" stay.
                decomposed = unicodedata.normalize("NFD", char)
                base = decomposed[0]
                if len(decomposed) > 1 and base.isascii() and base.isalpha():
                    folded = base.lower()
        if folded is None:
            folded = char
        self[code_point] = folded
        return folded


_FOLD = _FoldTable()


def _is_cjk(char: str) -> bool:
    return (
        "\u3040" <= char <= "\u30ff"  # kana
        or "\u3400" <= char <= "\u9fff"  # CJK ideographs
        or "\uac00" <= char <= "\ud7af"  # hangul
        or "\uf900" <= char <= "\ufaff"
        or "\U00020000" <= char <= "\U0003134f"
    )




def _fold_word(word: str) -> str:
    """Accents and punctuation always; homoglyphs only in a word that has
    Latin letters or becomes all-ASCII, so "іgnore" (Cyrillic і) folds while a
    Russian or Greek word is left as it is."""
    folded = word.translate(_FOLD)
    skeleton = folded.translate(_CONFUSABLES)
    if skeleton != folded and (skeleton.isascii() or any("a" <= c <= "z" for c in folded)):
        return skeleton
    return folded


def _non_ascii_runs(text: str) -> Iterator[tuple[int, int]]:
    positions = non_ascii_positions(text)
    if not positions:
        return
    start = previous = positions[0]
    for position in positions[1:]:
        if position != previous + 1:
            yield start, previous + 1
            start = position
        previous = position
    yield start, previous + 1


def _fold_non_ascii(text: str) -> tuple[str, bool]:
    pieces: list[str] = []
    done = 0
    has_cjk = False
    for start, end in _non_ascii_runs(text):
        if start < done:
            continue
        run = text[start:end]
        if not any(c.isalpha() for c in run):
            # Dashes, arrows, quotes: no word to judge, just fold them.
            pieces.append(text[done:start])
            pieces.append(run.translate(_FOLD))
            done = end
            continue
        # Widen to the whole word, so the homoglyph decision sees it all.
        while start > done and text[start - 1].isalnum():
            start -= 1
        while end < len(text) and text[end].isalnum():
            end += 1
        word = text[start:end]
        if not has_cjk and any(_is_cjk(c) for c in run):
            has_cjk = True
        pieces.append(text[done:start])
        pieces.append(_fold_word(word))
        done = end
    if not pieces:
        return text, False
    pieces.append(text[done:])
    folded = "".join(pieces)
    # Folding is one character for one character; offsets must survive it.
    assert len(folded) == len(text)
    return folded, has_cjk


_LEET = {ord("0"): "o", ord("1"): "i", ord("3"): "e", ord("4"): "a", ord("5"): "s", ord("7"): "t", ord("8"): "b"}
_LEET_CHARS = "0134578@$"
# A leet character followed by a letter ("1gn0re", "pr3vious", "p@ss") is
# a seed, [0134578@$][a-z]. Trailing digits ("sunshine99", "gpt4", "sha256",
# "ed25519") never start a fold, and numbers without letters ("4471-9920",
# "TX2026102101") neither.
_LEET_SHAPE = bytes(0x61 if chr(b).isalpha() else 0x30 if chr(b) in "0134578@$" else 0x20 for b in range(128)) + bytes(
    0x20 for _ in range(128)
)
_LEET_TOKEN_CHAR = frozenset("abcdefghijklmnopqrstuvwxyz0123456789@$")
_DOMAIN_AFTER = re.compile(r"[a-z0-9-]{1,63}\.[a-z]{2,}")


def _fold_leet_token(token: str, text: str, end: int) -> str:
    letters = sum(c.isalpha() for c in token)
    if letters < 2:
        return token
    out = []
    for index, char in enumerate(token):
        if char == "@":
            # "attacker@evil.example" is an address, not "attackeraevil".
            if _DOMAIN_AFTER.match(text, end - len(token) + index + 1):
                return token
            out.append("a")
        elif char == "$":
            # "$GITHUB_TOKEN" is a variable; "pa$$word" is leet.
            out.append("s" if index > 0 else "$")
        else:
            out.append(_LEET.get(ord(char), char))
    return "".join(out)


# The seeds' shape: "a" for a-z, "0" for a leet character, " " for the
# rest (and for the "?" that stands for a character outside ASCII).
_LEET_SEED_SHAPE = bytes(
    0x61 if 0x61 <= b <= 0x7A else 0x30 if chr(b) in _LEET_CHARS else 0x20 for b in range(128)
) + bytes(0x20 for _ in range(128))


def _fold_leet(text: str) -> str:
    # Seeds are ASCII: a shape where every letter is "a" and every leet
    # character "0" holds "0a" when there is one (one C-level pass).
    if text.isascii() and b"0a" not in text.encode().translate(_LEET_SHAPE):
        return text
    # The seeds are the "0a" of a shape with one byte per character ("?"
    # for any outside ASCII), found with bytes.find rather than a regex over
    # the text. ("0a" cannot overlap itself.)
    shape = text.encode("ascii", "replace").translate(_LEET_SEED_SHAPE)
    pieces: list[str] = []
    done = 0
    seed = shape.find(b"0a")
    while seed != -1:
        if seed >= done:
            start = seed
            while start > done and text[start - 1] in _LEET_TOKEN_CHAR:
                start -= 1
            end = seed + 2
            while end < len(text) and text[end] in _LEET_TOKEN_CHAR:
                end += 1
            token = text[start:end]
            pieces.append(text[done:start])
            pieces.append(_fold_leet_token(token, text, end))
            done = end
        seed = shape.find(b"0a", seed + 1)
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)


# Letter-spaced words: four or more single letters with one to three
# separator characters between them ("i g n o r e", "I-G-N-O-R-E",
# "i.g.n.o.r.e", "忽 略 之 前"). A line break ends a run.
_SPACED = re.compile(r"(?<![^\W\d_])[^\W\d_](?:[ .\-_*/|+~'\"]{1,3}[^\W\d_](?![^\W\d_])){3,}")
_SPACED_CJK = re.compile(r"[\u3400-\u9fff][ .\-_*/|+~]{1,3}[\u3400-\u9fff][ .\-_*/|+~]{1,3}[\u3400-\u9fff]")
_LETTER = re.compile(r"[^\W\d_]")
# Runs longer than this are not segmented into words (the DP is O(n * 20)).
_MAX_SEGMENTED = 400


def _segment(letters: str, vocabulary: frozenset[str]) -> list[str] | None:
    """Split a run of letters into known words ("ignorepreviousinstructions"
    -> ignore previous instructions), or None when that is impossible."""
    if len(letters) > _MAX_SEGMENTED:
        return None
    best: list[list[str] | None] = [None] * (len(letters) + 1)
    best[0] = []
    for end in range(1, len(letters) + 1):
        for start in range(max(0, end - 20), end):
            words = best[start]
            if words is not None and letters[start:end] in vocabulary:
                candidate = [*words, letters[start:end]]
                current = best[end]
                # Fewer, longer words read more naturally ("into" over "in to").
                if current is None or len(candidate) < len(current):
                    best[end] = candidate
    return best[len(letters)]


def _split_run(text: str, positions: list[int], vocabulary: frozenset[str]) -> list[str] | None:
    """The words of a letter-spaced run. When the gaps differ ("i.g.n.o.r.e
    t.h.e" has one character between letters and more between words), the
    wider gaps are the word breaks; otherwise the known words decide."""
    letters = "".join(text[p] for p in positions)
    gaps = [b - a for a, b in zip(positions, positions[1:], strict=False)]
    if len(set(gaps)) > 1:
        narrow = min(gaps)
        words, current = [], letters[0]
        for letter, gap in zip(letters[1:], gaps, strict=False):
            if gap > narrow:
                words.append(current)
                current = letter
            else:
                current += letter
        words.append(current)
        return words
    return _segment(letters, vocabulary)


def _collapse_spaced(text: str, vocabulary: frozenset[str]) -> tuple[str, list[int]] | None:
    runs = [m for m in _SPACED.finditer(text) if sum(1 for _ in _LETTER.finditer(m.group())) >= 4]
    if not runs:
        return None
    pieces: list[str] = []
    origin: list[int] = []
    done = 0
    for run in runs:
        start, end = run.span()
        pieces.append(text[done:start])
        origin.extend(range(done, start))
        positions = [start + m.start() for m in _LETTER.finditer(run.group())]
        letters = "".join(text[p] for p in positions)
        words = None if any(_is_cjk(c) for c in letters) else _split_run(text, positions, vocabulary)
        if words is None:
            pieces.append(letters)
            origin.extend(positions)
        else:
            index = 0
            for number, word in enumerate(words):
                if number:
                    pieces.append(" ")
                    origin.append(positions[index])
                pieces.append(word)
                origin.extend(positions[index : index + len(word)])
                index += len(word)
        done = end
    pieces.append(text[done:])
    origin.extend(range(done, len(text) + 1))
    return "".join(pieces), origin


# Bytes translation is the fastest way to split a text into words: every
# ASCII byte that is not a letter or digit becomes a space; UTF-8 bytes of
# other scripts stay word characters.
_WORD_SPLIT = bytes(b if chr(b).isalnum() or b >= 0x80 else 0x20 for b in range(256))
# Split bytes -> "a" for every byte of a word, spaces kept.
_WORD_BYTES = bytes(0x20 if b == 0x20 else 0x61 for b in range(256))


# --- the views --------------------------------------------------------------------------------


# Every stem any rule looks for, registered as the rules are defined, and an
# index by first three letters, so a text's few hundred words are matched
# against a thousand stems with a few hundred dict lookups.
_STEMS: set[str] = set()
_STEM_INDEX: dict[str, list[str]] = {}
_INDEXED = 0


# The CJK ones among them (matched anywhere, not at a word's start).
_CJK_STEMS: set[str] = set()


def register_stems(stems: Iterable[str]) -> None:
    stems = tuple(stems)
    _STEMS.update(stems)
    _CJK_STEMS.update(stem for stem in stems if _is_cjk(stem[0]))


def _stem_index() -> dict[str, list[str]]:
    global _INDEXED
    if len(_STEMS) != _INDEXED:
        _WORD_STEMS.clear()
        _STEMLESS.clear()
        _STEM_INDEX.clear()
        for stem in _STEMS:
            key = stem if _is_cjk(stem[0]) else ("=" + stem if len(stem) < 3 else stem[:3])
            _STEM_INDEX.setdefault(key, []).append(stem)
        _INDEXED = len(_STEMS)
    return _STEM_INDEX


_NOWHERE: list[int] = []


def _stems_of(raw_word: bytes) -> tuple[str, ...]:
    """The registered stems a word (UTF-8) starts with."""
    index = _STEM_INDEX
    word = raw_word.decode("utf-8", "surrogatepass")
    found = tuple(stem for stem in index.get(word[:3], ()) if word.startswith(stem))
    if len(word) < 3 and "=" + word in index:
        found += (word,)
    return found


# Words seen before, split in two: those that start with registered stems
# (-> the stems) and those that start with none. Memory text reuses a small
# vocabulary, so a text's words are mostly looked up with two set operations
# in C, and only its new words and its few words with stems cost Python.
_WORD_STEMS: dict[bytes, tuple[str, ...]] = {}
_STEMLESS: set[bytes] = set()
_MAX_KNOWN_WORDS = 65536

# stem -> ids of the phrases that look for it, so a text activates only the
# phrases whose stems it holds, and the rest cost one set lookup each.
_PHRASES_BY_STEM: dict[str, list[int]] = {}


@functools.lru_cache(maxsize=4096)
def _whole_word(word: str) -> re.Pattern[str]:
    # The literal comes first so `re` can skip ahead to it; the boundary
    # checks follow it. (A word as the words were split: letters and digits.)
    escaped = re.escape(word)
    return re.compile(escaped + r"(?<![^\W_]" + escaped + r")(?![^\W_])")


@dataclass
class Views:
    """Everything the rules read, derived once per normalised text."""

    normalized: str
    lower: str
    folded: str
    # folded offset -> normalised offset, or None when they are the same.
    origin: list[int] | None
    has_cjk: bool
    # Every word of the folded text, as UTF-8 bytes (decoding all of them
    # would cost more than the few that are needed).
    words: frozenset[bytes]
    # Whether a word is 16 bytes or longer.
    long_word: bool = False
    # The folded text with every non-word byte turned into a space.
    split_bytes: bytes = b""
    # split_bytes.split(b" ").
    parts: list[bytes] = field(default_factory=list, repr=False)
    # Each registered stem the text holds -> the words that start with it
    # (for a CJK stem: itself).
    present: dict[str, list[str]] = field(default_factory=dict, repr=False)
    _positions: dict[str, list[int]] = field(default_factory=dict, repr=False)
    # Phrases share stem lists: their merged spots, by the list.
    _spots: dict[tuple[str, ...], list[int]] = field(default_factory=dict, repr=False)
    _memo: dict[str, object] = field(default_factory=dict, repr=False)
    # Whether _index_words() ran; the words that start with stems (UTF-8)
    # -> their stems.
    _indexed: bool = field(default=False, repr=False)
    _stem_words: dict[bytes, tuple[str, ...]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        _stem_index()
        present = self.present
        with_stems = _WORD_STEMS.keys() & self.words
        unknown = self.words - with_stems - _STEMLESS
        if unknown:
            if len(_WORD_STEMS) + len(_STEMLESS) > _MAX_KNOWN_WORDS:
                _WORD_STEMS.clear()
                _STEMLESS.clear()
            for word in unknown:
                stems = _stems_of(word)
                if stems:
                    _WORD_STEMS[word] = stems
                    with_stems.add(word)
                else:
                    _STEMLESS.add(word)
        stem_words = self._stem_words
        for word in with_stems:
            text_word = word.decode("utf-8", "surrogatepass")
            # (Another thread may have cleared the table meanwhile.)
            stems = stem_words[word] = _WORD_STEMS.get(word) or _stems_of(word)
            for stem in stems:
                present.setdefault(stem, []).append(text_word)
        if self.has_cjk:
            for key, cjk_stems in _stem_index().items():
                if _is_cjk(key[0]) and key in self.folded:
                    for stem in cjk_stems:
                        present[stem] = [stem]

    def span(self, start: int, end: int) -> tuple[int, int]:
        """A folded span as a span of the normalised text."""
        if self.origin is None:
            return start, end
        return self.origin[start], self.origin[end - 1] + 1 if end > start else self.origin[start]

    def positions(self, stem: str) -> list[int]:
        """Where a word starting with `stem` starts in the folded view. A stem
        of one or two characters matches whole words only; a CJK stem
        matches anywhere (Chinese has no spaces between words). Only
        registered stems are found."""
        words = self.present.get(stem)
        if words is None:
            return _NOWHERE
        cached = self._positions.get(stem)
        if cached is not None:
            return cached
        if not self._indexed:
            self._index_words()
            cached = self._positions.get(stem)
            if cached is not None:
                return cached
        text = self.folded
        found: list[int] = []
        if stem in _CJK_STEMS:
            at = text.find(stem)
            while at != -1:
                found.append(at)
                at = text.find(stem, at + 1)
        else:
            for word in words:
                found.extend(m.start() for m in _whole_word(word).finditer(text))
            if len(words) > 1:
                found = sorted(set(found))
        self._positions[stem] = found
        return found

    def _index_words(self) -> None:
        """The positions of every present stem, from one pass over the split
        bytes: each word that starts with stems adds its offset to theirs, in
        text order. Only for an all-ASCII folded text, where byte offsets are
        character offsets; otherwise `positions` searches word by word."""
        self._indexed = True
        if not (self.split_bytes and self.folded.isascii()):
            return
        stems_of = self._stem_words
        # Every part (empty ones too) is followed by one space, so a part's
        # offset is the lengths before it plus its index, summed by
        # accumulate in C.
        parts = self.parts
        ends = list(itertools.accumulate(map(len, parts)))
        positions = self._positions
        # The parts that are stem words, picked out in C.
        for number in itertools.compress(itertools.count(), map(stems_of.__contains__, parts)):
            part = parts[number]
            offset = ends[number] - len(part) + number
            for stem in stems_of[part]:
                found = positions.get(stem)
                if found is None:
                    positions[stem] = [offset]
                else:
                    found.append(offset)

    @functools.cached_property
    def has_token(self) -> bool:
        """Whether the normalised text holds anything shaped like a key: a
        run of letters and digits of 20 or more, or of 16 or more with at
        least two digits and two letters. Vendor keys, JWTs and provider
        tokens all do; prose and order numbers ("TX2026102101") do not, so
        their rules skip it."""
        if not self.long_word:
            return False
        for word in self.lower.encode("utf-8", "surrogatepass").translate(_WORD_SPLIT).split():
            if len(word) < 16:
                continue
            if len(word) >= 20:
                return True
            digits = sum(48 <= b <= 57 for b in word)
            if 2 <= digits <= len(word) - 2:
                return True
        return False

    @functools.cached_property
    def could_send(self) -> bool:
        """Whether the text names anywhere to send to: a URL, an address, an
        IP, a domain, a webhook or a chat service. Phrases that need one
        skip the many texts (most memory files) that name none."""
        text = self.folded
        if "://" in text or "@" in text or not self.words.isdisjoint(_CHANNEL_WORDS):
            return True
        # One pass, from dot to dot.
        return _SEND_HINT.search(text) is not None

    @functools.cached_property
    def active(self) -> frozenset[int]:
        """Ids of the phrases with at least one stem in this text."""
        return frozenset(
            itertools.chain.from_iterable(map(_PHRASES_BY_STEM.get, self.present, itertools.repeat(())))
        )

    def has_any(self, stems: Iterable[str]) -> bool:
        return not self.present.keys().isdisjoint(stems)

    def memo(self, key: str) -> object:
        return self._memo.get(key)

    def remember(self, key: str, value: object) -> None:
        self._memo[key] = value


# Words a letter-spaced attack strings together besides the rules' own.
_COMMON_WORDS = (
    "please the all your my me and to of for now you this that it is are be do not just any every with from on in "
    "at by so as new old rules instructions prompt system previous above"
)
VOCABULARY: set[str] = set(_COMMON_WORDS.split())


def vocabulary_words(*phrases: str) -> None:
    """Teach the letter-spacing segmenter the words the rules look for."""
    for phrase in phrases:
        VOCABULARY.update(w for w in re.findall(r"[a-z]+", phrase.lower()) if len(w) > 1 or w in "ai")


# Letters (and bytes of other scripts) -> "a", digits -> "0": four
# one-letter words in a row read " a a a a " (spaces between them aside).
_LETTER_SHAPE = bytes(
    0x61 if chr(b).isalpha() or b >= 0x80 else 0x30 if chr(b).isdigit() else b for b in range(256)
)


# Four one-letter words in a row, in the shape of the split bytes (where
# only spaces separate words). The literal " a " opens it, so `re` jumps
# from one one-letter word to the next.
_LETTER_RUN = re.compile(rb" a  *a +a +a(?![^ ])")


def _letter_run(split_bytes: bytes) -> bool:
    return _LETTER_RUN.search(b" " + split_bytes.translate(_LETTER_SHAPE)) is not None


@functools.lru_cache(maxsize=4)
def views(normalized: str) -> Views:
    lower = lower_same_length(normalized)
    folded, has_cjk = (lower, False) if lower.isascii() else _fold_non_ascii(lower)
    folded = _fold_leet(folded)
    origin: list[int] | None = None
    translated = folded.encode("utf-8", "surrogatepass").translate(_WORD_SPLIT)
    # Letter-spacing leaves four or more one-letter words in a row; prose
    # has "a", "I" or the "s" of "customer's" alone, so the collapse pass
    # runs only when needed.
    if _letter_run(translated) or (has_cjk and _SPACED_CJK.search(folded)):
        collapsed = _collapse_spaced(folded, frozenset(VOCABULARY))
        if collapsed is not None:
            folded, origin = collapsed
            translated = folded.encode("utf-8", "surrogatepass").translate(_WORD_SPLIT)
    # Split on single spaces (the only separator left), once for the word
    # set and the word index both; runs of separators leave empty parts.
    parts = translated.split(b" ")
    words = frozenset(parts)
    if b"" in words:
        words = words - {b""}
    return Views(
        normalized=normalized,
        lower=lower,
        folded=folded,
        origin=origin,
        has_cjk=has_cjk,
        words=words,
        # Sixteen word bytes in a row, in one C-level find.
        long_word=b"a" * 16 in translated.translate(_WORD_BYTES),
        split_bytes=translated,
        parts=parts,
    )


# --- shared helpers ---------------------------------------------------------------------------


def compile_pattern(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


def quote(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def redact(secret: str) -> str:
    # Enough for a person to recognise which key it is, never enough to use:
    # at most six characters and never more than a third of the value.
    return secret[: min(6, len(secret) // 3)] + "…"


# Fillers between keywords are bounded everywhere: an unbounded `.*` between
# two words is how a regex scanner becomes a ReDoS. `SEP` is the run of
# spaces, punctuation or markdown (`**`, `-`) between two words; `WORD` is one
# word of slack.
SEP = r"[\W_]{1,10}"
WORD = r"\w{1,25}"
APOSTROPHE = r"['\u2019]"

# A chat transcript's role markers only mean something at the start of a
# line. U+2028/U+2029 count too: folding turned them into "\n".
LINE_START = r"(?:^|(?<=[\n\r\x0b\x0c\x85\u2028\u2029]))[ \t>]{0,8}(?:<s>[ \t]{0,4})?"

# Where a clause ends: the negation and context checks never look past one.
CLAUSE_BREAK = re.compile(r"[.!?;\n]|\u3002|\uff01|\uff1f")

# Words that turn an instruction into a prohibition: "never reveal your
# system prompt" is persona text, "reveal your system prompt" is not.
NEGATION = re.compile(
    r"(?:\bno\b(?!\s+matter)|\b(?:never|not|don'?t|dont|doesn'?t|didn'?t|won'?t|can'?t|cannot|mustn'?t|shouldn'?t|isn'?t"
    r"|aren'?t|avoid|refuse|without|nor|nie|niemals|nicht|kein|keine|keinesfalls|keinen|nunca|jamas|ni|ne|n'"
    r"|jamais|pas|aucun|aucune|sans|sin)\b|不要|不得|不能|不可|不准|切勿|禁止|勿|别|绝不|从不|不会|不应|严禁)"
)


def negated(text: str, start: int, reach: int = 60) -> bool:
    """Whether the clause before `start` negates what follows."""
    window = text[max(0, start - reach) : start]
    breaks = [m.end() for m in CLAUSE_BREAK.finditer(window)]
    if breaks:
        window = window[breaks[-1] :]
    return NEGATION.search(window) is not None


# A domain's ".com" or an IP's "1.2.3.4". Both alternatives open at the
# dot (the IP's leading digit is a lookbehind), so `re` jumps from dot to dot
# with its one-character prefix search instead of trying every position:
# the same answer as `\.(?:com|…)\b|\d\.\d{1,3}\.\d{1,3}\.\d`, ten times cheaper.
_SEND_HINT = re.compile(
    r"\.(?:(?:com|net|org|io|xyz|ru|cn|tk|top|site|online|info|biz|cc|su|pw)\b|(?<=\d\.)\d{1,3}\.\d{1,3}\.\d)"
)
# Services that are a destination by name. "My personal email" is not on
# the list: without an address there is nowhere to send to.
_CHANNEL_WORDS = frozenset(
    b"webhook pastebin requestbin ngrok interactsh burpcollaborator telegram discord whatsapp signal gmail yahoo "
    b"hotmail proton protonmail".split()
)
# Past this many spots a phrase stops trying each one and searches the whole
# text once instead: a text that repeats "ignore" 30,000 times gets one
# linear pass per phrase, not 30,000 windowed matches.
SPOT_LIMIT = 64


@dataclass(frozen=True)
class Phrase:
    """One pattern of a language rule.

    `stems`: lowercase, accent-free word stems; the pattern is tried only
    where a word starting with one of them starts (CJK stems: anywhere).
    `before`/`after`: the window around that spot. With `before == 0` the
    pattern must match right at the stem.
    `negatable`: skip matches preceded by a negation in the same clause.
    """

    stems: tuple[str, ...]
    pattern: re.Pattern[str]
    label: str
    before: int = 0
    after: int = 300
    negatable: bool = False
    # What a regex cannot say readably: a last look at the match.
    check: Callable[[re.Match[str], Views], bool] | None = None
    # The same pattern for a search over the whole text.
    searcher: re.Pattern[str] | None = None
    # A string the text must contain for the pattern to have a chance.
    requires: str = ""
    # Stems of which one must occur somewhere in the text: lets a phrase
    # start at a common word ("the agent must …") and still cost nothing on
    # text without its rare word.
    gate: tuple[str, ...] = ()
    # Whether matches start at a word (else at any character, for patterns
    # that open with punctuation such as "<|" or "["), or at a line's start.
    word_start: bool = True
    line_start: bool = False
    # Whether the pattern needs a destination (a URL, an address …).
    needs_destination: bool = False
    # For `before > 0`: the pattern behind a lazy skip of at most `before`
    # characters, its first group where the pattern starts.
    windowed: re.Pattern[str] | None = None
    # Run `check` before the negation test: for a check that is cheaper and
    # rejects more often (both must pass, so the order changes only cost).
    check_first: bool = False

    def spots(self, view: Views) -> list[int]:
        if self.requires and self.requires not in view.folded:
            return _NOWHERE
        if self.needs_destination and not view.could_send:
            return _NOWHERE
        present = view.present.keys()
        if self.gate and present.isdisjoint(self.gate):
            return _NOWHERE
        cached = view._spots.get(self.stems)
        if cached is not None:
            return cached
        # (Set operations in C; the positions are sorted, so the order the
        # stems come out in does not matter.)
        hits = present & self.stems
        if not hits:
            found = _NOWHERE
        elif len(hits) == 1:
            found = view.positions(hits.pop())
        else:
            found = sorted(set().union(*map(view.positions, hits)))
        view._spots[self.stems] = found
        return found

    def accept(self, match: re.Match[str], view: Views) -> bool:
        if self.check_first and self.check is not None and not self.check(match, view):
            return False
        if self.negatable and negated(view.folded, match.start()):
            return False
        return self.check is None or self.check_first or self.check(match, view)

    def try_at(self, view: Views, position: int) -> re.Match[str] | None:
        text = view.folded
        # (`re` clamps an end past the text to the text's end.)
        end = position + self.after
        if not self.before:
            match = self.pattern.match(text, position, end)
            return match if match is not None and self.accept(match, view) else None
        # The match holds the stem, so it starts in the window before it:
        # try each word start there (any position, for patterns that open
        # with punctuation), rather than search ahead through `after`.
        low = max(0, position - self.before)
        if self.line_start:
            # A role marker opens its line: one try, at that line's start.
            line = max(text.rfind(c, low, position) for c in "\n\r\x0b\x0c\x85") + 1
            if line > low or low == 0:
                match = self.pattern.match(text, line, end)
                if match is not None and match.end() > position and self.accept(match, view):
                    return match
            return None
        # `windowed` skips lazily to the first start (a word's start, or any
        # position) in the window where the pattern matches: what trying
        # each start in turn finds, in one call into C. The pattern is then
        # matched at that start, for the caller's groups and offsets.
        assert self.windowed is not None
        windowed = self.windowed.match
        while True:
            found = windowed(text, low, end)
            if found is None:
                return None
            start = found.start(1)
            if start > position:
                return None
            match = self.pattern.match(text, start, end)
            if match is not None and match.end() > position and self.accept(match, view):
                return match
            low = start + 1

    def matches(self, view: Views, stop: int | None = None) -> Iterator[re.Match[str]]:
        """Accepted matches in text order, none starting at or after `stop`."""
        spots = self.spots(view)
        if not spots:
            return
        if len(spots) > SPOT_LIMIT and self.searcher is not None:
            for match in self.searcher.finditer(view.folded, max(0, spots[0] - self.before)):
                if stop is not None and match.start() >= stop:
                    return
                if self.accept(match, view):
                    yield match
            return
        done = 0
        if not self.before:
            # The common case, inlined: one anchored match per spot.
            text = view.folded
            after = self.after
            match_at = self.pattern.match
            plain = not self.negatable and self.check is None
            for position in spots:
                if stop is not None and position >= stop:
                    return
                if position < done:
                    continue
                # (`re` clamps an end past the text to the text's end.)
                found = match_at(text, position, position + after)
                if found is not None and (plain or self.accept(found, view)):
                    done = found.end()
                    yield found
            return
        for position in spots:
            if stop is not None and position - self.before >= stop:
                return
            if position < done:
                continue
            found = self.try_at(view, position)
            if found is not None:
                done = found.end()
                yield found


def phrase(
    stems: str | tuple[str, ...],
    pattern: str,
    label: str,
    *,
    before: int = 0,
    after: int = 300,
    negatable: bool = False,
    check: Callable[[re.Match[str], Views], bool] | None = None,
    vocabulary: str = "",
    requires: str = "",
    gate: str | tuple[str, ...] = (),
    needs_destination: bool | None = None,
    check_first: bool = False,
) -> Phrase:
    stem_tuple = tuple(stems.split()) if isinstance(stems, str) else stems
    gate_tuple = tuple(gate.split()) if isinstance(gate, str) else gate
    register_stems(stem_tuple + gate_tuple)
    vocabulary_words(vocabulary or " ".join(s for s in stem_tuple if s.isascii()))
    # Searching the whole text, a pattern that is matched at a word's start
    # must not start inside a word ("xignore").
    anchor = "" if before or not stem_tuple[0].isascii() else r"(?<![^\W_])"
    # The folded view is lowercase already, and `re` matches much faster
    # without IGNORECASE (no per-character case folding, literal prefixes
    # searched directly).
    searcher = re.compile(anchor + "(?:" + pattern + ")")
    # Only a pattern that opens with \b or a letter is known to start at a
    # word; any other is tried at every position of its window.
    word_start = pattern.startswith("\\b") or pattern[:1].isalpha()
    made = Phrase(
        stem_tuple,
        re.compile(pattern),
        label,
        before,
        after,
        negatable,
        check,
        searcher,
        requires,
        gate_tuple,
        word_start,
        pattern.startswith(LINE_START),
        "(?P<dest>" in pattern if needs_destination is None else needs_destination,
        # A word's start is a letter or digit with none before it.
        re.compile(rf"[\s\S]{{0,{before}}}?(" + (r"(?<![^\W_])(?=[^\W_])" if word_start else "") + f"(?:{pattern}))")
        if before
        else None,
        check_first,
    )
    for stem in stem_tuple:
        _PHRASES_BY_STEM.setdefault(stem, []).append(id(made))
    return made


def first_match(phrases: Iterable[Phrase], view: Views) -> tuple[re.Match[str], Phrase] | None:
    """The earliest match of any phrase, so the answer does not depend on
    the order the phrases are listed in."""
    best: tuple[re.Match[str], Phrase] | None = None
    active = view.active
    for candidate in phrases:
        if id(candidate) not in active:
            continue
        for match in candidate.matches(view, stop=best[0].start() if best is not None else None):
            if best is None or match.start() < best[0].start():
                best = (match, candidate)
            break
    return best


class PhraseRule:
    """A rule made of phrases over the folded view."""

    name: str
    category: str
    phrases: tuple[Phrase, ...]

    def find(self, raw: str, normalized: str) -> Finding | None:
        view = views(normalized)
        found = first_match(self.phrases, view)
        if found is None:
            return None
        match, matched = found
        start, end = view.span(match.start(), match.end())
        return Finding(
            rule=self.name, category=self.category, detail=self.describe(match, matched.label), start=start, end=end
        )

    def describe(self, match: re.Match[str], label: str) -> str:
        return f'Text tries to {label} ("{quote(match.group())}").'
