"""Template helpers for the review console."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import datetime, timedelta

from django import template
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.timesince import timesince

from memoryhub import services
from memoryhub.actors import Actor
from memoryhub.models import Membership
from reviews.diffs import Segment

register = template.Library()


# Ids as files and logs write them: letters and digits joined by hyphens,
# with a digit somewhere (cust-1042, ORD-2026-118, a UUID, a date). A
# browser may break a line after any hyphen; inside an id that reads as two
# ids. Longer runs are left breakable so they cannot push a cell wide.
_ID = re.compile(r"\w+(?:-\w+)+")
_ID_MAX = 64


def _id_spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in _ID.finditer(text)
            if any(ch.isdigit() for ch in m.group()) and len(m.group()) <= _ID_MAX]


@register.filter
def segments(parts: Iterable[Segment]) -> SafeString:
    """Diff segments as escaped HTML, changed words in <mark>, each id kept
    on one line (<span class="id-nowrap">) across the marks inside it."""
    parts = list(parts)
    spans = _id_spans("".join(part.text for part in parts))
    html: list[str] = []
    current: int | None = None  # the id span the last piece was in
    offset = 0
    for part in parts:
        # Cut the segment at every id edge inside it.
        cuts = sorted({0, len(part.text)} | {edge - offset for span in spans for edge in span
                                            if offset < edge < offset + len(part.text)})
        for start, end in zip(cuts, cuts[1:], strict=False):
            at = offset + start
            inside = next((i for i, (a, b) in enumerate(spans) if a <= at < b), None)
            if inside != current:
                if current is not None:
                    html.append("</span>")
                if inside is not None:
                    html.append('<span class="id-nowrap">')
                current = inside
            text = part.text[start:end]
            html.append(format_html("<mark>{}</mark>", text) if part.changed else format_html("{}", text))
        offset += len(part.text)
    if current is not None:
        html.append("</span>")
    return SafeString("".join(html))


@register.filter
def as_json(value: object) -> str:
    """A value as indented JSON, the notation the edit boxes take (escaped
    by the template like any text: never marked safe)."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)


@register.simple_tag
def staff_roles(user: Actor | None) -> str:
    """"reviewer · acme" style summary of the user's roles, for the header."""
    if not services.workspace_ids_for(user):
        return "no workspace"
    rows = Membership.objects.for_user(user).select_related("workspace").order_by("workspace__slug")
    return ", ".join(f"{m.get_role_display()} · {m.workspace.slug}" for m in rows)


@register.filter
def percent_of(value: int, limit: int) -> int:
    return int(value * 100 / limit) if limit else 0


@register.filter
def ago(value: datetime | None, now: datetime | None = None) -> str:
    """"3 hours ago", or "just now" under a minute (Django's timesince says
    "0 minutes", which reads like a bug)."""
    if not value:
        return ""
    now = now or timezone.now()
    if now - value < timedelta(minutes=1):
        return "just now"
    return f"{timesince(value, now)} ago"


@register.filter
def detail_items(details: object) -> list[tuple[str, str]]:
    """An audit event's details as (label, text) pairs for a <dl>: keys
    become words, lists are joined, nested objects flattened one level."""
    if not isinstance(details, dict):
        return [("Details", _plain(details))] if details not in (None, "", [], {}) else []
    return [(str(key).replace("_", " ").capitalize(), _plain(value)) for key, value in details.items()]


def _plain(value: object) -> str:
    if value is None or value == "":
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(_plain(v) for v in value) if value else "none"
    if isinstance(value, dict):
        return "; ".join(f"{str(k).replace('_', ' ')}: {_plain(v)}" for k, v in value.items()) if value else "none"
    return str(value)


@register.filter
def get_item(mapping: object, key: object) -> object:
    return mapping.get(key) if isinstance(mapping, dict) else None


@register.filter
def duration_words(value: object) -> str:
    """A timedelta as "3 h 20 min" / "2 d 4 h" / "45 min" (dashboards: short, exact enough)."""
    seconds = int(value.total_seconds()) if isinstance(value, timedelta) else 0
    days, rest = divmod(max(seconds, 0), 86400)
    hours, rest = divmod(rest, 3600)
    minutes = rest // 60
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min" if minutes else "under a minute"
