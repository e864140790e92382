"""Rules that read the raw text: invisible and bidirectional characters.

NFKC and `normalize()` delete most of these characters, and the point is to
refuse text whose rendering differs from its content before a reviewer ever
sees it, so these rules never look at a normalised view.
"""

from __future__ import annotations

import re
import unicodedata

from memoryhub.scanning.base import Finding, non_ascii_characters

# The Hangul fillers (U+115F, U+1160, U+3164, U+FFA0) are letters that
# render as nothing: Korean text never needs them alone, and they make
# "ig<filler>nore" read as two words to a rule and as one to a reader.
_INVISIBLE = re.compile(
    r"[\u00ad\u115f\u1160\u180e\u200b-\u200d\u2060-\u2064\u206a-\u206f\u3164\ufeff\uffa0\U000e0000-\U000e007f]"
)
# U+061C ARABIC LETTER MARK behaves like U+200F and is just as invisible;
# natural Arabic and Hebrew text never needs either.
_BIDI = re.compile(r"[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_ZWJ = "\u200d"
_VARIATION_SELECTOR_16 = "\ufe0f"
# England, Scotland and Wales are the only recommended flag tag sequences:
# allowing exactly these keeps real emoji working while tag characters stay
# useless for smuggling text ("ASCII smuggling").
_TAG_FLAG = re.compile(r"\U0001f3f4([\U000e0061-\U000e007a]{5})\U000e007f")
_ALLOWED_TAG_FLAGS = frozenset({"gbeng", "gbsct", "gbwls"})


def _may_hold(raw: str, characters: re.Pattern[str]) -> bool:
    """Both classes are outside ASCII: look among a text's non-ASCII
    characters first, a handful in most memory text, before the whole."""
    return characters.search(non_ascii_characters(raw)) is not None


def _is_pictograph(char: str) -> bool:
    # unicodedata has no Emoji property; So (other symbol) plus the skin tone
    # modifiers (Sk) covers every emoji that takes part in a ZWJ sequence.
    return unicodedata.category(char) == "So" or "\U0001f3fb" <= char <= "\U0001f3ff"


def _joins_emoji(raw: str, position: int) -> bool:
    # ZWJ sequences (family, profession, rainbow flag emoji) need U+200D
    # between two pictographs; between letters it only hides text or splits
    # a keyword, so only the emoji case is allowed.
    before = position - 1
    if before >= 1 and raw[before] == _VARIATION_SELECTOR_16:
        before -= 1
    return before >= 0 and position + 1 < len(raw) and _is_pictograph(raw[before]) and _is_pictograph(raw[position + 1])


def _allowed_tag_positions(raw: str) -> set[int]:
    allowed: set[int] = set()
    for match in _TAG_FLAG.finditer(raw):
        if "".join(chr(ord(tag) - 0xE0000) for tag in match.group(1)) in _ALLOWED_TAG_FLAGS:
            allowed.update(range(match.start(1), match.end()))
    return allowed


def _code_point_detail(kind: str, char: str, position: int, why: str) -> str:
    return f"Text contains {kind}: U+{ord(char):04X} {unicodedata.name(char, 'UNNAMED')} at position {position}; {why}."


class InvisibleUnicodeRule:
    """Zero-width, word-joiner, soft-hyphen and tag characters."""

    name = "invisible_unicode"
    category = "unicode"

    def find(self, raw: str, normalized: str) -> Finding | None:
        if not _may_hold(raw, _INVISIBLE):
            return None
        allowed_tags: set[int] | None = None
        for match in _INVISIBLE.finditer(raw):
            position = match.start()
            char = match.group()
            if char == _ZWJ and _joins_emoji(raw, position):
                continue
            if "\U000e0000" <= char <= "\U000e007f":
                if allowed_tags is None:
                    allowed_tags = _allowed_tag_positions(raw)
                if position in allowed_tags:
                    continue
            return Finding(
                rule=self.name,
                category=self.category,
                detail=_code_point_detail(
                    "an invisible character", char, position, "it can hide text from the person reviewing it"
                ),
                start=position,
                end=position + 1,
            )
        return None


class BidiUnicodeRule:
    """Bidirectional controls, which reorder how text is displayed (the
    "Trojan Source" trick) without changing what a model reads."""

    name = "bidi_unicode"
    category = "unicode"

    def find(self, raw: str, normalized: str) -> Finding | None:
        if not _may_hold(raw, _BIDI):
            return None
        match = _BIDI.search(raw)
        if match is None:
            return None
        return Finding(
            rule=self.name,
            category=self.category,
            detail=_code_point_detail(
                "a bidirectional control character",
                match.group(),
                match.start(),
                "it makes the text display differently from what it says",
            ),
            start=match.start(),
            end=match.end(),
        )


