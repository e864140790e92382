"""Server-rendered SVG charts for the dashboard: pure functions from numbers
to markup, no JavaScript. Colours and sizes are SVG presentation attributes,
not `style`: the CSP forbids inline styles, and attributes are not styles.
Each chart has a <title> and <desc> (role="img") so a screen reader gets
the figures, and a legend so colour is never the only carrier of meaning."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import count

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

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

    def __init__(self, *, width: int, height: int, y_max: float, n_series: int) -> None:
        self.width, self.height = width, height
        self.left, self.right, self.top = 56, 12, 12
        self.bottom = 44 + (18 if n_series > 1 else 0)
        self.plot_w = width - self.left - self.right
        self.plot_h = height - self.top - self.bottom
        self.y_max = nice_max(y_max)

    def y(self, value: float) -> float:
        return self.top + self.plot_h - (value / self.y_max) * self.plot_h

    def axes(self, *, unit: str) -> list[str]:
        out = []
        for i in range(5):
            value = self.y_max * i / 4
            y = self.y(value)
            out.append(
                f'<line class="chart-grid" x1="{self.left}" x2="{self.width - self.right}" y1="{y:.1f}" '
                f'y2="{y:.1f}" stroke="#d0d5dc" stroke-width="1"/>'
            )
            out.append(
                f'<text class="chart-tick" x="{self.left - 6}" y="{y + 4:.1f}" text-anchor="end" '
                f'font-size="11" fill="#374151">{escape(_fmt(value))}</text>'
            )
        base = self.top + self.plot_h
        out.append(
            f'<line class="chart-axis" x1="{self.left}" x2="{self.left}" y1="{self.top}" y2="{base}" '
            f'stroke="#374151" stroke-width="1"/>'
        )
        out.append(
            f'<line class="chart-axis" x1="{self.left}" x2="{self.width - self.right}" y1="{base}" y2="{base}" '
            f'stroke="#374151" stroke-width="1"/>'
        )
        if unit:
            out.append(
                f'<text class="chart-unit" x="4" y="{self.top + 4}" font-size="11" fill="#374151">'
                f"{escape(unit)}</text>"
            )
        return out

    def x_labels(self, labels: Sequence[str], centers: Sequence[float]) -> list[str]:
        # Thin out labels so they never overlap: about 56 px per label.
        every = max(1, math.ceil(len(labels) * 56 / max(self.plot_w, 1)))
        y = self.top + self.plot_h + 16
        return [
            f'<text class="chart-label" x="{x:.1f}" y="{y:.1f}" text-anchor="middle" font-size="11" '
            f'fill="#374151">{escape(label)}</text>'
            for i, (label, x) in enumerate(zip(labels, centers, strict=False))
            if i % every == 0 or i == len(labels) - 1
        ]

    def legend(self, series: Sequence[Series], colors: Sequence[str]) -> list[str]:
        if len(series) < 2:
            return []
        out, x, y = [], float(self.left), self.height - 10
        for s, color in zip(series, colors, strict=True):
            out.append(f'<rect x="{x:.1f}" y="{y - 9:.1f}" width="10" height="10" fill="{color}"/>')
            out.append(
                f'<text class="chart-legend" x="{x + 14:.1f}" y="{y:.1f}" font-size="11" fill="#111827">'
                f"{escape(s.name)}</text>"
            )
            x += 24 + 7 * len(s.name)
        return out


def _svg(*, title: str, desc: str, width: int, height: int, body: list[str], kind: str) -> SafeString:
    uid = next(_ids)
    return mark_safe(  # every interpolated text went through escape()
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart chart-{kind}" role="img" '
        f'viewBox="0 0 {width} {height}" width="100%" preserveAspectRatio="xMidYMid meet" '
        f'aria-labelledby="chart-{uid}-title chart-{uid}-desc">'
        f'<title id="chart-{uid}-title">{escape(title)}</title>'
        f'<desc id="chart-{uid}-desc">{escape(desc)}</desc>' + "".join(body) + "</svg>"
    )


def _empty(*, title: str, width: int, height: int, kind: str, message: str) -> SafeString:
    body = [
        f'<rect x="0.5" y="0.5" width="{width - 1}" height="{height - 1}" fill="none" stroke="#d0d5dc"/>',
        f'<text class="chart-empty" x="{width / 2:.1f}" y="{height / 2:.1f}" text-anchor="middle" '
        f'font-size="14" fill="#4b5563">{escape(message)}</text>',
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
    frame = _Frame(width=width, height=height, y_max=top, n_series=len(series))
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
            body.append(
                f'<rect class="chart-bar" x="{start + j * bar_w:.1f}" y="{y:.1f}" width="{bar_w:.1f}" '
                f'height="{h:.1f}" fill="{color}"><title>{escape(f"{s.name}, {label}: {_fmt(value)}{suffix}")}'
                f"</title></rect>"
            )
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
    frame = _Frame(width=width, height=height, y_max=top, n_series=len(series))
    colors = _colors(series)
    step = frame.plot_w / max(len(labels) - 1, 1)
    xs = [frame.left + (i * step if len(labels) > 1 else frame.plot_w / 2) for i in range(len(labels))]
    body = frame.axes(unit=unit)
    suffix = f" {unit}" if unit else ""
    for s, color in zip(series, colors, strict=True):
        points = [(xs[i], frame.y(v)) for i, v in enumerate(s.values[: len(labels)])]
        if len(points) > 1:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
            body.append(f'<polyline class="chart-line" points="{path}" fill="none" stroke="{color}" '
                        f'stroke-width="2"/>')
        for (x, y), label, v in zip(points, labels, s.values, strict=False):
            body.append(
                f'<circle class="chart-point" cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{color}">'
                f'<title>{escape(f"{s.name}, {label}: {_fmt(v)}{suffix}")}</title></circle>'
            )
    body += frame.x_labels(labels, xs)
    body += frame.legend(series, colors)
    return _svg(title=title, desc=_describe(labels, series, unit), width=width, height=height, body=body,
                kind="line")
