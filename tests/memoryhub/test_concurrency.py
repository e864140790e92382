from __future__ import annotations

import threading
from collections import Counter

import pytest
from django.db import connection

from memoryhub import services
from memoryhub.models import MemoryFile, Role, Source
from tests.api_helpers import agent_client, staff_client
from tests.conftest import needs_postgres
from tests.factories import AgentFactory, staff

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


ROUNDS = 8


@pytest.mark.django_db(transaction=True)
def test_approve_rollback_approve_and_agent_writes_of_one_file_never_answer_500():
    """Each round races, on one file: approving an edit, approving a
    rollback and the agent writing (with and without If-Match). Every answer
    is a success or a 409/412 naming the current version; the file and its
    history stay in step."""
    needs_postgres()
    agent = AgentFactory()
    author, approver_a, approver_b = (staff(agent.workspace, Role.ADMIN) for _ in range(3))
    agent_api = [agent_client(agent) for _ in range(2)]
    approvers = [staff_client(approver_a), staff_client(approver_b)]
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content="- start")
    answers: list[tuple[str, int, dict]] = []
    lock = threading.Lock()

    def call(name: str, do) -> None:  # type: ignore[no-untyped-def]
        try:
            response = do()
            with lock:
                answers.append((name, response.status_code, response.json() if response.content else {}))
        finally:
            connection.close()

    for round_ in range(ROUNDS):
        current = MemoryFile.objects.get(agent=agent, kind="MEMORY.md").version
        services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content=f"- round {round_}")
        edit = services.propose_change(agent=agent, kind="MEMORY.md", user_ref="u1", content=f"- edit {round_}",
                                       source=Source.ADMIN, author_user=author, reason="race")
        rollback = services.propose_rollback(agent=agent, kind="MEMORY.md", user_ref="u1", to_version=current,
                                             actor=author, reason="race")
        version = current + 1
        barrier = threading.Barrier(4)

        def run(name: str, do, barrier: threading.Barrier = barrier) -> threading.Thread:  # type: ignore[no-untyped-def]
            def target() -> None:
                barrier.wait()
                call(name, do)
            return threading.Thread(target=target)

        threads = [
            run("approve", lambda p=edit.pk: approvers[0].post(f"/api/v1/proposals/{p}/approve", {}, format="json")),
            run("rollback", lambda p=rollback.pk: approvers[1].post(f"/api/v1/proposals/{p}/approve", {},
                                                                    format="json")),
            run("write", lambda r=round_: agent_api[0].put("/api/v1/memory/MEMORY.md?user=u1",
                                                           {"content": f"- agent {r}"}, format="json")),
            run("write-if-match", lambda r=round_, v=version: agent_api[1].put(
                "/api/v1/memory/MEMORY.md?user=u1", {"content": f"- agent if-match {r}"}, format="json",
                HTTP_IF_MATCH=f'"{v}"')),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)

    assert [a for a in answers if a[1] >= 500] == []
    for name, status, body in answers:
        assert status in (200, 409, 412), (name, status, body)
        if status in (409, 412):
            assert body["error"]["code"] in ("stale_proposal", "version_conflict")
            assert isinstance(body["error"]["current_version"], int)
    row = MemoryFile.objects.get(agent=agent, kind="MEMORY.md")
    history = list(MemoryFile.history.filter(id=row.pk).order_by("history_id"))
    assert [h.version for h in history] == list(range(1, row.version + 1))
    assert (history[-1].content, history[-1].version) == (row.content, row.version)


@pytest.mark.django_db(transaction=True)
def test_a_decision_in_flight_locks_its_file_and_proposal_not_the_agent():
    """select_for_update() with select_related() locks the joined agent and
    workspace rows too; every audit or history insert of that agent then
    waits on them (a foreign-key check) — the lock behind the issue's 500s.
    Only the proposal and its file may be locked."""
    from django.db import transaction

    from memoryhub.services import proposals

    needs_postgres()
    agent = AgentFactory()
    services.write_memory(agent=agent, kind="SOUL.md", content="v1")
    pending = services.propose_change(agent=agent, kind="SOUL.md", content="v2", source=Source.CONSOLIDATION)
    locked, release = threading.Event(), threading.Event()

    def decide_slowly() -> None:
        try:
            with transaction.atomic():
                proposals._lock_file_then_proposal(pending.pk)
                locked.set()
                release.wait(30)
        finally:
            connection.close()

    holder = threading.Thread(target=decide_slowly)
    holder.start()
    try:
        assert locked.wait(10)
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '2s'")
        # Another file of the same agent: its history and audit rows reference the agent.
        result = services.write_memory(agent=agent, kind="ABOUT.md", content="about")
    finally:
        release.set()
        holder.join(30)
        connection.close()
    assert result.applied and result.version == 1
