"""Properties of reviews.diffs over random line edits (hypothesis): a
reviewer can trust each column of a diff to be exactly one version, and a
row to pair two lines only when they are alike."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from reviews import diffs

# Short lines from a small vocabulary, so random edits produce lines that
# are alike, unlike, equal and empty in every mix.
WORDS = st.sampled_from(["pay", "EUR", "500", "501", "Berlin", "Oslo", "tea", "-", "on", "Monday", "", "x"])
LINE = st.lists(WORDS, max_size=6).map(" ".join)
TEXT = st.lists(LINE, max_size=25)


@st.composite
def edits(draw: st.DrawFn) -> tuple[list[str], list[str]]:
    """An old text and a new one made from it by random deletions,
    insertions and in-place word changes."""
    old = draw(TEXT)
    new: list[str] = []
    for line in old:
        action = draw(st.sampled_from(["keep", "keep", "delete", "edit", "insert"]))
        if action == "keep":
            new.append(line)
        elif action == "edit":
            words = line.split(" ")
            words[draw(st.integers(0, len(words) - 1))] = draw(WORDS)
            new.append(" ".join(words))
        elif action == "insert":
            new.extend([draw(LINE), line])
    new.extend(draw(st.lists(LINE, max_size=3)))
    return old, new


def text(segments: tuple[diffs.Segment, ...]) -> str:
    return "".join(s.text for s in segments)


@settings(max_examples=300, deadline=None)
@given(edits())
def test_the_left_column_is_the_old_text_and_the_right_the_new(pair):
    old, new = pair
    rows = diffs.side_by_side("\n".join(old), "\n".join(new))
    left = [(r.left_no, text(r.left)) for r in rows if r.left_no is not None]
    right = [(r.right_no, text(r.right)) for r in rows if r.right_no is not None]
    expected_old = "\n".join(old).splitlines()
    expected_new = "\n".join(new).splitlines()
    assert left == list(enumerate(expected_old, start=1))
    assert right == list(enumerate(expected_new, start=1))


@settings(max_examples=300, deadline=None)
@given(edits())
def test_no_row_pairs_two_lines_that_are_not_alike(pair):
    old, new = pair
    a, b = "\n".join(old).splitlines(), "\n".join(new).splitlines()
    for row in diffs.side_by_side("\n".join(old), "\n".join(new)):
        if row.kind == "replace":
            assert row.left_no is not None and row.right_no is not None
            assert diffs.similarity(a[row.left_no - 1], b[row.right_no - 1]) >= diffs.PAIR_THRESHOLD
        elif row.kind == "equal":
            assert a[row.left_no - 1] == b[row.right_no - 1]  # type: ignore[index]


@settings(max_examples=200, deadline=None)
@given(edits())
def test_the_unified_rows_are_the_old_text_minus_and_the_new_text_plus(pair):
    old, new = pair
    rows = diffs.unified("\n".join(old), "\n".join(new))
    assert [text(r.segments) for r in rows if r.sign in " -"] == "\n".join(old).splitlines()
    assert [text(r.segments) for r in rows if r.sign in " +"] == "\n".join(new).splitlines()


@settings(max_examples=200, deadline=None)
@given(edits(), st.integers(0, 5))
def test_collapsing_hides_only_unchanged_lines_and_keeps_every_change(pair, context):
    old, new = pair
    full = diffs.side_by_side("\n".join(old), "\n".join(new))
    collapsed = diffs.collapse(full, context)
    assert [r for r in collapsed if r.kind not in ("equal", "skip")] == [r for r in full if r.kind != "equal"]
    shown_equal = sum(1 for r in collapsed if r.kind == "equal")
    assert shown_equal + sum(r.skipped for r in collapsed) == sum(1 for r in full if r.kind == "equal")
