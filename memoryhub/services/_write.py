"""The one write pipeline: every write to a memory file goes through here.

A write to a memory file (an agent's write or entry edit, a persona edit,
a reviewer's revision or rebase, a rollback, a consolidation proposal, an
approval putting a proposal into service, an agent import) runs, in this
order: the file's row lock (`lock_file`) → its version check (the caller's
compare-and-swap against the locked row) → limits → scanner → the
workspace's personal-data policy (`screen()`, which returns a `Screened`
content) → the agent's write policy, which decides between a new version
(`apply_version`) and a proposal (`create_proposal`). `create_proposal`
takes only a `Screened` (no `scanned=` flag to trust), so a new write path
cannot store a proposal whose content skipped the scanner, and no path
scans the same content twice. Agent writes, rollbacks, approvals and
imports screen under the file's lock, after its version check;
propose_change screens before taking the lock (the proposed content does
not depend on the file).

This module sits below every service that writes files (memory,
proposals, changes, erasure, portability): they import it, never each
other, for these steps. Tools (services/tools.py) are not memory files.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from django.db import IntegrityError, transaction
from django.utils import timezone

from memoryhub import errors, risk, scanner
from memoryhub.actors import Actor, username_of
from memoryhub.models import Agent, MemoryFile, Proposal, ProposalStatus, RiskLevel, Source
from memoryhub.scanning.pii import SPECIAL_CATEGORY
from memoryhub.services.access import user_or_none
from memoryhub.services.audit import record_event
from memoryhub.services.limits import check_limit, check_pii, check_safe


@dataclass(frozen=True)
class Screened:
    """Content that passed the checks for `kind` of `agent`."""

    kind: str
    content: str
    warning: str | None = None  # the compress warning of a soft limit
    pii: list[dict[str, str]] = field(default_factory=list)  # findings the policy keeps (`flag`)


def screen(*, agent: Agent, kind: str, content: str) -> Screened:
    """Limits, then the scanner, then the personal-data policy; raises the
    first refusal (LimitExceeded, UnsafeContent)."""
    warning = check_limit(agent=agent, kind=kind, content=content)
    check_safe(content)
    return Screened(kind=kind, content=content, warning=warning, pii=check_pii(agent=agent, content=content))


def make_diff(*, kind: str, old: str, new: str, old_label: str, new_label: str) -> str:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"{kind} {old_label}",
        tofile=f"{kind} {new_label}",
    )
    # A last line without a newline would glue onto the next diff header.
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)




class FirstVersionRace(errors.VersionConflict):
    """Another transaction created the file's row first: there was no row
    to lock, so the two could not queue on it."""


def lock_file(*, agent: Agent, kind: str, user_ref: str) -> MemoryFile | None:
    """The file row, locked until the transaction ends: every state change
    of one file (write, approve, rollback, withhold) serialises on it."""
    return MemoryFile.objects.select_for_update(of=("self",)).filter(
        agent=agent, kind=kind, user_ref=user_ref
    ).first()


def apply_version(
    *,
    agent: Agent,
    kind: str,
    user_ref: str,
    file: MemoryFile | None,
    content: str,
    source: str,
    reason: str,
    actor_user: Actor | None = None,
    actor_agent: Agent | None = None,
    approved_by: Actor | None = None,
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
    file._history_user = user_or_none(actor_user)  # type: ignore[attr-defined]
    file._change_reason = reason[:100] if reason else ""  # type: ignore[attr-defined]
    file._history_source = source  # type: ignore[attr-defined]
    file._history_actor_agent = actor_agent  # type: ignore[attr-defined]
    file._history_proposal = proposal  # type: ignore[attr-defined]
    file._history_approved_by = user_or_none(approved_by)  # type: ignore[attr-defined]
    try:
        # A savepoint so that losing the race to create the first version
        # surfaces as a version conflict, not a broken transaction.
        with transaction.atomic():
            file.save()
    except IntegrityError as exc:
        raise FirstVersionRace(
            f"{kind} was written by someone else at the same moment; read it again and retry.",
            current_version=1,
        ) from exc
    stale = Proposal.objects.pending().for_file(agent, kind, user_ref).exclude(base_version=file.version)
    if proposal is not None:
        stale = stale.exclude(pk=proposal.pk)
    # One audit event per proposal that turned stale (what a reviewer and a
    # `proposal.stale` webhook need to know); the file lock keeps the list
    # and the update in step.
    stale_ids = list(stale.values_list("pk", flat=True))
    if stale_ids:
        Proposal.objects.filter(pk__in=stale_ids).update(status=ProposalStatus.STALE)
        for stale_id in stale_ids:
            record_event(
                action="proposal.stale",
                agent=agent,
                actor_user=actor_user,
                actor_agent=actor_agent,
                user_ref=user_ref,
                target=Proposal(pk=stale_id),
                summary=f"Proposal #{stale_id} is stale: {kind} moved on to v{file.version}",
                details={"current_version": file.version},
            )
    return file




def create_proposal(
    *,
    agent: Agent,
    user_ref: str,
    screened: Screened,
    base_content: str,
    base_version: int,
    source: str,
    reason: str,
    rationale: list[dict[str, object]],
    author_user: Actor | None = None,
    author_agent: Agent | None = None,
    revises: Proposal | None = None,
    rollback_to: int | None = None,
) -> Proposal:
    """Insert a pending proposal of content that passed the write checks
    (services._write.screen), under the file lock the caller holds."""
    kind, content = screened.kind, screened.content
    pii = with_special_categories(screened.pii, content)
    tags = risk.tags_for(kind=kind, old=base_content, new=content, pii=pii)
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
        author_user=user_or_none(author_user),
        author_username=username_of(author_user),
        author_agent=author_agent,
        revises=revises,
        rollback_to=rollback_to,
        pii=pii,
        risk_tags=tags,
        risk_level=risk.level_for(tags),
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
        details={"kind": kind, "base_version": base_version, "source": source, "reason": reason,
                 "risk": RiskLevel(proposal.risk_level).label, "risk_tags": tags,
                 **({"pii": [f["rule"] for f in pii]} if pii else {})},
    )
    return proposal


def with_special_categories(pii: list[dict[str, str]], content: str) -> list[dict[str, object]]:
    """The workspace policy's PII findings, plus every special category of
    personal data the proposed text carries (health, official ids, cards
    and bank accounts, relatives' contact data, protected traits; the
    scanner's `scan_personal`), whatever the policy: each marked `special`
    with its category, so approval asks for an acknowledgement. Never the
    value itself: the details describe, they do not quote."""
    found = scanner.scan_personal(content) if content else []
    special: list[dict[str, object]] = [
        {"rule": f.rule, "detail": f.detail, "special": True, "category": SPECIAL_CATEGORY.get(f.rule, f.rule)}
        for f in found
    ]
    known = {(f.rule, f.detail) for f in found}
    rest: list[dict[str, object]] = []
    for item in pii:
        if (item.get("rule"), item.get("detail")) in known:
            continue
        note: dict[str, object] = dict(item)
        if (category := SPECIAL_CATEGORY.get(item.get("rule", ""))) is not None:
            note.update(special=True, category=category)
        rest.append(note)
    return special + rest
