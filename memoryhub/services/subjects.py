# mypy: disable-error-code="no-any-return"
# (history managers and models looked up by label are untyped: their querysets are Any)
"""Data subjects: everything MemoryHub holds about one end user of a
workspace, found in one place, and exported.

An end user is known only by the `user_ref` the agents pass (the caller's
own id for them), exactly, after NFC normalisation: "José" composed and
decomposed is one subject; "jose" is another. A subject lives in one
workspace: the same reference in another workspace is another tenant's
customer and is never looked up together with this one.

`Subject` is the lookup every subject operation shares (export here,
erasure later): its querysets name every row that holds the subject's data
or names them — memory files and their versions, proposals, sessions and
their log entries, governance changes, consolidation runs and audit events.

Who may export: admins and auditors of the workspace. Reviewers decide
proposals one file at a time; a subject's whole record across every agent
is a compliance function. Another workspace's subject is a 404 (its
existence is not disclosed); a role that may not export is a 403. Both
refusals and every export are audit events in the workspace.

A subject with no data answers 200 with empty lists, not 404: "we hold
nothing about X" is a valid answer to a subject access request, and
whoever may export already sees every user reference of the workspace in
the console, so the answer discloses nothing new to them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from django.apps import apps
from django.db.models import QuerySet
from django.utils import timezone

from memoryhub import errors, jsonstream
from memoryhub.actors import Actor, StaffUser, active_staff_user, is_system
from memoryhub.models import (
    Agent,
    AgentSession,
    AuditEvent,
    Change,
    LogEntry,
    Membership,
    MemoryFile,
    Proposal,
    Role,
    Workspace,
)
from memoryhub.services.access import require_role, user_or_none
from memoryhub.services.audit import record_event
from memoryhub.services.limits import validate_user_ref

EXPORT_ROLES = frozenset({Role.ADMIN, Role.AUDITOR})
EXPORT_FORMAT = "memoryhub.subject-export"
EXPORT_VERSION = 1
# Rows read per database round trip while streaming.
# Log entries hold up to 20,000 characters: 200 of them stay under 4 MB.
ITERATOR_CHUNK = 200


@dataclass(frozen=True)
class Subject:
    """One end user in one workspace, and every row that holds their data."""

    workspace: Workspace
    user_ref: str

    def agents(self) -> QuerySet[Agent]:
        return Agent.objects.filter(workspace=self.workspace)

    def files(self) -> QuerySet[MemoryFile]:
        # A non-empty user_ref is always USER.md or MEMORY.md (a check constraint).
        return MemoryFile.objects.filter(agent__in=self.agents(), user_ref=self.user_ref)

    def versions(self) -> QuerySet[Any]:
        return MemoryFile.history.filter(agent__in=self.agents(), user_ref=self.user_ref)

    def proposals(self) -> QuerySet[Proposal]:
        return Proposal.objects.filter(agent__in=self.agents(), user_ref=self.user_ref)

    def sessions(self) -> QuerySet[AgentSession]:
        return AgentSession.objects.filter(agent__in=self.agents(), user_ref=self.user_ref)

    def log_entries(self) -> QuerySet[LogEntry]:
        return LogEntry.objects.filter(agent__in=self.agents(), user_ref=self.user_ref)

    def changes(self) -> QuerySet[Change]:
        return Change.objects.filter(workspace=self.workspace, user_ref=self.user_ref)

    def runs(self) -> QuerySet[Any]:
        # Consolidation is another app (memoryhub imports neither of the
        # others): its runs are reached by model name.
        return apps.get_model("consolidation", "ConsolidationRun").objects.filter(
            agent__in=self.agents(), user_ref=self.user_ref
        )

    def events(self) -> QuerySet[AuditEvent]:
        return AuditEvent.objects.filter(workspace=self.workspace, user_ref=self.user_ref)

    def counts(self) -> dict[str, int]:
        return {
            "files": self.files().count(),
            "versions": self.versions().count(),
            "proposals": self.proposals().count(),
            "sessions": self.sessions().count(),
            "log_entries": self.log_entries().count(),
            "changes": self.changes().count(),
            "runs": self.runs().count(),
            "events": self.events().count(),
        }


def subject_in(*, workspace: Workspace, user_ref: object) -> Subject:
    """The subject `user_ref` of `workspace`, for a caller that has checked
    the actor itself. A malformed reference is an Invalid (400)."""
    return Subject(workspace=workspace, user_ref=validate_user_ref(user_ref))


def _workspaces_for(actor: Actor) -> dict[str, tuple[Workspace, str]]:
    member = active_staff_user(actor)
    if member is None:
        return {}
    rows = Membership.objects.filter(user=member).select_related("workspace")
    return {m.workspace.slug: (m.workspace, m.role) for m in rows}


def find_subject(
    *,
    actor: Actor,
    user_ref: object,
    workspace: Workspace | str | None = None,
    roles: Iterable[str] = EXPORT_ROLES,
    action: str = "export data subjects",
) -> Subject:
    """The subject, once the actor is known to hold one of `roles` in its
    workspace. `workspace` may be omitted when the actor holds such a role in
    exactly one workspace. Another workspace (or one that does not exist) is
    a NotFound; a role that does not fit is a PermissionDenied, recorded in
    the workspace's audit log."""
    user_ref = validate_user_ref(user_ref)
    roles = frozenset(roles)
    if isinstance(workspace, Workspace):
        target = workspace
    elif is_system(actor):
        if not workspace:
            raise errors.Invalid("Name the workspace of the data subject.", field="workspace")
        found = Workspace.objects.filter(slug=workspace).first()
        if found is None:
            raise errors.NotFound(f"There is no workspace {workspace!r}.", field="workspace")
        target = found
    else:
        mine = _workspaces_for(actor)
        if workspace:
            if workspace not in mine:
                # Recorded without a workspace: naming one the actor has no
                # role in must not put an event into that tenant's log.
                record_event(action="subject.refused", actor_user=actor, user_ref=user_ref,
                             summary=f"Refused to {action}: workspace not among the actor's",
                             details={"action": action, "workspace": str(workspace)[:100]})
                raise errors.NotFound(f"There is no workspace {workspace!r} among yours.", field="workspace")
            target = mine[workspace][0]
        else:
            fitting = sorted(slug for slug, (_, role) in mine.items() if role in roles)
            if len(fitting) > 1:
                raise errors.Invalid(
                    f"You may {action} in several workspaces ({', '.join(fitting)}): pass ?workspace=SLUG.",
                    field="workspace",
                )
            if not fitting:
                if len(mine) == 1:
                    target = next(iter(mine.values()))[0]
                else:
                    raise errors.PermissionDenied(f"Your roles do not allow you to {action} in any workspace.")
            else:
                target = mine[fitting[0]][0]
    try:
        require_role(user=actor, workspace=target, roles=roles, action=action)
    except errors.PermissionDenied:
        record_event(
            action="subject.refused",
            workspace=target,
            actor_user=actor,
            user_ref=user_ref,
            summary=f"Refused to {action} for a user of {target.slug}: role not allowed",
            details={"action": action},
        )
        raise
    return Subject(workspace=target, user_ref=user_ref)


# --- export ------------------------------------------------------------------------------------


def _history_author(row: Any) -> str:
    if row.history_user_id:
        return f"user:{row.history_user.get_username()}"
    if row.actor_agent_id:
        return f"agent:{row.actor_agent.slug}"
    return "system"


def _username(user: StaffUser | None) -> str | None:
    return user.get_username() if user is not None else None


def file_row(file: MemoryFile) -> dict[str, object]:
    return {
        "agent": file.agent.slug,
        "file": file.kind,
        "version": file.version,
        "exists": file.exists,
        "content": file.content,
        "updated_at": file.updated_at,
        "withheld": file.is_withheld,
    }


def version_row(row: Any) -> dict[str, object]:
    return {
        "agent": row.agent.slug,
        "file": row.kind,
        "version": row.version,
        "content": row.content,
        "created_at": row.history_date,
        "author": _history_author(row),
        "source": row.source,
        "reason": row.history_change_reason or "",
        "proposal": row.proposal_id,
        "approved_by": _username(row.approved_by),
    }


def proposal_row(p: Proposal) -> dict[str, object]:
    return {
        "id": p.pk,
        "agent": p.agent.slug,
        "file": p.kind,
        "status": p.status,
        "source": p.source,
        "author": p.author_label,
        "created_at": p.created_at,
        "base_version": p.base_version,
        "base_content": p.base_content,
        "proposed_content": p.proposed_content,
        "diff": p.diff,
        "rationale": p.rationale,
        "reason": p.reason,
        "decided_by": _username(p.decided_by),
        "decided_at": p.decided_at,
        "decision_comment": p.decision_comment,
        "applied_version": p.applied_version,
    }


def session_row(s: AgentSession) -> dict[str, object]:
    return {
        "id": s.pk,
        "agent": s.agent.slug,
        "external_id": s.external_id,
        "started_at": s.started_at,
        "ended_at": s.ended_at,
        # The frozen context is assembled from the agent's files and the
        # subject's file versions named here, all of which are exported.
        "snapshot": s.snapshot,
    }


def log_entry_row(e: LogEntry) -> dict[str, object]:
    return {
        "id": e.pk,
        "session": e.session_id,
        "agent": e.agent.slug,
        "role": e.role,
        "content": e.content,
        "created_at": e.created_at,
    }


def change_row(c: Change) -> dict[str, object]:
    return {
        "id": c.pk,
        "kind": c.kind,
        "agent": c.agent.slug if c.agent else None,
        "file": c.file_kind or None,
        "status": c.status,
        "summary": c.summary,
        "reason": c.reason,
        "requested_by": c.requester_name,
        "created_at": c.created_at,
        "decided_by": c.decider_name,
        "decided_at": c.decided_at,
    }


def run_row(r: Any) -> dict[str, object]:
    return {
        "id": r.pk,
        "agent": r.agent.slug,
        "status": r.status,
        "trigger": r.trigger,
        "created_at": r.created_at,
        "finished_at": r.finished_at,
        "error": r.error,
    }


def event_row(e: AuditEvent) -> dict[str, object]:
    return {
        "id": e.pk,
        "created_at": e.created_at,
        "action": e.action,
        "actor": e.actor_label,
        "agent": e.agent.slug if e.agent else None,
        "summary": e.summary,
        "details": e.details,
    }


def _rows(queryset: QuerySet[Any], shape: Any) -> Iterator[dict[str, object]]:
    for obj in queryset.iterator(chunk_size=ITERATOR_CHUNK):
        yield shape(obj)


def export_lists(subject: Subject) -> list[tuple[str, Iterator[dict[str, object]]]]:
    """Each list of the export as a lazy iterator, in the document's order.
    Each list is read when it is written: rows added while an export
    streams may appear in a later list."""
    return [
        ("files", _rows(subject.files().select_related("agent").order_by("agent__slug", "kind"), file_row)),
        ("versions", _rows(
            subject.versions().select_related("agent", "history_user", "actor_agent", "approved_by")
            .order_by("agent__slug", "kind", "version", "history_id"), version_row)),
        ("proposals", _rows(
            subject.proposals().select_related("agent", "author_user", "author_agent", "decided_by").order_by("id"),
            proposal_row)),
        ("sessions", _rows(subject.sessions().select_related("agent").order_by("id"), session_row)),
        ("log_entries", _rows(subject.log_entries().select_related("agent").order_by("id"), log_entry_row)),
        ("changes", _rows(
            subject.changes().select_related("agent", "requested_by", "decided_by").order_by("id"), change_row)),
        ("runs", _rows(subject.runs().select_related("agent").order_by("id"), run_row)),
        ("events", _rows(subject.events().select_related("actor_user", "actor_agent", "agent").order_by("id"),
                         event_row)),
    ]


@dataclass(frozen=True)
class SubjectExport:
    subject: Subject
    counts: dict[str, int]
    chunks: Iterator[str]

    @property
    def filename(self) -> str:
        stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
        return f"memoryhub-subject-{self.subject.workspace.slug}-{stamp}.json"


def export_subject(*, actor: Actor, user_ref: object, workspace: Workspace | str | None = None) -> SubjectExport:
    """Everything held about one end user of a workspace, as a JSON document
    streamed in pieces (API.md: GET /api/v1/subjects/U/export). The audit
    event, with the counts of what is exported, is written before the first
    byte: an export that a client abandons half-way was still an export."""
    subject = find_subject(actor=actor, user_ref=user_ref, workspace=workspace)
    counts = subject.counts()
    now = timezone.now()
    event = record_event(
        action="subject.export",
        workspace=subject.workspace,
        actor_user=actor,
        user_ref=subject.user_ref,
        summary=f"Exported everything held about a user of {subject.workspace.slug}",
        details={"counts": counts},
    )
    header = {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "workspace": subject.workspace.slug,
        "subject": subject.user_ref,
        "exported_at": now,
        "exported_by": _username(user_or_none(actor)) or "system",
        "audit_event": event.pk,
        "counts": counts,
    }
    return SubjectExport(subject=subject, counts=counts,
                         chunks=jsonstream.stream_object(header, export_lists(subject)))
