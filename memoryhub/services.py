"""Domain operations: the one way in for the REST API, the HTMX views, the
Celery tasks, the management commands and the tests.

Every function here is keyword-only and typed. Writes that span models run
in one transaction. Rules live here, never in a view, serializer or signal.
"""

from __future__ import annotations

import difflib
import hashlib
import hmac
import json
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from memoryhub import context, errors, scanner
from memoryhub.models import (
    AGENT_SCOPED,
    SOFT_LIMITED,
    Agent,
    AgentSession,
    ApiKey,
    AuditEvent,
    FileKind,
    LogEntry,
    LogRole,
    Membership,
    MemoryFile,
    Proposal,
    ProposalStatus,
    Role,
    Source,
    StaffToken,
    ToolSetting,
    Workspace,
    limit_kind_of,
    scope_of,
)

# A soft-limited file may grow past its cap (the agent is told to compress),
# but not without bound: past this multiple the write is refused.
SOFT_LIMIT_CEILING = 2
REVIEW_ROLES = frozenset({Role.REVIEWER, Role.ADMIN})
ADMIN_ROLES = frozenset({Role.ADMIN})
READ_ROLES = frozenset({Role.REVIEWER, Role.ADMIN, Role.AUDITOR})
_ALLOWED_CONTROL = frozenset("\n\r\t")
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


# --- roles ----------------------------------------------------------------------


def role_in(*, user: Any, workspace: Workspace | int) -> str | None:
    if user is None or not getattr(user, "is_authenticated", False) or not user.is_active:
        return None
    workspace_id = workspace if isinstance(workspace, int) else workspace.pk
    return (
        Membership.objects.filter(user=user, workspace_id=workspace_id).values_list("role", flat=True).first()
    )


def require_role(*, user: Any, workspace: Workspace | int, roles: Iterable[str], action: str) -> str:
    role = role_in(user=user, workspace=workspace)
    if role is None or role not in roles:
        raise errors.PermissionDenied(f"Your role in this workspace does not allow you to {action}.")
    return role


def workspace_ids_for(user: Any, roles: Iterable[str] = READ_ROLES) -> list[int]:
    if user is None or not getattr(user, "is_authenticated", False) or not user.is_active:
        return []
    return list(Membership.objects.filter(user=user, role__in=list(roles)).values_list("workspace_id", flat=True))


# --- audit ------------------------------------------------------------------------


def record_event(
    *,
    action: str,
    agent: Agent | None = None,
    workspace: Workspace | None = None,
    actor_user: Any = None,
    actor_agent: Agent | None = None,
    user_ref: str = "",
    target: Any = None,
    summary: str = "",
    details: dict[str, Any] | None = None,
) -> AuditEvent:
    if workspace is None and agent is not None:
        workspace = agent.workspace
    return AuditEvent.objects.create(
        action=action,
        workspace=workspace,
        actor_user=actor_user if getattr(actor_user, "is_authenticated", False) else None,
        actor_agent=actor_agent,
        agent=agent,
        user_ref=user_ref,
        target_type=type(target).__name__ if target is not None else "",
        target_id=str(target.pk) if target is not None else "",
        summary=summary[:500],
        details=details or {},
    )


# --- validation -------------------------------------------------------------------


def validate_user_ref(user_ref: str) -> str:
    if not (1 <= len(user_ref) <= 255) or not user_ref.isprintable():
        raise errors.Invalid("The user reference must be 1–255 printable characters.", field="user")
    return user_ref


def validate_target(*, kind: str, user_ref: str | None) -> tuple[str, str]:
    """Check that the file name is known and the user scope fits it.
    Returns (kind, user_ref) with user_ref "" for agent-scoped files."""
    if kind not in FileKind.values:
        names = ", ".join(FileKind.values)
        raise errors.NotFound(f"There is no memory file named {kind!r}; the files are {names}.")
    if kind in AGENT_SCOPED:
        if user_ref:
            raise errors.Invalid(
                f"{kind} belongs to the agent and is shared by all its users; do not pass a user.", field="user"
            )
        return kind, ""
    if not user_ref:
        raise errors.Invalid(f"{kind} belongs to one user of the agent: pass ?user=<user_ref>.", field="user")
    return kind, validate_user_ref(user_ref)


def validate_content(content: Any) -> str:
    if not isinstance(content, str):
        raise errors.Invalid("Content must be a string of markdown.", field="content")
    bad = next((ch for ch in content if ord(ch) < 32 and ch not in _ALLOWED_CONTROL), None)
    if bad is not None:
        raise errors.Invalid(
            f"Content contains the control character U+{ord(bad):04X}; only newlines and tabs are allowed.",
            field="content",
        )
    return content


def check_limit(*, agent: Agent, kind: str, content: str) -> str | None:
    """Refuse content over a hard cap; return the compress warning for
    content over a soft cap (None when within it)."""
    limit = agent.limit_for(kind)
    chars = len(content)
    if kind in SOFT_LIMITED:
        ceiling = limit * SOFT_LIMIT_CEILING
        if chars > ceiling:
            raise errors.LimitExceeded(
                f"{kind} may go past its soft limit of {limit:,} characters, but not past {ceiling:,}; "
                f"this content has {chars:,}. Compress it before writing.",
                limit=limit,
                chars=chars,
                limit_kind="soft",
            )
        if chars > limit:
            return compress_warning(kind=kind, chars=chars, limit=limit)
        return None
    if chars > limit:
        raise errors.LimitExceeded(
            f"{kind} is limited to {limit:,} characters; this content has {chars:,}. Shorten it and write again.",
            limit=limit,
            chars=chars,
            limit_kind="hard",
        )
    return None


def compress_warning(*, kind: str, chars: int, limit: int) -> str:
    return (
        f"{kind} is over its soft limit: {chars:,}/{limit:,} characters ({chars * 100 // limit}%). "
        "Compress it now: merge duplicate entries, drop expired or stale ones, and keep detail in the session log."
    )


def check_safe(content: str) -> None:
    finding = scanner.scan(content)
    if finding is not None:
        raise errors.UnsafeContent(
            f"Refused by the memory scanner ({finding.rule}): {finding.detail}", rule=finding.rule
        )


def make_diff(*, kind: str, old: str, new: str, old_label: str, new_label: str) -> str:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"{kind} {old_label}",
        tofile=f"{kind} {new_label}",
    )
    # A last line without a newline would glue onto the next diff header.
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


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


def get_file(*, agent: Agent, kind: str, user_ref: str) -> MemoryFile | None:
    return MemoryFile.objects.filter(agent=agent, kind=kind, user_ref=user_ref).first()


def is_stale(*, agent: Agent, file: MemoryFile | None, now: Any = None) -> bool:
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
    )


def read_memory(*, agent: Agent, kind: str, user_ref: str | None = None) -> FileView:
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


# --- writing ------------------------------------------------------------------------


@dataclass(frozen=True)
class WriteResult:
    applied: bool
    version: int
    chars: int
    warning: str | None = None
    proposal: Proposal | None = None
    file: MemoryFile | None = None


def _lock_file(*, agent: Agent, kind: str, user_ref: str) -> MemoryFile | None:
    return MemoryFile.objects.select_for_update().filter(agent=agent, kind=kind, user_ref=user_ref).first()


def _apply_version(
    *,
    agent: Agent,
    kind: str,
    user_ref: str,
    file: MemoryFile | None,
    content: str,
    source: str,
    reason: str,
    actor_user: Any = None,
    actor_agent: Agent | None = None,
    approved_by: Any = None,
    proposal: Proposal | None = None,
) -> MemoryFile:
    """Save one new version (the caller holds the row lock and has checked
    the rules). Pending proposals made from an older version turn stale."""
    now = timezone.now()
    if file is None:
        file = MemoryFile(agent=agent, kind=kind, user_ref=user_ref, content=content, version=1)
    else:
        file.content = content
        file.version += 1
    file.updated_at = now
    file._history_user = actor_user if getattr(actor_user, "is_authenticated", False) else None  # type: ignore[attr-defined]
    file._change_reason = reason[:100] if reason else ""  # type: ignore[attr-defined]
    file._history_source = source  # type: ignore[attr-defined]
    file._history_actor_agent = actor_agent  # type: ignore[attr-defined]
    file._history_proposal = proposal  # type: ignore[attr-defined]
    file._history_approved_by = approved_by  # type: ignore[attr-defined]
    try:
        # A savepoint so that losing the race to create the first version
        # surfaces as a version conflict, not a broken transaction.
        with transaction.atomic():
            file.save()
    except IntegrityError as exc:
        raise errors.VersionConflict(
            f"{kind} was written by someone else at the same moment; read it again and retry.",
            current_version=1,
        ) from exc
    stale = Proposal.objects.pending().for_file(agent, kind, user_ref).exclude(base_version=file.version)
    if proposal is not None:
        stale = stale.exclude(pk=proposal.pk)
    stale.update(status=ProposalStatus.STALE)
    context.invalidate(agent_id=agent.pk, user_ref=user_ref)
    return file


def write_memory(
    *,
    agent: Agent,
    kind: str,
    user_ref: str | None = None,
    content: Any,
    reason: str = "",
    expected_version: int | None = None,
) -> WriteResult:
    """The agent's memory write tool. Applies at once under the `direct`
    policy, becomes a proposal under `review`. Nothing is stored when a rule
    refuses the write."""
    kind, user_ref = validate_target(kind=kind, user_ref=user_ref)
    content = validate_content(content)
    warning = check_limit(agent=agent, kind=kind, content=content)
    check_safe(content)

    with transaction.atomic():
        file = _lock_file(agent=agent, kind=kind, user_ref=user_ref)
        current = file.version if file else 0
        if expected_version is not None and expected_version != current:
            raise errors.VersionConflict(
                f"{kind} is at version {current}, not {expected_version}; read it again and retry.",
                current_version=current,
            )
        if (file.content if file else "") == content:
            # A write that changes nothing would still cost a history row or
            # a reviewer's time on an empty diff.
            return WriteResult(applied=True, version=current, chars=len(content), warning=warning, file=file)
        if agent.write_policy == "review":
            proposal = _create_proposal(
                agent=agent,
                kind=kind,
                user_ref=user_ref,
                content=content,
                base_content=file.content if file else "",
                base_version=current,
                source=Source.AGENT,
                reason=reason,
                rationale=[{"kind": "edit", "summary": f"Agent rewrote {kind}", "reason": reason, "evidence": []}],
                author_agent=agent,
            )
            return WriteResult(applied=False, version=current, chars=len(content), warning=warning, proposal=proposal)
        file = _apply_version(
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
            summary=f"{agent.slug} wrote {kind} v{file.version}" + (" (now absent)" if not content else ""),
            details={"kind": kind, "version": file.version, "chars": len(content), "reason": reason},
        )
    return WriteResult(applied=True, version=file.version, chars=len(content), warning=warning, file=file)


def _create_proposal(
    *,
    agent: Agent,
    kind: str,
    user_ref: str,
    content: str,
    base_content: str,
    base_version: int,
    source: str,
    reason: str,
    rationale: list[dict[str, Any]],
    author_user: Any = None,
    author_agent: Agent | None = None,
) -> Proposal:
    proposal = Proposal.objects.create(
        agent=agent,
        user_ref=user_ref,
        kind=kind,
        base_version=base_version,
        base_content=base_content,
        proposed_content=content,
        diff=make_diff(kind=kind, old=base_content, new=content, old_label=f"v{base_version}", new_label="proposed"),
        rationale=rationale,
        reason=reason,
        source=source,
        author_user=author_user if getattr(author_user, "is_authenticated", False) else None,
        author_agent=author_agent,
    )
    if source == Source.CONSOLIDATION:
        # One live consolidation proposal per file: the newer run has seen
        # more evidence, so the older one is kept but marked superseded.
        Proposal.objects.pending().for_file(agent, kind, user_ref).filter(source=Source.CONSOLIDATION).exclude(
            pk=proposal.pk
        ).update(status=ProposalStatus.SUPERSEDED, superseded_by=proposal)
    record_event(
        action="proposal.create",
        agent=agent,
        actor_user=author_user,
        actor_agent=author_agent,
        user_ref=user_ref,
        target=proposal,
        summary=f"{source} proposed a change to {kind} (from v{base_version})",
        details={"kind": kind, "base_version": base_version, "source": source, "reason": reason},
    )
    return proposal


def propose_change(
    *,
    agent: Agent,
    kind: str,
    user_ref: str | None = None,
    content: Any,
    source: str,
    reason: str = "",
    rationale: list[dict[str, Any]] | None = None,
    author_user: Any = None,
    author_agent: Agent | None = None,
    base_version: int | None = None,
) -> Proposal:
    """Record a pending change for a reviewer to decide. Admin persona edits,
    consolidation runs and `review`-policy agent writes all come through here."""
    kind, user_ref = validate_target(kind=kind, user_ref=user_ref)
    content = validate_content(content)
    if author_user is not None:
        require_role(user=author_user, workspace=agent.workspace_id, roles=REVIEW_ROLES | ADMIN_ROLES,
                     action="propose memory changes")
    check_limit(agent=agent, kind=kind, content=content)
    check_safe(content)
    with transaction.atomic():
        file = _lock_file(agent=agent, kind=kind, user_ref=user_ref)
        current = file.version if file else 0
        if base_version is not None and base_version != current:
            raise errors.VersionConflict(
                f"{kind} moved on to version {current} since version {base_version} was read.",
                current_version=current,
            )
        if file is not None and file.content == content or (file is None and content == ""):
            raise errors.Invalid(f"The proposed content is identical to the current {kind}; nothing to review.")
        return _create_proposal(
            agent=agent,
            kind=kind,
            user_ref=user_ref,
            content=content,
            base_content=file.content if file else "",
            base_version=current,
            source=source,
            reason=reason,
            rationale=rationale or [{"kind": "edit", "summary": f"Edit {kind}", "reason": reason, "evidence": []}],
            author_user=author_user,
            author_agent=author_agent,
        )


def _lock_pending(proposal_id: int) -> Proposal:
    try:
        proposal = Proposal.objects.select_for_update().select_related("agent__workspace").get(pk=proposal_id)
    except Proposal.DoesNotExist as exc:
        raise errors.NotFound("There is no such proposal.") from exc
    return proposal


def _check_decider(*, proposal: Proposal, reviewer: Any, action: str) -> None:
    require_role(user=reviewer, workspace=proposal.agent.workspace_id, roles=REVIEW_ROLES, action=action)
    if proposal.author_user_id is not None and proposal.author_user_id == reviewer.pk:
        raise errors.FourEyes("You made this proposal, so someone else has to decide it (four-eyes rule).")


def _stale_error(*, current_version: int) -> errors.StaleProposal:
    return errors.StaleProposal(
        "The file changed after this proposal was made, so approving it would overwrite that change. "
        "Rebase the proposal onto the current version or reject it.",
        current_version=current_version,
    )


def _current_version(proposal: Proposal) -> int:
    file = get_file(agent=proposal.agent, kind=proposal.kind, user_ref=proposal.user_ref)
    return file.version if file else 0


def approve_proposal(*, proposal_id: int, reviewer: Any, comment: str = "") -> Proposal:
    """Apply a pending proposal as a new version, in one transaction, only if
    the file is still at the proposal's base version; otherwise mark it stale
    (that mark commits) and raise StaleProposal."""
    with transaction.atomic():
        proposal = _lock_pending(proposal_id)
        _check_decider(proposal=proposal, reviewer=reviewer, action="approve proposals")
        if proposal.status == ProposalStatus.STALE:
            stale = _stale_error(current_version=_current_version(proposal))
        elif not proposal.is_pending:
            raise errors.NotPending(f"This proposal is already {proposal.status}; there is nothing to approve.")
        else:
            applied = _apply_proposal(proposal=proposal, reviewer=reviewer, comment=comment)
            if applied is None:
                return proposal
            stale = applied
    # Raised outside the transaction so the stale mark and its audit event stay.
    raise stale


def _apply_proposal(*, proposal: Proposal, reviewer: Any, comment: str) -> errors.StaleProposal | None:
    agent = proposal.agent
    file = _lock_file(agent=agent, kind=proposal.kind, user_ref=proposal.user_ref)
    current = file.version if file else 0
    if current != proposal.base_version:
        proposal.mark_stale()
        record_event(
            action="proposal.stale",
            agent=agent,
            actor_user=reviewer,
            user_ref=proposal.user_ref,
            target=proposal,
            summary=f"Proposal #{proposal.pk} is stale: {proposal.kind} is at v{current}, not v{proposal.base_version}",
            details={"base_version": proposal.base_version, "current_version": current},
        )
        return _stale_error(current_version=current)
    # Rules may have tightened since the proposal was made.
    check_limit(agent=agent, kind=proposal.kind, content=proposal.proposed_content)
    check_safe(proposal.proposed_content)
    file = _apply_version(
        agent=agent,
        kind=proposal.kind,
        user_ref=proposal.user_ref,
        file=file,
        content=proposal.proposed_content,
        source=proposal.source,
        reason=comment or proposal.reason or f"Approved proposal #{proposal.pk}",
        actor_user=proposal.author_user,
        actor_agent=proposal.author_agent,
        approved_by=reviewer,
        proposal=proposal,
    )
    proposal.status = ProposalStatus.APPROVED
    proposal.decided_by = reviewer
    proposal.decided_at = timezone.now()
    proposal.decision_comment = comment
    proposal.applied_version = file.version
    proposal.save(update_fields=["status", "decided_by", "decided_at", "decision_comment", "applied_version"])
    record_event(
        action="proposal.approve",
        agent=agent,
        actor_user=reviewer,
        user_ref=proposal.user_ref,
        target=proposal,
        summary=f"Approved proposal #{proposal.pk}: {proposal.kind} is now v{file.version}",
        details={"version": file.version, "comment": comment, "source": proposal.source},
    )
    return None


def reject_proposal(*, proposal_id: int, reviewer: Any, comment: str) -> Proposal:
    comment = (comment or "").strip()
    if not comment:
        raise errors.Invalid("Say why you reject this proposal: a comment is required.", field="comment")
    with transaction.atomic():
        proposal = _lock_pending(proposal_id)
        _check_decider(proposal=proposal, reviewer=reviewer, action="reject proposals")
        if proposal.status not in (ProposalStatus.PENDING, ProposalStatus.STALE):
            raise errors.NotPending(f"This proposal is already {proposal.status}; there is nothing to reject.")
        proposal.status = ProposalStatus.REJECTED
        proposal.decided_by = reviewer
        proposal.decided_at = timezone.now()
        proposal.decision_comment = comment
        proposal.save(update_fields=["status", "decided_by", "decided_at", "decision_comment"])
        record_event(
            action="proposal.reject",
            agent=proposal.agent,
            actor_user=reviewer,
            user_ref=proposal.user_ref,
            target=proposal,
            summary=f"Rejected proposal #{proposal.pk} for {proposal.kind}",
            details={"comment": comment, "source": proposal.source},
        )
    return proposal


def rollback_file(
    *, agent: Agent, kind: str, user_ref: str | None = None, to_version: int, user: Any, reason: str
) -> MemoryFile:
    """Serve an earlier version again, as a new version: history only grows."""
    kind, user_ref = validate_target(kind=kind, user_ref=user_ref)
    require_role(user=user, workspace=agent.workspace_id, roles=REVIEW_ROLES, action="roll back memory files")
    reason = (reason or "").strip()
    if not reason:
        raise errors.Invalid("Say why you roll back: a reason is required.", field="reason")
    with transaction.atomic():
        file = _lock_file(agent=agent, kind=kind, user_ref=user_ref)
        if file is None:
            raise errors.NotFound(f"{kind} has never been written, so there is nothing to roll back.")
        if not isinstance(to_version, int) or not 1 <= to_version <= file.version:
            raise errors.Invalid(
                f"{kind} has versions 1 to {file.version}; version {to_version} does not exist.", field="version"
            )
        if to_version == file.version:
            raise errors.Invalid(f"Version {to_version} is already the current version of {kind}.", field="version")
        old = MemoryFile.history.filter(id=file.pk, version=to_version).order_by("-history_id").first()
        if old is None:
            raise errors.NotFound(f"Version {to_version} of {kind} is missing from the history.")
        check_limit(agent=agent, kind=kind, content=old.content)
        check_safe(old.content)
        previous = file.version
        file = _apply_version(
            agent=agent,
            kind=kind,
            user_ref=user_ref,
            file=file,
            content=old.content,
            source=Source.ROLLBACK,
            reason=reason,
            actor_user=user,
            approved_by=user,
        )
        record_event(
            action="file.rollback",
            agent=agent,
            actor_user=user,
            user_ref=user_ref,
            target=file,
            summary=f"Rolled {kind} back to the content of v{to_version} (now v{file.version})",
            details={"kind": kind, "from_version": previous, "to_version": to_version, "new_version": file.version,
                     "reason": reason},
        )
    return file


# --- sessions and logs ------------------------------------------------------------


def start_session(*, agent: Agent, user_ref: str, external_id: str = "") -> AgentSession:
    user_ref = validate_user_ref(user_ref)
    if len(external_id) > 255 or not external_id.isprintable():
        raise errors.Invalid("external_id must be at most 255 printable characters.", field="external_id")
    assembled = context.build_context(agent=agent, user_ref=user_ref)
    session = AgentSession.objects.create(
        agent=agent,
        user_ref=user_ref,
        external_id=external_id,
        snapshot=assembled["snapshot"],
        context=assembled,
    )
    return session


MAX_LOG_ENTRY_CHARS = 20_000
MAX_LOG_BATCH = 200
MAX_LOG_REQUEST_CHARS = 200_000


def get_session(*, agent: Agent, session_id: Any, user_ref: str | None = None) -> AgentSession:
    """One of this agent's sessions (and this user's, when given); another
    agent's session is indistinguishable from a missing one."""
    try:
        session_id = int(session_id)
    except (TypeError, ValueError) as exc:
        raise errors.NotFound("There is no such session.") from exc
    sessions = AgentSession.objects.filter(pk=session_id, agent=agent)
    if user_ref is not None:
        sessions = sessions.filter(user_ref=user_ref)
    session = sessions.first()
    if session is None:
        raise errors.NotFound("There is no such session for this agent and user.")
    return session


def append_log(*, session: AgentSession, entries: list[dict[str, Any]]) -> list[LogEntry]:
    """Append a batch to a session log. All or nothing; never an update."""
    if session.is_ended:
        raise errors.Invalid("This session has ended; start a new one to log more.", field="session")
    if not isinstance(entries, list) or not entries:
        raise errors.Invalid("Send at least one log entry.", field="entries")
    if len(entries) > MAX_LOG_BATCH:
        raise errors.LimitExceeded(
            f"Send at most {MAX_LOG_BATCH} entries per request; this one has {len(entries)}.", limit=MAX_LOG_BATCH
        )
    rows = []
    total = 0
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise errors.Invalid(f"Entry {index} must be an object with role and content.", field="entries")
        role = entry.get("role")
        if role not in LogRole.values:
            raise errors.Invalid(
                f"Entry {index} has role {role!r}; use one of {', '.join(LogRole.values)}.", field="entries"
            )
        content = validate_content(entry.get("content"))
        if not content.strip():
            raise errors.Invalid(f"Entry {index} has no content.", field="entries")
        if len(content) > MAX_LOG_ENTRY_CHARS:
            raise errors.LimitExceeded(
                f"Entry {index} has {len(content):,} characters; one entry may have at most {MAX_LOG_ENTRY_CHARS:,}.",
                limit=MAX_LOG_ENTRY_CHARS,
            )
        total += len(content)
        if total > MAX_LOG_REQUEST_CHARS:
            raise errors.LimitExceeded(
                f"One request may carry at most {MAX_LOG_REQUEST_CHARS:,} characters of log; split the batch.",
                limit=MAX_LOG_REQUEST_CHARS,
            )
        rows.append(LogEntry(session=session, agent_id=session.agent_id, user_ref=session.user_ref, role=role,
                             content=content))
    # LogEntry has no history tracking, so bulk_create is safe and one query.
    return LogEntry.objects.bulk_create(rows)


def end_session(*, session: AgentSession) -> AgentSession:
    updated = AgentSession.objects.filter(pk=session.pk, ended_at__isnull=True).update(ended_at=timezone.now())
    session.refresh_from_db(fields=["ended_at"])
    if updated:
        record_event(
            action="session.end",
            agent=session.agent,
            actor_agent=session.agent,
            user_ref=session.user_ref,
            target=session,
            summary=f"Session #{session.pk} ended",
        )
    return session


# --- tools -------------------------------------------------------------------------------

TOOL_NAME_MAX = 64
TOOL_DESCRIPTION_MAX = 1024
MAX_TOOLS = 64


def validate_tools(tools: Any) -> list[dict[str, Any]]:
    from jsonschema import exceptions as schema_errors
    from jsonschema.validators import validator_for

    if not isinstance(tools, list):
        raise errors.Invalid("tools must be a list of {name, description, parameters}.", field="tools")
    if len(tools) > MAX_TOOLS:
        raise errors.LimitExceeded(f"An agent may register at most {MAX_TOOLS} tools.", limit=MAX_TOOLS)
    cleaned: list[dict[str, Any]] = []
    seen: set[str] = set()
    for index, tool in enumerate(tools):
        where = f"tools[{index}]"
        if not isinstance(tool, dict):
            raise errors.Invalid(f"{where} must be an object.", field=where)
        name = tool.get("name")
        if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
            raise errors.Invalid(
                f"{where}.name must be 1–{TOOL_NAME_MAX} letters, digits, '_' or '-'.", field=f"{where}.name"
            )
        if name in seen:
            raise errors.Invalid(f"Tool {name!r} is listed twice.", field=f"{where}.name")
        seen.add(name)
        description = tool.get("description", "")
        if not isinstance(description, str) or len(description) > TOOL_DESCRIPTION_MAX:
            raise errors.Invalid(
                f"{where}.description must be text of at most {TOOL_DESCRIPTION_MAX} characters.",
                field=f"{where}.description",
            )
        validate_content(description)
        parameters = tool.get("parameters", {})
        if parameters == {}:
            parameters = {"type": "object", "properties": {}}
        if not isinstance(parameters, dict) or parameters.get("type") != "object":
            raise errors.Invalid(
                f"{where}.parameters must be a JSON Schema object with \"type\": \"object\".",
                field=f"{where}.parameters",
            )
        try:
            validator_for(parameters).check_schema(parameters)
        except schema_errors.SchemaError as exc:
            raise errors.Invalid(
                f"{where}.parameters is not a valid JSON Schema: {exc.message}", field=f"{where}.parameters"
            ) from exc
        # Tool descriptions are injected into every system prompt: they are
        # as untrusted as memory and pass the same scanner.
        check_safe(f"{name}\n{description}\n{json.dumps(parameters, ensure_ascii=False)}")
        cleaned.append({"name": name, "description": description, "parameters": parameters})
    return cleaned


def replace_tools(*, agent: Agent, tools: Any, actor_user: Any = None) -> list[ToolSetting]:
    """Replace the agent's tool registry as a whole (PUT semantics)."""
    cleaned = validate_tools(tools)
    with transaction.atomic():
        Agent.objects.select_for_update().filter(pk=agent.pk).first()
        ToolSetting.objects.filter(agent=agent).delete()
        rows = ToolSetting.objects.bulk_create(
            ToolSetting(agent=agent, position=i, **tool) for i, tool in enumerate(cleaned)
        )
        record_event(
            action="tools.replace",
            agent=agent,
            actor_user=actor_user,
            actor_agent=None if actor_user else agent,
            target=agent,
            summary=f"Tool registry of {agent.slug} set to {len(rows)} tool(s)",
            details={"tools": [t["name"] for t in cleaned]},
        )
        context.invalidate(agent_id=agent.pk)
    return rows


# --- keys and tokens ------------------------------------------------------------------

AGENT_KEY_PREFIX = "mh_"
STAFF_TOKEN_PREFIX = "mhs_"


def hash_secret(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


_PREFIX_HEX = 8


def _new_secret(kind_prefix: str) -> tuple[str, str]:
    prefix = kind_prefix + secrets.token_hex(_PREFIX_HEX // 2)
    return prefix, f"{prefix}_{secrets.token_urlsafe(32)}"


def issue_agent_key(*, agent: Agent, name: str = "", created_by: Any = None) -> tuple[ApiKey, str]:
    """Create a key and return it with its raw value, which is never stored."""
    prefix, raw = _new_secret(AGENT_KEY_PREFIX)
    key = ApiKey.objects.create(
        agent=agent,
        name=name,
        prefix=prefix,
        key_hash=hash_secret(raw),
        created_by=created_by if getattr(created_by, "is_authenticated", False) else None,
    )
    record_event(action="key.issue", agent=agent, actor_user=created_by, target=key,
                 summary=f"Issued API key {prefix}… for {agent.slug}")
    return key, raw


def revoke_agent_key(*, key: ApiKey, user: Any = None) -> ApiKey:
    if ApiKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(revoked_at=timezone.now()):
        record_event(action="key.revoke", agent=key.agent, actor_user=user, target=key,
                     summary=f"Revoked API key {key.prefix}… of {key.agent.slug}")
    key.refresh_from_db(fields=["revoked_at"])
    return key


def issue_staff_token(*, user: Any, name: str = "") -> tuple[StaffToken, str]:
    prefix, raw = _new_secret(STAFF_TOKEN_PREFIX)
    token = StaffToken.objects.create(user=user, name=name, prefix=prefix, key_hash=hash_secret(raw))
    record_event(action="token.issue", actor_user=user, target=token, summary=f"Issued personal token {prefix}…")
    return token, raw


def _split_prefix(raw: str, kind_prefix: str) -> str:
    # The secret part is urlsafe base64 and may itself contain "_": cut by length.
    return raw[: len(kind_prefix) + _PREFIX_HEX]


def agent_for_key(raw: str) -> tuple[Agent, ApiKey] | None:
    """The agent a raw key belongs to, or None for an unknown or revoked key.
    Looks up by the visible prefix, then compares hashes in constant time."""
    if not raw.startswith(AGENT_KEY_PREFIX):
        return None
    prefix = _split_prefix(raw, AGENT_KEY_PREFIX)
    key = ApiKey.objects.usable().select_related("agent__workspace").filter(prefix=prefix).first()
    if key is None or not hmac.compare_digest(key.key_hash, hash_secret(raw)):
        return None
    return key.agent, key


def user_for_token(raw: str) -> tuple[Any, StaffToken] | None:
    if not raw.startswith(STAFF_TOKEN_PREFIX):
        return None
    token = (
        StaffToken.objects.select_related("user")
        .filter(prefix=_split_prefix(raw, STAFF_TOKEN_PREFIX), revoked_at__isnull=True, user__is_active=True)
        .first()
    )
    if token is None or not hmac.compare_digest(token.key_hash, hash_secret(raw)):
        return None
    return token.user, token


# Touching last_used_at on every request would turn each read into a write.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def touch_last_used(model: type[ApiKey] | type[StaffToken], pk: int, last_used_at: Any) -> None:
    now = timezone.now()
    if last_used_at is None or now - last_used_at >= LAST_USED_RESOLUTION:
        model.objects.filter(pk=pk).update(last_used_at=now)

