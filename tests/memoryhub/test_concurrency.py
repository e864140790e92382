from __future__ import annotations

import threading
from collections import Counter

import pytest
from django.db import connection

from memoryhub.models import MemoryFile
from tests.api_helpers import agent_client
from tests.conftest import needs_postgres
from tests.factories import AgentFactory

WRITERS = 20


@pytest.mark.django_db(transaction=True)
def test_twenty_writers_with_if_match_each_win_exactly_one_version():
    needs_postgres()
    agent = AgentFactory()
    barrier = threading.Barrier(WRITERS)
    won: dict[int, int] = {}
    based_on: dict[int, int] = {}
    failures: list[str] = []

    def writer(n: int) -> None:
        client = clients[n]
        barrier.wait()
        try:
            for _ in range(200):
                current = client.get("/api/v1/memory/MEMORY.md?user=u1").json()["version"]
                response = client.put(
                    "/api/v1/memory/MEMORY.md?user=u1",
                    {"content": f"- written by writer {n}"},
                    format="json",
                    HTTP_IF_MATCH=f'"{current}"',
                )
                if response.status_code == 200:
                    won[n] = response.json()["version"]
                    based_on[n] = current
                    return
                if response.status_code != 412:
                    failures.append(f"writer {n}: {response.status_code} {response.content!r}")
                    return
            failures.append(f"writer {n} never won")
        finally:
            connection.close()

    clients = [agent_client(agent) for _ in range(WRITERS)]
    threads = [threading.Thread(target=writer, args=(n,)) for n in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    assert failures == []
    assert sorted(won.values()) == list(range(1, WRITERS + 1))  # one winner per version
    # No lost update: each winner wrote on top of exactly the version it had read.
    assert all(won[n] == based_on[n] + 1 for n in won)
    history = MemoryFile.history.filter(agent=agent, kind="MEMORY.md").order_by("version")
    assert [row.version for row in history] == list(range(1, WRITERS + 1))
    by_version = {row.version: row.content for row in history}
    for n, version in won.items():  # every 200 is in the history, as that writer wrote it
        assert by_version[version] == f"- written by writer {n}"
    assert Counter(by_version.values()).most_common(1)[0][1] == 1
