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




def fifty_lines() -> list[str]:
    # Distinct facts, as a USER.md is: each line names its own account.
    return [f"- Account {1000 + n} of {name} is billed on day {n % 28 + 1}" for n, name in
            enumerate(["Ada", "Bo", "Cy", "Di", "Ed"] * 10)]


def test_it_shows_a_deleted_line_alone_and_the_next_edited_line_beside_its_new_self():
    old = fifty_lines()
    new = old[:19] + [old[20].replace("day 21", "day 22")] + old[21:]  # line 20 deleted, line 21 edited
    rows = diffs.side_by_side("\n".join(old), "\n".join(new))
    changed_rows = [r for r in rows if r.kind != "equal"]
    assert [(r.kind, r.left_no, r.right_no) for r in changed_rows] == [("delete", 20, None), ("replace", 21, 20)]
    deleted, edited = changed_rows
    assert "".join(p.text for p in deleted.left) == old[19] and deleted.right == ()
    assert changed(edited.left) == ["21"] and changed(edited.right) == ["22"]
    unified = [r for r in diffs.unified("\n".join(old), "\n".join(new)) if r.kind != "equal"]
    assert [(r.sign, r.old_no, r.new_no) for r in unified] == [("-", 20, None), ("-", 21, None), ("+", None, 20)]
    assert unified[0].segments == (Segment(old[19], True),)  # no word pairing for the deleted line
    assert changed(unified[1].segments) == ["21"] and changed(unified[2].segments) == ["22"]


def test_it_collapses_unchanged_runs_to_three_lines_of_context():
    old = fifty_lines()
    new = old[:19] + [old[20].replace("day 21", "day 22")] + old[21:]
    view = diffs.present("\n".join(old), "\n".join(new))
    kinds = [r.kind for r in view.rows]
    assert kinds == ["skip", "equal", "equal", "equal", "delete", "replace", "equal", "equal", "equal", "skip"]
    assert [r.skipped for r in view.rows if r.kind == "skip"] == [16, 26]
    assert (view.total, view.hidden, view.changes, view.collapsible) == (50, 42, 1, True)
    whole = diffs.present("\n".join(old), "\n".join(new), whole=True)
    assert len(whole.rows) == 50 and whole.hidden == 0 and whole.collapsible
    assert diffs.present("a\nb", "a\nb").rows == diffs.side_by_side("a\nb", "a\nb")  # nothing changed: all shown


def test_it_numbers_the_change_blocks_in_order():
    old = "\n".join(f"line {n}" for n in range(20))
    new = old.replace("line 2\n", "line two\n").replace("line 15", "line fifteen")
    rows = diffs.side_by_side(old, new)
    assert [(r.left_no, r.change) for r in rows if r.change] == [(3, 1), (16, 2)]
    assert diffs.present(old, new, unified_view=True).changes == 2


def test_a_rollback_is_credited_with_every_line_it_serves_and_keeps_who_wrote_them():
    versions = [(1, "a\nb"), (2, "a\nb\nc"), (3, "a\nb"), (4, "a\nb\nd")]
    plain = diffs.blame(versions)
    assert [(line.origin, line.written) for line in plain] == [(1, None), (1, None), (4, None)]
    credited = diffs.blame(versions, rollbacks={3: 1})
    assert [(line.text, line.origin, line.written) for line in credited] == [
        ("a", 3, 1), ("b", 3, 1), ("d", 4, None)]
