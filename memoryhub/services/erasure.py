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
  changes and audit events about them — in the workspace or recorded under
  none — keep their rows under the pseudonym, with error texts, reasons,
  comments, summaries naming U and event details tombstoned;
- cached contexts and replayable API answers (Idempotency-Key records)
  about them are dropped, and so are sign-in throttle rows naming them;
  SQLite's search index is merged and, after commit, the file is VACUUMed
  and its WAL truncated.

Which columns of which tables hold or name U, and what each becomes, is
one table: services.sweep (tests/memoryhub/test_sweep.py fails for a
column that is neither swept nor declared subject-free). Before a second
admin sees it, the request counts what would be erased (`preview_erasure`)
and refuses a reference nothing names (NothingToErase): a mistyped one
would otherwise be "erased" while the real user's data stays. The
approval counts again and refuses the same way.

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

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from memoryhub import context, errors
from memoryhub.actors import Actor, username_of
from memoryhub.models import (
    OPEN_STATUSES,
    Change,
    ChangeKind,
    ChangeStatus,
    ErasureRecord,
    ProposalStatus,
    Source,
    Workspace,
)
from memoryhub.services import redaction, sweep
from memoryhub.services._change_request import request_change
from memoryhub.services._write import apply_version, lock_file
from memoryhub.services.access import ADMIN_ROLES, user_or_none
from memoryhub.services.audit import record_event
from memoryhub.services.limits import validate_text
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


class NothingToErase(errors.DomainError):
    """Nothing in the workspace names the reference: most often a mistyped
    one, whose erasure would be logged as done while the real user's data
    stays."""

    code = "nothing_to_erase"
    status = 422


# The counts an erasure shows before it is approved and records after, in
# the order the console lists them (services.sweep's count keys).
COUNT_LABELS = {
    "files": "files", "versions": "versions", "proposals": "proposals", "sessions": "sessions",
    "log_entries": "log entries", "runs": "consolidation runs", "pairs": "consolidation pairs",
    "changes": "governance changes", "events": "audit events", "cached_answers": "replayable API answers",
    "webhook_deliveries": "webhook deliveries", "admin_log": "Django admin log entries",
    "login_throttle": "sign-in throttle rows", "search_vectors": "search index vectors",
}


# Always shown, even at 0; the other kinds when they are not.
MAIN_KINDS = ("files", "versions", "proposals", "sessions", "log_entries")


def count_lines(counts: dict[str, int]) -> list[tuple[str, int]]:
    """(label, count) for a person: the main kinds, then any other that is not 0."""
    return [(COUNT_LABELS.get(kind, kind.replace("_", " ")), count) for kind, count in _ordered(counts).items()
            if kind in MAIN_KINDS or count]


def _ordered(counts: dict[str, int]) -> dict[str, int]:
    ordered = {key: counts.get(key, 0) for key in COUNT_LABELS}
    return {**ordered, **{k: v for k, v in counts.items() if k not in ordered}}


def preview_erasure(*, workspace: Workspace, user_ref: str, change_id: int = 0) -> dict[str, int]:
    """What an erasure of `user_ref` would touch now, per kind: the rows
    each sweep of services.sweep would change (the caller has checked the
    actor; console and REST only show this)."""
    return _ordered(sweep.preview(sweep.Scope(workspace=workspace, user_ref=user_ref, change_id=change_id)))


def pending_counts(change: Change) -> dict[str, int]:
    """A pending erasure's counts recomputed now, for whoever decides it."""
    if change.kind != ChangeKind.ERASURE or not change.is_pending:
        return {}
    return preview_erasure(workspace=change.workspace, user_ref=change.user_ref, change_id=change.pk)


def _nothing(workspace: Workspace, user_ref: str, *, pending: bool = False) -> NothingToErase:
    then = ("Reject this change: nothing would be erased." if pending
            else "Nothing was requested. References are matched exactly (case, accents, spaces): check it "
                 "against the agent's records or the export.")
    return NothingToErase(
        f"Nothing in workspace {workspace.slug} names the user {user_ref!r}: no files, versions, proposals, "
        f"sessions, log entries, consolidation runs, changes or audit events. {then}",
        counts=preview_erasure(workspace=workspace, user_ref=user_ref))


def request_erasure(*, actor: Actor, user_ref: object, reason: object,
                    workspace: Workspace | str | None = None) -> Change:
    """Ask to erase end user U of the workspace: a pending change a second
    admin approves (API.md: POST /api/v1/subjects/U/erasure). What it would
    erase is counted now and kept in the change (`payload.counts`); a
    reference nothing names is refused (NothingToErase), with no change."""
    subject = find_subject(actor=actor, user_ref=user_ref, workspace=workspace, roles=ERASE_ROLES,
                           action="erase data subjects")
    reason = validate_text(reason, field="reason", label="The reason for an erasure", max_length=REASON_MAX,
                           required=True)
    digest = subject_hash(workspace=subject.workspace, user_ref=subject.user_ref)
    with transaction.atomic():
        Workspace.objects.select_for_update().get(pk=subject.workspace.pk)
        existing = Change.objects.pending().filter(kind=ChangeKind.ERASURE, workspace=subject.workspace,
                                                   user_ref=subject.user_ref).first()
        if existing is not None:
            raise errors.Invalid(f"An erasure of this user is already waiting for a decision (change "
                                 f"#{existing.pk}).", change=existing.pk)
        counts = preview_erasure(workspace=subject.workspace, user_ref=subject.user_ref)
        if not any(counts.values()):
            # Not audited, like any refused input: an event naming the
            # reference would itself be something to erase next time.
            raise _nothing(subject.workspace, subject.user_ref)
        # The change must name U until it is decided (it is what gets
        # erased); its audit event names only the hash (in its payload).
        return request_change(
            workspace=subject.workspace, kind=ChangeKind.ERASURE, actor=actor, user_ref=subject.user_ref,
            event_user_ref="", payload={"subject_hash": digest, "counts": counts}, reason=reason,
            summary=f"Erase every trace of a user of {subject.workspace.slug} (subject {digest[:12]})",
        )


def scrubbed(*, change: Change, text: str) -> str:
    """Text typed about a pending erasure (its reason, the approver's
    comment): a tombstone if it names the subject, else as typed."""
    scope = sweep.Scope(workspace=change.workspace, user_ref=change.user_ref, change_id=change.pk)
    return scope.tombstone if text and scope.names(text, short=True) else text


def erase_subject(*, change: Change, actor: Actor) -> dict[str, object]:
    """Apply an approved erasure change (called by services.changes inside
    its transaction, after the role and four-eyes checks)."""
    workspace = change.workspace
    subject: Subject = subject_in(workspace=workspace, user_ref=change.user_ref)
    user_ref = subject.user_ref
    digest = subject_hash(workspace=workspace, user_ref=user_ref)
    alias = pseudonym(digest, change.pk)
    by = f"change #{change.pk}"
    now = timezone.now()
    scope = sweep.Scope(workspace=workspace, user_ref=user_ref, alias=alias, change_id=change.pk, at=now)
    # Counted again at the approval: the approver decides on what is there now.
    planned = preview_erasure(workspace=workspace, user_ref=user_ref, change_id=change.pk)
    if not any(planned.values()):
        raise _nothing(workspace, user_ref, pending=True)
    counts: dict[str, int] = {}

    # Files: an empty version first, so the served row equals its latest
    # (empty, unredacted) history row; the sweep then redacts every version.
    emptied = 0
    files = list(subject.files().select_related("agent"))
    for row in files:
        file = lock_file(agent=row.agent, kind=row.kind, user_ref=user_ref)
        if file is not None and file.content:
            apply_version(agent=row.agent, kind=row.kind, user_ref=user_ref, file=file, content="",
                          source=Source.ADMIN, reason=f"Erased ({by})", actor_user=actor)
            emptied += 1
    counts["files_emptied"] = emptied

    # Proposals: open ones are withdrawn before their text goes.
    counts["proposals_withdrawn"] = 0
    for proposal in subject.proposals().filter(status__in=OPEN_STATUSES):
        counts["proposals_withdrawn"] += 1
        proposal.status = ProposalStatus.WITHDRAWN
        proposal.decided_by = user_or_none(actor)
        proposal.decided_by_username = username_of(actor)
        proposal.decided_at = now
        proposal.decision_comment = f"Withdrawn: the user was erased ({by})."
        proposal.save(update_fields=["status", "decided_by", "decided_by_username", "decided_at",
                                     "decision_comment"])

    counts["sessions_ended"] = subject.sessions().filter(ended_at__isnull=True).update(ended_at=now)

    # A run still queued or running for the user would write a proposal
    # from what it read before the erasure: end it here, so its fenced
    # finish (status=RUNNING) matches nothing and writes nothing.
    counts["runs_cancelled"] = subject.runs().filter(status__in=("queued", "running")).update(
        status="failed", error=f"Cancelled: the user was erased ({by}).", finished_at=now, lease_expires_at=None)

    # Every column of every table that holds or names the subject
    # (services.sweep, one table).
    counts.update(sweep.run(scope))
    change.reason = scrubbed(change=change, text=change.reason)
    redaction.optimize_search()

    agents = list(subject.agents())
    transaction.on_commit(lambda: [context.purge_cached_contexts(agent=a, user_ref=user_ref) for a in agents])
    transaction.on_commit(redaction.compact_sqlite)

    counts = _ordered(counts)
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
    change.payload = {"subject_hash": digest, "counts": (change.payload or {}).get("counts", {})}
    return {"erased": {k: counts[k] for k in ("files", "versions", "log_entries", "proposals")},
            "subject_hash": digest, "planned": planned, "counts": counts}


def erasure_records(*, workspace_ids: object) -> QuerySet[ErasureRecord]:
    return ErasureRecord.objects.filter(workspace_id__in=workspace_ids).select_related("workspace", "change")


def pending_erasures(*, workspace_ids: object) -> QuerySet[Change]:
    return Change.objects.filter(workspace_id__in=workspace_ids, kind=ChangeKind.ERASURE,
                                 status=ChangeStatus.PENDING).select_related("workspace", "requested_by")

