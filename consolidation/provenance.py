"""Which log entries each line of a consolidated file rests on.

A consolidation proposal's rationale is a list of change dicts; every change
that writes an entry keeps `after` (the entry exactly as rendered in the
file, without the leading "- ") and `evidence` (the log ids that produced
that entry, and only those). Entries carried over from a superseded
proposal keep their original evidence, so a line's evidence survives any
number of runs before a reviewer decides.

Pure functions: the blame view calls `evidence_for_lines` with a version's
proposal rationale and content.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from consolidation import entries as md

_ITEM_PREFIXES = ("- ", "* ", "+ ")


def _ids(values: object) -> list[int]:
    found: list[int] = []
    for value in values if isinstance(values, list | tuple) else ():
        if isinstance(value, bool):
            continue
        if isinstance(value, int):
            found.append(value)
        elif isinstance(value, str) and value.isdigit():
            found.append(int(value))
    return found


def evidence_by_entry(rationale: Iterable[object], *, file: str | None = None) -> dict[str, list[int]]:
    """{entry text: sorted log ids} from a rationale; `file` keeps one file's changes."""
    found: dict[str, set[int]] = {}
    for change in rationale:
        if not isinstance(change, Mapping):
            continue
        if file is not None and change.get("file") not in (None, file):
            continue
        after = change.get("after")
        if not isinstance(after, str) or not after.strip():
            continue
        found.setdefault(md.normalise(after), set()).update(_ids(change.get("evidence")))
    return {entry: sorted(ids) for entry, ids in found.items()}


def line_entry(line: str) -> str:
    """The entry a rendered line holds: a list item without its marker, a
    heading verbatim, "" for a blank line."""
    stripped = line.strip()
    if not stripped:
        return ""
    for prefix in _ITEM_PREFIXES:
        if stripped.startswith(prefix):
            return md.normalise(stripped[len(prefix):])
    return md.normalise(stripped)


def evidence_for_lines(rationale: Iterable[object], content: str) -> list[list[int]]:
    """One list of log ids per line of `content` (content.splitlines()):
    what the proposal cited for the entry on that line; [] for blank lines,
    headings and entries the proposal did not write."""
    by_entry = evidence_by_entry(rationale)
    return [list(by_entry.get(line_entry(line), [])) if line_entry(line) else [] for line in content.splitlines()]
