"""Log retention: session log entries older than the workspace's
`log_retention_days` are redacted (services.redaction, tombstone `by
retention`), daily, by a Celery beat task.

- Never an entry cited as evidence by a pending (or stale) proposal: a
  reviewer must still see what the proposal rests on. It is redacted by a
  later run, once the proposal is decided.
- Bounded batches (RETENTION_BATCH entries per transaction); a workspace
  with more due re-queues itself (memoryhub.tasks.retention_task), so one
  run never holds a long transaction or a worker for long.
- Each batch is one audit event `retention.redact` in the workspace, with
  the count, the cut-off and how many remain; the console's compliance
  page shows the last one and what is still due (`retention_status`).
- Only the content goes: the rows, their ids, times and roles stay, and
  consolidation's high-water marks are ids, so nothing is gathered again.
- An empty setting (None) keeps logs forever; 0 is refused by the setting's
  validation (at least one day).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from memoryhub.models import OPEN_STATUSES, AuditEvent, LogEntry, Proposal, Workspace
from memoryhub.services import redaction
from memoryhub.services.audit import record_event

RETENTION_BATCH = 500
BY = "retention"


def cutoff(workspace: Workspace, now: datetime | None = None) -> datetime | None:
    if workspace.log_retention_days is None:
        return None
    return (now or timezone.now()) - timedelta(days=workspace.log_retention_days)


def cited_by_open_proposals(workspace: Workspace) -> set[int]:
    """Ids of log entries that open proposals of the workspace cite."""
    cited: set[int] = set()
    rationales = Proposal.objects.filter(agent__workspace=workspace, status__in=OPEN_STATUSES).values_list(
        "rationale", flat=True)
    for rationale in rationales:
        for item in rationale if isinstance(rationale, list) else []:
            for entry in (item.get("evidence") or []) if isinstance(item, dict) else []:
                try:
                    cited.add(int(entry))
                except (TypeError, ValueError):
                    continue
    return cited


def due(workspace: Workspace, now: datetime | None = None) -> QuerySet[LogEntry]:
    """Log entries of the workspace that retention would redact now."""
    moment = cutoff(workspace, now)
    if moment is None:
        return LogEntry.objects.none()
    return (LogEntry.objects.filter(agent__workspace=workspace, created_at__lt=moment, redacted_at__isnull=True)
            .exclude(pk__in=cited_by_open_proposals(workspace)))


@dataclass(frozen=True)
class RetentionBatch:
    workspace: str
    redacted: int
    remaining: int


def redact_expired_logs(*, workspace_id: int, batch: int | None = None) -> RetentionBatch | None:
    """One bounded batch for one workspace; `remaining` > 0 means call again."""
    batch = batch or RETENTION_BATCH
    workspace = Workspace.objects.filter(pk=workspace_id).first()
    if workspace is None:
        return None
    now = timezone.now()
    moment = cutoff(workspace, now)
    if moment is None:
        return RetentionBatch(workspace=workspace.slug, redacted=0, remaining=0)
    with transaction.atomic():
        # One batch per workspace at a time: two workers would redact the
        # same rows twice (harmless) and report wrong counts (not).
        Workspace.objects.select_for_update().get(pk=workspace.pk)
        ids = list(due(workspace, now).order_by("id").values_list("id", flat=True)[:batch])
        redacted = redaction.redact(what="log", ids=ids, by=BY, at=now)
        remaining = due(workspace, now).count()
        if redacted and not remaining:
            # SQLite: merging the whole search index is costly; once per
            # run, after its last batch, is enough.
            redaction.optimize_search()
        if redacted:
            record_event(
                action="retention.redact", workspace=workspace,
                summary=f"Retention redacted {redacted} log entries older than {workspace.log_retention_days} "
                        f"days ({remaining} still due)",
                details={"redacted": redacted, "remaining": remaining, "cutoff": moment.isoformat(),
                         "days": workspace.log_retention_days, "first": ids[0], "last": ids[-1]},
            )
    return RetentionBatch(workspace=workspace.slug, redacted=redacted, remaining=remaining)


def retention_status(workspace: Workspace) -> dict[str, object]:
    """For the console: the setting, what is due, the last batch."""
    last = (AuditEvent.objects.filter(workspace=workspace, action="retention.redact")
            .order_by("-created_at", "-id").first())
    return {
        "workspace": workspace,
        "days": workspace.log_retention_days,
        "due": due(workspace).count() if workspace.log_retention_days is not None else 0,
        "redacted": LogEntry.objects.filter(agent__workspace=workspace, redacted_by=BY).count(),
        "last": last,
    }
