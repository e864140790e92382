"""memoryhub.merge: the line-based three-way merge behind rebase."""

from __future__ import annotations

from memoryhub import merge


def test_it_merges_changes_to_separate_lines_cleanly():
    base = "# Memory\n- likes tea\n- lives in Oslo\n- works at Acme\n"
    proposed = "# Memory\n- likes green tea\n- lives in Oslo\n- works at Acme\n"
    current = "# Memory\n- likes tea\n- lives in Oslo\n- works at Initech\n"
    result = merge.merge3(base, proposed, current)
    assert result.conflicts == 0
    assert result.content == "# Memory\n- likes green tea\n- lives in Oslo\n- works at Initech\n"


def test_it_marks_a_conflict_when_both_sides_change_the_same_line():
    result = merge.merge3("a\nb\nc\n", "a\nmine\nc\n", "a\ntheirs\nc\n")
    assert result.conflicts == 1
    assert result.content == (
        f"a\n{merge.CONFLICT_START}\ntheirs\n{merge.CONFLICT_MID}\nmine\n{merge.CONFLICT_END}\nc\n"
    )
    assert merge.has_conflict_markers(result.content)


def test_it_takes_an_identical_change_from_both_sides_once():
    result = merge.merge3("a\nb\n", "a\nB\n", "a\nB\n")
    assert (result.content, result.conflicts) == ("a\nB\n", 0)


def test_it_keeps_appends_from_both_sides_apart_from_edits():
    result = merge.merge3("x\ny\nz\n", "x\ny\nz\nnew fact\n", "X\ny\nz\n")
    assert (result.content, result.conflicts) == ("X\ny\nz\nnew fact\n", 0)


def test_it_keeps_a_line_appended_after_an_edited_block_without_a_conflict():
    base = "a\nb\nc\n"
    result = merge.merge3(base, "a\nB\nC\n", "a\nb\nc\nd\n")
    assert (result.content, result.conflicts) == ("a\nB\nC\nd\n", 0)
    result = merge.merge3(base, "a\nb\nc\nd\n", "A\nb\nc\n")
    assert (result.content, result.conflicts) == ("A\nb\nc\nd\n", 0)


def test_it_puts_an_insertion_before_an_edit_that_starts_at_the_same_line():
    result = merge.merge3("a\nb\n", "new\na\nb\n", "A\nb\n")
    assert (result.content, result.conflicts) == ("new\nA\nb\n", 0)


def test_it_marks_a_conflict_for_two_different_insertions_at_the_same_point():
    result = merge.merge3("a\n", "a\nmine\n", "a\ntheirs\n")
    assert result.conflicts == 1 and "theirs\n=======\nmine" in result.content
