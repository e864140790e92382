"""Template helpers for the review console."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django import template
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.timesince import timesince

from memoryhub import services
from memoryhub.models import Membership
from reviews.diffs import Segment

register = template.Library()


@register.filter
def segments(parts: Iterable[Segment]) -> SafeString:
    """Diff segments as escaped HTML, changed words in <mark>."""
    return format_html_join(
        "",
        "{}",
        ((format_html("<mark>{}</mark>", s.text) if s.changed else s.text,) for s in parts),
    )


@register.simple_tag
def staff_roles(user: Any) -> str:
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
def detail_items(details: Any) -> list[tuple[str, str]]:
    """An audit event's details as (label, text) pairs for a <dl>: keys
    become words, lists are joined, nested objects flattened one level."""
    if not isinstance(details, dict):
        return [("Details", _plain(details))] if details not in (None, "", [], {}) else []
    return [(str(key).replace("_", " ").capitalize(), _plain(value)) for key, value in details.items()]


def _plain(value: Any) -> str:
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
def get_item(mapping: Any, key: Any) -> Any:
    return mapping.get(key) if isinstance(mapping, dict) else None


@register.filter
def duration_words(value: Any) -> str:
    """A timedelta as "3 h 20 min" / "2 d 4 h" / "45 min" (dashboards: short, exact enough)."""
    seconds = int(value.total_seconds()) if hasattr(value, "total_seconds") else 0
    days, rest = divmod(max(seconds, 0), 86400)
    hours, rest = divmod(rest, 3600)
    minutes = rest // 60
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min" if minutes else "under a minute"
