"""Streaming CSV and JSON export of audit events. Rows are read in chunks
and written as they come, so an export of a year of events never sits in
memory whole."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator

from django.db.models import QuerySet
from django.http import StreamingHttpResponse
from django.utils import timezone

from memoryhub.models import AuditEvent

COLUMNS = ("id", "created_at", "action", "workspace", "actor", "agent", "user_ref", "target_type", "target_id",
           "summary", "details")
CHUNK = 500
# A cell starting with one of these is a formula to a spreadsheet: summaries
# and details carry text that agents and users wrote.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def event_row(event: AuditEvent) -> dict[str, object]:
    return {
        "id": event.pk,
        "created_at": event.created_at.isoformat(),
        "action": event.action,
        "workspace": event.workspace.slug if event.workspace else "",
        "actor": event.actor_label,
        "agent": event.agent.slug if event.agent else "",
        "user_ref": event.user_ref,
        "target_type": event.target_type,
        "target_id": event.target_id,
        "summary": event.summary,
        "details": event.details,
    }


def _events(queryset: QuerySet[AuditEvent]) -> Iterator[AuditEvent]:
    return queryset.select_related("workspace", "actor_user", "actor_agent", "agent").iterator(chunk_size=CHUNK)


def _safe_cell(value: object) -> str:
    if isinstance(value, int):
        return str(value)
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return "'" + text if text.startswith(_FORMULA_START) else text


class _Echo:
    def write(self, value: str) -> str:
        return value


def csv_lines(queryset: QuerySet[AuditEvent]) -> Iterator[str]:
    writer = csv.writer(_Echo())
    yield writer.writerow(COLUMNS)
    for event in _events(queryset):
        row = event_row(event)
        # Every cell: an action, agent slug or target id is data too.
        yield writer.writerow([_safe_cell(row[c]) for c in COLUMNS])


def json_chunks(queryset: QuerySet[AuditEvent]) -> Iterator[str]:
    yield "["
    first = True
    for event in _events(queryset):
        yield ("" if first else ",") + "\n" + json.dumps(event_row(event), ensure_ascii=False)
        first = False
    yield "\n]\n"


def _response(chunks: Iterable[str], *, content_type: str, extension: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(chunks, content_type=content_type)
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    response["Content-Disposition"] = f'attachment; filename="memoryhub-audit-{stamp}.{extension}"'
    response["Cache-Control"] = "no-store"
    return response


def export(queryset: QuerySet[AuditEvent], fmt: str) -> StreamingHttpResponse:
    if fmt == "csv":
        return _response(csv_lines(queryset), content_type="text/csv; charset=utf-8", extension="csv")
    return _response(json_chunks(queryset), content_type="application/json", extension="json")
