"""reviews.diffs: word highlights, alignment, three-way merge, blame."""

from __future__ import annotations

from reviews import diffs
from reviews.diffs import Segment


def changed(parts: tuple[Segment, ...]) -> list[str]:
    return [p.text for p in parts if p.changed]


def test_it_highlights_only_the_changed_words_of_a_replaced_line():
    rows = diffs.side_by_side("- Prefers email on Mondays\n", "- Prefers phone on Mondays\n")
    assert len(rows) == 1
    row = rows[0]
    assert row.kind == "replace"
    assert changed(row.left) == ["email"] and changed(row.right) == ["phone"]
    assert "".join(p.text for p in row.left) == "- Prefers email on Mondays"


def test_it_aligns_unchanged_lines_side_by_side_and_pads_an_uneven_replace():
    old = "- a\n- likes green tea\n- c\n- d"
    new = "- a\n- likes black tea\n- Pays in EUR\n- c"
    rows = diffs.side_by_side(old, new)
    assert [(r.kind, r.left_no, r.right_no) for r in rows] == [
        ("equal", 1, 1),
        ("replace", 2, 2),
        ("insert", None, 3),
        ("equal", 3, 4),
        ("delete", 4, None),
    ]
    assert rows[2].left == () and changed(rows[2].right) == ["- Pays in EUR"]


def test_it_lists_unified_rows_with_both_line_numbers():
    rows = diffs.unified("keep\nold line\n", "keep\nnew line\nadded\n")
    assert [(r.sign, r.old_no, r.new_no) for r in rows] == [(" ", 1, 1), ("-", 2, None), ("+", None, 2),
                                                             ("+", None, 3)]
    assert changed(rows[1].segments) == ["old"] and changed(rows[2].segments) == ["new"]
    assert rows[1].kind == "delete" and rows[3].kind == "insert"


def test_it_counts_added_and_removed_lines():
    assert diffs.stats("a\nb\n", "a\nc\nd\n") == {"added": 2, "removed": 1}


def test_it_blames_each_line_on_the_version_that_introduced_it():
    lines = diffs.blame([(1, "a\nb"), (2, "a\nc\nb"), (3, "c\nb\nz")])
    assert [(line.text, line.origin) for line in lines] == [("c", 2), ("b", 1), ("z", 3)]
    assert [line.number for line in lines] == [1, 2, 3]


