"""Risk of a proposal: tags computed once, when the proposal is made, and a
level the queue sorts by and the approve service reads.

A reviewer clearing 300 proposals a day reads the risky ones first and
slowly; the rest can be decided quickly, some in bulk. The tags say why a
proposal is risky, in words a reviewer knows:

- `persona_file`: SOUL.md, ABOUT.md or TOOLS.md, injected into every context.
- `deletions`: lines that were served are taken out.
- `numbers_changed`: a number, id or amount on a removed line is missing
  from the added lines (a price, an order number, a limit rewritten).
- `scanner_findings`: today's scanner finds something in the proposed text
  (rules tighten after a proposal is made).
- `pii`: the workspace's personal-data policy flagged the proposed text.
- `agent_directed`: the scanner's structure model reads a directive to the
  agent in an added line (a persona set-up, a claimed system turn, a
  dictated answer …) that is not enough to refuse it. The tag comes with
  that reading, highlighted (`added_directives`), so a reviewer sees why;
  "always be polite" or "never share account numbers" carry none.
- `large_change`: many lines, or a large share of the file, change.

Pure functions over text: no database, so every creator (agent writes,
consolidation, rollbacks, reviewer edits, rebases) gets the same answer
through services.proposals.create_proposal.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence

from memoryhub import scanner
from memoryhub.models import AGENT_SCOPED, RiskLevel

TAGS = ("persona_file", "deletions", "numbers_changed", "scanner_findings", "pii", "agent_directed",
        "large_change")
# A tag in HIGH makes the proposal high risk; in MEDIUM, at least medium.
HIGH = frozenset({"persona_file", "scanner_findings", "pii", "agent_directed"})
MEDIUM = frozenset({"deletions", "numbers_changed", "large_change"})
# Proposals with these tags are decided one at a time, never in a batch.
SINGLE_REVIEW = frozenset({"persona_file", "scanner_findings", "pii"})

LARGE_LINES = 20
LARGE_SHARE = 0.5
LARGE_MIN_LINES = 4

TAG_LABELS = {
    "persona_file": "persona file",
    "deletions": "deletions",
    "numbers_changed": "numbers changed",
    "scanner_findings": "scanner findings",
    "pii": "personal data",
    "agent_directed": "agent-directed wording",
    "large_change": "large change",
}

# Digits with their separators: "1,200.50", "KC-104233", "2026-11-30" are one token each.
_NUMBER = re.compile(r"\d(?:[\d.,:/\-]*\d)?")


def _changed_lines(old: str, new: str) -> tuple[list[str], list[str]]:
    removed: list[str] = []
    added: list[str] = []
    for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0):
        if line.startswith(("---", "+++", "@@")):
            continue
        if line.startswith("-"):
            removed.append(line[1:])
        elif line.startswith("+"):
            added.append(line[1:])
    return removed, added


def _numbers(lines: Iterable[str]) -> set[str]:
    return {m.group(0).rstrip(".,:/-") for line in lines for m in _NUMBER.finditer(line)}


def added_directives(*, old: str, new: str) -> list[tuple[int, str, scanner.Directive]]:
    """Each directive the structure model reads in a line `new` adds to
    `old`: (the line's offset in `new`, the line, the directive; its offsets
    are in normalize(line))."""
    old_lines = set(old.splitlines())
    found: list[tuple[int, str, scanner.Directive]] = []
    offset = 0
    for line in new.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        if body.strip() and body not in old_lines:
            found.extend((offset, body, directive) for directive in scanner.directives(body))
        offset += len(line)
    return found


def tags_for(*, kind: str, old: str, new: str, pii: Sequence[object] | None = None) -> list[str]:
    """The risk tags of a change from `old` to `new` of a file of `kind`, in TAGS order."""
    removed, added = _changed_lines(old, new)
    added_text = [line for line in added if line.strip()]
    found: set[str] = set()
    if kind in AGENT_SCOPED:
        found.add("persona_file")
    # A line edited in place is one removed and one added line: only a net loss counts as deletions.
    if len([line for line in removed if line.strip()]) > len(added_text):
        found.add("deletions")
    if _numbers(removed) - _numbers(added):
        found.add("numbers_changed")
    if scanner.scan_all(new):
        found.add("scanner_findings")
    if pii:
        found.add("pii")
    if added_text and added_directives(old=old, new=new):
        found.add("agent_directed")
    old_lines = max(1, len(old.splitlines()))
    changed = len(removed) + len(added)
    if changed >= LARGE_LINES or (len(removed) >= LARGE_MIN_LINES and len(removed) / old_lines >= LARGE_SHARE):
        found.add("large_change")
    return [tag for tag in TAGS if tag in found]


def level_for(tags: Iterable[str]) -> int:
    tags = set(tags)
    if tags & HIGH:
        return RiskLevel.HIGH
    if tags & MEDIUM:
        return RiskLevel.MEDIUM
    return RiskLevel.LOW
