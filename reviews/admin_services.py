"""Admin operations behind the agent pages: each checks the admin role in the
agent's workspace, then calls the one domain function that does the work
(memoryhub.services or memoryhub.staff), so the console cannot do anything
the API and the commands could not. `update_agent_policies` is the only
write that did not exist yet; it follows services.py's rules (keyword-only,
typed, one transaction, an audit event, no event for a no-op) so it can move
there unchanged."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from django.db import transaction

from memoryhub import errors, services, staff
from memoryhub.models import Agent, ApiKey, Backend, Proposal, Source, Strategy, ToolSetting, Workspace, WritePolicy
from memoryhub.tokens import ENCODING_NAMES

# The context preview must stay readable and the scanner fast; a persona file
# beyond this is a mistake, whatever the admin typed.
MAX_FILE_LIMIT = 100_000
MAX_GATE_HOURS = 24 * 365
MAX_GATE_SESSIONS = 10_000
MAX_STALENESS_DAYS = 3650
MAX_DAILY_BUDGET = Decimal("100000")

POLICY_FIELDS = (
    "strategy",
    "write_policy",
    "consolidation_backend",
    "limit_soul",
    "limit_about",
    "limit_tools",
    "limit_user",
    "limit_memory",
    "gate_hours",
    "gate_sessions",
    "daily_budget_usd",
    "staleness_ttl_days",
    "token_encoding",
)


def _require_admin(*, user: Any, workspace: Workspace | int, action: str) -> None:
    services.require_role(user=user, workspace=workspace, roles=services.ADMIN_ROLES, action=action)


@transaction.atomic
def create_agent(
    *,
    actor_user: Any,
    workspace_id: int,
    slug: str,
    name: str = "",
    strategy: str = Strategy.HYBRID_V2,
    write_policy: str = WritePolicy.DIRECT,
    backend: str = Backend.HEURISTIC,
) -> Agent:
    _require_admin(user=actor_user, workspace=workspace_id, action="create agents here")
    workspace = Workspace.objects.get(pk=workspace_id)
    return staff.create_agent(
        workspace=workspace,
        slug=slug.strip(),
        name=name.strip(),
        strategy=strategy,
        write_policy=write_policy,
        backend=backend,
        actor_user=actor_user,
    )


@transaction.atomic
def propose_persona_edit(*, agent: Agent, kind: str, content: str, reason: str, actor_user: Any) -> Proposal:
    """Persona files (SOUL/ABOUT/TOOLS) are admin territory; the edit is a
    proposal that another reviewer approves (four-eyes lives in approve)."""
    _require_admin(user=actor_user, workspace=agent.workspace_id, action="edit the persona")
    if kind not in {"SOUL.md", "ABOUT.md", "TOOLS.md"}:
        raise errors.Invalid(f"{kind} is not a persona file; only SOUL.md, ABOUT.md and TOOLS.md are edited here.")
    return services.propose_change(
        agent=agent, kind=kind, content=content, source=Source.ADMIN, author_user=actor_user, reason=reason
    )


@transaction.atomic
def set_tools(*, agent: Agent, tools: Any, actor_user: Any) -> list[ToolSetting]:
    _require_admin(user=actor_user, workspace=agent.workspace_id, action="change the tool registry")
    return services.replace_tools(agent=agent, tools=tools, actor_user=actor_user)


@transaction.atomic
def issue_key(*, agent: Agent, name: str, actor_user: Any) -> tuple[ApiKey, str]:
    _require_admin(user=actor_user, workspace=agent.workspace_id, action="issue API keys")
    if len(name) > 100:
        raise errors.Invalid("A key name has at most 100 characters.", field="name")
    return services.issue_agent_key(agent=agent, name=name.strip(), created_by=actor_user)


@transaction.atomic
def revoke_key(*, agent: Agent, key_id: Any, actor_user: Any) -> ApiKey:
    _require_admin(user=actor_user, workspace=agent.workspace_id, action="revoke API keys")
    try:
        key = ApiKey.objects.select_related("agent__workspace").get(pk=int(key_id), agent=agent)
    except (TypeError, ValueError, ApiKey.DoesNotExist) as exc:
        raise errors.NotFound("This agent has no such key.") from exc
    return services.revoke_agent_key(key=key, user=actor_user)


def _int_in(value: Any, *, field: str, label: str, low: int, high: int) -> int:
    try:
        number = int(str(value).strip())
    except (TypeError, ValueError) as exc:
        raise errors.Invalid(f"{label} must be a whole number.", field=field) from exc
    if not low <= number <= high:
        raise errors.Invalid(f"{label} must be between {low:,} and {high:,}; got {number:,}.", field=field)
    return number


def _choice(value: Any, *, choices: Any, field: str, label: str) -> str:
    if value not in choices:
        raise errors.Invalid(f"{label} must be one of {', '.join(choices)}; got {value!r}.", field=field)
    return str(value)


def clean_policies(raw: dict[str, Any]) -> dict[str, Any]:
    """Typed values for every policy field, or an Invalid naming the first bad one."""
    cleaned: dict[str, Any] = {
        "strategy": _choice(raw.get("strategy"), choices=Strategy.values, field="strategy", label="Strategy"),
        "write_policy": _choice(
            raw.get("write_policy"), choices=WritePolicy.values, field="write_policy", label="Write policy"
        ),
        "consolidation_backend": _choice(
            raw.get("consolidation_backend"), choices=Backend.values, field="consolidation_backend", label="Backend"
        ),
        "token_encoding": _choice(
            raw.get("token_encoding"), choices=ENCODING_NAMES, field="token_encoding", label="Token encoding"
        ),
    }
    for kind in ("soul", "about", "tools", "user", "memory"):
        field = f"limit_{kind}"
        cleaned[field] = _int_in(
            raw.get(field), field=field, label=f"The {kind.upper()}.md limit", low=1, high=MAX_FILE_LIMIT
        )
    cleaned["gate_hours"] = _int_in(raw.get("gate_hours"), field="gate_hours", label="Gate hours", low=0,
                                    high=MAX_GATE_HOURS)
    cleaned["gate_sessions"] = _int_in(raw.get("gate_sessions"), field="gate_sessions", label="Gate sessions",
                                       low=0, high=MAX_GATE_SESSIONS)
    cleaned["staleness_ttl_days"] = _int_in(raw.get("staleness_ttl_days"), field="staleness_ttl_days",
                                            label="Staleness TTL", low=0, high=MAX_STALENESS_DAYS)
    try:
        budget = Decimal(str(raw.get("daily_budget_usd", "")).strip())
    except InvalidOperation as exc:
        raise errors.Invalid("The daily budget must be a number of US dollars.", field="daily_budget_usd") from exc
    if not budget.is_finite() or not Decimal(0) <= budget <= MAX_DAILY_BUDGET:
        raise errors.Invalid(f"The daily budget must be between 0 and {MAX_DAILY_BUDGET} USD.",
                             field="daily_budget_usd")
    cleaned["daily_budget_usd"] = budget.quantize(Decimal("0.0001"))
    return cleaned


@transaction.atomic
def update_agent_policies(*, agent: Agent, policies: dict[str, Any], actor_user: Any) -> list[str]:
    """Set every policy field at once (a form post carries them all). Returns
    the names of the fields that changed; no change, no write, no event."""
    _require_admin(user=actor_user, workspace=agent.workspace_id, action="change agent policies")
    return staff.change_agent_fields(
        agent=agent, wanted=clean_policies(policies), actor_user=actor_user, action="agent.policies"
    )
