"""Subject erasure: "delete everything you hold about customer X", four-eyes.

One admin requests it (`request_erasure`): a pending governance Change of
kind `erasure`. A different admin approves it through the usual change flow
(`services.approve_change` → `erase_subject`), and in that one transaction
every trace of end user U across every agent of the workspace is erased:

- each USER.md/MEMORY.md that has content gets a new, empty version (the
  file is absent from then on; the served row must equal its latest history
  row, so it is not redacted in place);
- every version of those files, every log entry of their sessions and every
  proposal about them is redacted (services.redaction): text → tombstone,
  user reference → the subject's pseudonym; open proposals are withdrawn
  first so a tombstone is never approved into service;
- their sessions end and lose their frozen contexts (the snapshot keeps
  only version numbers); consolidation runs and pairs, other governance
  changes and audit events about them keep their rows under the pseudonym,
  with error texts, summaries naming U and event details tombstoned;
- cached contexts and replayable API answers (Idempotency-Key records)
  that held their text are dropped; SQLite's search index is merged and,
  after commit, the file is VACUUMed and its WAL truncated.

The subject is named nowhere in clear afterwards: the erasure record, the
change and the audit events carry `subject_hash`, an HMAC-SHA256 of the
workspace id and the reference under a key derived from SECRET_KEY, and the
rows carry a pseudonym, `erased:` + 32 hex digits of a hash of the subject
hash and the change id (one per erasure, named in the erasure record). Whoever holds the
key can still answer "did you erase X?"; nobody can read X back.

Who: admins of the workspace, request and approval by two different people.
Another workspace is a 404, another role a 403 (services.find_subject).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from memoryhub import context, errors
from memoryhub.models import (
    OPEN_STATUSES,
    Change,
    ChangeKind,
    ChangeStatus,
    ErasureRecord,
    IdempotencyRecord,
    ProposalStatus,
    Source,
    Workspace,
)
from memoryhub.services import redaction
from memoryhub.services.access import ADMIN_ROLES, user_or_none
from memoryhub.services.audit import record_event
from memoryhub.services.limits import validate_text
from memoryhub.services.memory import apply_version, lock_file
from memoryhub.services.subjects import Subject, find_subject, subject_in

ERASE_ROLES = ADMIN_ROLES
REASON_MAX = 1000


def _key() -> bytes:
    return hashlib.sha256(b"memoryhub.subject-erasure:" + settings.SECRET_KEY.encode()).digest()


def subject_hash(*, workspace: Workspace, user_ref: str) -> str:
    return hmac.new(_key(), f"{workspace.pk}:{user_ref}".encode(), hashlib.sha256).hexdigest()


def pseudonym(digest: str, change_id: int) -> str:
    """What the rows of one erasure carry instead of the reference: one per
    erasure, so a user who comes back and is erased again gets another
    (the served files' (agent, user, kind) stays unique)."""
    return f"erased:{hashlib.sha256(f'{digest}:{change_id}'.encode()).hexdigest()[:32]}"


def request_erasure(*, actor: Any, user_ref: Any, reason: Any, workspace: Workspace | str | None = None) -> Change:
    """Ask to erase end user U of the workspace: a pending change a second
    admin approves (API.md: POST /api/v1/subjects/U/erasure)."""
    subject = find_subject(actor=actor, user_ref=user_ref, workspace=workspace, roles=ERASE_ROLES,
                           action="erase data subjects")
    reason = validate_text(reason, field="reason", label="The reason for an erasure", max_length=REASON_MAX,
                           required=True)
    digest = subject_hash(workspace=subject.workspace, user_ref=subject.user_ref)
    from memoryhub.services.changes import request_change

    with transaction.atomic():
        Workspace.objects.select_for_update().get(pk=subject.workspace.pk)
        existing = Change.objects.pending().filter(kind=ChangeKind.ERASURE, workspace=subject.workspace,
                                                   user_ref=subject.user_ref).first()
        if existing is not None:
            raise errors.Invalid(f"An erasure of this user is already waiting for a decision (change "
                                 f"#{existing.pk}).", change=existing.pk)
        # The change must name U until it is decided (it is what gets
        # erased); its audit event names only the hash (in its payload).
        return request_change(
            workspace=subject.workspace, kind=ChangeKind.ERASURE, actor=actor, user_ref=subject.user_ref,
            event_user_ref="", payload={"subject_hash": digest}, reason=reason,
            summary=f"Erase every trace of a user of {subject.workspace.slug} (subject {digest[:12]})",
        )


def _names(text: str, user_ref: str) -> bool:
    return bool(user_ref) and user_ref in text


def erase_subject(*, change: Change, actor: Any) -> dict[str, Any]:
    """Apply an approved erasure change (called by services.changes inside
    its transaction, after the role and four-eyes checks)."""
    workspace = change.workspace
    subject: Subject = subject_in(workspace=workspace, user_ref=change.user_ref)
    user_ref = subject.user_ref
    digest = subject_hash(workspace=workspace, user_ref=user_ref)
    alias = pseudonym(digest, change.pk)
    by = f"change #{change.pk}"
    now = timezone.now()
    counts: dict[str, int] = {}

    # Files: an empty version first, so the served row equals its latest
    # (empty, unredacted) history row; then every version is redacted.
    emptied = 0
    files = list(subject.files().select_related("agent"))
    for row in files:
        file = lock_file(agent=row.agent, kind=row.kind, user_ref=user_ref)
        if file is not None and file.content:
            apply_version(agent=row.agent, kind=row.kind, user_ref=user_ref, file=file, content="",
                          source=Source.ADMIN, reason=f"Erased ({by})", actor_user=actor)
            emptied += 1
    counts["files"] = len(files)
    counts["files_emptied"] = emptied
    counts["versions"] = redaction.redact(what="history", ids=subject.versions().values_list("history_id", flat=True),
                                          by=by, pseudonym=alias, at=now)
    redaction.redact(what="served", ids=[f.pk for f in files], by=by, pseudonym=alias, at=now)

    # Proposals: open ones are withdrawn before their text goes.
    proposals = subject.proposals()
    counts["proposals_withdrawn"] = 0
    for proposal in proposals.filter(status__in=OPEN_STATUSES):
        counts["proposals_withdrawn"] += 1
        proposal.status = ProposalStatus.WITHDRAWN
        proposal.decided_by = user_or_none(actor)
        proposal.decided_by_username = actor.get_username() if user_or_none(actor) else ""
        proposal.decided_at = now
        proposal.decision_comment = f"Withdrawn: the user was erased ({by})."
        proposal.save(update_fields=["status", "decided_by", "decided_by_username", "decided_at",
                                     "decision_comment"])
    counts["proposals"] = redaction.redact(what="proposal", ids=proposals.values_list("id", flat=True), by=by,
                                           pseudonym=alias, at=now)

    counts["log_entries"] = redaction.redact(what="log", ids=subject.log_entries().values_list("id", flat=True),
                                             by=by, pseudonym=alias, at=now)

    sessions = subject.sessions()
    counts["sessions"] = sessions.count()
    counts["sessions_ended"] = sessions.filter(ended_at__isnull=True).update(ended_at=now)
    sessions.update(user_ref=alias, external_id="", context={}, parts=[])

    # A run still queued or running for the user would write a proposal
    # from what it read before the erasure: end it here, so its fenced
    # finish (status=RUNNING) matches nothing and writes nothing.
    counts["runs_cancelled"] = subject.runs().filter(status__in=("queued", "running")).update(
        status="failed", error=f"Cancelled: the user was erased ({by}).", finished_at=now, lease_expires_at=None)
    counts["runs"] = redaction.redact(what="run", ids=subject.runs().values_list("id", flat=True), by=by,
                                      pseudonym=alias, at=now)
    from django.apps import apps

    apps.get_model("consolidation", "ConsolidationPair").objects.filter(
        agent__in=subject.agents(), user_ref=user_ref).update(user_ref=alias, attention_reason="")

    for other in subject.changes().exclude(pk=change.pk):
        other.user_ref = alias
        other.summary = other.summary.replace(user_ref, alias)
        other.reason = redaction.tombstone(by=by, at=now) if _names(other.reason, user_ref) else other.reason
        other.save(update_fields=["user_ref", "summary", "reason"])

    events = subject.events()
    naming = [e.pk for e in events.only("id", "summary") if _names(e.summary, user_ref)]
    counts["events"] = redaction.redact(what="audit_summary", ids=naming, by=by, pseudonym=alias, at=now)
    counts["events"] += redaction.redact(what="audit", ids=events.exclude(pk__in=naming).values_list("id", flat=True),
                                         by=by, pseudonym=alias, at=now)

    # Replayable answers of the workspace's agents and staff (a session's
    # context, a write's echo) may hold the text; they are a retry cache.
    counts["cached_answers"] = _drop_cached_answers(subject)
    redaction.optimize_search()

    agents = list(subject.agents())
    transaction.on_commit(lambda: [context.purge_cached_contexts(agent=a, user_ref=user_ref) for a in agents])
    transaction.on_commit(redaction.compact_sqlite)

    requester = change.requested_by
    approver = user_or_none(actor)
    ErasureRecord.objects.create(
        workspace=workspace, change=change, subject_hash=digest, pseudonym=alias, counts=counts,
        requested_by=requester,
        approved_by=approver, requested_by_username=requester.get_username() if requester else "",
        approved_by_username=approver.get_username() if approver else "", requested_at=change.created_at,
    )
    record_event(
        action="subject.erase", workspace=workspace, actor_user=actor, user_ref=alias, target=change,
        summary=f"Erased every trace of a user of {workspace.slug} (subject {digest[:12]}): "
                f"{counts['versions']} versions, {counts['log_entries']} log entries, "
                f"{counts['proposals']} proposals",
        details={"subject_hash": digest, "counts": counts,
                 "requested_by": requester.get_username() if requester else None},
    )
    # The change itself keeps the hash, not the reference (saved by the
    # caller with the decision).
    change.user_ref = alias
    change.payload = {"subject_hash": digest}
    return {"erased": {k: counts[k] for k in ("files", "versions", "log_entries", "proposals")},
            "subject_hash": digest, "counts": counts}


def _drop_cached_answers(subject: Subject) -> int:
    # However the answer was encoded, it names the user as a JSON string.
    needles = {json.dumps(subject.user_ref)[1:-1], json.dumps(subject.user_ref, ensure_ascii=False)[1:-1]}
    principals = [f"agent:{pk}" for pk in subject.agents().values_list("pk", flat=True)]
    principals += [f"user:{pk}" for pk in subject.workspace.memberships.values_list("user_id", flat=True)]
    dropped = []
    for record in IdempotencyRecord.objects.filter(principal__in=principals).exclude(body=None).only("id", "body"):
        texts = (json.dumps(record.body), json.dumps(record.body, ensure_ascii=False))
        if any(needle in text for needle in needles for text in texts):
            dropped.append(record.pk)
    return IdempotencyRecord.objects.filter(pk__in=dropped).delete()[0]


def erasure_records(*, workspace_ids: Any) -> Any:
    return ErasureRecord.objects.filter(workspace_id__in=workspace_ids).select_related("workspace", "change")


def pending_erasures(*, workspace_ids: Any) -> Any:
    return Change.objects.filter(workspace_id__in=workspace_ids, kind=ChangeKind.ERASURE,
                                 status=ChangeStatus.PENDING).select_related("workspace", "requested_by")

