"""An agent's registered tools: the source of the auto-generated tool
section of every system prompt, so as untrusted as memory itself."""

from __future__ import annotations

import json
import re
from typing import Any

from django.db import transaction
from django.db.models import F

from memoryhub import errors
from memoryhub.actors import Actor, is_system
from memoryhub.models import Agent, ToolSetting
from memoryhub.services.access import require_admin
from memoryhub.services.audit import record_event
from memoryhub.services.limits import check_safe, validate_content

TOOL_NAME_MAX = 64
TOOL_DESCRIPTION_MAX = 1024
MAX_TOOLS = 64
# A tool's parameters are a JSON Schema an agent wrote: bounded before
# jsonschema walks it, so a hostile schema cannot exhaust the stack or memory.
MAX_SCHEMA_DEPTH = 20
MAX_SCHEMA_CHARS = 20_000
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _depth(value: object, limit: int) -> int:
    """Nesting depth of a JSON value, stopping once past `limit`."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > deepest:
            deepest = depth
            if deepest > limit:
                return deepest
        if isinstance(node, dict):
            stack.extend((child, depth + 1) for child in node.values())
        elif isinstance(node, list):
            stack.extend((child, depth + 1) for child in node)
    return deepest


def validate_tools(tools: object) -> list[dict[str, Any]]:
    from jsonschema import exceptions as schema_errors
    from jsonschema.validators import validator_for

    if not isinstance(tools, list):
        raise errors.Invalid("tools must be a list of {name, description, parameters}.", field="tools")
    if len(tools) > MAX_TOOLS:
        raise errors.LimitExceeded(f"An agent may register at most {MAX_TOOLS} tools.", limit=MAX_TOOLS)
    cleaned: list[dict[str, object]] = []
    seen: set[str] = set()
    for index, tool in enumerate(tools):
        where = f"tools[{index}]"
        if not isinstance(tool, dict):
            raise errors.Invalid(f"{where} must be an object.", field=where)
        name = tool.get("name")
        if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
            raise errors.Invalid(
                f"{where}.name must be 1–{TOOL_NAME_MAX} letters, digits, '_' or '-'.", field=f"{where}.name"
            )
        if name in seen:
            raise errors.Invalid(f"Tool {name!r} is listed twice.", field=f"{where}.name")
        seen.add(name)
        description = tool.get("description", "")
        if not isinstance(description, str) or len(description) > TOOL_DESCRIPTION_MAX:
            raise errors.Invalid(
                f"{where}.description must be text of at most {TOOL_DESCRIPTION_MAX} characters.",
                field=f"{where}.description",
            )
        validate_content(description, field=f"{where}.description")
        parameters = tool.get("parameters", {})
        if parameters == {}:
            parameters = {"type": "object", "properties": {}}
        if not isinstance(parameters, dict) or parameters.get("type") != "object":
            raise errors.Invalid(
                f"{where}.parameters must be a JSON Schema object with \"type\": \"object\".",
                field=f"{where}.parameters",
            )
        if _depth(parameters, MAX_SCHEMA_DEPTH) > MAX_SCHEMA_DEPTH:
            raise errors.Invalid(f"{where}.parameters is nested more than {MAX_SCHEMA_DEPTH} levels deep.",
                                 field=f"{where}.parameters")
        serialised = json.dumps(parameters, ensure_ascii=False)
        if len(serialised) > MAX_SCHEMA_CHARS:
            raise errors.Invalid(f"{where}.parameters is over {MAX_SCHEMA_CHARS:,} characters of JSON.",
                                 field=f"{where}.parameters")
        if "\x00" in serialised or "\\u0000" in serialised:
            raise errors.Invalid(f"{where}.parameters contains a NUL character.", field=f"{where}.parameters")
        try:
            validator_for(parameters).check_schema(parameters)
        except schema_errors.SchemaError as exc:
            raise errors.Invalid(
                f"{where}.parameters is not a valid JSON Schema: {exc.message}", field=f"{where}.parameters"
            ) from exc
        # Tool descriptions are injected into every system prompt: they are
        # as untrusted as memory and pass the same scanner.
        check_safe(f"{name}\n{description}\n{serialised}")
        cleaned.append({"name": name, "description": description, "parameters": parameters})
    return cleaned


def _require_editor(*, agent: Agent, actor: Actor) -> None:
    """The agent itself (its own registry, through its key), an admin of its
    workspace, or the shell."""
    if isinstance(actor, Agent):
        if actor.pk != agent.pk:
            raise errors.PermissionDenied("An agent can change only its own tools.")
        return
    if not is_system(actor):
        require_admin(user=actor, workspace=agent.workspace_id, action="change the tool registry")


def bump_config(agent: Agent) -> None:
    """The tool section is built from these rows: a new config version keys
    cached contexts afresh (context.cache_key)."""
    Agent.objects.filter(pk=agent.pk).update(config_version=F("config_version") + 1)


def replace_tools(*, agent: Agent, tools: object, actor: Actor) -> list[ToolSetting]:
    """Replace the agent's tool registry as a whole (PUT semantics)."""
    _require_editor(agent=agent, actor=actor)
    cleaned = validate_tools(tools)
    with transaction.atomic():
        Agent.objects.select_for_update().filter(pk=agent.pk).first()
        ToolSetting.objects.filter(agent=agent).delete()
        rows = ToolSetting.objects.bulk_create(
            ToolSetting(agent=agent, position=i, **tool) for i, tool in enumerate(cleaned)
        )
        bump_config(agent)
        record_event(
            action="tools.replace",
            agent=agent,
            actor_user=None if isinstance(actor, Agent) else actor,
            actor_agent=actor if isinstance(actor, Agent) else None,
            target=agent,
            summary=f"Tool registry of {agent.slug} set to {len(rows)} tool(s)",
            details={"tools": [t["name"] for t in cleaned]},
        )
    return rows


def validate_tool(*, name: object, description: object, parameters: object) -> tuple[str, str, dict[str, object]]:
    """One tool through the registry's own validation."""
    cleaned = validate_tools([{"name": name, "description": description, "parameters": parameters}])[0]
    return cleaned["name"], cleaned["description"], cleaned["parameters"]


def register_tool(
    *,
    agent: Agent,
    name: str,
    actor: Actor,
    description: str = "",
    parameters: dict[str, object] | None = None,
    position: int | None = None,
) -> tuple[ToolSetting, bool]:
    """Add a tool or replace the one with that name. Returns (tool, changed);
    re-registering the same definition changes nothing."""
    _require_editor(agent=agent, actor=actor)
    name, description, parameters = validate_tool(name=name, description=description, parameters=parameters or {})
    with transaction.atomic():
        Agent.objects.select_for_update().filter(pk=agent.pk).first()
        tool = ToolSetting.objects.filter(agent=agent, name=name).first()
        if tool is None:
            count = ToolSetting.objects.filter(agent=agent).count()
            if count >= MAX_TOOLS:
                raise errors.LimitExceeded(f"An agent may have at most {MAX_TOOLS} tools.", limit=MAX_TOOLS)
            tool = ToolSetting.objects.create(
                agent=agent, name=name, description=description, parameters=parameters,
                position=count if position is None else position,
            )
            action = "tool.add"
        else:
            updates: dict[str, object] = {"description": description, "parameters": parameters}
            if position is not None:
                updates["position"] = position
            changed = [field for field, value in updates.items() if getattr(tool, field) != value]
            if not changed:
                return tool, False
            for field in changed:
                setattr(tool, field, updates[field])
            tool.save(update_fields=changed)
            action = "tool.update"
        bump_config(agent)
        record_event(
            action=action,
            agent=agent,
            actor_user=actor,
            target=tool,
            summary=f"{'Registered' if action == 'tool.add' else 'Updated'} tool {name} of {agent.slug}",
            details={"name": name},
        )
    return tool, True


def record_tool_change(*, tool: ToolSetting, action: str, actor_user: Actor) -> None:
    """For the Django admin, which saves ToolSetting rows itself (after
    validate_tool): audit the change and re-key cached contexts."""
    _require_editor(agent=tool.agent, actor=actor_user)
    bump_config(tool.agent)
    record_event(
        action=action,
        agent=tool.agent,
        actor_user=actor_user,
        target=tool if tool.pk else None,
        summary=f"{action} {tool.name} of {tool.agent.slug} (Django admin)",
        details={"name": tool.name},
    )
