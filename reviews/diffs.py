"""Diffs for people: side-by-side and unified rows with word-level
highlights, collapsed to the changes and their context, and blame. Pure
functions over strings; templates render the segments (see
templatetags/console.py).

A reviewer must be able to trust what a row says. Inside a replaced block,
lines are paired by similarity, not by position: a deleted line stands
alone on its row instead of being drawn as an edit of the next one (which
would make amounts and references appear to change that never did). Words
are highlighted only within a similar pair.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

# The three-way merge lives in memoryhub.merge: rebasing is a domain operation.
from memoryhub.merge import has_conflict_markers, merge3

__all__ = ["DiffView", "blame", "collapse", "has_conflict_markers", "merge3", "present", "side_by_side", "similarity",
           "stats", "unified", "word_diff"]

# Words, runs of whitespace and single punctuation marks: fine enough that a
# changed date or number lights up alone, coarse enough to stay readable.
_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")
# Two lines at least this similar (difflib ratio over their words) may be
# shown as one edited line; below it they are a deletion and an insertion.
PAIR_THRESHOLD = 0.5
# Above this many line pairs in one replaced block the alignment is greedy
# (in order) instead of optimal: a reviewer reads blocks far smaller.
_OPTIMAL_PAIRS = 40_000
CONTEXT_LINES = 3


@dataclass(frozen=True)
class Segment:
    text: str
    changed: bool = False


@dataclass(frozen=True)
class SideRow:
    """One row of a side-by-side diff. A missing side has number None.
    `kind` "skip" stands for `skipped` unchanged lines collapsed away."""

    kind: str  # equal | delete | insert | replace | skip
    left_no: int | None
    left: tuple[Segment, ...]
    right_no: int | None
    right: tuple[Segment, ...]
    change: int | None = None  # the number of the change block this row belongs to (1-based)
    skipped: int = 0


@dataclass(frozen=True)
class UnifiedRow:
    sign: str  # " ", "-", "+", "…" (collapsed)
    old_no: int | None
    new_no: int | None
    segments: tuple[Segment, ...]
    change: int | None = None
    skipped: int = 0

    @property
    def kind(self) -> str:
        return {" ": "equal", "-": "delete", "+": "insert", "…": "skip"}[self.sign]


# One row of a diff as a page shows it, either view.
Row = SideRow | UnifiedRow


def _lines(text: str) -> list[str]:
    return text.splitlines()


def _whole(line: str, changed: bool = False) -> tuple[Segment, ...]:
    return (Segment(line, changed),) if line else ()


def similarity(old: str, new: str) -> float:
    """How alike two lines are, 0..1, over words and punctuation."""
    if old == new:
        return 1.0
    a, b = _TOKEN.findall(old), _TOKEN.findall(new)
    if not a or not b:
        return 0.0
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


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


def align(old: Sequence[str], new: Sequence[str]) -> list[tuple[int | None, int | None]]:
    """Pair the lines of a replaced block by similarity, keeping their order:
    (i, j) for a pair, (i, None) for a deletion, (None, j) for an insertion.
    Maximises the total similarity of the pairs; no pair is below
    PAIR_THRESHOLD."""
    n, m = len(old), len(new)
    if n * m > _OPTIMAL_PAIRS:
        return _align_greedy(old, new)
    sim = [[similarity(old[i], new[j]) for j in range(m)] for i in range(n)]
    # best[i][j]: the best total for old[i:] and new[j:].
    best = [[0.0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            score = max(best[i + 1][j], best[i][j + 1])
            if sim[i][j] >= PAIR_THRESHOLD:
                score = max(score, sim[i][j] + best[i + 1][j + 1])
            best[i][j] = score
    steps: list[tuple[int | None, int | None]] = []
    i = j = 0
    while i < n and j < m:
        if sim[i][j] >= PAIR_THRESHOLD and best[i][j] == sim[i][j] + best[i + 1][j + 1]:
            steps.append((i, j))
            i, j = i + 1, j + 1
        elif best[i][j] == best[i + 1][j]:
            steps.append((i, None))
            i += 1
        else:
            steps.append((None, j))
            j += 1
    steps.extend((k, None) for k in range(i, n))
    steps.extend((None, k) for k in range(j, m))
    return steps


def _align_greedy(old: Sequence[str], new: Sequence[str]) -> list[tuple[int | None, int | None]]:
    steps: list[tuple[int | None, int | None]] = []
    i = j = 0
    while i < len(old) and j < len(new):
        if similarity(old[i], new[j]) >= PAIR_THRESHOLD:
            steps.append((i, j))
            i, j = i + 1, j + 1
        else:
            steps.append((i, None))
            i += 1
    steps.extend((k, None) for k in range(i, len(old)))
    steps.extend((None, k) for k in range(j, len(new)))
    return steps


def side_by_side(old: str, new: str) -> list[SideRow]:
    """Every line of both versions, aligned: unchanged lines side by side,
    a changed line next to its similar replacement, a deleted or added line
    alone on its row. Changed rows carry the number of their change block."""
    a, b = _lines(old), _lines(new)
    rows: list[SideRow] = []
    change = 0
    for tag, i1, i2, j1, j2 in _opcodes(a, b):
        if tag == "equal":
            rows.extend(SideRow("equal", i1 + k + 1, _whole(a[i1 + k]), j1 + k + 1, _whole(b[j1 + k]))
                        for k in range(i2 - i1))
            continue
        change += 1
        for i, j in align(a[i1:i2], b[j1:j2]):
            if i is not None and j is not None:
                left, right = word_diff(a[i1 + i], b[j1 + j])
                rows.append(SideRow("replace", i1 + i + 1, left, j1 + j + 1, right, change))
            elif i is not None:
                rows.append(SideRow("delete", i1 + i + 1, _whole(a[i1 + i], True), None, (), change))
            else:
                assert j is not None
                rows.append(SideRow("insert", None, (), j1 + j + 1, _whole(b[j1 + j], True), change))
    return rows


def unified(old: str, new: str) -> list[UnifiedRow]:
    """Every line of both versions in unified order. Within a changed block
    the removed lines come first, then the added ones; only similar pairs get
    word highlights."""
    a, b = _lines(old), _lines(new)
    rows: list[UnifiedRow] = []
    change = 0
    for tag, i1, i2, j1, j2 in _opcodes(a, b):
        if tag == "equal":
            rows.extend(UnifiedRow(" ", i1 + k + 1, j1 + k + 1, _whole(a[i1 + k])) for k in range(i2 - i1))
            continue
        change += 1
        pairs = {i: j for i, j in align(a[i1:i2], b[j1:j2]) if i is not None and j is not None}
        paired_new = {j: i for i, j in pairs.items()}
        highlighted = {i: word_diff(a[i1 + i], b[j1 + j]) for i, j in pairs.items()}
        rows.extend(
            UnifiedRow("-", i1 + i + 1, None, highlighted[i][0] if i in highlighted else _whole(a[i1 + i], True),
                       change)
            for i in range(i2 - i1)
        )
        rows.extend(
            UnifiedRow("+", None, j1 + j + 1,
                       highlighted[paired_new[j]][1] if j in paired_new else _whole(b[j1 + j], True), change)
            for j in range(j2 - j1)
        )
    return rows


def collapse(rows: Sequence[SideRow] | Sequence[UnifiedRow], context: int = CONTEXT_LINES) -> list[Row]:
    """The rows with every unchanged run longer than 2 × context (plus one)
    cut down to `context` lines on each side of a change, the rest replaced
    by one "skip" row saying how many lines it hides."""
    out: list[Row] = []
    run: list[Row] = []

    def flush(at_start: bool, at_end: bool) -> None:
        keep_head = 0 if at_start else context
        keep_tail = 0 if at_end else context
        if len(run) <= keep_head + keep_tail + 1:
            out.extend(run)
        else:
            out.extend(run[:keep_head])
            out.append(_skip_row(run[0], len(run) - keep_head - keep_tail))
            if keep_tail:
                out.extend(run[-keep_tail:])
        run.clear()

    seen_change = False
    for row in rows:
        if row.kind == "equal":
            run.append(row)
            continue
        flush(at_start=not seen_change, at_end=False)
        seen_change = True
        out.append(row)
    if run:
        if not seen_change:
            return list(rows)  # nothing changed: show the file whole
        flush(at_start=False, at_end=True)
    return out


def _skip_row(first: Row, count: int) -> Row:
    if isinstance(first, SideRow):
        return SideRow("skip", None, (), None, (), skipped=count)
    return UnifiedRow("…", None, None, (), skipped=count)


def change_count(rows: Sequence[SideRow] | Sequence[UnifiedRow]) -> int:
    return max((row.change or 0 for row in rows), default=0)


@dataclass(frozen=True)
class DiffView:
    """What a page shows of one diff: its rows (collapsed unless `whole`),
    how many rows the whole diff has, how many unchanged lines are hidden
    and how many change blocks there are to step through."""

    rows: list[Row]
    total: int
    hidden: int
    changes: int
    unified: bool
    whole: bool
    collapsible: bool

    @property
    def change_numbers(self) -> range:
        return range(1, self.changes + 1)


def present(old: str, new: str, *, unified_view: bool = False, whole: bool = False,
            context: int = CONTEXT_LINES) -> DiffView:
    """The diff of two texts as a page shows it: side by side or unified,
    unchanged runs collapsed to `context` lines unless `whole`."""
    full: Sequence[SideRow] | Sequence[UnifiedRow] = unified(old, new) if unified_view else side_by_side(old, new)
    collapsed = collapse(full, context)
    rows: list[Row] = list(full) if whole else collapsed
    return DiffView(
        rows=rows,
        total=len(full),
        hidden=sum(row.skipped for row in rows),
        changes=change_count(full),
        unified=unified_view,
        whole=whole,
        collapsible=any(row.kind == "skip" for row in collapsed),
    )


def stats(old: str, new: str) -> dict[str, int]:
    added = removed = 0
    for tag, i1, i2, j1, j2 in _opcodes(_lines(old), _lines(new)):
        if tag != "equal":
            removed += i2 - i1
            added += j2 - j1
    return {"added": added, "removed": removed}


# --- blame -----------------------------------------------------------------------------


@dataclass(frozen=True)
class BlameLine:
    number: int
    text: str
    # The version credited with the line: the one that introduced it, or
    # the rollback that put it back into service.
    origin: Hashable = field(default=None)
    # The version that first wrote this text, when that is not `origin`
    # (a line a rollback restored).
    written: Hashable = field(default=None)


def _carry(old_lines: list[str], old_keys: list[Hashable], new: list[str], default: Hashable) -> list[Hashable]:
    keys: list[Hashable] = [default] * len(new)
    for tag, i1, i2, j1, _j2 in _opcodes(old_lines, new):
        if tag == "equal":
            keys[j1:j1 + (i2 - i1)] = old_keys[i1:i2]
    return keys


def blame(versions: Sequence[tuple[Hashable, str]],
          rollbacks: Mapping[Hashable, Hashable] | None = None) -> list[BlameLine]:
    """Each line of the last version with the key of the version that
    introduced it. Versions are given oldest first as (key, content).

    `rollbacks` maps a rollback version to the version whose content it
    served again. A rollback is credited like a revert: every line of it is
    the rollback's (its author and approver put the old text back), and
    keeps, as `written`, the version that first wrote that text."""
    rollbacks = rollbacks or {}
    lines: list[str] = []
    origins: list[Hashable] = []
    written: list[Hashable] = []
    seen: dict[Hashable, tuple[list[str], list[Hashable]]] = {}
    for key, content in versions:
        new = _lines(content)
        target = rollbacks.get(key)
        if target is not None and target in seen:
            old_lines, old_written = seen[target]
            new_written = _carry(old_lines, old_written, new, key)
            new_origins: list[Hashable] = [key] * len(new)
        else:
            new_origins = _carry(lines, origins, new, key)
            new_written = _carry(lines, written, new, key)
        lines, origins, written = new, new_origins, new_written
        seen[key] = (lines, written)
    return [BlameLine(n + 1, text, origin, first if first != origin else None)
            for n, (text, origin, first) in enumerate(zip(lines, origins, written, strict=True))]
