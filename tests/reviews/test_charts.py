"""Server-rendered SVG charts: well-formed, labelled, and calm about no data."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from django.utils.safestring import SafeString

from reviews import charts

NS = {"svg": "http://www.w3.org/2000/svg"}


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def texts(root: ET.Element) -> list[str]:
    return [el.text or "" for el in root.iter(f"{{{NS['svg']}}}text")]


def test_it_draws_a_well_formed_bar_chart_with_title_labels_and_a_bar_per_value():
    svg = charts.bar_chart(
        title="Runs by outcome",
        labels=["succeeded", "failed", "skipped"],
        series=[charts.Series("Runs", [4, 1, 0])],
    )
    assert isinstance(svg, SafeString)
    root = parse(svg)
    assert root.get("role") == "img"
    assert root.find("svg:title", NS).text == "Runs by outcome"
    assert "succeeded: 4" in root.find("svg:desc", NS).text
    assert {"succeeded", "failed", "skipped"} <= set(texts(root))
    bars = [r for r in root.iter(f"{{{NS['svg']}}}rect") if r.get("class") == "chart-bar"]
    assert len(bars) == 3
    assert bars[0].find("svg:title", NS).text == "Runs, succeeded: 4"
    assert float(bars[0].get("height")) > float(bars[1].get("height")) > float(bars[2].get("height")) == 0


def test_it_groups_bars_and_adds_a_legend_for_several_series():
    svg = charts.bar_chart(
        title="Decisions",
        labels=["Nov 01", "Nov 02"],
        series=[charts.Series("Approved", [3, 2]), charts.Series("Rejected", [1, 0])],
    )
    root = parse(svg)
    assert len([r for r in root.iter(f"{{{NS['svg']}}}rect") if r.get("class") == "chart-bar"]) == 4
    assert {"Approved", "Rejected"} <= set(texts(root))


def test_it_draws_a_line_chart_with_points_axis_ticks_and_unit():
    svg = charts.line_chart(
        title="Tokens per day",
        labels=["Mon", "Tue", "Wed"],
        series=[charts.Series("Tokens in", [1200, 800, 1500]), charts.Series("Tokens out", [300, 200, 400])],
        unit="tokens",
    )
    root = parse(svg)
    assert len(root.findall("svg:polyline", NS)) == 2
    assert len(root.findall("svg:circle", NS)) == 6
    labels = texts(root)
    assert {"Mon", "Tue", "Wed", "tokens", "0", "2,000"} <= set(labels)


def test_it_escapes_labels_and_titles():
    svg = charts.bar_chart(title="<script>alert(1)</script>", labels=["a&b", "<c>"],
                           series=[charts.Series("x\"y", [1, 2])])
    root = parse(svg)
    assert root.find("svg:title", NS).text == "<script>alert(1)</script>"
    assert "<script>" not in svg
    assert {"a&b", "<c>"} <= set(texts(root))


def test_it_renders_an_empty_chart_with_a_message_instead_of_failing():
    for build in (charts.bar_chart, charts.line_chart):
        for labels, series in (([], []), (["a"], []), ([], [charts.Series("s", [])])):
            root = parse(build(title="Nothing", labels=labels, series=series, empty_message="No runs yet"))
            assert "No runs yet" in texts(root)
            assert root.find("svg:title", NS).text == "Nothing"


def test_it_handles_all_zero_values_and_a_single_point():
    root = parse(charts.bar_chart(title="Zero", labels=["a", "b"], series=[charts.Series("s", [0, 0])]))
    assert "1" in texts(root)  # the axis still has a scale
    root = parse(charts.line_chart(title="One", labels=["only"], series=[charts.Series("s", [5])]))
    assert len(root.findall("svg:circle", NS)) == 1
    assert root.findall("svg:polyline", NS) == []


def test_it_thins_out_x_labels_so_they_do_not_overlap():
    labels = [f"d{i}" for i in range(60)]
    root = parse(charts.bar_chart(title="Many", labels=labels, series=[charts.Series("s", list(range(60)))]))
    shown = [t for t in texts(root) if t.startswith("d")]
    assert "d0" in shown and "d59" in shown and len(shown) < 20


def test_it_rounds_the_axis_maximum():
    assert [charts.nice_max(v) for v in (0, 0.3, 1, 7, 12, 101, 4999)] == [1, 0.5, 1, 10, 20, 200, 5000]
    assert charts.nice_max(3) == 5


def test_each_chart_gets_unique_ids_for_its_accessible_name():
    first = parse(charts.bar_chart(title="A", labels=["x"], series=[charts.Series("s", [1])]))
    second = parse(charts.bar_chart(title="B", labels=["x"], series=[charts.Series("s", [1])]))
    assert first.get("aria-labelledby") != second.get("aria-labelledby")


def label_boxes(root: ET.Element, cls: str) -> list[tuple[float, float, float]]:
    """(left, right, baseline) of each text of a class, at 6.5 px a character (font-size 11)."""
    boxes = []
    for el in root.iter(f"{{{NS['svg']}}}text"):
        if el.get("class") != cls:
            continue
        x, width = float(el.get("x", 0)), len(el.text or "") * 6.5
        anchor = el.get("text-anchor", "start")
        left = x - width / 2 if anchor == "middle" else x - width if anchor == "end" else x
        boxes.append((left, left + width, float(el.get("y", 0))))
    return boxes


def test_day_labels_never_collide_even_with_the_last_one_forced_in():
    # 14 day labels as the dashboard draws them: the stride used to show
    # "Nov 29" and "Nov 30" side by side.
    labels = [f"Nov {d:02d}" for d in range(17, 31)]
    for chart in (charts.bar_chart, charts.line_chart):
        root = parse(chart(title="Days", labels=labels, series=[charts.Series("s", list(range(14)))]))
        boxes = label_boxes(root, "chart-label")
        assert "Nov 30" in texts(root) and "Nov 17" in texts(root)
        assert boxes[0][0] >= 0 and boxes[-1][1] <= 640  # nothing clipped at either edge
        assert all(left_next - right > 4 for (_, right, _), (left_next, _, _) in zip(boxes, boxes[1:], strict=False))


def test_long_category_labels_are_thinned_by_their_length():
    labels = ["succeeded", "no_change", "failed_with_a_long_reason", "queued", "running", "skipped"] * 3
    root = parse(charts.bar_chart(title="Runs", labels=labels, series=[charts.Series("s", [1] * len(labels))]))
    boxes = label_boxes(root, "chart-label")
    assert all(left_next - right > 4 for (_, right, _), (left_next, _, _) in zip(boxes, boxes[1:], strict=False))


def test_the_unit_sits_above_the_plot_clear_of_the_top_tick():
    root = parse(charts.bar_chart(title="Cost", labels=["a", "b"], series=[charts.Series("s", [1000, 2000])],
                                  unit="USD"))
    (unit_left, unit_right, unit_y), = label_boxes(root, "chart-unit")
    top_tick = min(label_boxes(root, "chart-tick"), key=lambda box: box[2])
    assert unit_y + 11 <= top_tick[2] or unit_right < top_tick[0]
def test_fractions_of_a_cent_stay_apart_on_the_axis() -> None:
    from reviews.charts import _fmt

    assert [_fmt(v) for v in (0.0025, 0.005, 0.0075)] == ["0.0025", "0.005", "0.0075"]
    assert _fmt(0.25) == "0.25" and _fmt(12.5) == "12.5"
