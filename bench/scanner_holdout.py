"""Rates of the scanner on the public-collection corpus, per source and
class, for one split (default: the held-out one). It prints rates only,
never a case: the held-out split is not read case by case while rules
change (docs/scanner.md, "Held-out discipline").

    .venv/bin/python bench/scanner_holdout.py [--split dev|heldout] [--limit N]
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")

from memoryhub import scanner  # noqa: E402
from tests.scanner_corpus.public import load  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--split", choices=("dev", "heldout"), default="heldout")
    parser.add_argument("--limit", type=int, default=0, help="only the first N cases (a smoke run)")
    args = parser.parse_args()
    counts: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    by_class: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    cases = load(args.split)
    for case in cases[: args.limit] if args.limit else cases:
        if case.harmless:
            continue
        hit = scanner.scan(case.text) is not None
        for key, table in (((case.label, case.source, case.kind), counts), ((case.label, case.kind), by_class)):
            table[key][0] += hit  # type: ignore[index]
            table[key][1] += 1  # type: ignore[index]
    print(f"rules {scanner.RULES_VERSION}, split {args.split}")
    for label, verb in (("unsafe", "caught"), ("benign", "flagged")):
        print(f"{label} cases {verb}, per source and class:")
        for (case_label, source, kind), (hits, total) in sorted(counts.items()):
            if case_label == label:
                print(f"  {source:26} {kind:14} {hits:4}/{total:<4} = {100 * hits / total:5.1f}%")
        print(f"{label} cases {verb}, per class:")
        for (case_label, kind), (hits, total) in sorted(by_class.items()):
            if case_label == label:
                print(f"  {kind:41} {hits:4}/{total:<4} = {100 * hits / total:5.1f}%")


if __name__ == "__main__":
    main()
