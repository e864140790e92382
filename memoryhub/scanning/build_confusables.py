"""Build `confusables.json`, the homoglyph half of the scanner's folding.

    .venv/bin/python -m memoryhub.scanning.build_confusables

The table is derived from the Unicode confusables data (UTS #39) as the
`confusable-homoglyphs` package ships it, and committed, so the scanner
neither parses a 900 KB file at import nor depends on that package at run
time. A test rebuilds it and compares, so the file cannot drift from its
source unnoticed.

Only what the scanner needs is kept: letters of other scripts that look
like a lowercase ASCII letter (Cyrillic "а", Greek "ο", Armenian "օ", ...).
Sources from scripts whose text is never English in disguise (CJK, Arabic,
Hebrew) are left out, so folding never touches a Chinese or Hebrew word.
Fullwidth and mathematical letters are not here: NFKC folds them first.
"""

from __future__ import annotations

import json
import sys
import unicodedata
from pathlib import Path

TABLE_PATH = Path(__file__).with_name("confusables.json")

# Scripts whose letters are not plausible stand-ins in Latin text, or whose
# words the scanner must read as they are (its Chinese rules, for one).
_SKIPPED_PREFIXES = (
    "CJK",
    "IDEOGRAPHIC",
    "HIRAGANA",
    "KATAKANA",
    "HANGUL",
    "BOPOMOFO",
    "ARABIC",
    "HEBREW",
    "SYRIAC",
    "THAANA",
    "NKO",
    "MENDE",
    "ADLAM",
)


def build() -> dict[str, str]:
    from confusable_homoglyphs import confusables

    table: dict[str, str] = {}
    inherited: dict[str, str] = {}
    for source, homoglyphs in confusables.confusables_data.items():
        if len(source) != 1 or source.isascii():
            continue
        if not unicodedata.category(source).startswith("L"):
            continue
        name = unicodedata.name(source, "")
        if name.startswith(_SKIPPED_PREFIXES):
            continue
        # NFKC runs before folding, so whatever it rewrites never gets here.
        if unicodedata.normalize("NFKC", source) != source:
            continue
        lowered = source.lower()
        if len(lowered) != 1:
            continue
        targets = sorted({h["c"] for h in homoglyphs if len(h["c"]) == 1 and h["c"].isascii() and h["c"].isalpha()})
        if not targets:
            continue
        # The scanner folds lowercased text: prefer the target of the same
        # case as the source ("І" reads as "I", "l" as "l"), then lowercase it.
        same_case = [t for t in targets if t.islower() == source.islower()]
        target = (same_case or targets)[0].lower()
        # A lowercase source's own entry beats one inherited from its capital:
        # UTS #39 maps Cyrillic "І" to "l" (as it maps "I"), but "і" to "i".
        if lowered == source:
            table[source] = target
        else:
            inherited.setdefault(lowered, target)
            table.setdefault(source, target)
    for lowered, target in inherited.items():
        table.setdefault(lowered, target)
    return dict(sorted(table.items()))


def render(table: dict[str, str]) -> str:
    return json.dumps(table, ensure_ascii=False, indent=0, sort_keys=True) + "\n"


def main() -> int:
    TABLE_PATH.write_text(render(build()), encoding="utf-8")
    print(f"wrote {TABLE_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
