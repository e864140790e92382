"""reviews.templatetags.console: the diff segments' markup."""

from __future__ import annotations

from reviews.diffs import Segment
from reviews.templatetags.console import as_json, segments


def test_an_id_stays_on_one_line_across_the_marks_inside_it():
    html = segments([Segment("Card for cust-"), Segment("1043", changed=True), Segment(" until 2027-01-05.")])
    assert html == ('Card for <span class="id-nowrap">cust-<mark>1043</mark></span> until '
                    '<span class="id-nowrap">2027-01-05</span>.')


def test_only_ids_are_kept_whole_and_everything_stays_escaped():
    html = segments([Segment("a well-known <b>fact</b> and a-very-long-" + "x1" * 40, changed=True)])
    # Words joined by hyphens without a digit may break; an overlong run too.
    assert "id-nowrap" not in html and "&lt;b&gt;" in html and html.startswith("<mark>")
    touching = segments([Segment("ORD-1"), Segment(" & ", changed=True), Segment("ORD-2")])
    assert touching == ('<span class="id-nowrap">ORD-1</span><mark> &amp; </mark>'
                        '<span class="id-nowrap">ORD-2</span>')


def test_tool_schemas_render_as_json_text():
    assert as_json({"required": ["id"], "additionalProperties": False}) == (
        '{\n  "required": [\n    "id"\n  ],\n  "additionalProperties": false\n}')
