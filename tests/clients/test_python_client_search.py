"""memoryhub-client's search hits against a live server: each hit is one
entry, typed — a file's line (`file`, `version`, `line`, `text`) or a log
entry (`session`, `entry`, `role`) — with `matched` and `how`, the same
from the sync and the async client."""

from __future__ import annotations

from typing import Any

import pytest
from memoryhub_client import AsyncMemoryHub, LogEntry, MemoryHub, SearchHit

from memoryhub.models import LogEntry as LogRow
from tests.live import run_async

pytestmark = pytest.mark.django_db(transaction=True)


def _written(hub: MemoryHub) -> tuple[int, int]:
    hub.add_entry("MEMORY.md", "Lives in Lyon.", user="u1")
    hub.add_entry("MEMORY.md", "Order A-99812 was refunded twice.", user="u1")
    session = hub.start_session("u1")
    hub.log(session.id, [LogEntry("user", "Hello there"), LogEntry("user", "Where is order A-99812?")])
    entry = LogRow.objects.get(session_id=session.id, content__contains="A-99812").pk
    return session.id, entry


def _by_source(hits: list[SearchHit]) -> dict[str, SearchHit]:
    return {hit.source: hit for hit in hits}


def test_a_file_hit_and_a_log_hit_carry_their_entry_typed(live_server: Any, key):
    with MemoryHub(live_server.url, key) as hub:
        session, entry = _written(hub)
        hits = hub.search("A-99812", user="u1")
        lines = hub.read("MEMORY.md", user="u1").content.split("\n")
    assert sorted(hit.source for hit in hits) == ["file", "log"]
    file_hit, log_hit = _by_source(hits)["file"], _by_source(hits)["log"]

    assert (file_hit.file, file_hit.version, file_hit.text) == ("MEMORY.md", 2, "Order A-99812 was refunded twice.")
    # `line` numbers the file's lines from 1, blank ones included.
    assert isinstance(file_hit.line, int) and lines[file_hit.line - 1] == file_hit.text
    assert (file_hit.session, file_hit.entry, file_hit.role) == (None, None, None)
    assert "**A-99812**" in file_hit.snippet and file_hit.matched == 1
    assert isinstance(file_hit.how, tuple) and "keyword" in file_hit.how
    assert file_hit.created_at is not None and file_hit.created_at.tzinfo is not None

    assert (log_hit.session, log_hit.entry, log_hit.role) == (session, entry, "user")
    assert (log_hit.file, log_hit.version, log_hit.line, log_hit.text) == (None, None, None, None)
    assert "**A-99812**" in log_hit.snippet and "keyword" in log_hit.how and log_hit.matched == 1
    # Every field is the server's answer, parsed; nothing is lost.
    for hit in hits:
        assert hit.how == tuple(hit.raw["how"]) and hit.score == hit.raw["score"]
        assert hit.matched == hit.raw["matched"]


def test_the_async_client_parses_the_same_hits(live_server: Any, key):
    with MemoryHub(live_server.url, key) as hub:
        _written(hub)
        sync_hits = hub.search("A-99812", user="u1")

    async def run() -> list[SearchHit]:
        async with AsyncMemoryHub(live_server.url, key) as hub:
            return await hub.search("A-99812", user="u1")

    def fields(hits: list[SearchHit]) -> list[tuple[Any, ...]]:
        # The score leans on the hit's age, so two calls a moment apart differ in its last digits.
        return [(h.source, h.file, h.version, h.line, h.text, h.session, h.entry, h.role, h.snippet,
                 h.matched, h.how, h.created_at) for h in hits]

    async_hits = run_async(run)
    assert all(isinstance(hit, SearchHit) for hit in async_hits)
    assert fields(async_hits) == fields(sync_hits) and len(sync_hits) == 2
