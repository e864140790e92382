"""Memory files: reading, the agents' write tool, applying a version, and
taking a version out of service.

A file's served content lives in MemoryFile; every applied change is one
immutable history row. Rules (scope, limits, scanner, write policy,
compare-and-swap) are checked here for every caller.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from memoryhub import errors
from memoryhub.actors import Actor
from memoryhub.models import Agent, MemoryFile, Proposal, Source, WritePolicy, limit_kind_of, scope_of
from memoryhub.services._write import FirstVersionRace, apply_version, create_proposal, lock_file, screen
from memoryhub.services.access import require_reviewer, user_or_none
from memoryhub.services.audit import record_event
from memoryhub.services.limits import (
    validate_content,
    validate_target,
    validate_text,
)

REASON_MAX = 1000
# What an agent's write did, in its proposal rationale and its audit event.
WRITE_SUMMARIES = {
    "write": "rewrote {kind}",
    "add": "added an entry to {kind}",
    "replace": "replaced an entry of {kind}",
    "remove": "removed an entry from {kind}",
    # Claude's memory tool (memoryhub.claude_memory): text and lines, not entries.
    "str_replace": "replaced text in {kind}",
    "insert": "inserted a line into {kind}",
}


# --- reading ------------------------------------------------------------------------


@dataclass(frozen=True)
class FileView:
    kind: str
    scope: str
    exists: bool
    content: str
    version: int
    chars: int
    limit: int
    limit_kind: str
    updated_at: Any
    stale: bool
    withheld: bool = False


def get_file(*, agent: Agent, kind: str, user_ref: str) -> MemoryFile | None:
    return MemoryFile.objects.filter(agent=agent, kind=kind, user_ref=user_ref).first()


def is_stale(*, agent: Agent, file: MemoryFile | None, now: datetime | None = None) -> bool:
    if file is None or not file.exists or agent.staleness_ttl_days == 0:
        return False
    now = now or timezone.now()
    return bool(file.updated_at < now - timedelta(days=agent.staleness_ttl_days))


def view_of(*, agent: Agent, kind: str, file: MemoryFile | None) -> FileView:
    content = file.content if file else ""
    return FileView(
        kind=kind,
        scope=scope_of(kind),
        exists=bool(content),
        content=content,
        version=file.version if file else 0,
        chars=len(content),
        limit=agent.limit_for(kind),
        limit_kind=limit_kind_of(kind),
        updated_at=file.updated_at if file else None,
        stale=is_stale(agent=agent, file=file),
        withheld=bool(file and file.is_withheld),
    )


def read_memory(*, agent: Agent, kind: str, user_ref: str | None = None) -> FileView:
    """The agent's read tool: its own file, or its user's. The stored text;
    callers that hand it to a model serve it through context.serve_file."""
    kind, user_ref = validate_target(kind=kind, user_ref=user_ref)
    return view_of(agent=agent, kind=kind, file=get_file(agent=agent, kind=kind, user_ref=user_ref))


def file_versions(*, agent: Agent, kind: str, user_ref: str | None = None) -> list[Any]:
    """Every version of one file, oldest first, as history rows."""
    kind, user_ref = validate_target(kind=kind, user_ref=user_ref)
    file = get_file(agent=agent, kind=kind, user_ref=user_ref)
    if file is None:
        return []
    return list(
        MemoryFile.history.filter(id=file.pk)
        .select_related("history_user", "actor_agent", "approved_by", "proposal")
        .order_by("version", "history_id")
    )


def version_row(*, file: MemoryFile, version: int) -> Any:
    return MemoryFile.history.filter(id=file.pk, version=version).order_by("-history_id").first()


# --- writing ------------------------------------------------------------------------


@dataclass(frozen=True)
class WriteResult:
    applied: bool
    version: int
    chars: int
    warning: str | None = None
    proposal: Proposal | None = None
    file: MemoryFile | None = None
    # False when the write would not change the content, so nothing was stored.
    changed: bool = True
    # True when `proposal` is an identical pending proposal this agent made
    # before: it is answered again and nothing new is stored.
    duplicate: bool = False


def write_memory(
    *,
    agent: Agent,
    kind: str,
    user_ref: str | None = None,
    content: object,
    reason: object = "",
    expected_version: int | None = None,
) -> WriteResult:
    """The agent's memory write tool (the agent is the acting principal):
    the whole file at once. See `edit_memory` for the rules."""
    content = validate_content(content)
    return edit_memory(agent=agent, kind=kind, user_ref=user_ref, build=lambda file: content, reason=reason,
                       expected_version=expected_version)


def edit_memory(
    *,
    agent: Agent,
    kind: str,
    user_ref: str | None = None,
    build: Callable[[MemoryFile | None], str | None],
    reason: object = "",
    expected_version: int | None = None,
    operation: str = "write",
) -> WriteResult:
    """The one path of every agent write. `build` makes the new content from
    the file as it is now, under the file's row lock, so an edit can never be
    computed from a version someone else has replaced in the meantime (it
    returns None, or raises a DomainError, to write nothing).

    Applies at once under the `direct` policy, becomes a proposal under
    `review` — and always while the file is withheld, so an agent cannot put
    withheld content back by writing it again. Nothing is stored when a rule
    refuses the write (limits, scanner, If-Match). `operation` names what the
    agent did (a whole-file write or an entry operation) for the reviewer
    and the audit trail."""
    kind, user_ref = validate_target(kind=kind, user_ref=user_ref)
    reason = validate_text(reason, field="reason", label="The reason", max_length=REASON_MAX)
    try:
        return _edit_locked(agent=agent, kind=kind, user_ref=user_ref, build=build, reason=reason,
                            expected_version=expected_version, operation=operation)
    except FirstVersionRace:
        if expected_version is not None:
            raise
    # The row exists now: this time the write queues on its lock.
    return _edit_locked(agent=agent, kind=kind, user_ref=user_ref, build=build, reason=reason,
                        expected_version=expected_version, operation=operation)


def _edit_locked(
    *,
    agent: Agent,
    kind: str,
    user_ref: str,
    build: Callable[[MemoryFile | None], str | None],
    reason: str,
    expected_version: int | None,
    operation: str,
) -> WriteResult:
    did = WRITE_SUMMARIES[operation].format(kind=kind)
    with transaction.atomic():
        file = lock_file(agent=agent, kind=kind, user_ref=user_ref)
        current = file.version if file else 0
        if expected_version is not None and expected_version != current:
            raise errors.VersionConflict(
                f"{kind} is at version {current}, not {expected_version}; read it again and retry.",
                current_version=current,
            )
        old = file.content if file else ""
        content = build(file)
        if content is None:
            content = old
        screened = screen(agent=agent, kind=kind, content=content)
        warning, pii = screened.warning, screened.pii
        if old == content:
            # A write that changes nothing would still cost a history row or
            # a reviewer's time on an empty diff.
            return WriteResult(applied=True, version=current, chars=len(content), warning=warning, file=file,
                               changed=False)
        if agent.write_policy != WritePolicy.DIRECT or (file is not None and file.is_withheld):
            # The same write again (a retried request, a model repeating
            # itself) is the same change: the reviewer reads it once. The
            # counterpart of `direct`'s "already says that" above.
            same = (
                Proposal.objects.pending().for_file(agent, kind, user_ref)
                .filter(author_agent=agent, source=Source.AGENT, base_version=current, proposed_content=content)
                .order_by("-id").first()
            )
            if same is not None:
                return WriteResult(applied=False, version=current, chars=len(content), warning=warning,
                                   proposal=same, duplicate=True)
            proposal = create_proposal(
                agent=agent,
                user_ref=user_ref,
                screened=screened,
                base_content=old,
                base_version=current,
                source=Source.AGENT,
                reason=reason,
                rationale=[{"kind": "edit", "summary": f"Agent {did}", "reason": reason, "evidence": []}],
                author_agent=agent,
            )
            return WriteResult(applied=False, version=current, chars=len(content), warning=warning, proposal=proposal)
        file = apply_version(
            agent=agent,
            kind=kind,
            user_ref=user_ref,
            file=file,
            content=content,
            source=Source.AGENT,
            reason=reason,
            actor_agent=agent,
        )
        record_event(
            action="memory.write",
            agent=agent,
            actor_agent=agent,
            user_ref=user_ref,
            target=file,
            summary=(f"{agent.slug} wrote {kind} v{file.version}" if operation == "write"
                     else f"{agent.slug} {did} (v{file.version})") + (" (now absent)" if not content else ""),
            details={"kind": kind, "version": file.version, "chars": len(content), "reason": reason,
                     "operation": operation, **({"pii": [f["rule"] for f in pii]} if pii else {})},
        )
    return WriteResult(applied=True, version=file.version, chars=len(content), warning=warning, file=file)


# --- taking content out of service ---------------------------------------------------------


def withhold_file(
    *, agent: Agent, kind: str, user_ref: str | None = None, actor: Actor, reason: object
) -> MemoryFile:
    """One reviewer takes a file's current version out of service at once:
    fresh contexts, the memory read tool and every open session's frozen
    snapshot serve [WITHHELD] instead. Putting it back takes two people (a
    release change or a rollback proposal). Withholding a withheld file
    changes nothing."""
    kind, user_ref = validate_target(kind=kind, user_ref=user_ref)
    require_reviewer(user=actor, workspace=agent.workspace_id, action="withhold memory files")
    reason = validate_text(reason, field="reason", label="The reason", max_length=REASON_MAX, required=True)
    with transaction.atomic():
        file = lock_file(agent=agent, kind=kind, user_ref=user_ref)
        if file is None or not file.exists:
            raise errors.NotFound(f"{kind} has no served content, so there is nothing to withhold.")
        if file.is_withheld:
            return file
        now = timezone.now()
        MemoryFile.objects.filter(pk=file.pk).update(
            withheld_version=file.version, withheld_at=now, withheld_by=user_or_none(actor), withheld_reason=reason
        )
        file.withheld_version, file.withheld_at, file.withheld_reason = file.version, now, reason
        file.withheld_by = user_or_none(actor)
        record_event(
            action="file.withhold",
            agent=agent,
            actor_user=actor,
            user_ref=user_ref,
            target=file,
            summary=f"Withheld {kind} v{file.version} of {agent.slug}: no longer served",
            details={"kind": kind, "version": file.version, "reason": reason},
        )
    return file


def release_file(*, file: MemoryFile, version: int) -> bool:
    """Serve a withheld version again (called when a release change is
    approved; the change holds the rules). False if it is no longer withheld."""
    return bool(
        MemoryFile.objects.filter(pk=file.pk, withheld_version=version).update(
            withheld_version=None, withheld_at=None, withheld_by=None, withheld_reason=""
        )
    )
