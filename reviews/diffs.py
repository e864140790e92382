"""Diffs for people: side-by-side and unified rows with word-level
highlights, a line-based three-way merge, and blame. Pure functions over
strings; templates render the segments (see templatetags/console.py).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

# Words, runs of whitespace and single punctuation marks: fine enough that a
# changed date or number lights up alone, coarse enough to stay readable.
_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")


@dataclass(frozen=True)
class Segment:
    text: str
    changed: bool = False


@dataclass(frozen=True)
class SideRow:
    """One row of a side-by-side diff. A missing side has number None."""

    kind: str  # equal | delete | insert | replace
    left_no: int | None
    left: tuple[Segment, ...]
    right_no: int | None
    right: tuple[Segment, ...]


@dataclass(frozen=True)
class UnifiedRow:
    sign: str  # " ", "-", "+"
    old_no: int | None
    new_no: int | None
    segments: tuple[Segment, ...]

    @property
    def kind(self) -> str:
        return {" ": "equal", "-": "delete", "+": "insert"}[self.sign]


def _lines(text: str) -> list[str]:
    return text.splitlines()


def _whole(line: str, changed: bool = False) -> tuple[Segment, ...]:
    return (Segment(line, changed),) if line else ()


def word_diff(old: str, new: str) -> tuple[tuple[Segment, ...], tuple[Segment, ...]]:
    """The two lines split into segments, the changed words marked."""
    a, b = _TOKEN.findall(old), _TOKEN.findall(new)
    left: list[Segment] = []
    right: list[Segment] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        old_part, new_part = "".join(a[i1:i2]), "".join(b[j1:j2])
        if tag == "equal":
            left.append(Segment(old_part))
            right.append(Segment(new_part))
            continue
        if old_part:
            left.append(Segment(old_part, True))
        if new_part:
            right.append(Segment(new_part, True))
    return _merge_segments(left), _merge_segments(right)


def _merge_segments(segments: list[Segment]) -> tuple[Segment, ...]:
    merged: list[Segment] = []
    for seg in segments:
        if merged and merged[-1].changed == seg.changed:
            merged[-1] = Segment(merged[-1].text + seg.text, seg.changed)
        else:
            merged.append(seg)
    return tuple(merged)


def _opcodes(old_lines: list[str], new_lines: list[str]) -> list[tuple[str, int, int, int, int]]:
    return list(difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False).get_opcodes())


def side_by_side(old: str, new: str) -> list[SideRow]:
    """Rows aligned so that a replaced line sits next to its replacement;
    the longer side of an uneven replace runs on against blank cells."""
    a, b = _lines(old), _lines(new)
    rows: list[SideRow] = []
    for tag, i1, i2, j1, j2 in _opcodes(a, b):
        if tag == "equal":
            rows.extend(SideRow("equal", i1 + k + 1, _whole(a[i1 + k]), j1 + k + 1, _whole(b[j1 + k]))
                        for k in range(i2 - i1))
        elif tag == "delete":
            rows.extend(SideRow("delete", i + 1, _whole(a[i], True), None, ()) for i in range(i1, i2))
        elif tag == "insert":
            rows.extend(SideRow("insert", None, (), j + 1, _whole(b[j], True)) for j in range(j1, j2))
        else:
            for k in range(max(i2 - i1, j2 - j1)):
                i, j = i1 + k, j1 + k
                if i < i2 and j < j2:
                    left, right = word_diff(a[i], b[j])
                    rows.append(SideRow("replace", i + 1, left, j + 1, right))
                elif i < i2:
                    rows.append(SideRow("delete", i + 1, _whole(a[i], True), None, ()))
                else:
                    rows.append(SideRow("insert", None, (), j + 1, _whole(b[j], True)))
    return rows


def unified(old: str, new: str) -> list[UnifiedRow]:
    """Every line of both versions in unified order (no hunks: memory files
    are short enough to read whole), paired replacements word-highlighted."""
    a, b = _lines(old), _lines(new)
    rows: list[UnifiedRow] = []
    for tag, i1, i2, j1, j2 in _opcodes(a, b):
        if tag == "equal":
            rows.extend(UnifiedRow(" ", i1 + k + 1, j1 + k + 1, _whole(a[i1 + k])) for k in range(i2 - i1))
            continue
        pairs = min(i2 - i1, j2 - j1) if tag == "replace" else 0
        highlighted = [word_diff(a[i1 + k], b[j1 + k]) for k in range(pairs)]
        rows.extend(
            UnifiedRow("-", i + 1, None, highlighted[i - i1][0] if i - i1 < pairs else _whole(a[i], True))
            for i in range(i1, i2)
        )
        rows.extend(
            UnifiedRow("+", None, j + 1, highlighted[j - j1][1] if j - j1 < pairs else _whole(b[j], True))
            for j in range(j1, j2)
        )
    return rows


def stats(old: str, new: str) -> dict[str, int]:
    added = removed = 0
    for tag, i1, i2, j1, j2 in _opcodes(_lines(old), _lines(new)):
        if tag != "equal":
            removed += i2 - i1
            added += j2 - j1
    return {"added": added, "removed": removed}


# --- three-way merge -------------------------------------------------------------

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


# --- blame -----------------------------------------------------------------------------


@dataclass(frozen=True)
class BlameLine:
    number: int
    text: str
    origin: Hashable = field(default=None)


def blame(versions: Sequence[tuple[Hashable, str]]) -> list[BlameLine]:
    """Each line of the last version with the key of the version that
    introduced it. Versions are given oldest first as (key, content)."""
    lines: list[str] = []
    origins: list[Hashable] = []
    for key, content in versions:
        new = _lines(content)
        new_origins: list[Hashable] = [key] * len(new)
        for tag, i1, i2, j1, _j2 in _opcodes(lines, new):
            if tag == "equal":
                new_origins[j1:j1 + (i2 - i1)] = origins[i1:i2]
        lines, origins = new, new_origins
    return [BlameLine(n + 1, text, origin) for n, (text, origin) in enumerate(zip(lines, origins, strict=True))]
