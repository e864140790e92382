"""Provisioning operations that services.py does not have yet: workspaces,
agents, registered tools, staff users and their roles, token revocation.

Same rules as services.py (keyword-only, typed, one transaction per write
that spans rows, an AuditEvent for every change, no event for a no-op) so
they can be folded into it unchanged. The management commands, the Django
admin and seed_demo call these; none of them writes these rows itself.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import transaction
from django.utils import timezone

from memoryhub import context, errors, services
from memoryhub.models import Agent, Backend, Membership, Role, StaffToken, Strategy, ToolSetting, Workspace, WritePolicy

MAX_TOOLS_PER_AGENT = 64


def _check_slug(value: str, *, what: str) -> str:
    try:
        validate_slug(value)
    except ValidationError as exc:
        raise errors.Invalid(
            f"{value!r} is not a valid {what} slug: use letters, numbers, hyphens and underscores.", field="slug"
        ) from exc
    if len(value) > 64:
        raise errors.Invalid(f"A {what} slug has at most 64 characters; {value!r} has {len(value)}.", field="slug")
    return value


def _check_choice(value: str, *, choices: type[Any], field: str) -> str:
    if value not in choices.values:
        raise errors.Invalid(f"{field} must be one of {', '.join(choices.values)}; got {value!r}.", field=field)
    return value


# --- workspaces -------------------------------------------------------------------


def ensure_workspace(*, slug: str, name: str = "", actor_user: Any = None) -> tuple[Workspace, bool]:
    """The workspace with this slug, created (with an audit event) if missing.
    An existing workspace keeps its name."""
    _check_slug(slug, what="workspace")
    with transaction.atomic():
        workspace, created = Workspace.objects.get_or_create(slug=slug, defaults={"name": name or slug})
        if created:
            services.record_event(
                action="workspace.create",
                workspace=workspace,
                actor_user=actor_user,
                target=workspace,
                summary=f"Created workspace {slug}",
                details={"name": workspace.name},
            )
    return workspace, created


# --- agents ---------------------------------------------------------------------------


def create_agent(
    *,
    workspace: Workspace,
    slug: str,
    name: str = "",
    description: str = "",
    strategy: str = Strategy.HYBRID_V2,
    write_policy: str = WritePolicy.DIRECT,
    backend: str = Backend.HEURISTIC,
    actor_user: Any = None,
) -> Agent:
    """A new agent. Slugs are unique across workspaces (staff API paths name
    agents by slug alone), so an existing slug is refused, not reused."""
    _check_slug(slug, what="agent")
    _check_choice(strategy, choices=Strategy, field="strategy")
    _check_choice(write_policy, choices=WritePolicy, field="write_policy")
    _check_choice(backend, choices=Backend, field="backend")
    with transaction.atomic():
        existing = Agent.objects.select_related("workspace").filter(slug=slug).first()
        if existing is not None:
            raise errors.Invalid(
                f"An agent with the slug {slug!r} already exists (workspace {existing.workspace.slug}).",
                field="slug",
            )
        agent = Agent.objects.create(
            workspace=workspace,
            slug=slug,
            name=name or slug,
            description=description,
            strategy=strategy,
            write_policy=write_policy,
            consolidation_backend=backend,
        )
        services.record_event(
            action="agent.create",
            agent=agent,
            actor_user=actor_user,
            target=agent,
            summary=f"Created agent {slug} in {workspace.slug}",
            details={"strategy": strategy, "write_policy": write_policy, "backend": backend},
        )
    return agent


def update_agent(
    *,
    agent: Agent,
    name: str | None = None,
    description: str | None = None,
    strategy: str | None = None,
    write_policy: str | None = None,
    backend: str | None = None,
    actor_user: Any = None,
) -> list[str]:
    """Change the given settings (None = leave as is). Returns the names of
    the fields that changed; no change, no write and no audit event."""
    wanted: dict[str, Any] = {}
    if name is not None:
        wanted["name"] = name
    if description is not None:
        wanted["description"] = description
    if strategy is not None:
        wanted["strategy"] = _check_choice(strategy, choices=Strategy, field="strategy")
    if write_policy is not None:
        wanted["write_policy"] = _check_choice(write_policy, choices=WritePolicy, field="write_policy")
    if backend is not None:
        wanted["consolidation_backend"] = _check_choice(backend, choices=Backend, field="backend")
    return change_agent_fields(agent=agent, wanted=wanted, actor_user=actor_user, action="agent.update")


def change_agent_fields(*, agent: Agent, wanted: dict[str, Any], actor_user: Any, action: str) -> list[str]:
    """Set validated agent fields under a row lock. Returns the names of the
    fields that changed; no change, no write and no audit event."""
    with transaction.atomic():
        locked = Agent.objects.select_for_update().get(pk=agent.pk)
        before = {field: getattr(locked, field) for field in wanted}
        changed = [field for field, value in wanted.items() if before[field] != value]
        if not changed:
            return []
        for field in changed:
            setattr(locked, field, wanted[field])
        # updated_at (auto_now) is part of the context cache key and the ETag.
        locked.save(update_fields=[*changed, "updated_at"])
        services.record_event(
            action=action,
            agent=locked,
            actor_user=actor_user,
            target=locked,
            summary=f"Changed {', '.join(changed)} of agent {locked.slug}",
            details={field: {"from": str(before[field]), "to": str(wanted[field])} for field in changed},
        )
        context.invalidate(agent_id=locked.pk)
    for field in changed:
        setattr(agent, field, wanted[field])
    agent.updated_at = locked.updated_at
    return changed


# --- tools ----------------------------------------------------------------------------


def validate_tool(*, name: Any, description: Any, parameters: Any) -> tuple[str, str, dict[str, Any]]:
    """One tool through the registry's own validation (names, JSON Schema,
    the scanner): tool descriptions go into every system prompt verbatim."""
    cleaned = services.validate_tools([{"name": name, "description": description, "parameters": parameters}])[0]
    return cleaned["name"], cleaned["description"], cleaned["parameters"]


def register_tool(
    *,
    agent: Agent,
    name: str,
    description: str = "",
    parameters: dict[str, Any] | None = None,
    position: int | None = None,
    actor_user: Any = None,
) -> tuple[ToolSetting, bool]:
    """Add a tool or replace the one with that name. Returns (tool, changed);
    re-registering the same definition changes nothing."""
    name, description, parameters = validate_tool(name=name, description=description, parameters=parameters or {})
    with transaction.atomic():
        Agent.objects.select_for_update().filter(pk=agent.pk).first()
        tool = ToolSetting.objects.filter(agent=agent, name=name).first()
        if tool is None:
            if ToolSetting.objects.filter(agent=agent).count() >= MAX_TOOLS_PER_AGENT:
                raise errors.LimitExceeded(
                    f"An agent may have at most {MAX_TOOLS_PER_AGENT} tools.", limit=MAX_TOOLS_PER_AGENT
                )
            if position is None:
                position = ToolSetting.objects.filter(agent=agent).count()
            tool = ToolSetting.objects.create(
                agent=agent, name=name, description=description, parameters=parameters, position=position
            )
            action = "tool.add"
        else:
            updates: dict[str, Any] = {"description": description, "parameters": parameters}
            if position is not None:
                updates["position"] = position
            changed = [field for field, value in updates.items() if getattr(tool, field) != value]
            if not changed:
                return tool, False
            for field in changed:
                setattr(tool, field, updates[field])
            tool.save(update_fields=changed)
            action = "tool.update"
        services.record_event(
            action=action,
            agent=agent,
            actor_user=actor_user,
            target=tool,
            summary=f"{'Registered' if action == 'tool.add' else 'Updated'} tool {name} of {agent.slug}",
            details={"name": name},
        )
        # The tool section is built from these rows on every request.
        context.invalidate(agent_id=agent.pk)
    return tool, True


def record_tool_change(*, tool: ToolSetting, action: str, actor_user: Any = None) -> None:
    """For the Django admin, which saves ToolSetting rows itself: audit the
    change and drop cached contexts that still show the old tool section."""
    services.record_event(
        action=action,
        agent=tool.agent,
        actor_user=actor_user,
        target=tool if tool.pk else None,
        summary=f"{action} {tool.name} of {tool.agent.slug} (Django admin)",
        details={"name": tool.name},
    )
    context.invalidate(agent_id=tool.agent_id)


# --- staff users and roles ------------------------------------------------------------


def ensure_staff_user(
    *, username: str, email: str = "", password: str | None = None, check_password: bool = True
) -> tuple[Any, bool]:
    """The user with this username, created if missing. A new user without a
    password gets an unusable one (token or admin-set password only). The
    password of an existing user is never touched here: see set_password."""
    User = get_user_model()
    username = username.strip()
    if not username:
        raise errors.Invalid("A username is required.", field="username")
    with transaction.atomic():
        user = User.objects.filter(username=username).first()
        if user is not None:
            return user, False
        user = User(username=username, email=email)
        try:
            user.full_clean(exclude=["password"])
        except ValidationError as exc:
            raise errors.Invalid("; ".join(exc.messages), field="username") from exc
        if password:
            if check_password:
                _validate_password(password, user)
            user.set_password(password)
        else:
            user.set_unusable_password()
        user.save()
        services.record_event(
            action="staff.create",
            target=user,
            summary=f"Created staff user {username}",
            details={"usable_password": bool(password)},
        )
    return user, True


def _validate_password(password: str, user: Any) -> None:
    try:
        validate_password(password, user)
    except ValidationError as exc:
        raise errors.Invalid(" ".join(exc.messages), field="password") from exc


def set_password(*, user: Any, password: str, actor_user: Any = None) -> None:
    _validate_password(password, user)
    user.set_password(password)
    user.save(update_fields=["password"])
    services.record_event(
        action="staff.password", actor_user=actor_user, target=user, summary=f"Set the password of {user.username}"
    )


def set_role(*, user: Any, workspace: Workspace, role: str, actor_user: Any = None) -> tuple[Membership, bool]:
    """Give the user this role in this workspace, replacing the role it had
    there (one role per user and workspace). Admins also get into the Django
    admin (is_staff). Returns (membership, changed)."""
    _check_choice(role, choices=Role, field="role")
    with transaction.atomic():
        membership = Membership.objects.select_for_update().filter(user=user, workspace=workspace).first()
        previous = membership.role if membership else None
        if membership is None:
            membership = Membership.objects.create(user=user, workspace=workspace, role=role)
        elif membership.role != role:
            membership.role = role
            membership.save(update_fields=["role"])
        if role == Role.ADMIN and not user.is_staff:
            user.is_staff = True
            user.save(update_fields=["is_staff"])
        if previous == role:
            return membership, False
        services.record_event(
            action="staff.role",
            workspace=workspace,
            actor_user=actor_user,
            target=membership,
            summary=f"{user.username} is now {role} in {workspace.slug}" + (f" (was {previous})" if previous else ""),
            details={"user": user.username, "role": role, "previous": previous},
        )
    return membership, True


def remove_role(*, membership: Membership, actor_user: Any = None) -> None:
    with transaction.atomic():
        services.record_event(
            action="staff.role_removed",
            workspace=membership.workspace,
            actor_user=actor_user,
            target=membership,
            summary=f"{membership.user} no longer has a role in {membership.workspace.slug}",
            details={"user": str(membership.user), "role": membership.role},
        )
        membership.delete()


def deactivate_user(*, user: Any, actor_user: Any = None) -> bool:
    """Users are never deleted (history keeps its authors); a deactivated
    user can neither log in nor use a token. Returns False if already inactive."""
    User = get_user_model()
    with transaction.atomic():
        if not User.objects.filter(pk=user.pk, is_active=True).update(is_active=False):
            return False
        user.is_active = False
        services.record_event(
            action="staff.deactivate",
            actor_user=actor_user,
            target=user,
            summary=f"Deactivated user {user.username}",
        )
    return True


# --- tokens ---------------------------------------------------------------------------


def revoke_staff_token(*, token: StaffToken, user: Any = None) -> StaffToken:
    if StaffToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now()):
        services.record_event(
            action="token.revoke",
            actor_user=user,
            target=token,
            summary=f"Revoked personal token {token.prefix}… of {token.user}",
        )
    token.refresh_from_db(fields=["revoked_at"])
    return token


def grant_superuser(*, user: Any, actor_user: Any = None) -> bool:
    """Full Django-admin rights. Returns False if the user already had them."""
    if user.is_superuser and user.is_staff:
        return False
    user.is_superuser = True
    user.is_staff = True
    user.save(update_fields=["is_superuser", "is_staff"])
    services.record_event(
        action="staff.superuser", actor_user=actor_user, target=user, summary=f"Made {user.username} a superuser"
    )
    return True
