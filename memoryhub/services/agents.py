"""Workspaces and agents, and their settings.

Settings that weaken the gate — an agent's write policy to `direct`, higher
limits or budget, another consolidation backend, a workspace's default
policy to `direct` — are not applied by one person: they become a pending
change (services.changes) that a different admin approves. Everything else
applies at once.

Nobody loosens a setting alone, the shell included: SYSTEM (a management
command run without `--as`, a task) may apply what does not weaken the gate
and is refused what does, because a change it requested would have no
requester for four-eyes to exclude. An operator names the admin who asks
for it (`--as USERNAME`) and the change waits for another one. Creating an
agent is provisioning, not a change of one in service: the shell may give a
new agent any settings, and the audit event names the ones weaker than a new
agent's defaults.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from decimal import Decimal, InvalidOperation
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import transaction
from django.db.models import F, Field

from memoryhub import errors
from memoryhub.actors import Actor, is_system
from memoryhub.models import (
    Agent,
    Backend,
    Change,
    ChangeKind,
    HighRiskApproval,
    Strategy,
    Workspace,
    WritePolicy,
)
from memoryhub.services._change_request import request_change
from memoryhub.services.access import require_admin
from memoryhub.services.audit import record_event
from memoryhub.services.limits import PII_POLICIES
from memoryhub.tokens import ENCODING_NAMES

# The context preview must stay readable and the scanner fast; a persona file
# beyond this is a mistake, whatever the admin typed.
MAX_FILE_LIMIT = 100_000
MAX_GATE_HOURS = 24 * 365
MAX_GATE_SESSIONS = 10_000
MAX_STALENESS_DAYS = 3650
MAX_DAILY_BUDGET = Decimal("100000")
NAME_MAX = 200
DESCRIPTION_MAX = 2000


def _check_slug(value: object, *, what: str) -> str:
    if not isinstance(value, str):
        raise errors.Invalid(f"A {what} slug must be text.", field="slug")
    slug: str = value.strip()
    try:
        validate_slug(slug)
    except ValidationError as exc:
        raise errors.Invalid(
            f"{slug!r} is not a valid {what} slug: use letters, numbers, hyphens and underscores.", field="slug"
        ) from exc
    if len(slug) > 64:
        raise errors.Invalid(f"A {what} slug has at most 64 characters; {slug!r} has {len(slug)}.", field="slug")
    return slug


# --- setting specs ---------------------------------------------------------------------------


def _choice(choices: Iterable[str], label: str) -> Callable[[object, str], str]:
    def clean(value: object, field: str) -> str:
        if value not in list(choices):
            raise errors.Invalid(f"{label} must be one of {', '.join(choices)}; got {value!r}.", field=field)
        return str(value)
    return clean


def _int(label: str, low: int, high: int) -> Callable[[object, str], int]:
    def clean(value: object, field: str) -> int:
        if isinstance(value, bool):
            raise errors.Invalid(f"{label} must be a whole number.", field=field)
        try:
            number = int(str(value).strip())
        except (TypeError, ValueError) as exc:
            raise errors.Invalid(f"{label} must be a whole number.", field=field) from exc
        if not low <= number <= high:
            raise errors.Invalid(f"{label} must be between {low:,} and {high:,}; got {number:,}.", field=field)
        return number
    return clean


def _text(label: str, max_length: int, required: bool = False) -> Callable[[object, str], str]:
    def clean(value: object, field: str) -> str:
        if not isinstance(value, str) or len(value) > max_length or "\x00" in value:
            raise errors.Invalid(f"{label} must be text of at most {max_length:,} characters.", field=field)
        text: str = value.strip()
        if required and not text:
            raise errors.Invalid(f"{label} is required.", field=field)
        return text
    return clean


def _budget(value: object, field: str) -> Decimal:
    if isinstance(value, bool):
        raise errors.Invalid("The daily budget must be a number of US dollars.", field=field)
    try:
        budget = Decimal(str(value).strip())
    except InvalidOperation as exc:
        raise errors.Invalid("The daily budget must be a number of US dollars.", field=field) from exc
    if not budget.is_finite() or not Decimal(0) <= budget <= MAX_DAILY_BUDGET:
        raise errors.Invalid(f"The daily budget must be between 0 and {MAX_DAILY_BUDGET} USD.", field=field)
    return budget.quantize(Decimal("0.0001"))


_TRUE = ("on", "true", "1", "yes")
_FALSE = ("off", "false", "0", "no", "")


def _switch(label: str) -> Callable[[object, str], bool]:
    def clean(value: object, field: str) -> bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in _TRUE or text in _FALSE:
            return text in _TRUE
        raise errors.Invalid(f"{label} is on or off; got {value!r}.", field=field)
    return clean


def _turned_off(old: object, new: object) -> bool:
    return bool(old and not new)


def _never(old: object, new: object) -> bool:
    return False


def _raised(old: Any, new: object) -> bool:
    return bool(new > old)


def _changed(old: object, new: object) -> bool:
    return bool(old != new)


def _to_direct(old: object, new: object) -> bool:
    return bool(new == WritePolicy.DIRECT and old != WritePolicy.DIRECT)


@dataclass(frozen=True)
class Setting:
    field: str
    clean: Callable[[Any, str], Any]
    # Whether going from old to new puts a weaker policy into service.
    weakens: Callable[[Any, Any], bool] = _never

    @property
    def governed(self) -> bool:
        """Whether some change of it takes a second admin."""
        return self.weakens is not _never


AGENT_SETTINGS: dict[str, Setting] = {
    s.field: s
    for s in (
        Setting("name", _text("The name", NAME_MAX, required=True)),
        Setting("description", _text("The description", DESCRIPTION_MAX)),
        Setting("strategy", _choice(Strategy.values, "Strategy")),
        Setting("write_policy", _choice(WritePolicy.values, "Write policy"), _to_direct),
        Setting("consolidation_backend", _choice(Backend.values, "Backend"), _changed),
        Setting("token_encoding", _choice(ENCODING_NAMES, "Token encoding")),
        *(
            Setting(f"limit_{k}", _int(f"The {k.upper()}.md limit", 1, MAX_FILE_LIMIT), _raised)
            for k in ("soul", "about", "tools", "user", "memory")
        ),
        Setting("gate_hours", _int("Gate hours", 0, MAX_GATE_HOURS)),
        Setting("gate_sessions", _int("Gate sessions", 0, MAX_GATE_SESSIONS)),
        Setting("staleness_ttl_days", _int("Staleness TTL", 0, MAX_STALENESS_DAYS)),
        Setting("daily_budget_usd", _budget, _raised),
        # Memory served as data is a defence; serving it as plain text is a
        # loosening, so it takes a second admin.
        Setting("spotlighting", _switch("Spotlighting"), _turned_off),
    )
}
# API names for agent fields whose model name differs.
AGENT_ALIASES = {"backend": "consolidation_backend"}
POLICY_FIELDS = tuple(f for f in AGENT_SETTINGS if f not in ("name", "description"))

def _pii_looser(old: object, new: object) -> bool:
    return PII_POLICIES.index(new) < PII_POLICIES.index(old)


MAX_RETENTION_DAYS = 36500


def _retention_days(value: object, field: str) -> int | None:
    """Days to keep session logs; empty (None, "", "None") keeps them forever."""
    if value is None or (isinstance(value, str) and value.strip() in ("", "None")):
        return None
    return _int("Log retention", 1, MAX_RETENTION_DAYS)(value, field)


def _retention_shortened(old: Any, new: object) -> bool:
    """Redaction cannot be undone: keeping logs for less time (or no longer
    forever) destroys records sooner, so it takes a second admin. Keeping
    them longer destroys nothing and is one admin's call."""
    return new is not None and (old is None or new < old)
MAX_REASON_CODES = 20
MAX_SLA_HOURS = 24 * 90
_REASON_CODE = re.compile(r"^[a-z][a-z0-9_]{0,31}$")


def _reason_codes(value: object, field: str) -> str:
    """A list of codes (or the comma-separated text a governance change
    stores), kept as "a,b,c"."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise errors.Invalid("Reason codes must be a list of codes such as duplicate or out_of_scope.", field=field)
    codes = list(dict.fromkeys(i.strip() for i in items if i.strip()))
    bad = [c for c in codes if not _REASON_CODE.match(c)]
    if bad:
        raise errors.Invalid(f"{bad[0]!r} is not a reason code: use lower-case letters, digits and underscores, "
                             "starting with a letter (at most 32).", field=field)
    if not 1 <= len(codes) <= MAX_REASON_CODES:
        raise errors.Invalid(f"Give between 1 and {MAX_REASON_CODES} reason codes.", field=field)
    return ",".join(codes)


def _approval_looser(old: object, new: object) -> bool:
    # Tightening from "any reviewer" is free; any other move (to a looser
    # rule, or sideways between "admin" and "two approvals") takes a second admin.
    return bool(old != new and old != HighRiskApproval.ANY_REVIEWER)


WORKSPACE_SETTINGS: dict[str, Setting] = {
    s.field: s
    for s in (
        Setting("name", _text("The workspace name", NAME_MAX, required=True)),
        Setting("default_write_policy", _choice(WritePolicy.values, "The default write policy"), _to_direct),
        Setting("pii_policy", _choice(PII_POLICIES, "The personal-data policy"), _pii_looser),
        Setting("log_retention_days", _retention_days, _retention_shortened),
        Setting("review_reason_codes", _reason_codes),
        Setting("sla_hours", _int("The review SLA (hours)", 1, MAX_SLA_HOURS)),
        Setting("high_risk_approval", _choice(HighRiskApproval.values, "The high-risk approval rule"),
                _approval_looser),
    )
}


def clean_settings(specs: dict[str, Setting], raw: object, aliases: dict[str, str] | None = None) -> dict[str, object]:
    """Typed values for the given fields (a partial update), or an Invalid
    naming the first bad or unknown one."""
    if not isinstance(raw, dict):
        raise errors.Invalid("Send the settings to change as a JSON object.")
    cleaned: dict[str, object] = {}
    for key, value in raw.items():
        field = (aliases or {}).get(str(key), str(key))
        spec = specs.get(field)
        if spec is None:
            names = ", ".join(sorted(set(specs) | set(aliases or {})))
            raise errors.Invalid(f"{key!r} is not a setting that can be changed; use {names}.", field=str(key))
        cleaned[field] = spec.clean(value, key)
    return cleaned


def weakening(specs: dict[str, Setting], before: dict[str, object], wanted: dict[str, object]) -> list[str]:
    return [field for field, value in wanted.items() if specs[field].weakens(before[field], value)]


# --- workspaces ---------------------------------------------------------------------------


def ensure_workspace(*, slug: str, name: str = "", actor_user: Actor | None = None) -> tuple[Workspace, bool]:
    """The workspace with this slug, created (with an audit event) if missing.
    An existing workspace keeps its name. Shell and Django-admin only."""
    slug = _check_slug(slug, what="workspace")
    with transaction.atomic():
        workspace, created = Workspace.objects.get_or_create(slug=slug, defaults={"name": name or slug})
        if created:
            record_event(
                action="workspace.create",
                workspace=workspace,
                actor_user=actor_user,
                target=workspace,
                summary=f"Created workspace {slug}",
                details={"name": workspace.name, "default_write_policy": workspace.default_write_policy},
            )
    return workspace, created


# --- agents -------------------------------------------------------------------------------------


def new_agent_defaults(workspace: Workspace, fields: Iterable[str]) -> dict[str, object]:
    """What a new agent in `workspace` starts with, for the given fields:
    the model's defaults under the workspace's default write policy."""
    defaults: dict[str, object] = {}
    for field in fields:
        model_field = Agent._meta.get_field(field)
        assert isinstance(model_field, Field)
        value = model_field.get_default()
        defaults[field] = AGENT_SETTINGS[field].clean(value, field) if value not in ("", None) else value
    if "write_policy" in defaults:
        defaults["write_policy"] = workspace.default_write_policy
    return defaults


def create_agent(
    *,
    workspace: Workspace,
    slug: object,
    actor: Actor,
    name: object = "",
    description: object = "",
    strategy: object = Strategy.HYBRID_V2,
    write_policy: object = None,
    backend: object = Backend.HEURISTIC,
    settings: object = None,
) -> Agent:
    """A new agent, under the workspace's default write policy unless told
    otherwise; `settings` sets any other AGENT_SETTINGS field (an import).
    Starting weaker than a new agent's defaults is itself a weakening: an
    admin is refused and told to request it as a change after creating the
    agent; the shell may provision it, and the audit event says so.
    Slugs are unique across workspaces (staff API paths name agents by slug
    alone), so an existing slug is refused, not reused."""
    require_admin(user=actor, workspace=workspace.pk, action="create agents here")
    slug = _check_slug(slug, what="agent")
    if settings is not None and not isinstance(settings, dict):
        raise errors.Invalid("An agent's settings are a JSON object.", field="settings")
    default_policy = workspace.default_write_policy
    wanted = clean_settings(AGENT_SETTINGS, {
        "name": (name or slug) if isinstance(name, str) else name,
        "description": description,
        "strategy": strategy,
        "write_policy": write_policy or default_policy,
        "consolidation_backend": backend,
        **(settings or {}),
    })
    weaker = weakening(AGENT_SETTINGS, new_agent_defaults(workspace, wanted), wanted)
    if weaker and not is_system(actor):
        if "write_policy" in weaker:
            raise errors.Invalid(
                f"New agents in {workspace.slug} start under the `{default_policy}` policy. Create the agent, then "
                "request `direct` as a change another admin approves.", field="write_policy")
        raise errors.Invalid(
            f"{', '.join(weaker)} would weaken the gate of a new agent, which needs a second admin: create it "
            "with the defaults, then request the change.", field=weaker[0])
    with transaction.atomic():
        existing = Agent.objects.select_related("workspace").filter(slug=slug).first()
        if existing is not None:
            raise errors.Invalid(
                f"An agent with the slug {slug!r} already exists (workspace {existing.workspace.slug}).",
                field="slug",
            )
        agent = Agent.objects.create(workspace=workspace, slug=slug, **wanted)
        record_event(
            action="agent.create",
            agent=agent,
            actor_user=actor,
            target=agent,
            summary=f"Created agent {slug} in {workspace.slug}"
            + (f" with {', '.join(f'{field} {wanted[field]}' for field in weaker)} (weaker than a new agent's "
               "defaults, set at the shell)" if weaker else ""),
            details={"strategy": wanted["strategy"], "write_policy": wanted["write_policy"],
                     "backend": wanted["consolidation_backend"], "workspace_default": default_policy,
                     "weaker_than_default": bool(weaker), "weaker_fields": weaker},
        )
    return agent


@dataclass(frozen=True)
class SettingsUpdate:
    applied: list[str]
    change: Change | None = None
    # The fields that made it a pending change (they weaken a policy).
    weakens: list[str] = dataclass_field(default_factory=list)


def _field_changes(before: dict[str, object], wanted: dict[str, object]) -> dict[str, dict[str, str]]:
    return {field: {"from": str(before[field]), "to": str(value)} for field, value in wanted.items()}


class NeedsRequester(errors.FourEyes):
    """A weakening asked for by no one in particular (SYSTEM): it could only
    be applied alone, or become a change anyone could approve."""


def _refuse_shell_weakening(actor: Actor, weaker: list[str]) -> None:
    if is_system(actor):
        raise NeedsRequester(
            f"Loosening {', '.join(weaker)} takes two admins: one requests it, another approves it. The operator "
            "at the shell acts for no one in particular, so name the admin who requests it.",
            weakens=weaker,
        )


def update_agent(*, agent: Agent, settings: object, actor: Actor, reason: object = "") -> SettingsUpdate:
    """Change some of an agent's settings. A request that weakens the gate
    becomes one pending change (all its fields, decided together); otherwise
    the fields apply at once. SYSTEM is refused a weakening (NeedsRequester).
    No change, no write and no event."""
    require_admin(user=actor, workspace=agent.workspace_id, action="change agent settings")
    wanted = clean_settings(AGENT_SETTINGS, settings, AGENT_ALIASES)
    with transaction.atomic():
        locked = Agent.objects.select_for_update().get(pk=agent.pk)
        before = {field: getattr(locked, field) for field in wanted}
        wanted = {field: value for field, value in wanted.items() if before[field] != value}
        if not wanted:
            return SettingsUpdate(applied=[])
        weaker = weakening(AGENT_SETTINGS, before, wanted)
        if weaker:
            _refuse_shell_weakening(actor, weaker)
            change = request_change(
                workspace=agent.workspace, agent=locked, kind=ChangeKind.AGENT_SETTINGS, actor=actor,
                payload={"fields": _field_changes(before, wanted)}, reason=reason,
                summary=f"Change {', '.join(wanted)} of agent {locked.slug} (weakens: {', '.join(weaker)})",
            )
            return SettingsUpdate(applied=[], change=change, weakens=weaker)
        apply_agent_settings(agent=locked, wanted=wanted, actor=actor, before=before)
    for field, value in wanted.items():
        setattr(agent, field, value)
    agent.updated_at = locked.updated_at
    return SettingsUpdate(applied=list(wanted))


def apply_agent_settings(*, agent: Agent, wanted: dict[str, object], actor: Actor, before: dict[str, object],
                         change: Change | None = None) -> None:
    """Set validated fields on a locked agent, with its audit event."""
    for field, value in wanted.items():
        setattr(agent, field, value)
    # updated_at (auto_now) and config_version key the cached contexts.
    agent.save(update_fields=[*wanted, "updated_at"])
    Agent.objects.filter(pk=agent.pk).update(config_version=F("config_version") + 1)
    record_event(
        action="agent.settings",
        agent=agent,
        actor_user=actor,
        target=agent,
        summary=f"Changed {', '.join(wanted)} of agent {agent.slug}"
        + (f" (change #{change.pk})" if change else "")
        + (" at the shell" if is_system(actor) else ""),
        details={"fields": _field_changes(before, wanted), "change": change.pk if change else None},
    )


def update_workspace(*, workspace: Workspace, settings: object, actor: Actor, reason: object = "") -> SettingsUpdate:
    """Workspace settings, governed like an agent's."""
    require_admin(user=actor, workspace=workspace.pk, action="change workspace settings")
    wanted = clean_settings(WORKSPACE_SETTINGS, settings)
    with transaction.atomic():
        locked = Workspace.objects.select_for_update().get(pk=workspace.pk)
        before = {field: getattr(locked, field) for field in wanted}
        wanted = {field: value for field, value in wanted.items() if before[field] != value}
        if not wanted:
            return SettingsUpdate(applied=[])
        weaker = weakening(WORKSPACE_SETTINGS, before, wanted)
        if weaker:
            _refuse_shell_weakening(actor, weaker)
            change = request_change(
                workspace=locked, kind=ChangeKind.WORKSPACE_SETTINGS, actor=actor,
                payload={"fields": _field_changes(before, wanted)}, reason=reason,
                summary=f"Change {', '.join(wanted)} of workspace {locked.slug} (weakens: {', '.join(weaker)})",
            )
            return SettingsUpdate(applied=[], change=change, weakens=weaker)
        apply_workspace_settings(workspace=locked, wanted=wanted, actor=actor, before=before)
    for field, value in wanted.items():
        setattr(workspace, field, value)
    return SettingsUpdate(applied=list(wanted))


def apply_workspace_settings(*, workspace: Workspace, wanted: dict[str, object], actor: Actor, before: dict[str,
                             object],
                             change: Change | None = None) -> None:
    for field, value in wanted.items():
        setattr(workspace, field, value)
    workspace.save(update_fields=list(wanted))
    record_event(
        action="workspace.settings",
        workspace=workspace,
        actor_user=actor,
        target=workspace,
        summary=f"Changed {', '.join(wanted)} of workspace {workspace.slug}"
        + (f" (change #{change.pk})" if change else ""),
        details={"fields": _field_changes(before, wanted), "change": change.pk if change else None},
    )


def governed_settings() -> dict[str, str]:
    """The agent settings a second admin must approve, each with when that
    is, in words (for the forms that change them)."""
    when: dict[Callable[[Any, Any], bool], str] = {
        _to_direct: "switching to direct", _raised: "raising it", _changed: "any change",
        _turned_off: "turning it off",
    }
    return {field: when[spec.weakens] for field, spec in AGENT_SETTINGS.items() if spec.weakens in when}
