"""Governance changes: one person may always take content out of service;
it takes two to put content, or a weaker policy, into service.

A change is requested by one admin or reviewer and decided by a different
one. It stores what it would change together with the values it was
requested against, so a change overtaken by events is refused (409
`stale_change`) instead of applied over them.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from memoryhub import errors, policy
from memoryhub.actors import Actor, username_of
from memoryhub.models import Agent, Change, ChangeKind, ChangeQuerySet, ChangeStatus, Workspace
from memoryhub.policy import refuse
from memoryhub.services._change_request import REASON_MAX, request_change
from memoryhub.services._write import lock_file
from memoryhub.services.access import (
    REVIEW_ROLES,
    _int_id,
    require_role,
    user_or_none,
    workspace_ids_for,
)
from memoryhub.services.agents import (
    AGENT_SETTINGS,
    WORKSPACE_SETTINGS,
    Setting,
    apply_agent_settings,
    apply_workspace_settings,
)
from memoryhub.services.audit import record_event
from memoryhub.services.erasure import erase_subject, scrubbed
from memoryhub.services.limits import validate_target, validate_text
from memoryhub.services.memory import release_file

COMMENT_MAX = 2000


class StaleChange(errors.DomainError):
    code = "stale_change"
    status = 409


def request_release(*, agent: Agent, kind: str, user_ref: str | None = None, actor: Actor, reason: object) -> Change:
    """Ask to serve a withheld file again: a change another reviewer approves."""
    kind, user_ref = validate_target(kind=kind, user_ref=user_ref)
    require_role(user=actor, workspace=agent.workspace_id, roles=REVIEW_ROLES, action="release withheld files")
    reason = validate_text(reason, field="reason", label="The reason for a release", max_length=REASON_MAX,
                           required=True)
    with transaction.atomic():
        file = lock_file(agent=agent, kind=kind, user_ref=user_ref)
        if file is None or not file.is_withheld:
            raise errors.Invalid(f"{kind} is not withheld, so there is nothing to release.")
        existing = Change.objects.pending().filter(kind=ChangeKind.RELEASE, agent=agent, file_kind=kind,
                                                   user_ref=user_ref).first()
        if existing is not None:
            raise errors.Invalid(f"A release of {kind} is already waiting for a decision (change #{existing.pk}).",
                                 change=existing.pk)
        return request_change(
            workspace=agent.workspace, agent=agent, kind=ChangeKind.RELEASE, actor=actor, file_kind=kind,
            user_ref=user_ref, payload={"version": file.version}, reason=reason,
            summary=f"Serve {kind} v{file.version} of {agent.slug} again" + (f" for {user_ref}" if user_ref else ""),
        )


# --- lookups --------------------------------------------------------------------------------


def visible_changes(user: Actor | None) -> ChangeQuerySet:
    return Change.objects.in_workspaces(workspace_ids_for(user)).select_related(
        "workspace", "agent", "requested_by", "decided_by"
    )


def get_change_for_user(user: Actor | None, pk: object) -> Change:
    change = visible_changes(user).filter(pk=_int_id(pk, "change")).first()
    if change is None:
        raise errors.NotFound("There is no such change in your workspaces.")
    return change


# --- decisions ----------------------------------------------------------------------------------


def _lock(change_id: object) -> Change:
    change = (
        Change.objects.select_for_update(of=("self",)).select_related("workspace", "agent")
        .filter(pk=_int_id(change_id, "change")).first()
    )
    if change is None:
        raise errors.NotFound("There is no such change.")
    return change


def _decide(change: Change, *, status: str, actor: Actor, comment: str,
            result: dict[str, object] | None = None) -> None:
    change.status = status
    change.decided_by = user_or_none(actor)
    change.decided_by_username = username_of(actor)
    change.decided_at = timezone.now()
    change.decision_comment = comment
    change.result = result or {}
    change.save(update_fields=["status", "decided_by", "decided_by_username", "decided_at", "decision_comment",
                               "result", "payload", "user_ref", "reason"])


def approve_change(*, change_id: object, actor: Actor, comment: object = "") -> Change:
    """Apply a pending change, decided by someone other than its requester."""
    comment = validate_text(comment, field="comment", label="The comment", max_length=COMMENT_MAX)
    with transaction.atomic():
        change = _lock(change_id)
        refuse(policy.approve_change(actor=actor, change=change))
        if change.kind == ChangeKind.ERASURE:
            # Kept with the decision and its audit event, after the subject is gone.
            comment = scrubbed(change=change, text=comment)
        result = _apply(change, actor=actor)
        _decide(change, status=ChangeStatus.APPROVED, actor=actor, comment=comment, result=result)
        record_event(
            action="change.approve",
            workspace=change.workspace,
            agent=change.agent,
            actor_user=actor,
            user_ref=change.user_ref,
            target=change,
            summary=f"Approved change #{change.pk}: {change.summary}",
            details={"kind": change.kind, "comment": comment, "result": result},
        )
    return change


def _apply(change: Change, *, actor: Actor) -> dict[str, object]:
    if change.kind == ChangeKind.AGENT_SETTINGS:
        assert change.agent is not None
        agent = Agent.objects.select_for_update().get(pk=change.agent.pk)
        wanted, before = _current_matches(change, agent, AGENT_SETTINGS)
        apply_agent_settings(agent=agent, wanted=wanted, actor=actor, before=before, change=change)
        return {"applied": list(wanted)}
    if change.kind == ChangeKind.WORKSPACE_SETTINGS:
        workspace = Workspace.objects.select_for_update().get(pk=change.workspace_id)
        wanted, before = _current_matches(change, workspace, WORKSPACE_SETTINGS)
        apply_workspace_settings(workspace=workspace, wanted=wanted, actor=actor, before=before, change=change)
        return {"applied": list(wanted)}
    if change.kind == ChangeKind.RELEASE:
        assert change.agent is not None
        file = lock_file(agent=change.agent, kind=change.file_kind, user_ref=change.user_ref)
        version = int(change.payload.get("version", 0))
        if file is None or not release_file(file=file, version=version):
            raise StaleChange(f"{change.file_kind} v{version} is no longer withheld; nothing to release.")
        record_event(
            action="file.release",
            agent=change.agent,
            actor_user=actor,
            user_ref=change.user_ref,
            target=file,
            summary=f"Released {change.file_kind} v{version} of {change.agent.slug}: served again (change "
            f"#{change.pk})",
            details={"kind": change.file_kind, "version": version, "change": change.pk},
        )
        return {"released_version": version}
    if change.kind == ChangeKind.ERASURE:
        return erase_subject(change=change, actor=actor)
    raise errors.Invalid(f"Unknown change kind {change.kind!r}.")


def _current_matches(change: Change, obj: object,
                     specs: dict[str, Setting]) -> tuple[dict[str, object], dict[str, object]]:
    """The requested values, if every field still holds the value the
    request was made against; else StaleChange."""
    fields: dict[str, dict[str, str]] = change.payload.get("fields", {})
    before = {field: getattr(obj, field) for field in fields}
    moved = [field for field, values in fields.items() if str(before[field]) != values["from"]]
    if moved:
        raise StaleChange(
            f"{', '.join(moved)} changed after this change was requested; reject it and request it again.",
            fields=moved,
        )
    wanted = {field: specs[field].clean(values["to"], field) for field, values in fields.items()}
    return wanted, before


def _event_user_ref(change: Change) -> str:
    """An erasure's events never name its subject (the hash is in the
    change's payload; an approved erasure's change carries the pseudonym)."""
    if change.kind == ChangeKind.ERASURE:
        return change.user_ref if change.user_ref.startswith("erased:") else ""
    return change.user_ref


def reject_change(*, change_id: object, actor: Actor, comment: object) -> Change:
    comment = validate_text(comment, field="comment", label="A comment saying why you reject this change",
                            max_length=COMMENT_MAX, required=True)
    with transaction.atomic():
        change = _lock(change_id)
        refuse(policy.reject_change(actor=actor, change=change))
        _decide(change, status=ChangeStatus.REJECTED, actor=actor, comment=comment)
        record_event(
            action="change.reject", workspace=change.workspace, agent=change.agent, actor_user=actor,
            user_ref=_event_user_ref(change), target=change, summary=f"Rejected change #{change.pk}: {change.summary}",
            details={"kind": change.kind, "comment": comment},
        )
    return change


def withdraw_change(*, change_id: object, actor: Actor, comment: object = "") -> Change:
    comment = validate_text(comment, field="comment", label="The comment", max_length=COMMENT_MAX)
    with transaction.atomic():
        change = _lock(change_id)
        refuse(policy.withdraw_change(actor=actor, change=change))
        _decide(change, status=ChangeStatus.WITHDRAWN, actor=actor, comment=comment)
        record_event(
            action="change.withdraw", workspace=change.workspace, agent=change.agent, actor_user=actor,
            user_ref=_event_user_ref(change), target=change, summary=f"Withdrew change #{change.pk}: {change.summary}",
        )
    return change
