"""Recall@5 of memory search over a seeded history (history.py).

For each query, recall@5 is the share of the entries that answer it found
among the first five hits; a kind's figure is the mean over its queries.
Keyword search with stemming must reach 0.9 on every query that shares a
word (or a form of one) with its answer; paraphrases are measured and
reported, not asserted. Run with -s to print the table for
docs/benchmarks.md.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from memoryhub import search, services
from memoryhub.models import LogEntry
from tests.clock import later, looking_from
from tests.factories import AgentFactory
from tests.memoryhub.search_relevance.history import CASES, FILES, LOGS, OTHER_AGENT, OTHER_USER, USER

pytestmark = pytest.mark.django_db

K = 5
TARGET = 0.9


def seed() -> tuple[object, dict[int, str]]:
    agent = AgentFactory(slug="pedalpal")
    for kind, content in FILES.items():
        services.write_memory(agent=agent, kind=kind, user_ref=USER, content=content)
    # One entry every two days, in sessions of ten.
    start = timezone.now()
    keys: dict[int, str] = {}
    session = None
    for n, (key, role, content) in enumerate(LOGS):
        if n % 10 == 0:
            session = services.start_session(agent=agent, user_ref=USER)
        entry = LogEntry.objects.create(
            session=session, agent=agent, user_ref=USER, role=role, content=content,
            created_at=start + timedelta(days=2 * n),
        )
        keys[entry.pk] = key
    for other, user, contents in ((agent, "bob", OTHER_USER), (AgentFactory(), USER, OTHER_AGENT)):
        services.append_log(session=services.start_session(agent=other, user_ref=user),
                            entries=[{"role": "note", "content": c} for c in contents])
    return agent, keys


def test_it_finds_what_the_queries_mean_with_recall_at_5():
    assert len(CASES) >= 50
    agent, keys = seed()
    reference = later(days=2 * len(LOGS))

    recall: dict[str, list[float]] = defaultdict(list)
    misses: list[str] = []
    for case in CASES:
        with looking_from(reference):
            hits = search.search(agent=agent, user_ref=USER, query=case.query, limit=K)
        found = [hit.file if hit.source == "file" else keys.get(hit.entry, "LEAK") for hit in hits]
        assert "LEAK" not in found, case.query
        share = len(set(case.expected) & set(found)) / len(case.expected)
        recall[case.kind].append(share)
        if share < 1 and case.kind != "paraphrase":
            misses.append(f"{case.query!r}: expected {case.expected}, got {found}")

    keyword = [share for kind, shares in recall.items() if kind != "paraphrase" for share in shares]
    report = [f"recall@{K} on {connection.vendor}:"]
    for kind, shares in recall.items():
        report.append(f"  {kind:<11} {sum(shares) / len(shares):.3f}  ({len(shares)} queries)")
    report.append(f"  {'non-paraphrase':<11} {sum(keyword) / len(keyword):.3f}  ({len(keyword)} queries)")
    print("\n".join(report + misses))
    assert sum(keyword) / len(keyword) >= TARGET, "\n".join(report + misses)
