"""Context assembly: what an agent receives as its system prompt.

`assemble()` is a pure function over rows already loaded; `build_context()`
loads them in two queries; `cached_context()` puts a cache in front, keyed
by per-agent and per-pair stamps that every applied change replaces, so a
new version is served at once and a cache hit costs no SQL at all.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.core.cache import cache
from django.db import transaction

from memoryhub import scanner
from memoryhub.models import (
    SOFT_LIMITED,
    Agent,
    FileKind,
    MemoryFile,
    Strategy,
    ToolSetting,
)
from memoryhub.tokens import counter_for

logger = logging.getLogger(__name__)

ALL_FILES = (FileKind.SOUL, FileKind.ABOUT, FileKind.TOOLS, FileKind.USER, FileKind.MEMORY)
INJECTED: dict[str, tuple[FileKind, ...]] = {
    Strategy.FULL: ALL_FILES,
    Strategy.ON_DEMAND: (),
    Strategy.HYBRID_V1: (FileKind.SOUL, FileKind.ABOUT, FileKind.USER),
    Strategy.HYBRID_V2: (FileKind.SOUL, FileKind.ABOUT, FileKind.TOOLS),
}
HEADINGS = {
    FileKind.SOUL: "## Agent Identity",
    FileKind.ABOUT: "## About",
    FileKind.TOOLS: "## Tool Notes",
    FileKind.USER: "## User Profile",
    FileKind.MEMORY: "## Long-term Memory",
}
# Bumped whenever the assembled format changes, so cached payloads and
# ETags from the old format are never served again.
FORMAT_VERSION = 1
CACHE_TTL = 60 * 60


def on_demand_files(strategy: str) -> tuple[FileKind, ...]:
    injected = INJECTED[strategy]
    return tuple(kind for kind in ALL_FILES if kind not in injected)


def prompt_hint(files: Sequence[str]) -> str:
    if list(files) == [FileKind.USER, FileKind.MEMORY]:
        names = "USER.md and MEMORY.md"
    elif len(files) == 1:
        names = files[0]
    else:
        names = ", ".join(files[:-1]) + " and " + files[-1]
    return f"You have memory tools. Load {names} when needed."


def usage_line(*, kind: str, chars: int, limit: int) -> str:
    percent = chars * 100 // limit if limit else 0
    return f"{kind} — {percent}% · {chars:,}/{limit:,} chars"


# --- serving untrusted memory ------------------------------------------------------

_ENTRY_START = re.compile(r"^\s*(?:[-*+]\s|\d+[.)]\s|#{1,6}\s)")


def split_entries(content: str) -> list[str]:
    """Split markdown into entries: list items, headings and paragraphs.
    Joining the result with "" gives the content back unchanged."""
    entries: list[str] = []
    for line in content.splitlines(keepends=True):
        starts_new = not entries or _ENTRY_START.match(line) or not line.strip() or not entries[-1].strip()
        if starts_new:
            entries.append(line)
        else:
            entries[-1] += line
    return entries


@dataclass(frozen=True)
class Served:
    text: str
    blocked: tuple[str, ...]


def serve_untrusted(content: str) -> Served:
    """Re-scan stored memory before an agent sees it: an entry that a rule
    added after it was stored now catches is served as [BLOCKED: <rule>]."""
    if not content or scanner.scan(content) is None:
        return Served(content, ())
    blocked: list[str] = []
    parts = []
    for entry in split_entries(content):
        finding = scanner.scan(entry)
        if finding is None:
            parts.append(entry)
        else:
            blocked.append(finding.rule)
            parts.append(f"[BLOCKED: {finding.rule}]" + ("\n" if entry.endswith("\n") else ""))
    text = "".join(parts)
    # A pattern that spans entries survives the per-entry pass: block it all.
    whole = scanner.scan(text)
    if whole is not None:
        return Served(f"[BLOCKED: {whole.rule}]", tuple(blocked) + (whole.rule,))
    return Served(text, tuple(blocked))


# --- assembly ------------------------------------------------------------------------------


def tool_section(tools: Iterable[ToolSetting]) -> str:
    blocks = []
    for tool in tools:
        params = json.dumps(tool.parameters or {}, sort_keys=True, ensure_ascii=False)
        blocks.append(f"### {tool.name}\n{tool.description.strip()}\nParameters (JSON Schema): {params}")
    if not blocks:
        return ""
    return "## Tools\n\n" + "\n\n".join(blocks)


def tools_digest(tools: Iterable[ToolSetting]) -> str:
    payload = [[t.name, t.description, t.parameters] for t in tools]
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def assemble(
    *,
    agent: Agent,
    user_ref: str,
    files: dict[str, MemoryFile],
    tools: Sequence[ToolSetting],
    strategy: str | None = None,
) -> dict[str, Any]:
    """Build the context payload from loaded rows. No queries happen here."""
    strategy = strategy or agent.strategy
    counter = counter_for(agent.token_encoding)
    injected = INJECTED[strategy]
    on_demand = on_demand_files(strategy)
    parts: list[str] = []
    sections: list[dict[str, Any]] = []

    def add(name: str, text: str, *, file: str | None = None, version: int | None = None, **extra: Any) -> None:
        parts.append(text)
        sections.append({"name": name, "file": file, "version": version, "tokens": counter.count(text), **extra})

    def add_file(kind: FileKind) -> None:
        row = files.get(kind)
        content = row.content if row else ""
        if not content:
            return
        limit = agent.limit_for(kind)
        served = serve_untrusted(content)
        body = f"{HEADINGS[kind]}\n{served.text.rstrip()}\n\n_{usage_line(kind=kind, chars=len(content), limit=limit)}_"
        if kind in SOFT_LIMITED and len(content) > limit:
            from memoryhub.services import compress_warning

            body += f"\n\n**{compress_warning(kind=kind, chars=len(content), limit=limit)}**"
        add(
            HEADINGS[kind].removeprefix("## "),
            body,
            file=str(kind),
            version=row.version if row else 0,
            chars=len(content),
            limit=limit,
            blocked=list(served.blocked),
        )

    for kind in (FileKind.SOUL, FileKind.ABOUT):
        if kind in injected:
            add_file(kind)
    tools_text = tool_section(tools)
    if tools_text:
        add("Tools", tools_text)
    if FileKind.TOOLS in injected:
        row = files.get(FileKind.TOOLS)
        if row and row.content and tools_text:
            parts.append("---")
        add_file(FileKind.TOOLS)
    for kind in (FileKind.USER, FileKind.MEMORY):
        if kind in injected:
            add_file(kind)
    if on_demand:
        add("Memory hint", prompt_hint([str(k) for k in on_demand]))

    snapshot = {
        "strategy": strategy,
        "files": {str(kind): (files[kind].version if kind in files else 0) for kind in ALL_FILES},
        "tools": tools_digest(tools),
        "format": FORMAT_VERSION,
    }
    system_prompt = "\n\n".join(parts)
    return {
        "agent": agent.slug,
        "user": user_ref,
        "strategy": strategy,
        "system_prompt": system_prompt,
        "sections": sections,
        "tokens": counter.count(system_prompt),
        "token_counter": counter.describe(),
        "on_demand": [str(k) for k in on_demand],
        "snapshot": snapshot,
        "etag": etag_for(agent=agent, user_ref=user_ref, snapshot=snapshot),
    }


def etag_for(*, agent: Agent, user_ref: str, snapshot: dict[str, Any]) -> str:
    material = json.dumps(
        [agent.pk, user_ref, snapshot, agent.token_encoding, agent.updated_at.isoformat()], sort_keys=True
    )
    return hashlib.sha256(material.encode()).hexdigest()[:32]


def load_rows(*, agent: Agent, user_ref: str) -> tuple[dict[str, MemoryFile], list[ToolSetting]]:
    files = {row.kind: row for row in MemoryFile.objects.for_pair(agent, user_ref)}
    tools = list(ToolSetting.objects.filter(agent=agent))
    return files, tools


def build_context(*, agent: Agent, user_ref: str, strategy: str | None = None) -> dict[str, Any]:
    files, tools = load_rows(agent=agent, user_ref=user_ref)
    return assemble(agent=agent, user_ref=user_ref, files=files, tools=tools, strategy=strategy)


# --- cache --------------------------------------------------------------------------------


def _agent_stamp_key(agent_id: int) -> str:
    return f"ctx:stamp:a{agent_id}"


def _pair_stamp_key(agent_id: int, user_ref: str) -> str:
    return f"ctx:stamp:a{agent_id}:u{hashlib.sha256(user_ref.encode()).hexdigest()[:24]}"


# Stamps expire like payloads do: one key per user ever seen must not live
# forever in Redis. An expired stamp only costs the next request a rebuild.
STAMP_TTL = CACHE_TTL


def invalidate(*, agent_id: int, user_ref: str = "") -> None:
    """Replace the stamp after commit, so readers stop using cached payloads
    that predate this change. Random stamps (not counters) mean an evicted
    stamp can never come back with an old payload behind it."""
    key = _pair_stamp_key(agent_id, user_ref) if user_ref else _agent_stamp_key(agent_id)

    def replace() -> None:
        try:
            cache.set(key, secrets.token_hex(8), STAMP_TTL)
        except Exception:
            logger.warning("context cache unavailable; could not invalidate %s", key, exc_info=True)

    transaction.on_commit(replace)


def cached_context(*, agent: Agent, user_ref: str) -> dict[str, Any]:
    """The agent's context through the cache; the database answers when the
    cache is down."""
    agent_key, pair_key = _agent_stamp_key(agent.pk), _pair_stamp_key(agent.pk, user_ref)
    try:
        stamps = cache.get_many([agent_key, pair_key])
        missing = {k: secrets.token_hex(8) for k in (agent_key, pair_key) if k not in stamps}
        if missing:
            cache.set_many(missing, STAMP_TTL)
            stamps.update(missing)
        user_digest = hashlib.sha256(user_ref.encode()).hexdigest()[:24]
        payload_key = (
            f"ctx:v{FORMAT_VERSION}:{stamps[agent_key]}:{stamps[pair_key]}:"
            f"{agent.pk}:{agent.updated_at.timestamp()}:{user_digest}"
        )
        payload = cache.get(payload_key) if not missing else None
    except Exception:
        logger.warning("context cache unavailable; serving from the database", exc_info=True)
        return build_context(agent=agent, user_ref=user_ref)
    if payload is not None:
        return payload  # type: ignore[no-any-return]
    payload = build_context(agent=agent, user_ref=user_ref)
    try:
        cache.set(payload_key, payload, CACHE_TTL)
    except Exception:
        logger.warning("context cache unavailable; could not store %s", payload_key, exc_info=True)
    return payload
