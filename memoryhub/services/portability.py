"""Portable agents: one agent written out as a versioned JSON document and
read back in another workspace or installation (docs/compliance.md, "Agent
files").

What travels: the agent's name, description and every setting (strategy,
write policy, backend, limits, gate, budget, staleness, token encoding),
its tools, the full history of its persona files (SOUL.md, ABOUT.md,
TOOLS.md) and, when asked, its users' USER.md and MEMORY.md (the current
version, or every version). What does not: sessions and logs, proposals,
keys, withheld state — they belong to the installation that served them.

History rows are append-only and never back-dated, so an import writes each
exported version as a new version of a new file, in order, with its
original source and reason; the original author and time go into the
`agent.import` audit event, and an export of an imported agent reports them
again (with `imported_at`), so an agent moved twice keeps its provenance.
An import is all or nothing: one transaction, and every version passes the
write pipeline's checks (services._write.screen: the agent's limits, today's
scanner, the workspace's personal-data policy); one refused version refuses
the whole document.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from django.db import transaction
from django.utils import timezone

from memoryhub import errors, jsonstream
from memoryhub.actors import Actor, is_system
from memoryhub.models import Agent, AuditEvent, MemoryFile, Source, Workspace
from memoryhub.services._write import apply_version, lock_file, screen
from memoryhub.services.access import require_admin, user_or_none
from memoryhub.services.agents import AGENT_SETTINGS, create_agent, ensure_workspace
from memoryhub.services.audit import record_event
from memoryhub.services.limits import validate_content, validate_target
from memoryhub.services.tools import replace_tools

AGENT_FORMAT = "memoryhub.agent"
AGENT_FORMAT_VERSION = 1
USERS_NONE, USERS_CURRENT, USERS_HISTORY = "none", "current", "history"
USERS_CHOICES = (USERS_NONE, USERS_CURRENT, USERS_HISTORY)
_HISTORY_REASON_MAX = 100
_PROVENANCE_TEXT_MAX = 255


# --- export --------------------------------------------------------------------------------


def _author(row: Any) -> str:
    if row.history_user_id:
        return f"user:{row.history_user.get_username()}"
    if row.actor_agent_id:
        return f"agent:{row.actor_agent.slug}"
    return "system"


def _provenance(agent: Agent) -> dict[tuple[str, str, int], dict[str, object]]:
    """(file, user, version) → the original author and time of versions an
    import wrote, from the agent's import events."""
    found: dict[tuple[str, str, int], dict[str, Any]] = {}
    for details in AuditEvent.objects.filter(action="agent.import", agent=agent).values_list("details", flat=True):
        for item in (details or {}).get("versions", []):
            found[(item["file"], item.get("user") or "", item["version"])] = item
    return found


def _version_entry(row: Any, provenance: dict[tuple[str, str, int], dict[str, object]]) -> dict[str, object]:
    entry = {
        "version": row.version,
        "content": row.content,
        "source": row.source,
        "reason": row.history_change_reason or "",
        "author": _author(row),
        "created_at": row.history_date,
    }
    origin = provenance.get((row.kind, row.user_ref, row.version))
    if origin is not None:
        entry.update(author=origin["author"], created_at=origin["created_at"], imported_at=row.history_date)
    return entry


def _file_entries(agent: Agent, users: str) -> Iterator[dict[str, object]]:
    provenance = _provenance(agent)
    rows = MemoryFile.history.filter(agent=agent).select_related("history_user", "actor_agent")
    if users == USERS_NONE:
        rows = rows.filter(user_ref="")
    ordered = rows.order_by("user_ref", "kind", "version", "history_id").iterator(chunk_size=200)
    for (user_ref, kind), group in itertools.groupby(ordered, key=lambda row: (row.user_ref, row.kind)):
        versions = [_version_entry(row, provenance) for row in group]
        if user_ref and users == USERS_CURRENT:
            if not versions[-1]["content"]:
                continue  # absent now: nothing current to carry
            versions = versions[-1:]
        yield {"file": kind, "user": user_ref or None, "versions": versions}


def _settings_of(agent: Agent) -> dict[str, object]:
    return {field: getattr(agent, field) for field in AGENT_SETTINGS if field not in ("name", "description")}


def export_agent(*, agent: Agent, actor: Actor, users: str = USERS_NONE) -> Iterator[str]:
    """The agent as a JSON document, in pieces (its files' history is read
    as it is written). Admins of the agent's workspace, or the shell."""
    if users not in USERS_CHOICES:
        raise errors.Invalid(f"users must be one of {', '.join(USERS_CHOICES)}.", field="users")
    require_admin(user=actor, workspace=agent.workspace_id, action="export agents")
    record_event(
        action="agent.export",
        agent=agent,
        actor_user=actor,
        target=agent,
        summary=f"Exported agent {agent.slug}" + ("" if users == USERS_NONE else f" with its users' files ({users})"),
        details={"format_version": AGENT_FORMAT_VERSION, "users": users},
    )
    header = {
        "format": AGENT_FORMAT,
        "version": AGENT_FORMAT_VERSION,
        "exported_at": timezone.now(),
        "source": {"agent": agent.slug, "workspace": agent.workspace.slug},
        "users": users,
        "agent": {"slug": agent.slug, "name": agent.name, "description": agent.description,
                  "settings": _settings_of(agent)},
        "tools": [{"name": t.name, "description": t.description, "parameters": t.parameters}
                  for t in agent.tools.order_by("position", "name")],
    }
    return jsonstream.stream_object(header, [("files", _file_entries(agent, users))])


# --- import ----------------------------------------------------------------------------------


def _field(container: dict[str, object], key: str, kind: type | tuple[type, ...], where: str, *,
           optional: bool = False) -> Any:
    if key not in container:
        if optional:
            return None
        raise errors.Invalid(f"The agent file has no {where}.{key}.", field=f"{where}.{key}")
    value = container[key]
    if optional and value is None:
        return None
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise errors.Invalid(f"{where}.{key} has the wrong type.", field=f"{where}.{key}")
    return value


def _short_text(value: object, where: str, max_length: int) -> str:
    text = validate_content(value, field=where)
    if len(text) > max_length:
        raise errors.Invalid(f"{where} has at most {max_length} characters.", field=where)
    return text


def _read_versions(entry: dict[str, object], where: str) -> list[dict[str, object]]:
    versions = _field(entry, "versions", list, where)
    if not versions:
        raise errors.Invalid(f"{where}.versions is empty.", field=f"{where}.versions")
    cleaned = []
    for index, version in enumerate(versions):
        at = f"{where}.versions[{index}]"
        if not isinstance(version, dict):
            raise errors.Invalid(f"{at} must be an object.", field=at)
        source = _field(version, "source", str, at)
        if source not in Source.values:
            raise errors.Invalid(f"{at}.source must be one of {', '.join(Source.values)}.", field=f"{at}.source")
        cleaned.append({
            "number": _field(version, "version", int, at),
            "content": validate_content(_field(version, "content", str, at), field=f"{at}.content"),
            "source": source,
            "reason": _short_text(_field(version, "reason", str, at), f"{at}.reason", _HISTORY_REASON_MAX),
            "author": _short_text(_field(version, "author", str, at), f"{at}.author", _PROVENANCE_TEXT_MAX),
            "created_at": _short_text(_field(version, "created_at", str, at), f"{at}.created_at", 64),
        })
    return cleaned


def read_document(document: object) -> dict[str, Any]:
    """The document's parts, typed and checked, or an Invalid naming the
    first thing wrong with it. Content rules (limits, scanner) come later,
    against the imported agent's settings."""
    if not isinstance(document, dict):
        raise errors.Invalid("An agent file is a JSON object.")
    if document.get("format") != AGENT_FORMAT:
        raise errors.Invalid(f"This is not a MemoryHub agent file (format {AGENT_FORMAT!r} expected).",
                             field="format")
    version = document.get("version")
    if version != AGENT_FORMAT_VERSION:
        raise errors.Invalid(
            f"Agent file version {version!r} is not one this installation reads (it reads {AGENT_FORMAT_VERSION}).",
            field="version",
        )
    agent = _field(document, "agent", dict, "document")
    settings = _field(agent, "settings", dict, "agent")
    source = _field(document, "source", dict, "document")
    files = []
    seen: set[tuple[str, str]] = set()
    for index, entry in enumerate(_field(document, "files", list, "document")):
        where = f"files[{index}]"
        if not isinstance(entry, dict):
            raise errors.Invalid(f"{where} must be an object.", field=where)
        kind, user_ref = validate_target(kind=_field(entry, "file", str, where),
                                         user_ref=_field(entry, "user", str, where, optional=True))
        if (kind, user_ref) in seen:
            raise errors.Invalid(f"{where} repeats {kind}" + (f" of {user_ref}" if user_ref else "") + ".",
                                 field=where)
        seen.add((kind, user_ref))
        files.append({"kind": kind, "user_ref": user_ref, "versions": _read_versions(entry, where)})
    return {
        "slug": _field(agent, "slug", str, "agent"),
        "name": _field(agent, "name", str, "agent"),
        "description": _field(agent, "description", str, "agent"),
        "settings": settings,
        "tools": _field(document, "tools", list, "document"),
        "files": files,
        "users": document.get("users", USERS_NONE),
        "source": {"agent": str(source.get("agent", ""))[:64], "workspace": str(source.get("workspace", ""))[:64],
                   "exported_at": str(document.get("exported_at", ""))[:64]},
    }


def _target_workspace(*, actor: Actor, workspace: Workspace | str | None, fallback: str) -> Workspace:
    if isinstance(workspace, Workspace):
        return workspace
    slug = workspace or fallback
    if is_system(actor):
        return ensure_workspace(slug=slug)[0]
    found = Workspace.objects.filter(slug=slug).first()
    if found is None:
        raise errors.NotFound(f"There is no workspace {slug!r}.", field="workspace")
    return found


def import_agent(*, document: object, actor: Actor, workspace: Workspace | str | None = None,
                 slug: str | None = None) -> Agent:
    """A new agent from an agent file, in `workspace` (default: the one it
    came from, created at the shell if missing) under `slug` (default: its
    own). An admin of the workspace may import too, but not settings that
    weaken the gate (those are governed changes): import at the shell, or
    import and request the change. All or nothing."""
    parts = read_document(document)
    with transaction.atomic():
        target = _target_workspace(actor=actor, workspace=workspace, fallback=parts["source"]["workspace"])
        require_admin(user=actor, workspace=target.pk, action="import agents here")
        # Provisioning, not a change of an agent in service: the shell may
        # bring any settings; an admin is refused those weaker than a new
        # agent's defaults (services.agents.create_agent).
        agent = create_agent(workspace=target, slug=slug or parts["slug"], actor=actor, name=parts["name"],
                             description=parts["description"], settings=parts["settings"])
        replace_tools(agent=agent, tools=parts["tools"], actor=actor)
        provenance = _write_files(agent=agent, files=parts["files"], actor=actor)
        record_event(
            action="agent.import",
            agent=agent,
            actor_user=actor,
            target=agent,
            summary=f"Imported agent {agent.slug} from {parts['source']['agent'] or 'an agent file'} "
            f"({len(parts['files'])} file(s), {len(provenance)} version(s))",
            details={"format_version": AGENT_FORMAT_VERSION, "source": parts["source"], "users": parts["users"],
                     "tools": len(parts["tools"]), "versions": provenance},
        )
    return agent


def _write_files(*, agent: Agent, files: list[dict[str, Any]], actor: Actor) -> list[dict[str, object]]:
    """Write every version through the memory service, in order; returns the
    provenance of each written version for the import's audit event."""
    provenance: list[dict[str, object]] = []
    for entry in files:
        kind, user_ref = entry["kind"], entry["user_ref"]
        label = kind + (f" of {user_ref}" if user_ref else "")
        for version in entry["versions"]:
            file = lock_file(agent=agent, kind=kind, user_ref=user_ref)
            try:
                # The write pipeline's checks, personal-data policy included:
                # an import keeps no more than a write by the agent would.
                screened = screen(agent=agent, kind=kind, content=version["content"])
            except errors.DomainError as exc:
                raise type(exc)(f"{label} version {version['number']}: {exc.detail}", **exc.extra) from exc
            if (file.content if file else "") == screened.content:
                continue  # a write that changes nothing is not stored
            # Provisioning writes the document's history as it is: versions,
            # not proposals, whatever the new agent's write policy.
            file = apply_version(agent=agent, kind=kind, user_ref=user_ref, file=file, content=screened.content,
                                 source=version["source"], reason=version["reason"], actor_user=user_or_none(actor))
            provenance.append({"file": kind, "user": user_ref or None, "version": file.version,
                               "original_version": version["number"], "author": version["author"],
                               "created_at": version["created_at"],
                               **({"pii": [f["rule"] for f in screened.pii]} if screened.pii else {})})
    return provenance

