"""Read queries for the console pages: what a staff user may see, counted,
filtered and joined in the database.

Views parse input, call one of these and render; they build no queries of
their own. Every function takes the user (or the workspace ids already
resolved for them) so a read cannot forget the tenant, and every list comes
back with its related rows joined, so a page costs the same number of
queries for one row or a hundred.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any

from django.db.models import (
    Case,
    Count,
    F,
    IntegerField,
    Min,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
    TextField,
    When,
)
from django.db.models.functions import Cast, Length, TruncDate
from django.utils import timezone

from memoryhub import services
from memoryhub.actors import Actor, active_staff_user
from memoryhub.models import (
    Agent,
    AgentSession,
    ApiKey,
    AuditEvent,
    Change,
    ChangeKind,
    FileKind,
    LogEntry,
    Membership,
    MemoryFile,
    Proposal,
    ProposalStatus,
    Source,
    ToolSetting,
    Workspace,
)

NEAR_CAP_PERCENT = 80
RUN_STATUSES = ("queued", "running", "succeeded", "no_change", "failed", "skipped")


# --- who may do what ---------------------------------------------------------------------


def roles_by_workspace(user: Actor | None) -> dict[int, str]:
    """The user's role in each of their workspaces, in one query (for pages
    that list objects from several workspaces)."""
    member = active_staff_user(user)
    if member is None:
        return {}
    return dict(Membership.objects.filter(user=member).values_list("workspace_id", "role"))


# --- queue and header -----------------------------------------------------------------------


def queue_counts(user: Actor | None) -> dict[str, int]:
    return services.visible_proposals(user).aggregate(
        pending=Count("id", filter=Q(status=ProposalStatus.PENDING)),
        stale=Count("id", filter=Q(status=ProposalStatus.STALE)),
    )


# A proposal is "due" once it has waited this share of its workspace's SLA.
SLA_DUE_SHARE = 0.75


def sla_state(*, created_at: datetime, sla_hours: int, now: datetime) -> str:
    """ok, due (past SLA_DUE_SHARE of the SLA) or overdue."""
    waited = (now - created_at).total_seconds() / 3600
    if waited >= sla_hours:
        return "overdue"
    if waited >= sla_hours * SLA_DUE_SHARE:
        return "due"
    return "ok"


def with_review_facts(proposals: QuerySet[Proposal]) -> QuerySet[Proposal]:
    """Queue rows with their claimer joined and without the texts the queue
    never shows: the database sorts every matching row before it cuts a
    page, and with the file contents in each row that sort was most of the
    page's time at 1,000 pending."""
    return proposals.select_related("claimed_by").defer("base_content", "proposed_content", "diff", "rationale",
                                                        "pii")


def attach_related(page: Iterable[Proposal]) -> None:
    """Set `related` on each row of a page: how many other pending proposals
    name the same file. One query for the page's files, after the page is
    cut: a subquery in the list's SELECT would run for every row the
    database sorts, not only the 25 shown."""
    rows = list(page)
    files = {(p.agent_id, p.kind, p.user_ref) for p in rows}
    counts: dict[tuple[int, str, str], int] = {}
    if files:
        # IN lists use the (agent, user_ref, kind, status) index; combinations
        # that are not on the page are counted too and simply not looked up.
        counts = {
            (row["agent_id"], row["kind"], row["user_ref"]): row["n"]
            for row in Proposal.objects.pending().filter(
                agent_id__in={f[0] for f in files}, user_ref__in={f[2] for f in files}, kind__in={f[1] for f in files}
            ).order_by().values("agent_id", "kind", "user_ref").annotate(n=Count("id"))
        }
    for p in rows:
        pending = counts.get((p.agent_id, p.kind, p.user_ref), 0)
        p.related = pending - (1 if p.status == ProposalStatus.PENDING else 0)  # type: ignore[attr-defined]


def related_proposals(proposal: Proposal) -> list[Proposal]:
    """The other open proposals for the same file, oldest first."""
    return list(
        Proposal.objects.filter(agent_id=proposal.agent_id, kind=proposal.kind, user_ref=proposal.user_ref,
                                status__in=[ProposalStatus.PENDING, ProposalStatus.STALE])
        .exclude(pk=proposal.pk).select_related("author_user", "author_agent").order_by("created_at", "id")
    )


def reason_codes_for(user: Actor | None) -> list[str]:
    """The reason codes of the workspaces the user decides in, in order, each once."""
    ids = services.workspace_ids_for(user, services.REVIEW_ROLES)
    codes: dict[str, None] = {}
    for workspace in Workspace.objects.filter(pk__in=ids).order_by("slug"):
        codes.update(dict.fromkeys(workspace.reason_codes))
    return list(codes)


def pending_proposal_count(user: Actor | None) -> int:
    return services.visible_proposals(user).pending().count()


def pending_change_count(user: Actor | None) -> int:
    return services.visible_changes(user).pending().count()


# --- agents ---------------------------------------------------------------------------------


def _limit_expression() -> Case:
    """The agent's limit for the row's kind, in SQL."""
    return Case(
        *[When(kind=kind, then=F(f"agent__limit_{kind.removesuffix('.md').lower()}")) for kind in FileKind.values],
        output_field=IntegerField(),
    )


def near_cap_files(agents: QuerySet[Agent]) -> QuerySet[MemoryFile]:
    """Existing files above NEAR_CAP_PERCENT of their agent's limit; content is not loaded."""
    return (
        MemoryFile.objects.filter(agent__in=agents)
        .exclude(content="")
        .annotate(chars=Length("content"), cap=_limit_expression())
        .filter(chars__gt=F("cap") * NEAR_CAP_PERCENT / 100)
        .select_related("agent")
        .defer("content")
        .order_by("agent__slug", "user_ref", "kind")
    )


def stale_files(agents: QuerySet[Agent], now: datetime | None = None) -> QuerySet[MemoryFile]:
    """Existing files not changed within their agent's staleness TTL (0 = never
    stale). One Q per distinct TTL keeps the comparison in SQL on every backend."""
    now = now or timezone.now()
    ttls = set(agents.exclude(staleness_ttl_days=0).values_list("staleness_ttl_days", flat=True))
    if not ttls:
        return MemoryFile.objects.none()
    condition = Q()
    for ttl in ttls:
        condition |= Q(agent__staleness_ttl_days=ttl, updated_at__lt=now - timedelta(days=ttl))
    return (
        MemoryFile.objects.filter(agent__in=agents)
        .exclude(content="")
        .filter(condition)
        .select_related("agent")
        .defer("content")
        .order_by("updated_at")
    )


def agents_overview(user: Actor | None) -> list[Agent]:
    """The visible agents, each with `pending` proposals and `near_cap` files."""
    visible = services.visible_agents(user)
    rows: list[Agent] = list(
        visible.annotate(
            pending=Count("proposals", filter=Q(proposals__status=ProposalStatus.PENDING), distinct=True)
        ).order_by("workspace__slug", "slug")
    )
    near = dict(
        near_cap_files(visible).order_by().values("agent_id").annotate(n=Count("id")).values_list("agent_id", "n")
    )
    for agent in rows:
        agent.near_cap = near.get(agent.pk, 0)  # type: ignore[attr-defined]
    return rows


def workspace(pk: int) -> Workspace | None:
    """A workspace by id, for a service to check the actor's role in it."""
    return Workspace.objects.filter(pk=pk).first()


def admin_workspaces(user: Actor | None) -> list[Workspace]:
    return list(Workspace.objects.filter(pk__in=services.workspace_ids_for(user, services.ADMIN_ROLES)))


def agent_tools(agent: Agent) -> list[ToolSetting]:
    return list(agent.tools.all())


def agent_keys(agent: Agent) -> list[ApiKey]:
    return list(agent.api_keys.select_related("created_by"))


def known_user_refs(agent: Agent) -> list[str]:
    """Every user the agent has a file or a session for."""
    from_files = MemoryFile.objects.for_agent(agent).exclude(user_ref="").values_list("user_ref", flat=True)
    from_sessions = AgentSession.objects.filter(agent=agent).values_list("user_ref", flat=True)
    return sorted(set(from_files.distinct()) | set(from_sessions.distinct()))


def agent_files(agent: Agent) -> tuple[dict[str, MemoryFile], list[MemoryFile]]:
    """The agent's own files by kind, and its users' existing files (with
    `chars`, content not loaded)."""
    own = {f.kind: f for f in MemoryFile.objects.for_agent(agent).agent_scope()}
    users = list(
        MemoryFile.objects.for_agent(agent).exclude(user_ref="").exclude(content="")
        .annotate(chars=Length("content")).defer("content").order_by("user_ref", "kind")
    )
    return own, users


def pending_proposal_count_for(agent: Agent) -> int:
    return Proposal.objects.pending().filter(agent=agent).count()


def pending_changes_for(user: Actor | None, agent: Agent) -> list[Change]:
    return list(services.visible_changes(user).pending().filter(agent=agent).order_by("created_at", "id"))


def pending_workspace_settings_changes(user: Actor | None, workspace: Workspace) -> list[Change]:
    return list(services.visible_changes(user).pending()
                .filter(workspace=workspace, kind=ChangeKind.WORKSPACE_SETTINGS).order_by("created_at", "id"))


def user_workspaces(user: Actor | None) -> list[Workspace]:
    """Every workspace where the user has a role, by slug."""
    return list(Workspace.objects.filter(pk__in=services.workspace_ids_for(user)).order_by("slug"))


def workspace_for_user(user: Actor | None, slug: str) -> Workspace | None:
    """A workspace where the user has any role, by slug; None for any other."""
    return Workspace.objects.filter(slug=slug, pk__in=services.workspace_ids_for(user)).first()


# --- files ------------------------------------------------------------------------------------


def file_state(agent: Agent, kind: str, user_ref: str) -> MemoryFile | None:
    """The served row of one file, with who withheld it."""
    return MemoryFile.objects.select_related("withheld_by").filter(agent=agent, kind=kind, user_ref=user_ref).first()


def pending_release(agent: Agent, kind: str, user_ref: str) -> Change | None:
    return (
        Change.objects.pending().select_related("requested_by")
        .filter(kind=ChangeKind.RELEASE, agent=agent, file_kind=kind, user_ref=user_ref).first()
    )


def cited_ids(rationale: object) -> list[int]:
    """The log entry ids a rationale cites, in order, ignoring anything else."""
    return [
        int(i)
        for change in (rationale if isinstance(rationale, list) else []) if isinstance(change, dict)
        for i in change.get("evidence") or []
        if (isinstance(i, int) and not isinstance(i, bool)) or (isinstance(i, str) and i.isdigit())
    ]


def evidence(agent: Agent, user_ref: str, ids: Any) -> dict[int, LogEntry]:
    """The cited log entries, in one query. Scoped to the agent, and to the
    user for a user's file, so an id forged into a rationale cannot show
    another pair's log. Agent-wide files (SOUL, ABOUT, TOOLS) learn from all
    the agent's users, so the agent is their boundary."""
    ids = set(ids)
    if not ids:
        return {}
    entries = LogEntry.objects.filter(pk__in=ids, agent=agent)
    if user_ref:
        entries = entries.filter(user_ref=user_ref)
    return {e.pk: e for e in entries}


def session_for(user: Actor | None, pk: int) -> AgentSession | None:
    return AgentSession.objects.filter(pk=pk, agent__in=services.visible_agents(user)).select_related("agent").first()


def session_log(session: AgentSession) -> list[LogEntry]:
    return list(session.entries.order_by("id"))


# --- direct writes ------------------------------------------------------------------------------


def direct_writes(user: Actor | None, *, since: date, agent_slug: str = "") -> QuerySet[Any]:
    """History rows that agents wrote without a proposal (the `direct`
    policy) since a day, newest first. Each row carries the content of the
    version before it (`previous_content`) and the file's served and
    withheld versions, all in the one query of the page."""
    agents = services.visible_agents(user)
    if agent_slug:
        agents = agents.filter(slug=agent_slug)
    previous = (
        MemoryFile.history.filter(id=OuterRef("id"), version=OuterRef("version") - 1)
        .order_by("-history_id").values("content")[:1]
    )
    served = MemoryFile.objects.filter(pk=OuterRef("id"))
    start = timezone.make_aware(datetime.combine(since, time.min))
    return (
        MemoryFile.history.filter(
            agent_id__in=agents.values("pk"), source=Source.AGENT, proposal__isnull=True, history_date__gte=start
        )
        .annotate(
            previous_content=Subquery(previous),
            served_version=Subquery(served.values("version")[:1]),
            withheld_version=Subquery(served.values("withheld_version")[:1]),
        )
        .select_related("agent__workspace", "actor_agent")
        .order_by("-history_date", "-history_id")
    )


# --- audit -------------------------------------------------------------------------------------


def audit_events(
    workspace_ids: list[int],
    *,
    action: str = "",
    agent: str = "",
    actor: str = "",
    user: str = "",
    text: str = "",
    start: date | None = None,
    end: date | None = None,
) -> QuerySet[AuditEvent]:
    """The events of these workspaces, newest first. `user` is one end
    user's reference, exactly; `text` is found in the summary, the details
    or the target id, whatever the case."""
    events = AuditEvent.objects.filter(workspace_id__in=workspace_ids)
    if user:
        events = events.filter(user_ref=user)
    if text:
        events = events.annotate(details_text=Cast("details", TextField())).filter(
            Q(summary__icontains=text) | Q(details_text__icontains=text) | Q(target_id=text)
        )
    if action:
        events = events.filter(action=action)
    if agent:
        events = events.filter(agent__slug=agent)
    if actor:
        name = actor.removeprefix("user:").removeprefix("agent:")
        if name == "system":
            events = events.filter(actor_user__isnull=True, actor_agent__isnull=True)
        else:
            events = events.filter(Q(actor_username__icontains=name) | Q(actor_user__username__icontains=name)
                                   | Q(actor_agent__slug__icontains=name))
    if start:
        events = events.filter(created_at__date__gte=start)
    if end:
        events = events.filter(created_at__date__lte=end)
    return events.select_related("workspace", "actor_user", "actor_agent", "agent").order_by("-created_at", "-id")


def files_by_id(ids: list[int]) -> dict[int, MemoryFile]:
    """The memory files audit events on one page point at, with their agents."""
    if not ids:
        return {}
    return {f.pk: f for f in MemoryFile.objects.filter(pk__in=ids).select_related("agent")}


def audit_actions(workspace_ids: list[int]) -> list[str]:
    return list(
        AuditEvent.objects.filter(workspace_id__in=workspace_ids)
        .order_by("action").values_list("action", flat=True).distinct()
    )


# --- dashboard ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Dashboard:
    queue_size: int
    oldest: Any
    stale_count: int
    decided: dict[tuple[date, str], int]
    runs_by_status: dict[str, int] | None  # None while the consolidation app has no table
    spend: dict[date, dict[str, Any]]
    overdue: int = 0
    due: int = 0
    median_decision: timedelta | None = None
    decisions_timed: int = 0

    @property
    def run_total(self) -> int:
        return sum((self.runs_by_status or {}).values())


def dashboard(workspace_ids: list[int], *, since: datetime, runs_by_status: dict[str, int],
              spend: dict[date, dict[str, object]]) -> Dashboard:
    """The queue and decisions per day since `since`, with the consolidation
    figures the caller read (consolidation.services.run_figures: memoryhub
    imports no other app)."""
    proposals = Proposal.objects.in_workspaces(workspace_ids)
    queue = proposals.pending().aggregate(size=Count("id"), oldest=Min("created_at"))
    decided = (
        proposals.filter(decided_at__gte=since, status__in=[ProposalStatus.APPROVED, ProposalStatus.REJECTED])
        .annotate(day=TruncDate("decided_at")).values("day", "status").annotate(n=Count("id")).order_by()
    )
    sla = sla_counts(workspace_ids, now=timezone.now())
    waits = [decided_at - created_at for created_at, decided_at in proposals.filter(  # type: ignore[operator]
        decided_at__gte=since, status__in=[ProposalStatus.APPROVED, ProposalStatus.REJECTED]
    ).values_list("created_at", "decided_at")]
    return Dashboard(
        overdue=sla["overdue"],
        due=sla["due"],
        median_decision=_median(waits),
        decisions_timed=len(waits),
        queue_size=queue["size"],
        oldest=queue["oldest"],
        stale_count=proposals.filter(status=ProposalStatus.STALE).count(),
        decided={(row["day"], row["status"]): row["n"] for row in decided},
        runs_by_status=runs_by_status,
        spend=spend,
    )


# --- a proposal's timeline ------------------------------------------------------------------

_STEP_LABELS = {
    "proposal.create": ("created", "Created"),
    "proposal.edit": ("edited", "Edited by a reviewer"),
    "proposal.rebase": ("rebased", "Rebased"),
    "proposal.stale": ("stale", "Went stale"),
    "proposal.approve": ("decided", "Approved"),
    "proposal.reject": ("decided", "Rejected"),
    "proposal.withdraw": ("decided", "Withdrawn by its author"),
    "proposal.claim": ("claimed", "Claimed"),
    "proposal.unclaim": ("claimed", "Unclaimed"),
    "file.withhold": ("withheld", "Withheld from service"),
    "file.release": ("served", "Served again"),
}


@dataclass(frozen=True)
class TimelineStep:
    """One thing that happened to a proposal (or to the revision chain it
    belongs to, or to the version it put into service)."""

    step: str  # created, edited, rebased, superseded, stale, claimed, decided, served, withheld, rolled_back
    label: str
    at: datetime
    who: str
    proposal_id: int
    comment: str = ""
    reason_code: str = ""
    detail: str = ""


def _who(event: AuditEvent) -> str:
    if event.actor_username:
        return event.actor_username
    if event.actor_agent_id is not None and event.actor_agent is not None:
        return f"agent {event.actor_agent.slug}"
    return "system"


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


_NOTHING: dict[str, Any] = {}


def proposal_timeline(proposal: Proposal) -> list[TimelineStep]:
    """created → edited → rebased → superseded → claimed → decided → served /
    withheld / rolled back, for the proposal and every revision in its
    chain, oldest first. Built from the audit log (who, when, comment,
    reason code) and the file's proposals; two queries, however long the
    chain or the file's history."""
    rows = _file_proposals(proposal)
    chain = _revision_chain(rows, proposal.pk)
    # version served → the proposal of the chain that served it
    applied = {rows[pk]["applied_version"]: pk for pk in chain if pk in rows and rows[pk]["applied_version"]}
    served_at: list[datetime] = [rows[pk]["decided_at"] for pk in applied.values() if rows[pk]["decided_at"]]
    first_served = min(served_at, default=None)
    rollbacks = _later_rollbacks(rows, chain, first_served)

    steps: list[TimelineStep] = []
    explained: set[int] = set()  # superseded proposals whose edit/rebase event says why
    for event in _timeline_events(proposal, chain=chain, rollbacks=rollbacks, applied=applied,
                                  first_served=first_served):
        details = event.details if isinstance(event.details, dict) else {}
        target = int(event.target_id) if event.target_id.isdigit() else 0
        if event.target_type == "MemoryFile":
            _add_file_step(steps, event, details, applied)
        elif target in rollbacks:
            _add_rollback_step(steps, event, details, applied, target)
        else:
            _add_proposal_step(steps, event, details, rows, target, explained)
    _add_silent_supersessions(steps, rows, chain, explained)
    return steps


def _file_proposals(proposal: Proposal) -> dict[int, dict[str, Any]]:
    """Every proposal for the proposal's file, by id (one query)."""
    return {
        row["id"]: dict(row)
        for row in Proposal.objects.filter(agent_id=proposal.agent_id, kind=proposal.kind, user_ref=proposal.user_ref)
        .values("id", "revises_id", "superseded_by_id", "status", "created_at", "applied_version", "source",
                "rollback_to", "decided_at")
    }


def _revision_chain(rows: dict[int, dict[str, object]], pk: int) -> set[int]:
    """The proposal, what it revises (back to the first) and what superseded
    it (up to the last)."""
    chain = {pk}
    for link in ("revises_id", "superseded_by_id"):
        seen = pk
        while (other := rows.get(seen, _NOTHING).get(link)) and other not in chain:
            chain.add(other)
            seen = other
    return chain


def _later_rollbacks(rows: dict[int, dict[str, Any]], chain: set[int], first_served: datetime | None) -> list[int]:
    """Approved rollbacks of the file decided after the chain first served."""
    return [
        pk for pk, row in rows.items()
        if row["source"] == Source.ROLLBACK and row["status"] == ProposalStatus.APPROVED and pk not in chain
        and first_served is not None and row["decided_at"] and row["decided_at"] > first_served
    ]


def _timeline_events(proposal: Proposal, *, chain: set[int], rollbacks: list[int], applied: dict[int, int],
                     first_served: datetime | None) -> QuerySet[AuditEvent]:
    """The chain's and the rollbacks' events, and once served the file's
    withhold/release events (one query)."""
    wanted = Q(target_type="Proposal", target_id__in=[str(pk) for pk in (*chain, *rollbacks)])
    if applied:
        wanted |= Q(target_type="MemoryFile", agent_id=proposal.agent_id, user_ref=proposal.user_ref,
                    action__in=("file.withhold", "file.release"), details__kind=proposal.kind,
                    created_at__gte=first_served)
    return AuditEvent.objects.filter(wanted).select_related("actor_agent").order_by("created_at", "id")


def _common(event: AuditEvent, details: dict[str, object]) -> dict[str, Any]:
    return {"at": event.created_at, "who": _who(event), "reason_code": _text(details.get("reason_code"))}


def _add_file_step(steps: list[TimelineStep], event: AuditEvent, details: dict[str, Any],
                   applied: dict[int, int]) -> None:
    """A withhold or release of a version the chain served."""
    version = details.get("version")
    if version not in applied:
        return
    step, label = _STEP_LABELS[event.action]
    steps.append(TimelineStep(step=step, label=f"{label} (v{version})", proposal_id=applied[version],
                              comment=_text(details.get("reason")), **_common(event, details)))


def _add_rollback_step(steps: list[TimelineStep], event: AuditEvent, details: dict[str, Any],
                       applied: dict[int, int], target: int) -> None:
    """A later rollback's approval that undid a version the chain served."""
    undone = set(details.get("undone_versions") or [])
    if event.action != "proposal.approve" or not undone & set(applied):
        return
    steps.append(TimelineStep(
        step="rolled_back", label=f"Rolled back to v{details.get('rollback_to')} by proposal #{target}",
        proposal_id=applied[min(undone & set(applied))], comment=_text(details.get("comment")),
        **_common(event, details)))


def _add_proposal_step(steps: list[TimelineStep], event: AuditEvent, details: dict[str, object],
                       rows: dict[int, dict[str, Any]], target: int, explained: set[int]) -> None:
    """An event of a proposal in the chain (and "served" after an approval
    that made a version)."""
    common = _common(event, details)
    step, label = _STEP_LABELS.get(event.action, ("other", event.action.removeprefix("proposal.").capitalize()))
    position = len(steps)
    comment = _text(details.get("comment")) or _text(details.get("reason"))
    detail = ""
    if event.action == "proposal.create":
        source = _text(details.get("source")) or rows.get(target, _NOTHING).get("source", "")
        detail = f"{source} proposal from v{details.get('base_version', '?')}"
        comment = _text(details.get("reason"))
        if common["who"] == "system" and source == Source.CONSOLIDATION:
            common["who"] = "consolidation run"
    elif event.action in ("proposal.edit", "proposal.rebase"):
        explained.add(target)
        # Written after the new proposal's creation in the same
        # transaction; read better before it.
        position = next((i for i, s in enumerate(steps)
                         if s.step == "created" and s.proposal_id == details.get("new_proposal")), len(steps))
        detail = f"superseded by proposal #{details.get('new_proposal')}"
        if event.action == "proposal.rebase":
            detail = f"onto v{details.get('onto_version')}; {detail}"
        # The editor's comment is the new proposal's reason.
        created = steps[position].comment if position < len(steps) else ""
        comment = event.summary if event.action == "proposal.rebase" else (comment or created)
    elif event.action == "proposal.stale":
        detail = f"the file moved to v{details.get('current_version')}"
    steps.insert(position, TimelineStep(step=step, label=label, proposal_id=target, comment=comment,
                                        detail=detail, **common))
    if event.action == "proposal.approve" and details.get("version"):
        steps.append(TimelineStep(step="served", label=f"Served as v{details['version']}", proposal_id=target,
                                  at=event.created_at, who=_who(event)))


def _add_silent_supersessions(steps: list[TimelineStep], rows: dict[int, dict[str, Any]], chain: set[int],
                              explained: set[int]) -> None:
    """A newer consolidation run replaces an older pending proposal for the
    same file without an event of its own: the step goes where it happened."""
    for pk in chain:
        row = rows.get(pk, _NOTHING)
        newer = rows.get(row.get("superseded_by_id") or 0)
        if row.get("status") == ProposalStatus.SUPERSEDED and pk not in explained and newer:
            position = next((i for i, s in enumerate(steps) if s.at > newer["created_at"]), len(steps))
            steps.insert(position, TimelineStep(
                step="superseded", label="Superseded", at=newer["created_at"], who="system", proposal_id=pk,
                detail=f"by the newer proposal #{newer['id']}"))


def sla_counts(workspace_ids: list[int], *, now: datetime) -> dict[str, int]:
    """Pending proposals past their workspace's SLA (overdue) and past
    SLA_DUE_SHARE of it (due, not yet overdue): one Q per workspace keeps it
    in SQL on every backend, in two queries whatever the queue's size."""
    overdue = due = Q()
    slas = list(Workspace.objects.filter(pk__in=workspace_ids).values_list("pk", "sla_hours"))
    if not slas:
        return {"overdue": 0, "due": 0}
    for pk, hours in slas:
        overdue |= Q(agent__workspace_id=pk, created_at__lte=now - timedelta(hours=hours))
        due |= Q(agent__workspace_id=pk, created_at__lte=now - timedelta(hours=hours * SLA_DUE_SHARE),
                 created_at__gt=now - timedelta(hours=hours))
    return Proposal.objects.in_workspaces(workspace_ids).pending().aggregate(
        overdue=Count("id", filter=overdue), due=Count("id", filter=due)
    )


def _median(values: list[timedelta]) -> timedelta | None:
    if not values:
        return None
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
# --- dashboard trends (issue 14, item 8) -------------------------------------------------------


@dataclass(frozen=True)
class Trends:
    # day → (average, largest) characters of the MEMORY.md versions written that day
    memory_size: dict[date, tuple[float, int]]
    duplicates_merged: int  # by consolidation, in the window
    existing_files: int
    stale_files: int
    # (agent slug, day) → USD
    spend: dict[tuple[str, date], float]

    @property
    def staleness_percent(self) -> float:
        return round(100 * self.stale_files / self.existing_files, 1) if self.existing_files else 0.0


def trends(workspace_ids: list[int], *, since: datetime, now: datetime | None = None) -> Trends:
    """What the design asks operators to watch, in four queries whatever the
    number of agents, files or runs: MEMORY.md size per day, duplicates
    consolidation merged, the share of stale files, spend per agent per day."""
    from django.apps import apps
    from django.db.models import Avg, Max
    from django.db.models.fields.json import KT
    from django.db.models.functions import Cast

    now = now or timezone.now()
    agents = Agent.objects.filter(workspace_id__in=workspace_ids)
    history = MemoryFile.history.model.objects  # type: ignore[attr-defined]
    sizes = (history.filter(agent__in=agents, kind=FileKind.MEMORY, history_date__gte=since).exclude(content="")
             .annotate(day=TruncDate("history_date"), chars=Length("content")).values("day")
             .annotate(avg=Avg("chars"), top=Max("chars")).order_by())
    ttls = set(agents.exclude(staleness_ttl_days=0).values_list("staleness_ttl_days", flat=True))
    stale = Q(pk__in=[])
    for ttl in ttls:
        stale |= Q(agent__staleness_ttl_days=ttl, updated_at__lt=now - timedelta(days=ttl))
    files = MemoryFile.objects.filter(agent__in=agents).exclude(content="").aggregate(
        existing=Count("id"), stale=Count("id", filter=stale))
    merged = 0
    spend: dict[tuple[str, date], float] = {}
    if apps.is_installed("consolidation"):
        runs = apps.get_model("consolidation", "ConsolidationRun").objects.filter(
            agent__workspace_id__in=workspace_ids, created_at__gte=since)
        for row in (runs.annotate(day=TruncDate("created_at")).values("agent__slug", "day")
                    .annotate(cost=Sum("cost_usd"),
                              merged=Sum(Cast(KT("counts__consolidate__by_kind__merge"), IntegerField())))
                    .order_by()):
            spend[(row["agent__slug"], row["day"])] = float(row["cost"] or 0)
            merged += row["merged"] or 0
    return Trends(
        memory_size={row["day"]: (float(row["avg"] or 0), int(row["top"] or 0)) for row in sizes},
        duplicates_merged=int(merged),
        existing_files=files["existing"],
        stale_files=files["stale"],
        spend=spend,
    )
