"""A line-based three-way merge for rebasing a proposal onto the version
that overtook it, and the conflict markers it leaves for a person to
resolve. Pure functions over strings."""

from __future__ import annotations

import difflib
from dataclasses import dataclass


def _lines(text: str) -> list[str]:
    return text.splitlines()


def _opcodes(old_lines: list[str], new_lines: list[str]) -> list[tuple[str, int, int, int, int]]:
    return list(difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False).get_opcodes())


CONFLICT_START = "<<<<<<< current version"
CONFLICT_MID = "======="
CONFLICT_END = ">>>>>>> proposal"


@dataclass(frozen=True)
class MergeResult:
    content: str
    conflicts: int


def _changes(base: list[str], other: list[str]) -> list[tuple[int, int, list[str]]]:
    """(base_start, base_end, replacement) for each change from base."""
    return [(i1, i2, other[j1:j2]) for tag, i1, i2, j1, j2 in _opcodes(base, other) if tag != "equal"]


def merge3(base: str, proposed: str, current: str) -> MergeResult:
    """Line-based three-way merge of two edits of `base`. Changes to
    separate lines both apply (an insertion next to an edited block is kept
    beside it); overlapping different changes become a conflict block with
    the current version's lines first."""
    b, p, c = _lines(base), _lines(proposed), _lines(current)
    # Sorted by (start, end): an insertion at a line comes before an edit
    # that starts there, so the output never steps back over base lines.
    changes = sorted([(*ch, "proposed") for ch in _changes(b, p)] + [(*ch, "current") for ch in _changes(b, c)],
                     key=lambda ch: (ch[0], ch[1], ch[3]))
    out: list[str] = []
    conflicts = 0
    pos = 0
    i = 0
    while i < len(changes):
        start, end = changes[i][0], changes[i][1]
        group = [changes[i]]
        i += 1
        while i < len(changes) and _overlaps(changes[i], start, end):
            end = max(end, changes[i][1])
            group.append(changes[i])
            i += 1
        out.extend(b[pos:start])
        mine = _apply(b, start, end, [(s, e, lines) for s, e, lines, side in group if side == "proposed"])
        other = _apply(b, start, end, [(s, e, lines) for s, e, lines, side in group if side == "current"])
        sides = {side for *_, side in group}
        if sides == {"proposed"}:
            out.extend(mine)
        elif sides == {"current"} or mine == other:
            out.extend(other)
        else:
            conflicts += 1
            out.extend([CONFLICT_START, *other, CONFLICT_MID, *mine, CONFLICT_END])
        pos = end
    out.extend(b[pos:])
    text = "\n".join(out)
    if out and (proposed.endswith("\n") or current.endswith("\n")):
        text += "\n"
    return MergeResult(text, conflicts)


def _overlaps(change: tuple[int, int, list[str], str], start: int, end: int) -> bool:
    """Whether a change (sorted after the group's start) touches the group's
    base lines [start, end). Insertions conflict only inside an edited block
    or with another insertion at the same point."""
    c_start, c_end = change[0], change[1]
    if c_start == c_end:
        return start < c_start < end or start == end == c_start
    return c_start < end


def _apply(base: list[str], start: int, end: int, changes: list[tuple[int, int, list[str]]]) -> list[str]:
    result: list[str] = []
    pos = start
    for c_start, c_end, lines in changes:
        result.extend(base[pos:c_start])
        result.extend(lines)
        pos = c_end
    result.extend(base[pos:end])
    return result


def has_conflict_markers(text: str) -> bool:
    lines = set(_lines(text))
    return CONFLICT_START in lines and CONFLICT_END in lines
