"""The public-collection corpus: cases the team did not write (garak,
PyRIT, spaCy, the Python standard library, package READMEs, openjdk test
logs; see README.md here for each file's source and licence).

Each case falls in the `dev` or the `heldout` split by a hash of its text,
so the split never changes when files are rebuilt or reordered. Rules are
tuned on `dev` only; `heldout` is read only by rates per source
(`bench/scanner_holdout.py`, `tests/memoryhub/test_scanner_public.py`),
never case by case.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import yaml

FOLDER = Path(__file__).resolve().parent
FILES = tuple(sorted(path.name for path in FOLDER.glob("*.yaml")))
SPLITS = ("dev", "heldout")


@dataclass(frozen=True)
class PublicCase:
    text: str
    label: str  # "unsafe" or "benign"
    kind: str
    lang: str
    origin: str
    source: str  # the corpus file, without ".yaml"
    split: str
    # A collection's "jailbreak" that is plainly harmless role-play: counted
    # in neither rate.
    harmless: bool = False


def split_of(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "heldout" if digest[0] % 2 else "dev"


def load(split: str | None = None) -> list[PublicCase]:
    cases = []
    for name in FILES:
        for entry in yaml.safe_load((FOLDER / name).read_text("utf-8")):
            case = PublicCase(
                text=entry["text"],
                label=entry["label"],
                kind=entry["class"],
                lang=entry["lang"],
                origin=entry["origin"],
                source=name.removesuffix(".yaml"),
                split=split_of(entry["text"]),
                harmless=bool(entry.get("harmless", False)),
            )
            if split is None or case.split == split:
                cases.append(case)
    return cases
