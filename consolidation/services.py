"""Consolidation runs: trigger, claim, execute, sweep, gate and budget.

The one way in for the Celery tasks, the staff API, the review UI and the
tests. The database is the truth about runs:

- `trigger_run` inserts a QUEUED run; a partial unique index allows one
  active (queued or running) run per (agent, user) pair, so a second trigger
  gets the active run back instead of a second one.
- `claim_run` flips QUEUED → RUNNING with a conditional UPDATE and a lease;
  exactly one worker wins.
- `execute_run` runs the phases with no transaction or lock open during
  the backend call, then writes every proposal and finishes the run in one
  transaction, fenced by `status=RUNNING, attempts=<the claim's>` so a
  redelivered duplicate or a presumed-dead worker cannot write twice.
- `sweep_expired_runs` re-queues runs whose lease ran out (the worker was
  killed) and re-dispatches queued runs whose broker message was lost.

Liveness lives in ConsolidationPair: a run that fails for a permanent
reason marks its pair `needs_attention` (with the reason and what would
clear it), and the gate leaves the pair alone until something changes (a
session ends, a file changes) or a reviewer retries it (`retry_pair`).
Transient failures back off exponentially, never sooner than the model
server's Retry-After.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Case, Count, F, Max, OuterRef, Q, QuerySet, Subquery, Sum, When
from django.db.models.functions import Length, TruncDate
from django.utils import timezone

from consolidation import pipeline
from consolidation.backends import get_backend
from consolidation.backends.base import Backend, BackendError, BackendResult, RunLimits
from consolidation.models import ConsolidationPair, ConsolidationRun, Failure, RunStatus, Trigger
from memoryhub import errors
from memoryhub import services as core
from memoryhub.actors import Actor, staff_user
from memoryhub.models import Agent, AgentSession, FileKind, MemoryFile, Proposal, ProposalStatus, Source

logger = logging.getLogger(__name__)

# A pair is consolidated before its file reaches the cap, not after.
CAP_TRIGGER_SHARE = (4, 5)  # 80%, as integers so the comparison stays in SQL


def lease_duration() -> timedelta:
    return timedelta(seconds=settings.MEMORYHUB_RUN_LEASE_SECONDS)


def max_attempts() -> int:
    return int(settings.MEMORYHUB_RUN_MAX_ATTEMPTS)


def pair_backoff(failures: int, retry_after: float | None = None) -> timedelta:
    """How long the gate leaves a pair alone after `failures` transient
    failures in a row: doubling from the base, capped, and never shorter
    than what the model server asked for."""
    base = float(settings.CONSOLIDATION_BACKOFF_BASE_SECONDS)
    cap = float(settings.CONSOLIDATION_BACKOFF_MAX_SECONDS)
    delay = min(cap, base * 2 ** max(0, failures - 1))
    return timedelta(seconds=max(delay, retry_after or 0))


# --- access ---------------------------------------------------------------------------------


def visible_runs(user: Actor | None) -> QuerySet[ConsolidationRun]:
    return ConsolidationRun.objects.in_workspaces(core.workspace_ids_for(user)).select_related("agent")


def get_run_for_user(user: Actor | None, run_id: Any) -> ConsolidationRun:
    """Another workspace's run is a 404, like a missing one."""
    try:
        run_id = int(run_id)
    except (TypeError, ValueError) as exc:
        raise errors.NotFound("There is no such consolidation run.") from exc
    run = visible_runs(user).filter(pk=run_id).first()
    if run is None:
        raise errors.NotFound("There is no such consolidation run in your workspaces.")
    return run


# --- trigger and dispatch -----------------------------------------------------------------


def check_consolidated(agent: Agent) -> None:
    """A deactivated agent is not consolidated: no run is queued for it, and
    a run queued before it was deactivated ends without a proposal."""
    if not agent.is_active:
        raise errors.Invalid(f"Agent {agent.slug} is deactivated; it is not consolidated.")


def trigger_run(
    *,
    agent: Agent,
    user_ref: str,
    trigger: str = Trigger.MANUAL,
    user: Actor | None = None,
    backend: str | None = None,
) -> tuple[ConsolidationRun, bool]:
    """Queue a run for the pair, or return the one already queued or running.
    Returns (run, created). A staff `user` needs the reviewer or admin role."""
    user_ref = core.validate_user_ref(user_ref)
    if user is not None:
        core.require_role(user=user, workspace=agent.workspace_id, roles=core.REVIEW_ROLES,
                          action="start consolidation runs")
    check_consolidated(agent)
    if staff_user(user) is not None:
        # A person starting a run is a retry: the pair's attention state and
        # backoff are theirs to override.
        _clear_pair(agent=agent, user_ref=user_ref, user=user)
    # Two tries: the active run we collided with may finish between our
    # insert and our read, and then a new run is what the caller wants.
    for _ in range(2):
        try:
            with transaction.atomic():
                run = ConsolidationRun.objects.create(
                    agent=agent,
                    user_ref=user_ref,
                    status=RunStatus.QUEUED,
                    trigger=trigger,
                    triggered_by=staff_user(user),
                    backend=backend or agent.consolidation_backend,
                )
                core.record_event(
                    action="consolidation.trigger",
                    agent=agent,
                    actor_user=user,
                    user_ref=user_ref,
                    target=run,
                    summary=f"Consolidation run #{run.pk} queued for {agent.slug}/{user_ref} ({trigger})",
                    details={"trigger": trigger, "backend": run.backend},
                )
                dispatch(run.pk)
            return run, True
        except IntegrityError:
            active = ConsolidationRun.objects.for_pair(agent.pk, user_ref).active().first()
            if active is not None:
                return active, False
    raise errors.VersionConflict("Another consolidation run for this pair started and finished meanwhile; retry.")


def retry_pair(*, agent: Agent, user_ref: str, user: Actor | None) -> ConsolidationRun:
    """A reviewer's or admin's retry of a pair: clears `needs_attention`
    and the backoff, and queues a run (or returns the active one)."""
    user_ref = core.validate_user_ref(user_ref)
    core.require_role(user=user, workspace=agent.workspace_id, roles=core.REVIEW_ROLES,
                      action="retry consolidation")
    pair = ConsolidationPair.objects.filter(agent=agent, user_ref=user_ref).first()
    core.record_event(
        action="consolidation.retry",
        agent=agent,
        actor_user=user,
        user_ref=user_ref,
        target=pair,
        summary=f"Consolidation of {agent.slug}/{user_ref} retried by hand"
        + (f" (it needed attention: {pair.attention_reason[:200]})" if pair and pair.needs_attention else ""),
        details={"needed_attention": bool(pair and pair.needs_attention),
                 "code": pair.attention_code if pair else ""},
    )
    run, _ = trigger_run(agent=agent, user_ref=user_ref, trigger=Trigger.MANUAL, user=user)
    return run


def pairs_needing_attention(*, workspace_ids: list[int]) -> QuerySet[ConsolidationPair]:
    """Pairs the gate leaves alone until a person looks, newest first, for
    the console and the dashboard: `attention_reason`, `attention_clears_when`,
    `attention_since`, `attention_run_id`, `agent`."""
    return (
        ConsolidationPair.objects.needing_attention()
        .in_workspaces(workspace_ids)
        .select_related("agent", "attention_run")
        .order_by("-attention_since", "-id")
    )


def pair_state(*, agent: Agent, user_ref: str) -> ConsolidationPair | None:
    return ConsolidationPair.objects.filter(agent=agent, user_ref=user_ref).first()


def _clear_pair(*, agent: Agent, user_ref: str, user: Actor | None = None, now: datetime | None = None) -> None:
    fields: dict[str, object] = {"needs_attention": False, "transient_failures": 0, "next_attempt_at": None,
                              "updated_at": now or timezone.now()}
    if user is not None:
        fields.update(cleared_by=user, cleared_at=now or timezone.now())
    ConsolidationPair.objects.filter(agent=agent, user_ref=user_ref).filter(
        Q(needs_attention=True) | Q(transient_failures__gt=0) | Q(next_attempt_at__isnull=False)
    ).update(**fields)


CLEARS_WHEN = {
    "guard:cap": "a reviewer shortens the file or raises its limit (a file change), or retries the pair",
    "transient_limit": "the model server works again and a reviewer retries the pair, or a new session ends",
}
DEFAULT_CLEARS_WHEN = ("a new session of the pair ends, USER.md or MEMORY.md changes, or a reviewer retries the "
                       "pair")
# Transient failures in a row after which a pair needs a person.
MAX_TRANSIENT_FAILURES = 5


def _record_outcome(run: ConsolidationRun, *, status: str, failure: str, code: str, reason: str,
                    retry_after: float | None, now: datetime) -> None:
    """Update the pair's state in the transaction that finishes the run."""
    if status in (RunStatus.SUCCEEDED, RunStatus.NO_CHANGE):
        _clear_pair(agent=run.agent, user_ref=run.user_ref, now=now)
        return
    if status != RunStatus.FAILED or not failure:
        return
    pair, _ = ConsolidationPair.objects.select_for_update().get_or_create(agent=run.agent, user_ref=run.user_ref)
    pair.updated_at = now
    if failure == Failure.TRANSIENT:
        pair.transient_failures += 1
        pair.next_attempt_at = now + pair_backoff(pair.transient_failures, retry_after)
        if pair.transient_failures < MAX_TRANSIENT_FAILURES:
            pair.save()
            return
        code = "transient_limit"
        reason = f"{pair.transient_failures} runs in a row failed on a transient error; the last: {reason}"
    pair.needs_attention = True
    pair.attention_code = code[:32]
    pair.attention_reason = reason
    pair.attention_clears_when = CLEARS_WHEN.get(code, DEFAULT_CLEARS_WHEN)
    pair.attention_since = now
    pair.attention_run = run
    pair.save()
    core.record_event(
        action="consolidation.needs_attention",
        agent=run.agent,
        user_ref=run.user_ref,
        target=pair,
        summary=f"Consolidation of {run.agent.slug}/{run.user_ref} needs attention: {reason}"[:500],
        details={"code": pair.attention_code, "run": run.pk, "clears_when": pair.attention_clears_when},
    )


def dispatch(run_id: int) -> None:
    """Send the run to a worker once the transaction that made it commits.
    A lost or unsent message costs latency, not the run: the sweep
    re-dispatches queued runs older than a lease."""
    transaction.on_commit(lambda: _send(run_id))


def _send(run_id: int) -> None:
    from consolidation.tasks import consolidate_task

    # An optional routing setting: production may give dreaming its own
    # queue, and the worker tests use one per test.
    queue = getattr(settings, "MEMORYHUB_CONSOLIDATION_QUEUE", None)
    try:
        consolidate_task.apply_async(args=(run_id,), **({"queue": queue} if queue else {}))
    except Exception:
        logger.warning("could not enqueue consolidation run %s; the sweep will retry", run_id, exc_info=True)


# --- claim, finish, requeue -----------------------------------------------------------------


def claim_run(*, run_id: int, now: datetime | None = None) -> bool:
    """QUEUED → RUNNING with a fresh lease, for exactly one caller. A
    redelivered message for a run whose lease ran out may take it over too
    (attempts permitting), so a Redis redelivery finishes the work."""
    now = now or timezone.now()
    claimable = Q(status=RunStatus.QUEUED) | Q(
        status=RunStatus.RUNNING, lease_expires_at__lt=now, attempts__lt=max_attempts()
    )
    # A message delivered before the retry time the server asked for is
    # consumed without effect; the task's countdown or the sweep brings it back.
    not_early = Q(retry_at__isnull=True) | Q(retry_at__lte=now)
    claimed = ConsolidationRun.objects.filter(claimable, not_early, pk=run_id).update(
        status=RunStatus.RUNNING,
        lease_expires_at=now + lease_duration(),
        started_at=now,
        attempts=F("attempts") + 1,
    )
    return claimed == 1


def _finish(
    run: ConsolidationRun,
    *,
    status: str,
    error: str = "",
    counts: dict[str, object] | None = None,
    usage: dict[str, object] | None = None,
    high_water_mark: int | None = None,
    failure: str = Failure.NONE,
    code: str = "",
    retry_after: float | None = None,
) -> bool:
    """The fenced final UPDATE: only the claim that is still current may
    finish the run. Call inside the transaction that writes its results.
    `finished_at` is the moment it finishes, not the run's logical time."""
    now = timezone.now()
    fields: dict[str, object] = {
        "status": status,
        "finished_at": now,
        "lease_expires_at": None,
        "error": error,
        "failure": failure if status == RunStatus.FAILED else Failure.NONE,
        "retry_at": None,
        **(usage or {}),
    }
    if counts is not None:
        fields["counts"] = counts
    if high_water_mark is not None:
        fields["high_water_mark"] = high_water_mark
    updated = ConsolidationRun.objects.filter(pk=run.pk, status=RunStatus.RUNNING, attempts=run.attempts).update(
        **fields
    )
    if updated:
        for name, value in fields.items():
            setattr(run, name, value)
        _record_outcome(run, status=status, failure=failure, code=code, reason=error, retry_after=retry_after,
                        now=now)
        core.record_event(
            action=f"consolidation.{status}",
            agent=run.agent,
            user_ref=run.user_ref,
            target=run,
            summary=f"Consolidation run #{run.pk} for {run.agent.slug}/{run.user_ref}: {status}"
            + (f" — {error}" if error else ""),
            details={"status": status, "error": error, "tokens_in": run.tokens_in, "tokens_out": run.tokens_out,
                     "cost_usd": str(run.cost_usd)},
        )
    return bool(updated)


def _load_running(run_id: int) -> ConsolidationRun | None:
    return (
        ConsolidationRun.objects.select_related("agent__workspace")
        .filter(pk=run_id, status=RunStatus.RUNNING)
        .first()
    )


def fail_run(*, run_id: int, reason: str, failure: str = Failure.PERMANENT, code: str = "error",
             retry_after: float | None = None) -> bool:
    run = _load_running(run_id)
    if run is None:
        return False
    with transaction.atomic():
        return _finish(run, status=RunStatus.FAILED, error=reason, failure=failure, code=code,
                       retry_after=retry_after)


def requeue_run(*, run_id: int, reason: str, delay: float = 0, now: datetime | None = None) -> bool:
    """RUNNING → QUEUED after a transient backend failure; the task retries
    after `delay` seconds (the sweep also picks it up if that message is
    lost, not before `retry_at`)."""
    now = now or timezone.now()
    return bool(
        ConsolidationRun.objects.filter(pk=run_id, status=RunStatus.RUNNING).update(
            status=RunStatus.QUEUED, lease_expires_at=None, queued_at=now, error=reason,
            retry_at=now + timedelta(seconds=delay) if delay else None,
        )
    )


# --- execute -----------------------------------------------------------------------------


def spend_today(*, agent: Agent, now: datetime | None = None) -> Decimal:
    now = now or timezone.now()
    midnight = datetime.combine(now.astimezone(UTC).date(), time.min, tzinfo=UTC)
    total = ConsolidationRun.objects.filter(agent=agent).started_since(midnight).aggregate(total=Sum("cost_usd"))
    return Decimal(total["total"] or 0)


def consumed_mark(*, agent: Agent, user_ref: str) -> int:
    """Where the next run starts gathering: the mark of the last run that
    consumed its signals (succeeded or no change). Failed runs consume nothing."""
    mark = ConsolidationRun.objects.for_pair(agent.pk, user_ref).consuming().aggregate(m=Max("high_water_mark"))["m"]
    return int(mark or 0)


def _usage(result: BackendResult | BackendError) -> dict[str, object]:
    return {
        "model": str(getattr(result, "model", "") or "")[:200],
        "tokens_in": int(getattr(result, "tokens_in", 0) or 0),
        "tokens_out": int(getattr(result, "tokens_out", 0) or 0),
        "cost_usd": Decimal(getattr(result, "cost_usd", 0) or 0),
    }


def run_limits(*, agent: Agent, spent: Decimal, backend: str) -> RunLimits:
    """What this run may spend: the rest of the agent's daily budget and the
    per-run ceiling; and, for a model, what it should know about the agent
    (SOUL.md, ABOUT.md) to judge relevance."""
    remaining = max(Decimal("0"), Decimal(agent.daily_budget_usd) - spent)
    ceiling = Decimal(str(settings.CONSOLIDATION_MAX_RUN_COST_USD))
    profile = "" if backend == "heuristic" and not settings.CONSOLIDATION_OTHER_LANGUAGES_TO_LLM else "\n\n".join(
        f"{row.kind}:\n{row.content}"
        for row in MemoryFile.objects.filter(agent=agent, user_ref="", kind__in=[FileKind.SOUL, FileKind.ABOUT])
        .order_by("kind") if row.content
    )
    return RunLimits(budget_usd=remaining, run_ceiling_usd=ceiling, profile=profile, encoding=agent.token_encoding,
                     pii_policy=agent.workspace.pii_policy)


def _fallback(backend: Backend) -> Backend | None:
    """The llm backend for log entries the heuristic cannot read, when configured."""
    if backend.name != "heuristic" or not settings.CONSOLIDATION_OTHER_LANGUAGES_TO_LLM:
        return None
    return get_backend("llm")


def execute_run(*, run_id: int, now: datetime | None = None) -> ConsolidationRun | None:
    """Run the phases of a claimed run and finish it. A retryable
    BackendError propagates (the task retries); every other outcome ends the
    run: succeeded (proposals made), no_change, skipped or failed with a
    reason. `now` is the run's logical time (expiries, relative dates)."""
    run = _load_running(run_id)
    if run is None:
        return None
    now = now or timezone.now()
    agent = run.agent
    try:
        check_consolidated(agent)
    except errors.DomainError as exc:
        with transaction.atomic():
            _finish(run, status=RunStatus.SKIPPED, error=f"Skipped: {exc.detail}")
        return run

    spent = spend_today(agent=agent, now=now)
    if spent >= agent.daily_budget_usd:
        with transaction.atomic():
            _finish(run, status=RunStatus.SKIPPED, error=(
                f"Skipped: {agent.slug} has spent ${spent:.4f} of its ${agent.daily_budget_usd:.4f} daily "
                "consolidation budget (UTC day); no backend was called."
            ))
        return run

    files = pipeline.orient(agent=agent, user_ref=run.user_ref)
    gathered = pipeline.gather(agent=agent, user_ref=run.user_ref, after=consumed_mark(agent=agent,
                                                                                       user_ref=run.user_ref))
    counts: dict[str, Any] = {"orient": pipeline.orient_counts(files), "gather": gathered.counts()}

    # No transaction and no lock is open here: an LLM call may take minutes.
    try:
        backend = get_backend(run.backend)
        result = pipeline.consolidate(backend=backend, agent_slug=agent.slug, files=files,
                                      signals=gathered.signals, now=now,
                                      limits=run_limits(agent=agent, spent=spent, backend=run.backend),
                                      fallback=_fallback(backend))
    except BackendError as exc:
        if exc.retryable:
            raise
        with transaction.atomic():
            if exc.budget:
                _finish(run, status=RunStatus.SKIPPED, error=exc.reason, counts=counts, usage=_usage(exc))
            else:
                _finish(run, status=RunStatus.FAILED, error=exc.reason, counts=counts, usage=_usage(exc),
                        failure=Failure.PERMANENT, code="backend_error")
        return run
    usage = _usage(result)
    mark = pipeline.consumed_mark(gathered, result)
    counts["consolidate"] = {
        "changes": len(result.changes),
        "by_kind": dict(sorted(_count_kinds(result).items())),
        "calls": result.calls,
        "contradictions": sum(1 for change in result.changes if change.flag == "contradiction"),
    }
    if result.stopped:
        counts["consolidate"]["stopped"] = result.stopped
        counts["consolidate"]["read_through"] = mark
    if result.not_understood:
        counts["not_understood"] = result.not_understood
    if result.estimated:
        counts["consolidate"]["usage_estimated"] = True
    refused = [*gathered.refused, *result.refused]
    if refused:
        # Ids, classes and categories only: a refused secret or personal
        # datum is never copied out of the log, not even into the counts.
        counts["refused"] = [refusal.as_count() for refusal in refused]

    try:
        plans = pipeline.prune_and_index(files=files, result=result, signals=gathered.signals, now=now,
                                         refused=refused, policy=agent.workspace.pii_policy)
    except pipeline.GuardError as exc:
        counts["prune"] = {"guard": exc.guard}
        with transaction.atomic():
            _finish(run, status=RunStatus.FAILED, error=exc.reason, counts=counts, usage=usage,
                    failure=Failure.PERMANENT, code=f"guard:{exc.guard}")
        return run
    counts["prune"] = {
        plan.kind: {"entries": len(plan.entries), "chars": len(plan.content), "changes": len(plan.changes),
                    **({"carried_from": plan.carried_from} if plan.carried_from is not None else {})}
        for plan in plans
    }
    counts["proposals"] = len(plans)

    unread = _unread_left(gathered, result)
    if unread:
        counts["unread_left"] = unread

    if not plans:
        with transaction.atomic():
            if _finish(run, status=RunStatus.NO_CHANGE, counts=counts, usage=usage, high_water_mark=mark) and unread:
                _continue(run)
        return run

    plan = plans[0]
    try:
        # All or nothing: every proposal and the finished run commit
        # together, so a worker killed here leaves no partial proposal.
        with transaction.atomic():
            if not _finish(run, status=RunStatus.SUCCEEDED, counts=counts, usage=usage, high_water_mark=mark):
                return run  # re-claimed by another worker after our lease ran out: theirs to finish
            proposals = []
            for current in plans:
                plan = current
                proposal = core.propose_change(
                    agent=agent,
                    kind=plan.kind,
                    user_ref=run.user_ref,
                    content=plan.content,
                    source=Source.CONSOLIDATION,
                    reason=plan.reason(),
                    rationale=plan.rationale,
                    # Compare-and-swap: the version read in Orient.
                    base_version=plan.base_version,
                )
                if plan.carried_from is not None:
                    # A stale proposal this one replayed is replaced by it,
                    # like the pending one core supersedes.
                    Proposal.objects.filter(pk=plan.carried_from, status=ProposalStatus.STALE).update(
                        status=ProposalStatus.SUPERSEDED, superseded_by=proposal)
                proposals.append(proposal)
            run.proposals.add(*proposals)
            if unread:
                _continue(run)
    except errors.VersionConflict as exc:
        # No automatic re-run: the gate or a reviewer starts a fresh run that
        # reads the new version.
        reason = f"The file changed during the run, so nothing was proposed: {exc.detail}"
        _fail_after_rollback(run, reason=reason, counts=counts, usage=usage, failure=Failure.TRANSIENT,
                             code="version_conflict")
    except errors.UnsafeContent as exc:
        # The scanner runs once per proposal, in core.propose_change.
        rule = exc.extra.get("rule", "")
        counts["prune"] = {"guard": "scanner"}
        detail = str(exc.detail).split(": ", 1)[-1]
        _fail_after_rollback(run, reason=f"The proposed {plan.kind} fails the memory scanner ({rule}): {detail}",
                             counts=counts, usage=usage, failure=Failure.PERMANENT, code="guard:scanner")
    except errors.DomainError as exc:
        _fail_after_rollback(run, reason=f"The proposal was refused: {exc.detail}", counts=counts,
                             usage=usage, failure=Failure.PERMANENT, code=f"refused:{exc.code}")
    return run


def _unread_left(gathered: pipeline.Gathered, result: BackendResult) -> str:
    """Why log entries are left unread although a new run could read them
    now (more than one run holds, or the model's call ceiling), or "" (all
    read, or a budget that a new run would hit too)."""
    if gathered.backlog:
        return f"more than {pipeline.MAX_SIGNALS_PER_RUN:,} log entries were waiting"
    if result.stopped.startswith("call ceiling"):
        return result.stopped
    return ""


def _continue(run: ConsolidationRun) -> None:
    """Queue the pair's next run at once, in the transaction that finishes
    this one: a busy pair never waits for new sessions while unread entries
    remain. It starts from this run's proposal, so the reviewer still gets
    one proposal per file."""
    follow, created = trigger_run(agent=run.agent, user_ref=run.user_ref, trigger=Trigger.GATE,
                                  backend=run.backend)
    if created:
        logger.info("run %s left unread entries; run %s continues", run.pk, follow.pk)


def _fail_after_rollback(
    run: ConsolidationRun, *, reason: str, counts: dict[str, object], usage: dict[str, object], failure: str,
    code: str,
) -> None:
    run.status = RunStatus.RUNNING  # the rolled-back _finish set it on the instance only
    counts = {**counts, "proposals": 0}
    with transaction.atomic():
        _finish(run, status=RunStatus.FAILED, error=reason, counts=counts, usage=usage, failure=failure, code=code)


def _count_kinds(result: BackendResult) -> dict[str, int]:
    found: dict[str, int] = {}
    for change in result.changes:
        found[change.kind] = found.get(change.kind, 0) + 1
    return found


# --- sweep -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SweepResult:
    requeued: list[int]
    failed: list[int]
    redispatched: list[int]


def sweep_expired_runs(*, now: datetime | None = None, batch: int = 100) -> SweepResult:
    """Runs whose lease ran out lost their worker: back to QUEUED (and
    dispatched) while attempts remain, else FAILED with the reason. Queued
    runs older than a lease lost their broker message: dispatched again."""
    now = now or timezone.now()
    requeued: list[int] = []
    failed: list[int] = []
    expired = list(
        ConsolidationRun.objects.filter(status=RunStatus.RUNNING, lease_expires_at__lt=now)
        .order_by("lease_expires_at")
        .values_list("pk", "attempts")[:batch]
    )
    for run_id, attempts in expired:
        fenced = ConsolidationRun.objects.filter(pk=run_id, status=RunStatus.RUNNING, attempts=attempts,
                                                 lease_expires_at__lt=now)
        with transaction.atomic():
            if attempts >= max_attempts():
                reason = (f"Worker lost {attempts} times: the run's lease expired before it finished each time; "
                          "giving up.")
                run = fenced.select_related("agent__workspace").first()
                if run is not None and _finish(run, status=RunStatus.FAILED, error=reason,
                                               failure=Failure.PERMANENT, code="worker_lost"):
                    failed.append(run_id)
            elif fenced.update(status=RunStatus.QUEUED, lease_expires_at=None, queued_at=now,
                               error=f"Worker lost during attempt {attempts}; re-queued by the sweep."):
                dispatch(run_id)
                requeued.append(run_id)
    redispatched: list[int] = []
    lost = list(
        ConsolidationRun.objects.filter(status=RunStatus.QUEUED, queued_at__lt=now - lease_duration())
        .filter(Q(retry_at__isnull=True) | Q(retry_at__lte=now))
        .order_by("queued_at")
        .values_list("pk", "queued_at")[:batch]
    )
    for run_id, queued_at in lost:
        if ConsolidationRun.objects.filter(pk=run_id, status=RunStatus.QUEUED, queued_at=queued_at).update(
            queued_at=now
        ):
            dispatch(run_id)
            redispatched.append(run_id)
    return SweepResult(requeued=requeued, failed=failed, redispatched=redispatched)


# --- gate ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Eligible:
    agent_id: int
    user_ref: str
    reasons: tuple[str, ...]


def eligible_pairs(*, now: datetime | None = None) -> list[Eligible]:
    """(agent, user) pairs of active agents due for a run, in a handful of
    queries whatever their number: enough new ended sessions, or USER.md or
    MEMORY.md past 80% of its cap and changed since the last run that read
    it (a near-cap file that consolidation could not shrink is not re-run
    until it changes); in both cases no active run, no run in the last
    gate_hours, no transient backoff pending, and for a pair that needs
    attention, something new since (a session ended, a file changed)."""
    now = now or timezone.now()
    last_consuming = (
        ConsolidationRun.objects.filter(agent_id=OuterRef("agent_id"), user_ref=OuterRef("user_ref"))
        .consuming()
        .order_by("-created_at")
        .values("created_at")[:1]
    )
    by_sessions = (
        AgentSession.objects.filter(agent__is_active=True, ended_at__isnull=False)
        .alias(since=Subquery(last_consuming))
        .filter(Q(since__isnull=True) | Q(ended_at__gt=F("since")))
        .values("agent_id", "user_ref")
        .annotate(sessions=Count("id"), needed=Max("agent__gate_sessions"), last_ended=Max("ended_at"))
        .filter(sessions__gte=F("needed"))
        .values_list("agent_id", "user_ref", "sessions", "last_ended")
    )
    numerator, denominator = CAP_TRIGGER_SHARE
    limit = Case(When(kind=FileKind.USER, then=F("agent__limit_user")), default=F("agent__limit_memory"))
    near_cap = (
        MemoryFile.objects.filter(agent__is_active=True, kind__in=[FileKind.USER, FileKind.MEMORY])
        .alias(scaled_chars=Length("content") * denominator, scaled_limit=limit * numerator,
               since=Subquery(last_consuming))
        .filter(scaled_chars__gt=F("scaled_limit"))
        .filter(Q(since__isnull=True) | Q(updated_at__gt=F("since")))
        .values_list("agent_id", "user_ref", "kind", "updated_at")
    )
    reasons: dict[tuple[int, str], list[str]] = {}
    changed: dict[tuple[int, str], datetime] = {}
    for agent_id, user_ref, sessions, last_ended in by_sessions:
        reasons.setdefault((agent_id, user_ref), []).append(f"{sessions} ended sessions since the last run")
        changed[(agent_id, user_ref)] = last_ended
    for agent_id, user_ref, kind, updated_at in near_cap:
        reasons.setdefault((agent_id, user_ref), []).append(f"{kind} is past 80% of its cap")
        changed[(agent_id, user_ref)] = max(updated_at, changed.get((agent_id, user_ref), updated_at))
    if not reasons:
        return []
    agent_ids = {agent_id for agent_id, _ in reasons}
    history = {
        (row["agent_id"], row["user_ref"]): row
        for row in ConsolidationRun.objects.filter(agent_id__in=agent_ids)
        .values("agent_id", "user_ref")
        .annotate(last=Max("created_at"), active=Count("id", filter=Q(status__in=[RunStatus.QUEUED,
                                                                                  RunStatus.RUNNING])))
    }
    held = {
        (row["agent_id"], row["user_ref"]): row
        for row in ConsolidationPair.objects.filter(agent_id__in=agent_ids)
        .filter(Q(needs_attention=True) | Q(next_attempt_at__gt=now))
        .values("agent_id", "user_ref", "needs_attention", "attention_since", "next_attempt_at")
    }
    if any(row["needs_attention"] for row in held.values()):
        # A file written since the pair was flagged counts as a change even
        # when it is not near its cap.
        for agent_id, user_ref, updated_at in MemoryFile.objects.filter(
            agent_id__in={a for (a, _), row in held.items() if row["needs_attention"]},
            kind__in=[FileKind.USER, FileKind.MEMORY],
        ).values_list("agent_id", "user_ref", "updated_at"):
            key = (agent_id, user_ref)
            if key in changed:
                changed[key] = max(changed[key], updated_at)
    gate_hours = dict(Agent.objects.filter(pk__in=agent_ids).values_list("pk", "gate_hours"))
    eligible = []
    for (agent_id, user_ref), why in sorted(reasons.items()):
        past = history.get((agent_id, user_ref))
        if past is not None:
            if past["active"]:
                continue
            if past["last"] > now - timedelta(hours=gate_hours[agent_id]):
                continue
        state = held.get((agent_id, user_ref))
        if state is not None:
            if state["next_attempt_at"] is not None and state["next_attempt_at"] > now:
                continue
            since = state["attention_since"]
            if state["needs_attention"] and since is not None and not changed[(agent_id, user_ref)] > since:
                continue
        eligible.append(Eligible(agent_id=agent_id, user_ref=user_ref, reasons=tuple(why)))
    return eligible


def run_gate(*, now: datetime | None = None) -> list[ConsolidationRun]:
    """Queue one run per eligible pair."""
    pairs = eligible_pairs(now=now)
    agents = Agent.objects.select_related("workspace").in_bulk({pair.agent_id for pair in pairs})
    runs = []
    for pair in pairs:
        run, created = trigger_run(agent=agents[pair.agent_id], user_ref=pair.user_ref, trigger=Trigger.GATE)
        if created:
            runs.append(run)
            logger.info("gate queued run %s for %s/%s: %s", run.pk, agents[pair.agent_id].slug, pair.user_ref,
                        "; ".join(pair.reasons))
    return runs


def run_figures(workspace_ids: list[int], *, since: datetime) -> tuple[dict[str, int], dict[Any, dict[str, Any]]]:
    """For the dashboard: runs by status, and tokens and cost per day since
    `since` (two aggregate queries; one when there are no runs)."""
    runs = ConsolidationRun.objects.filter(agent__workspace_id__in=workspace_ids)
    by_status = dict(runs.values("status").annotate(n=Count("id")).order_by().values_list("status", "n"))
    if not by_status:
        return by_status, {}
    spend = {
        row["day"]: row
        for row in runs.filter(created_at__gte=since).annotate(day=TruncDate("created_at")).values("day")
        .annotate(tin=Sum("tokens_in"), tout=Sum("tokens_out"), cost=Sum("cost_usd")).order_by()
    }
    return by_status, spend
