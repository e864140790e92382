"""Server-rendered SVG charts for the dashboard: pure functions from numbers
to markup, no JavaScript. Colours and sizes are SVG presentation attributes,
not `style`: the CSP forbids inline styles, and attributes are not styles.
Each chart has a <title> and <desc> (role="img") so a screen reader gets
the figures, and a legend so colour is never the only carrier of meaning.
Every fragment is built with format_html, so every value — label, series
name, colour, number — is escaped where it lands; nothing is marked safe by
hand."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import count

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

# Okabe–Ito: distinguishable with the common colour-vision deficiencies.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#999999")
_ids = count(1)


@dataclass(frozen=True)
class Series:
    name: str
    values: Sequence[float]
    color: str = ""


def nice_max(value: float) -> float:
    """The smallest 1/2/5 × 10^n at or above value, so ticks are round."""
    if value <= 0:
        return 1.0
    exponent = math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        candidate = step * 10**exponent
        if candidate >= value:
            return float(candidate)
    return float(10 ** (exponent + 1))  # pragma: no cover


def _fmt(value: float) -> str:
    if value == int(value):
        return f"{int(value):,}"
    if abs(value) < 0.01:
        # Spend per day can be fractions of a cent: keep what tells them apart.
        return f"{value:.2g}"
    if abs(value) >= 10:
        return f"{value:,.1f}"
    return f"{value:,.2f}".rstrip("0").rstrip(".")


def _colors(series: Sequence[Series]) -> list[str]:
    return [s.color or PALETTE[i % len(PALETTE)] for i, s in enumerate(series)]


def _describe(labels: Sequence[str], series: Sequence[Series], unit: str) -> str:
    suffix = f" {unit}" if unit else ""
    parts = []
    for s in series:
        points = ", ".join(f"{label}: {_fmt(v)}{suffix}" for label, v in zip(labels, s.values, strict=False))
        parts.append(f"{s.name} — {points}")
    return "; ".join(parts)


class _Frame:
    """Plot area, y axis with round ticks, x labels and legend."""

    def __init__(self, *, width: int, height: int, y_max: float, n_series: int, unit: str = "") -> None:
        self.width, self.height = width, height
        # The unit gets a line of its own above the plot, clear of the top tick.
        self.left, self.right, self.top = 56, 12, 26 if unit else 12
        self.bottom = 44 + (18 if n_series > 1 else 0)
        self.plot_w = width - self.left - self.right
        self.plot_h = height - self.top - self.bottom
        self.y_max = nice_max(y_max)

    def y(self, value: float) -> float:
        return self.top + self.plot_h - (value / self.y_max) * self.plot_h

    def axes(self, *, unit: str) -> list[SafeString]:
        out = []
        for i in range(5):
            value = self.y_max * i / 4
            y = self.y(value)
            out.append(format_html(
                '<line class="chart-grid" x1="{}" x2="{}" y1="{}" y2="{}" stroke="#d0d5dc" stroke-width="1"/>',
                self.left, self.width - self.right, f"{y:.1f}", f"{y:.1f}",
            ))
            out.append(format_html(
                '<text class="chart-tick" x="{}" y="{}" text-anchor="end" font-size="11" fill="#374151">{}</text>',
                self.left - 6, f"{y + 4:.1f}", _fmt(value),
            ))
        base = self.top + self.plot_h
        out.append(format_html(
            '<line class="chart-axis" x1="{}" x2="{}" y1="{}" y2="{}" stroke="#374151" stroke-width="1"/>',
            self.left, self.left, self.top, base,
        ))
        out.append(format_html(
            '<line class="chart-axis" x1="{}" x2="{}" y1="{}" y2="{}" stroke="#374151" stroke-width="1"/>',
            self.left, self.width - self.right, base, base,
        ))
        if unit:
            out.append(format_html(
                '<text class="chart-unit" x="4" y="12" font-size="11" fill="#374151">{}</text>', unit,
            ))
        return out

    def x_labels(self, labels: Sequence[str], centers: Sequence[float]) -> list[SafeString]:
        # Thin out labels so they never overlap: each needs about 6.5 px a
        # character at font-size 11, plus a gap. The last label is always
        # shown; the one before it on the stride goes if they would touch.
        room = max(40.0, max((len(label) for label in labels), default=0) * 6.5 + 14)
        spacing = (centers[1] - centers[0]) if len(centers) > 1 else float(self.plot_w)
        every = max(1, math.ceil(room / max(spacing, 1)))
        shown = list(range(0, len(labels), every))
        last = len(labels) - 1

        def anchor(label: str, x: float) -> str:
            # A label at the plot's edge is aligned to it, never clipped.
            half = len(label) * 3.25
            return "end" if x + half > self.width else "start" if x - half < 0 else "middle"

        if shown and shown[-1] != last:
            # An end-aligned last label reaches a half label further left.
            needed = room * (1.5 if anchor(labels[last], centers[last]) == "end" else 1)
            if (last - shown[-1]) * spacing < needed:
                shown.pop()
            shown.append(last)
        y = self.top + self.plot_h + 16
        return [
            format_html(
                '<text class="chart-label" x="{}" y="{}" text-anchor="{}" font-size="11" fill="#374151">{}'
                "</text>",
                f"{x:.1f}", f"{y:.1f}", anchor(label, x), label,
            )
            for i, (label, x) in enumerate(zip(labels, centers, strict=False))
            if i in shown
        ]

    def legend(self, series: Sequence[Series], colors: Sequence[str]) -> list[SafeString]:
        if len(series) < 2:
            return []
        out, x, y = [], float(self.left), self.height - 10
        for s, color in zip(series, colors, strict=True):
            out.append(format_html('<rect x="{}" y="{}" width="10" height="10" fill="{}"/>',
                                   f"{x:.1f}", f"{y - 9:.1f}", color))
            out.append(format_html(
                '<text class="chart-legend" x="{}" y="{}" font-size="11" fill="#111827">{}</text>',
                f"{x + 14:.1f}", f"{y:.1f}", s.name,
            ))
            x += 24 + 7 * len(s.name)
        return out


def _svg(*, title: str, desc: str, width: int, height: int, body: list[SafeString], kind: str) -> SafeString:
    uid = next(_ids)
    return format_html(
        '<svg xmlns="http://www.w3.org/2000/svg" class="chart chart-{}" role="img" viewBox="0 0 {} {}" width="100%" '
        'preserveAspectRatio="xMidYMid meet" aria-labelledby="chart-{}-title chart-{}-desc">'
        '<title id="chart-{}-title">{}</title><desc id="chart-{}-desc">{}</desc>{}</svg>',
        kind, width, height, uid, uid, uid, title, uid, desc, format_html_join("", "{}", ((part,) for part in body)),
    )


def _empty(*, title: str, width: int, height: int, kind: str, message: str) -> SafeString:
    body = [
        format_html('<rect x="0.5" y="0.5" width="{}" height="{}" fill="none" stroke="#d0d5dc"/>', width - 1,
                    height - 1),
        format_html(
            '<text class="chart-empty" x="{}" y="{}" text-anchor="middle" font-size="14" fill="#4b5563">{}</text>',
            f"{width / 2:.1f}", f"{height / 2:.1f}", message,
        ),
    ]
    return _svg(title=title, desc=message, width=width, height=height, body=body, kind=kind)


def _is_empty(labels: Sequence[str], series: Sequence[Series]) -> bool:
    return not labels or not series or all(not s.values for s in series)


def bar_chart(
    *,
    title: str,
    labels: Sequence[str],
    series: Sequence[Series],
    unit: str = "",
    width: int = 640,
    height: int = 240,
    empty_message: str = "No data yet",
) -> SafeString:
    """Grouped vertical bars: one group per label, one bar per series."""
    if _is_empty(labels, series):
        return _empty(title=title, width=width, height=height, kind="bar", message=empty_message)
    top = max((v for s in series for v in s.values), default=0)
    frame = _Frame(width=width, height=height, y_max=top, n_series=len(series), unit=unit)
    colors = _colors(series)
    group_w = frame.plot_w / len(labels)
    bar_w = max(1.0, group_w * 0.8 / len(series))
    body = frame.axes(unit=unit)
    centers = []
    suffix = f" {unit}" if unit else ""
    for i, label in enumerate(labels):
        start = frame.left + i * group_w + group_w * 0.1
        centers.append(frame.left + (i + 0.5) * group_w)
        for j, (s, color) in enumerate(zip(series, colors, strict=True)):
            value = s.values[i] if i < len(s.values) else 0
            y = frame.y(value)
            h = frame.top + frame.plot_h - y
            body.append(format_html(
                '<rect class="chart-bar" x="{}" y="{}" width="{}" height="{}" fill="{}"><title>{}</title></rect>',
                f"{start + j * bar_w:.1f}", f"{y:.1f}", f"{bar_w:.1f}", f"{h:.1f}", color,
                f"{s.name}, {label}: {_fmt(value)}{suffix}",
            ))
    body += frame.x_labels(labels, centers)
    body += frame.legend(series, colors)
    return _svg(title=title, desc=_describe(labels, series, unit), width=width, height=height, body=body, kind="bar")


def line_chart(
    *,
    title: str,
    labels: Sequence[str],
    series: Sequence[Series],
    unit: str = "",
    width: int = 640,
    height: int = 240,
    empty_message: str = "No data yet",
) -> SafeString:
    """One polyline per series over evenly spaced labels, with a dot (and a
    tooltip title) per point."""
    if _is_empty(labels, series):
        return _empty(title=title, width=width, height=height, kind="line", message=empty_message)
    top = max((v for s in series for v in s.values), default=0)
    frame = _Frame(width=width, height=height, y_max=top, n_series=len(series), unit=unit)
    colors = _colors(series)
    step = frame.plot_w / max(len(labels) - 1, 1)
    xs = [frame.left + (i * step if len(labels) > 1 else frame.plot_w / 2) for i in range(len(labels))]
    body = frame.axes(unit=unit)
    suffix = f" {unit}" if unit else ""
    for s, color in zip(series, colors, strict=True):
        points = [(xs[i], frame.y(v)) for i, v in enumerate(s.values[: len(labels)])]
        if len(points) > 1:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
            body.append(format_html(
                '<polyline class="chart-line" points="{}" fill="none" stroke="{}" stroke-width="2"/>', path, color,
            ))
        for (x, y), label, v in zip(points, labels, s.values, strict=False):
            body.append(format_html(
                '<circle class="chart-point" cx="{}" cy="{}" r="3" fill="{}"><title>{}</title></circle>',
                f"{x:.1f}", f"{y:.1f}", color, f"{s.name}, {label}: {_fmt(v)}{suffix}",
            ))
    body += frame.x_labels(labels, xs)
    body += frame.legend(series, colors)
    return _svg(title=title, desc=_describe(labels, series, unit), width=width, height=height, body=body,
                kind="line")
