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
    old = "a\nb\nc\nd"
    new = "a\nB\nX\nc"
    rows = diffs.side_by_side(old, new)
    assert [(r.kind, r.left_no, r.right_no) for r in rows] == [
        ("equal", 1, 1),
        ("replace", 2, 2),
        ("insert", None, 3),
        ("equal", 3, 4),
        ("delete", 4, None),
    ]
    assert rows[2].left == () and changed(rows[2].right) == ["X"]


def test_it_lists_unified_rows_with_both_line_numbers():
    rows = diffs.unified("keep\nold line\n", "keep\nnew line\nadded\n")
    assert [(r.sign, r.old_no, r.new_no) for r in rows] == [(" ", 1, 1), ("-", 2, None), ("+", None, 2),
                                                             ("+", None, 3)]
    assert changed(rows[1].segments) == ["old"] and changed(rows[2].segments) == ["new"]
    assert rows[1].kind == "delete" and rows[3].kind == "insert"


def test_it_counts_added_and_removed_lines():
    assert diffs.stats("a\nb\n", "a\nc\nd\n") == {"added": 2, "removed": 1}


def test_it_merges_changes_to_separate_lines_cleanly():
    base = "# Memory\n- likes tea\n- lives in Oslo\n- works at Acme\n"
    proposed = "# Memory\n- likes green tea\n- lives in Oslo\n- works at Acme\n"
    current = "# Memory\n- likes tea\n- lives in Oslo\n- works at Initech\n"
    result = diffs.merge3(base, proposed, current)
    assert result.conflicts == 0
    assert result.content == "# Memory\n- likes green tea\n- lives in Oslo\n- works at Initech\n"


def test_it_marks_a_conflict_when_both_sides_change_the_same_line():
    result = diffs.merge3("a\nb\nc\n", "a\nmine\nc\n", "a\ntheirs\nc\n")
    assert result.conflicts == 1
    assert result.content == (
        f"a\n{diffs.CONFLICT_START}\ntheirs\n{diffs.CONFLICT_MID}\nmine\n{diffs.CONFLICT_END}\nc\n"
    )
    assert diffs.has_conflict_markers(result.content)


def test_it_takes_an_identical_change_from_both_sides_once():
    result = diffs.merge3("a\nb\n", "a\nB\n", "a\nB\n")
    assert (result.content, result.conflicts) == ("a\nB\n", 0)


def test_it_keeps_appends_from_both_sides_apart_from_edits():
    result = diffs.merge3("x\ny\nz\n", "x\ny\nz\nnew fact\n", "X\ny\nz\n")
    assert (result.content, result.conflicts) == ("X\ny\nz\nnew fact\n", 0)


def test_it_blames_each_line_on_the_version_that_introduced_it():
    lines = diffs.blame([(1, "a\nb"), (2, "a\nc\nb"), (3, "c\nb\nz")])
    assert [(line.text, line.origin) for line in lines] == [("c", 2), ("b", 1), ("z", 3)]
    assert [line.number for line in lines] == [1, 2, 3]


def test_it_keeps_a_line_appended_after_an_edited_block_without_a_conflict():
    base = "a\nb\nc\n"
    result = diffs.merge3(base, "a\nB\nC\n", "a\nb\nc\nd\n")
    assert (result.content, result.conflicts) == ("a\nB\nC\nd\n", 0)
    result = diffs.merge3(base, "a\nb\nc\nd\n", "A\nb\nc\n")
    assert (result.content, result.conflicts) == ("A\nb\nc\nd\n", 0)


def test_it_puts_an_insertion_before_an_edit_that_starts_at_the_same_line():
    result = diffs.merge3("a\nb\n", "new\na\nb\n", "A\nb\n")
    assert (result.content, result.conflicts) == ("new\nA\nb\n", 0)


def test_it_marks_a_conflict_for_two_different_insertions_at_the_same_point():
    result = diffs.merge3("a\n", "a\nmine\n", "a\ntheirs\n")
    assert result.conflicts == 1 and "theirs\n=======\nmine" in result.content
