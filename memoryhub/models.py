"""The core domain: workspaces, agents, memory files and their history,
proposals, sessions and logs, audit events.

Rules that span models live in services.py; here are state and the small,
named methods that flip one row.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone
from simple_history.models import HistoricalRecords

from memoryhub.actors import Actor, staff_user


class Role(models.TextChoices):
    REVIEWER = "reviewer", "Reviewer"
    ADMIN = "admin", "Admin"
    AUDITOR = "auditor", "Auditor"


class Strategy(models.TextChoices):
    FULL = "full", "Full (everything injected)"
    ON_DEMAND = "on_demand", "On demand (nothing injected)"
    HYBRID_V1 = "hybrid_v1", "Hybrid v1 (SOUL, ABOUT, USER injected)"
    HYBRID_V2 = "hybrid_v2", "Hybrid v2 (SOUL, ABOUT, TOOLS injected)"


class WritePolicy(models.TextChoices):
    DIRECT = "direct", "Direct (applied at once, revertible)"
    REVIEW = "review", "Review (every agent write becomes a proposal)"


class Backend(models.TextChoices):
    HEURISTIC = "heuristic", "Heuristic (offline, deterministic)"
    LLM = "llm", "LLM (OpenAI-compatible endpoint)"


class FileKind(models.TextChoices):
    SOUL = "SOUL.md", "SOUL.md"
    ABOUT = "ABOUT.md", "ABOUT.md"
    TOOLS = "TOOLS.md", "TOOLS.md"
    USER = "USER.md", "USER.md"
    MEMORY = "MEMORY.md", "MEMORY.md"


AGENT_SCOPED = frozenset({FileKind.SOUL, FileKind.ABOUT, FileKind.TOOLS})
USER_SCOPED = frozenset({FileKind.USER, FileKind.MEMORY})
# Only MEMORY.md has a soft cap: the write succeeds and the agent is told to
# compress, because losing a long-term fact is worse than an oversized file.
SOFT_LIMITED = frozenset({FileKind.MEMORY})

DEFAULT_LIMITS = {
    FileKind.SOUL: 2000,
    FileKind.ABOUT: 2000,
    FileKind.TOOLS: 2000,
    FileKind.USER: 2000,
    FileKind.MEMORY: 5000,
}


def scope_of(kind: str) -> str:
    return "agent" if kind in AGENT_SCOPED else "agent_user"


def limit_kind_of(kind: str) -> str:
    return "soft" if kind in SOFT_LIMITED else "hard"


class Source(models.TextChoices):
    """Where a change came from; recorded on proposals and history rows."""

    AGENT = "agent", "Agent (memory tool)"
    ADMIN = "admin", "Admin (persona editor)"
    CONSOLIDATION = "consolidation", "Consolidation (dreaming)"
    ROLLBACK = "rollback", "Rollback"
    REVIEWER = "reviewer", "Reviewer edit"


DEFAULT_REASON_CODES = "duplicate,accurate,outdated,unsafe,out_of_scope"


class HighRiskApproval(models.TextChoices):
    """Who may approve a high-risk proposal, from the loosest rule on."""

    ANY_REVIEWER = "any_reviewer", "Any reviewer"
    ADMIN = "admin", "An admin"
    TWO_APPROVALS = "two_approvals", "Two approvals by different people"


class Workspace(models.Model):
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(default=timezone.now)
    # New agents start here. `review` unless an admin (and a second one, for
    # a weaker default) says otherwise: nothing is served unseen by default.
    default_write_policy = models.CharField(max_length=8, default="review")
    # What a memory write holding personal data (IBAN, payment card, national
    # id: scanner.scan_pii) gets: stored (allow), stored with the finding shown
    # to reviewers and recorded (flag), or refused like unsafe content.
    pii_policy = models.CharField(max_length=8, default="flag")
    # Session log entries older than this many days are redacted by the daily
    # retention task (services.retention); None keeps them forever.
    log_retention_days = models.PositiveIntegerField(null=True, blank=True, default=365)
    # The review workflow (services.proposals, docs/console.md): the reason
    # codes a decision may carry (comma-separated: a governance change stores
    # values as text), hours a proposal may wait before it is overdue, and
    # who may approve a high-risk proposal.
    review_reason_codes = models.CharField(max_length=500, default=DEFAULT_REASON_CODES)
    sla_hours = models.PositiveIntegerField(default=24)
    high_risk_approval = models.CharField(max_length=16, default="any_reviewer")

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug

    @property
    def reason_codes(self) -> list[str]:
        return [code for code in self.review_reason_codes.split(",") if code]


class MembershipQuerySet(models.QuerySet["Membership"]):
    def for_user(self, user: Actor | None) -> MembershipQuerySet:
        return self.filter(user=staff_user(user), user__is_active=True)


class Membership(models.Model):
    """A staff user's role in one workspace. One role per user and workspace."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="memberships")
    workspace = models.ForeignKey(Workspace, on_delete=models.PROTECT, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices)
    created_at = models.DateTimeField(default=timezone.now)

    objects = MembershipQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "workspace"], name="membership_user_workspace_unique")]

    def __str__(self) -> str:
        return f"{self.user} · {self.role} · {self.workspace}"


class AgentQuerySet(models.QuerySet["Agent"]):
    def active(self) -> AgentQuerySet:
        return self.filter(is_active=True)


class Agent(models.Model):
    workspace = models.ForeignKey(Workspace, on_delete=models.PROTECT, related_name="agents")
    # Staff API paths name agents by slug alone, so slugs are unique globally.
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    is_active = models.BooleanField(default=True)

    strategy = models.CharField(max_length=16, choices=Strategy.choices, default=Strategy.HYBRID_V2)
    write_policy = models.CharField(max_length=8, choices=WritePolicy.choices, default=WritePolicy.REVIEW)

    limit_soul = models.PositiveIntegerField(default=DEFAULT_LIMITS[FileKind.SOUL])
    limit_about = models.PositiveIntegerField(default=DEFAULT_LIMITS[FileKind.ABOUT])
    limit_tools = models.PositiveIntegerField(default=DEFAULT_LIMITS[FileKind.TOOLS])
    limit_user = models.PositiveIntegerField(default=DEFAULT_LIMITS[FileKind.USER])
    limit_memory = models.PositiveIntegerField(default=DEFAULT_LIMITS[FileKind.MEMORY])

    gate_hours = models.PositiveIntegerField(default=24, help_text="Minimum hours between consolidation runs.")
    gate_sessions = models.PositiveIntegerField(default=5, help_text="Ended sessions needed before a run.")
    consolidation_backend = models.CharField(max_length=16, choices=Backend.choices, default=Backend.HEURISTIC)
    daily_budget_usd = models.DecimalField(
        max_digits=10, decimal_places=4, default=5, help_text="Consolidation spend cap per UTC day."
    )
    staleness_ttl_days = models.PositiveIntegerField(
        default=90, help_text="A file not changed for this many days is reported as stale (0 = never)."
    )
    token_encoding = models.CharField(max_length=32, default="o200k_base")
    spotlighting = models.BooleanField(
        default=True,
        help_text="Serve USER.md, MEMORY.md and what the memory tools return inside data markers, with a standing "
        "instruction that text inside them is information, never instructions (turning it off takes two admins).",
    )
    # Bumped in the transaction of every change to what the agent's context
    # is built from besides its files (settings, tools), so cached contexts
    # are keyed by database state and never need a cache-side invalidation.
    config_version = models.PositiveBigIntegerField(default=0)

    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    objects = AgentQuerySet.as_manager()

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug

    def limit_for(self, kind: str) -> int:
        return {
            FileKind.SOUL: self.limit_soul,
            FileKind.ABOUT: self.limit_about,
            FileKind.TOOLS: self.limit_tools,
            FileKind.USER: self.limit_user,
            FileKind.MEMORY: self.limit_memory,
        }[FileKind(kind)]


class ToolSetting(models.Model):
    """A tool the agent can call; the source of the auto-generated tool section."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="tools")
    name = models.CharField(max_length=64)
    description = models.TextField(blank=True)
    parameters = models.JSONField(default=dict, blank=True)
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["agent", "position", "name"]
        constraints = [models.UniqueConstraint(fields=["agent", "name"], name="tool_agent_name_unique")]

    def __str__(self) -> str:
        return f"{self.agent}:{self.name}"


class ApiKeyQuerySet(models.QuerySet["ApiKey"]):
    def usable(self) -> ApiKeyQuerySet:
        return self.filter(revoked_at__isnull=True, agent__is_active=True)


class ApiKey(models.Model):
    """An agent's key. Only the SHA-256 of the key is stored: keys carry 256
    bits of randomness, so a fast hash is as safe as a slow one here and keeps
    authentication cheap on every request."""

    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="api_keys")
    name = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=16, unique=True)
    key_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    objects = ApiKeyQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.agent})"

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None


class StaffToken(models.Model):
    """A staff user's personal API token, hashed like agent keys."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=16, unique=True)
    key_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user})"


class RedactableMixin(models.Model):
    """Columns services.redaction sets when it replaces a row's text by a
    tombstone (`[REDACTED <date> by <what>]`), the only change the database
    guards allow on a history, log, audit or decided proposal row.

    Nullable without a default on purpose: SQLite adds such a column with
    ALTER TABLE instead of remaking the table, which would drop the guards'
    and the search index's triggers."""

    redacted_at = models.DateTimeField(null=True, blank=True)
    # "change #12" (an erasure) or "retention" (services.retention).
    redacted_by = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001

    class Meta:
        abstract = True

    @property
    def is_redacted(self) -> bool:
        return self.redacted_at is not None


class MemoryHistoryBase(RedactableMixin):
    """Extra columns on every memory history row: who (besides history_user),
    from where, through which proposal and with whose approval."""

    source = models.CharField(max_length=16, choices=Source.choices, default=Source.AGENT)
    actor_agent = models.ForeignKey(
        Agent, null=True, blank=True, on_delete=models.PROTECT, related_name="+", db_constraint=True
    )
    proposal = models.ForeignKey(
        "memoryhub.Proposal", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # The usernames as they were when the row was written: renaming a user
    # later must not rewrite who wrote or approved a past version.
    history_username = models.CharField(max_length=150, blank=True, default="")
    approved_by_username = models.CharField(max_length=150, blank=True, default="")

    class Meta:
        abstract = True

    @property
    def author_label(self) -> str:
        if self.history_username:
            return f"user:{self.history_username}"
        if getattr(self, "history_user_id", None):
            return f"user:{self.history_user.get_username()}"  # type: ignore[attr-defined]
        if self.actor_agent_id:
            return f"agent:{self.actor_agent.slug}"  # type: ignore[union-attr]
        return "system"

    @property
    def approver_name(self) -> str | None:
        if self.approved_by_username:
            return self.approved_by_username
        return self.approved_by.get_username() if self.approved_by_id else None  # type: ignore[union-attr]


class MemoryFileQuerySet(models.QuerySet["MemoryFile"]):
    def for_agent(self, agent: Agent) -> MemoryFileQuerySet:
        return self.filter(agent=agent)

    def agent_scope(self) -> MemoryFileQuerySet:
        return self.filter(user_ref="", kind__in=AGENT_SCOPED)

    def for_pair(self, agent: Agent, user_ref: str) -> MemoryFileQuerySet:
        """The agent's own files plus this one user's files, never another user's."""
        return self.filter(agent=agent).filter(
            Q(user_ref="", kind__in=AGENT_SCOPED) | Q(user_ref=user_ref, kind__in=USER_SCOPED)
        )

    def existing(self) -> MemoryFileQuerySet:
        return self.exclude(content="")


class MemoryFile(models.Model):
    """The served content of one file. Every saved change is one immutable
    history row; the row itself is never deleted (empty content = absent)."""

    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="files")
    user_ref = models.CharField(max_length=255, blank=True, default="")
    kind = models.CharField(max_length=16, choices=FileKind.choices)
    content = models.TextField(blank=True, default="")
    version = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(default=timezone.now)

    # Taken out of service by one reviewer (services.memory.withhold_file):
    # that version is served as [WITHHELD], in fresh contexts and in open
    # sessions, until a rollback or a release is approved by a second person.
    withheld_version = models.PositiveIntegerField(null=True, blank=True)
    withheld_at = models.DateTimeField(null=True, blank=True)
    withheld_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    withheld_reason = models.TextField(blank=True, default="")
    # Versions an approved rollback undid: open sessions that froze one of
    # them are served the current version of the file instead.
    revoked_versions = models.JSONField(default=list, blank=True)

    # Serving state, not content: it changes without a new version, so it is
    # kept out of the history rows (audit events record every change of it).
    history = HistoricalRecords(
        bases=[MemoryHistoryBase],
        cascade_delete_history=False,
        excluded_fields=["withheld_version", "withheld_at", "withheld_by", "withheld_reason", "revoked_versions"],
    )

    objects = MemoryFileQuerySet.as_manager()

    class Meta:
        ordering = ["agent", "user_ref", "kind"]
        constraints = [
            models.UniqueConstraint(fields=["agent", "user_ref", "kind"], name="memoryfile_agent_user_kind_unique"),
            models.CheckConstraint(
                condition=(Q(user_ref="") & Q(kind__in=sorted(AGENT_SCOPED)))
                | (~Q(user_ref="") & Q(kind__in=sorted(USER_SCOPED))),
                name="memoryfile_scope_matches_kind",
            ),
        ]

    def __str__(self) -> str:
        suffix = f" [{self.user_ref}]" if self.user_ref else ""
        return f"{self.agent.slug}/{self.kind}{suffix} v{self.version}"

    @property
    def exists(self) -> bool:
        return self.content != ""

    @property
    def scope(self) -> str:
        return scope_of(self.kind)

    @property
    def is_withheld(self) -> bool:
        return self.withheld_version is not None and self.withheld_version == self.version

    def out_of_service(self, version: int) -> bool:
        """Whether `version` of this file may no longer be served."""
        return version > 0 and (version == self.withheld_version or version in (self.revoked_versions or []))


class ProposalStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"
    STALE = "stale", "Stale"
    SUPERSEDED = "superseded", "Superseded"
    WITHDRAWN = "withdrawn", "Withdrawn"


class RiskLevel(models.IntegerChoices):
    LOW = 0, "low"
    MEDIUM = 1, "medium"
    HIGH = 2, "high"


# A proposal in one of these may still be decided.
OPEN_STATUSES = (ProposalStatus.PENDING, ProposalStatus.STALE)


class ProposalQuerySet(models.QuerySet["Proposal"]):
    def pending(self) -> ProposalQuerySet:
        return self.filter(status=ProposalStatus.PENDING)

    def for_file(self, agent: Agent, kind: str, user_ref: str) -> ProposalQuerySet:
        return self.filter(agent=agent, kind=kind, user_ref=user_ref)

    def in_workspaces(self, workspace_ids: object) -> ProposalQuerySet:
        return self.filter(agent__workspace_id__in=workspace_ids)


class Proposal(RedactableMixin, models.Model):
    """A pending change to one memory file, whatever made it. It names the
    file by (agent, user_ref, kind) rather than by row, because a proposal
    may create a file that was never written."""

    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="proposals")
    user_ref = models.CharField(max_length=255, blank=True, default="")
    kind = models.CharField(max_length=16, choices=FileKind.choices)
    base_version = models.PositiveIntegerField()
    base_content = models.TextField(blank=True, default="")
    proposed_content = models.TextField(blank=True, default="")
    diff = models.TextField(blank=True, default="")
    # [{"kind": "add|update|merge|supersede|expire|drop|edit", "summary": str,
    #   "reason": str, "evidence": [log entry ids]}]
    rationale = models.JSONField(default=list, blank=True)
    reason = models.TextField(blank=True, default="")
    source = models.CharField(max_length=16, choices=Source.choices)
    status = models.CharField(max_length=16, choices=ProposalStatus.choices, default=ProposalStatus.PENDING)

    author_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="authored_proposals"
    )
    author_agent = models.ForeignKey(
        Agent, null=True, blank=True, on_delete=models.PROTECT, related_name="authored_proposals"
    )
    created_at = models.DateTimeField(default=timezone.now)

    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="decided_proposals"
    )
    # Usernames as written at the time (a rename does not rewrite them).
    author_username = models.CharField(max_length=150, blank=True, default="")
    decided_by_username = models.CharField(max_length=150, blank=True, default="")
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_comment = models.TextField(blank=True, default="")
    applied_version = models.PositiveIntegerField(null=True, blank=True)
    superseded_by = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    # The proposal this one revises (a reviewer's edit or a rebase), so the
    # page can show what the revision changed, not only the change to the file.
    revises = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="revisions")
    # For a rollback proposal: the version whose content it restores.
    rollback_to = models.PositiveIntegerField(null=True, blank=True)
    # Personal data the scanner found in the proposed content under the
    # workspace's `flag` policy: [{"rule", "detail"}], shown to reviewers.
    pii = models.JSONField(default=list, blank=True)
    # memoryhub.risk: why this proposal needs care, computed when it is made.
    risk_tags = models.JSONField(default=list, blank=True)
    risk_level = models.PositiveSmallIntegerField(choices=RiskLevel.choices, default=RiskLevel.LOW)
    # The reason code of the decision (the workspace's list), beside its comment.
    reason_code = models.CharField(max_length=32, blank=True, default="")
    # Advisory: who said they are reviewing it. Others may still decide it.
    claimed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="claimed_proposals"
    )
    claimed_by_username = models.CharField(max_length=150, blank=True, default="")
    claimed_at = models.DateTimeField(null=True, blank=True)
    # Under the workspace's `two_approvals` rule, the first of two approvals of
    # a high-risk proposal; the second, by someone else, serves it.
    first_approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    first_approved_by_username = models.CharField(max_length=150, blank=True, default="")
    first_approved_at = models.DateTimeField(null=True, blank=True)

    # Set by services.proposals.approve_proposal on the object it returns:
    # the ids of the same file's proposals that this approval made stale.
    stale_siblings: tuple[int, ...] = ()

    objects = ProposalQuerySet.as_manager()

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(fields=["status", "created_at"], name="proposal_status_created"),
            models.Index(fields=["status", "risk_level", "created_at"], name="proposal_status_risk"),
            models.Index(fields=["claimed_by", "status"], name="proposal_claimed_status"),
            models.Index(fields=["agent", "user_ref", "kind", "status"], name="proposal_file_status"),
        ]

    def __str__(self) -> str:
        return f"Proposal #{self.pk} {self.agent.slug}/{self.kind} ({self.status})"

    @property
    def is_pending(self) -> bool:
        return self.status == ProposalStatus.PENDING

    @property
    def author_label(self) -> str:
        if self.author_username:
            return f"user:{self.author_username}"
        if self.author_user_id:
            return f"user:{self.author_user}"
        if self.author_agent_id:
            return f"agent:{self.author_agent}"
        return self.source

    @property
    def is_open(self) -> bool:
        return self.status in OPEN_STATUSES

    @property
    def decider_name(self) -> str | None:
        """Who decided, as their username was at the time."""
        if self.decided_by_username:
            return self.decided_by_username
        return self.decided_by.get_username() if self.decided_by_id else None  # type: ignore[union-attr]

    @property
    def claimer_name(self) -> str | None:
        if self.claimed_by_username:
            return self.claimed_by_username
        return self.claimed_by.get_username() if self.claimed_by_id else None  # type: ignore[union-attr]

    @property
    def risk_label(self) -> str:
        return RiskLevel(self.risk_level).label

    def mark_stale(self) -> None:
        self.status = ProposalStatus.STALE
        self.save(update_fields=["status"])


class AgentSession(models.Model):
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="sessions")
    user_ref = models.CharField(max_length=255)
    external_id = models.CharField(max_length=255, blank=True, default="")
    started_at = models.DateTimeField(default=timezone.now)
    ended_at = models.DateTimeField(null=True, blank=True)
    # {"SOUL.md": 3, "MEMORY.md": 0, …, "tools": "<digest>"}: enough for an
    # auditor to rebuild what the agent saw from history.
    snapshot = models.JSONField(default=dict, blank=True)
    # The exact assembled context served at start, returned byte for byte
    # by GET /context?session=… for the rest of the session.
    context = models.JSONField(default=dict, blank=True)
    # The sections the context was built from, with the stored text of each
    # file part, so a part taken out of service can be rebuilt alone.
    parts = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["-started_at"]
        indexes = [models.Index(fields=["agent", "user_ref", "ended_at"], name="session_pair_ended")]

    def __str__(self) -> str:
        return f"Session #{self.pk} {self.agent.slug}/{self.user_ref}"

    @property
    def is_ended(self) -> bool:
        return self.ended_at is not None


class LogRole(models.TextChoices):
    USER = "user", "User"
    ASSISTANT = "assistant", "Assistant"
    TOOL = "tool", "Tool"
    NOTE = "note", "Note"


class LogEntry(RedactableMixin, models.Model):
    """One append-only line of a session log: the event store that
    consolidation projects into memory. The database refuses UPDATE/DELETE."""

    session = models.ForeignKey(AgentSession, on_delete=models.PROTECT, related_name="entries")
    # Denormalised from the session so every log query can be scoped to one
    # agent and user without a join.
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="+")
    user_ref = models.CharField(max_length=255)
    role = models.CharField(max_length=16, choices=LogRole.choices)
    content = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        verbose_name_plural = "log entries"
        indexes = [models.Index(fields=["agent", "user_ref", "id"], name="logentry_pair_id")]

    def __str__(self) -> str:
        return f"#{self.pk} {self.role}: {self.content[:40]}"


class AuditEvent(RedactableMixin, models.Model):
    """Append-only record of every action; the database refuses UPDATE/DELETE."""

    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    action = models.CharField(max_length=64, db_index=True)
    workspace = models.ForeignKey(Workspace, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # The actor's username when the event was written; the audit log shows
    # this, so renaming a user does not rewrite who did what.
    actor_username = models.CharField(max_length=150, blank=True, default="")
    actor_agent = models.ForeignKey(Agent, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    agent = models.ForeignKey(Agent, null=True, blank=True, on_delete=models.PROTECT, related_name="audit_events")
    user_ref = models.CharField(max_length=255, blank=True, default="")
    target_type = models.CharField(max_length=32, blank=True, default="")
    target_id = models.CharField(max_length=64, blank=True, default="")
    summary = models.CharField(max_length=500, blank=True, default="")
    details = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        # The audit log filtered by one end user (and an erasure finding
        # the rows that name them), newest first.
        indexes = [models.Index(fields=["user_ref", "-created_at"], name="audit_user_created")]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.action} {self.target_type}:{self.target_id}"

    @property
    def actor_label(self) -> str:
        if self.actor_username:
            return f"user:{self.actor_username}"
        if self.actor_user_id:
            return f"user:{self.actor_user}"
        if self.actor_agent_id:
            return f"agent:{self.actor_agent}"
        return "system"


class ChangeKind(models.TextChoices):
    """Governance changes: each puts content or a weaker policy into service,
    so each needs a second person (services.changes)."""

    AGENT_SETTINGS = "agent_settings", "Agent settings"
    WORKSPACE_SETTINGS = "workspace_settings", "Workspace settings"
    RELEASE = "release", "Release a withheld file"
    ERASURE = "erasure", "Erase a data subject"


class ChangeStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"
    WITHDRAWN = "withdrawn", "Withdrawn"


class ChangeQuerySet(models.QuerySet["Change"]):
    def pending(self) -> ChangeQuerySet:
        return self.filter(status=ChangeStatus.PENDING)

    def in_workspaces(self, workspace_ids: object) -> ChangeQuerySet:
        return self.filter(workspace_id__in=workspace_ids)


class Change(models.Model):
    """A pending governance change that a different admin or reviewer decides.
    `payload` holds what would change, with the values it was requested
    against, so a change overtaken by events is refused rather than applied."""

    workspace = models.ForeignKey(Workspace, on_delete=models.PROTECT, related_name="changes")
    agent = models.ForeignKey(Agent, null=True, blank=True, on_delete=models.PROTECT, related_name="changes")
    kind = models.CharField(max_length=32, choices=ChangeKind.choices)
    file_kind = models.CharField(max_length=16, blank=True, default="")
    user_ref = models.CharField(max_length=255, blank=True, default="")
    payload = models.JSONField(default=dict, blank=True)
    summary = models.CharField(max_length=500)
    reason = models.TextField(blank=True, default="")
    status = models.CharField(max_length=16, choices=ChangeStatus.choices, default=ChangeStatus.PENDING)

    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # The names as they were at the time: renaming a user later must not
    # rewrite who asked for or decided a governance change.
    requested_by_username = models.CharField(max_length=150, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    decided_by_username = models.CharField(max_length=150, blank=True, default="")
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_comment = models.TextField(blank=True, default="")
    result = models.JSONField(default=dict, blank=True)

    objects = ChangeQuerySet.as_manager()

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["workspace", "status", "created_at"], name="change_ws_status_created")]

    def __str__(self) -> str:
        return f"Change #{self.pk} {self.kind} ({self.status})"

    @property
    def is_pending(self) -> bool:
        return self.status == ChangeStatus.PENDING

    @property
    def requester_name(self) -> str:
        """Who asked, as their username was at the time ("system" for tasks and the shell)."""
        return self.requested_by_username or "system"

    @property
    def decider_name(self) -> str | None:
        if not self.decided_at:
            return None
        return self.decided_by_username or "system"


class IdempotencyRecord(models.Model):
    """A key that acts once. For an API POST sent with an Idempotency-Key,
    the answer, so a client that retries (a timeout, a dropped connection)
    gets the first answer again instead of a second session or proposal
    (memoryhub.idempotency); for a console form, its one-time token as used
    (reviews.once; no answer kept)."""

    principal = models.CharField(max_length=64)
    key = models.CharField(max_length=255)
    request_hash = models.CharField(max_length=64)
    # The end user the request was about (its ?user=, body `user` or
    # session), so an erasure drops the answer whatever it says.
    user_ref = models.CharField(max_length=255, blank=True, default="")
    status_code = models.PositiveSmallIntegerField(default=0)
    body = models.JSONField(null=True, blank=True)
    headers = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["principal", "key"], name="idempotency_principal_key")]

    def __str__(self) -> str:
        return f"{self.principal} {self.key} → {self.status_code}"


class ErasureRecord(models.Model):
    """That a data subject was erased, by whom and how much, without naming
    them: `subject_hash` is an HMAC of the workspace and the user reference
    under a key derived from SECRET_KEY (services.erasure.subject_hash), so
    whoever holds the key can answer "was X erased?" and nobody can read X
    back from the record. Append-only in the database, like the audit log
    (memoryhub.immutability)."""

    workspace = models.ForeignKey(Workspace, on_delete=models.PROTECT, related_name="erasures")
    change = models.OneToOneField(Change, on_delete=models.PROTECT, related_name="erasure")
    subject_hash = models.CharField(max_length=64, db_index=True)
    # What the erased rows carry instead of the user reference.
    pseudonym = models.CharField(max_length=64)
    counts = models.JSONField(default=dict, blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    requested_by_username = models.CharField(max_length=150, blank=True, default="")
    approved_by_username = models.CharField(max_length=150, blank=True, default="")
    requested_at = models.DateTimeField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"Erasure {self.subject_hash[:12]} ({self.workspace})"


class EntryVector(models.Model):
    """The semantic index (memoryhub.search.semantic): one embedding per
    distinct text of a log entry or a memory-file entry, per (agent, user)
    scope (`user_ref` empty for the agent's own files), keyed by the text's
    digest and computed by the worker. 256 int8 components (wordllama's
    vector scaled to the int8 range; cosine ignores the scale). Erasure and
    retention delete the rows of the texts they redact."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    user_ref = models.CharField(max_length=255, blank=True, default="")
    content_hash = models.CharField(max_length=32)
    vector = models.BinaryField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["agent", "user_ref", "content_hash"], name="entryvector_scope_hash"),
        ]

    def __str__(self) -> str:
        return f"vector {self.content_hash[:8]} ({self.agent_id}, {self.user_ref or '-'})"
