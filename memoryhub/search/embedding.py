"""Computing and forgetting vectors (run by the worker and the backfill
command; never on a write's request path)."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Q

from memoryhub.models import Agent, EntryVector
from memoryhub.search import index, semantic

BATCH = 512


def embed_scope(*, agent: Agent, user_ref: str | None) -> int:
    """Embed each distinct text of the scope that has no vector yet, once
    per digest; drop the scope's vectors no current text has any more (a
    text edited away, an entry redacted). Returns how many were made."""
    docs = index.scope_docs(agent=agent, user_ref=user_ref)
    owners = {"", *([user_ref] if user_ref else [])}
    stored = set(EntryVector.objects.filter(agent=agent, user_ref__in=owners)
                 .values_list("user_ref", "content_hash"))
    wanted: dict[tuple[str, str], str] = {}
    for doc in docs:
        wanted.setdefault((doc.user_ref, doc.digest), doc.text)
    missing = [(key, body) for key, body in wanted.items() if key not in stored]
    made = 0
    for start in range(0, len(missing), BATCH):
        chunk = missing[start : start + BATCH]
        vectors = semantic.embed([body for _, body in chunk])
        EntryVector.objects.bulk_create(
            [EntryVector(agent=agent, user_ref=owner, content_hash=digest, vector=semantic.pack(vector))
             for ((owner, digest), _), vector in zip(chunk, vectors, strict=True)],
            ignore_conflicts=True,
        )
        made += len(chunk)
    if len(docs) < index.SCAN_MAX:
        stale = stored - set(wanted)
        if stale:
            forget(agent_id=agent.pk, keys=stale)
    return made


def forget(*, agent_id: int, keys: Iterable[tuple[str, str]]) -> int:
    """Delete the vectors of these (user_ref, digest) pairs of one agent."""
    condition = Q()
    for owner, digest in keys:
        condition |= Q(user_ref=owner, content_hash=digest)
    if not condition:
        return 0
    return int(EntryVector.objects.filter(condition, agent_id=agent_id).delete()[0])


def forget_texts(*, rows: Iterable[tuple[int, str, str]]) -> int:
    """Delete the vectors of these (agent_id, user_ref, text) rows' texts:
    redaction calls this with the text it is about to replace. Every
    embedding version's digest, since a scope not embedded again since a
    change of pooling still holds the older vectors."""
    by_agent: dict[int, set[tuple[str, str]]] = {}
    for agent_id, owner, body in rows:
        by_agent.setdefault(agent_id, set()).update((owner, digest) for digest in semantic.content_hashes(body))
    return sum(forget(agent_id=agent_id, keys=keys) for agent_id, keys in by_agent.items())


def forget_redacted(what: str, ids: list[int]) -> int:
    """Before services.redaction replaces these rows' text: delete the
    vectors of that text (a log entry's, or each entry of a served file)."""
    from memoryhub.models import LogEntry, MemoryFile

    rows: list[tuple[int, str, str]] = []
    if what == "log":
        rows = list(LogEntry.objects.filter(pk__in=ids).values_list("agent_id", "user_ref", "content"))
    elif what == "served":
        for agent_id, owner, content in MemoryFile.objects.filter(pk__in=ids).values_list(
                "agent_id", "user_ref", "content"):
            rows += [(agent_id, owner, line) for _, line in index.file_entries(content)]
    return forget_texts(rows=rows)
