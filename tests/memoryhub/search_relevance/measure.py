"""Recall@5 per class over the seeded history, keyword and semantic
together (the vectors made by the worker's own code first)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from memoryhub import search
from memoryhub.search import embedding
from tests.clock import looking_from
from tests.memoryhub.search_relevance.history import USER, Case

K = 5


def recall(agent, keys: dict[int, str], reference, cases: Sequence[Case],
           misses: list[str] | None = None) -> dict[str, float]:
    shares: dict[str, list[float]] = defaultdict(list)
    for case in cases:
        with looking_from(reference):
            hits = search.search(agent=agent, user_ref=USER, query=case.query, limit=K)
        found = [hit.file if hit.source == "file" else keys.get(hit.entry, "LEAK") for hit in hits]
        assert "LEAK" not in found, case.query
        share = len(set(case.expected) & set(found)) / len(case.expected)
        shares[case.kind].append(share)
        if share < 1 and misses is not None:
            misses.append(f"  {case.kind}: {case.query!r}: expected {case.expected}, got {found}")
    return {kind: sum(values) / len(values) for kind, values in shares.items()}


def embed(agent) -> int:
    return embedding.embed_scope(agent=agent, user_ref=USER) + embedding.embed_scope(agent=agent, user_ref=None)
