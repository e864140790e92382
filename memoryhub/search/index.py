"""The two rankers over one scope's entries, in Python on both databases.

A scope's entries are the pair's log entries (newest SCAN_MAX of them) and
every non-empty line of the files the agent may search (each line of a
memory file is one entry: a hit names its `line`). Their terms
(memoryhub.search.text) are computed once per distinct text and kept in a
process-wide cache by digest; the database is read for the scope's rows
only, through the (agent, user_ref, id) index.

Keyword ranking, for a hit with `matched` of the query's terms:

    score = Σ weight + 0.7 × b / (1 + b) + 0.3 × recency

    weight of a term = 1 exact (folded), 0.9 stemmed, 0.85 prefix,
        0.8 an id's parts without its punctuated whole, 0.7 inside a
        compound, 0.6 a typo (text.near)
    b = BM25 (k1 1.2, b 0.75) over the scope's entries
    recency = 1 / (1 + age_days / 30)

Vector ranking: cosine of the query's embedding and each entry's
(semantic.py) plus 0.05 × recency, the best VECTOR_DEPTH with a cosine of
at least VECTOR_FLOOR. search() fuses the two by weighted reciprocal rank.
"""

from __future__ import annotations

import math
import re
import threading
from collections import Counter, OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from typing import Any

import numpy as np
from django.db import connection
from django.db.models import Q

from memoryhub.models import AGENT_SCOPED, USER_SCOPED, Agent, EntryVector, LogEntry, MemoryFile
from memoryhub.search import semantic, text

SCAN_MAX = 20_000  # a pair's newest entries read whole; older ones by _older_matches
OLDER_MAX = 500
RELEVANCE_WEIGHT = 0.7
RECENCY_WEIGHT = 0.3
RECENCY_HALF_LIFE_DAYS = 30
K1, B = 1.2, 0.75
VECTOR_DEPTH = 20
VECTOR_FLOOR = 0.2
VECTOR_RECENCY = 0.05
# Tuned on the dev split only (docs/benchmarks.md). The common direction is
# estimated from at most COMMON_SAMPLE of the scope's vectors: it is the
# same direction for a sample, and the cost stays flat for a large pair.
# A scope of a few texts has no common direction to speak of (its first
# principal direction is one of its texts): below COMMON_MIN_TEXTS none is removed.
COMMON_DIRECTION = True
COMMON_SAMPLE = 1024
COMMON_MIN_TEXTS = 50
FEEDBACK_DEPTH = 3
FEEDBACK_WEIGHT = 0.6

EXACT, STEMMED, PREFIX, PARTS, COMPOUND, TYPO = 1.0, 0.9, 0.85, 0.8, 0.7, 0.6


@dataclass
class Doc:
    source: str  # "log" or "file"
    text: str
    created_at: datetime
    digest: str
    user_ref: str
    entry: int | None = None
    session: int | None = None
    role: str | None = None
    file: str | None = None
    version: int | None = None
    line: int | None = None

    @property
    def key(self) -> tuple[object, ...]:
        return ("log", self.entry) if self.source == "log" else ("file", self.file, self.line)


@dataclass
class Analysed:
    counts: Counter[str]
    length: int
    content: str

    @cached_property
    def folded(self) -> str:
        """The text's words folded, one space apart (for phrases only)."""
        return " ".join(text.fold(w.text) for w in text.words(self.content))


class _Cache:
    SIZE = 200_000

    def __init__(self) -> None:
        self._items: OrderedDict[str, Analysed] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, digest: str, content: str) -> Analysed:
        with self._lock:
            found = self._items.get(digest)
            if found is not None:
                self._items.move_to_end(digest)
                return found
        words = text._WORD.findall(content)
        terms = [t for w in words for t in text.terms_of(w)]
        analysed = Analysed(Counter(terms), len(words) or 1, content)
        with self._lock:
            self._items[digest] = analysed
            if len(self._items) > self.SIZE:
                self._items.popitem(last=False)
        return analysed


_cache = _Cache()


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def file_entries(content: str) -> list[tuple[int, str]]:
    """A file's entries: its non-empty lines, numbered from 1."""
    return [(n, line) for n, line in enumerate(content.split("\n"), start=1) if line.strip()]


def _older_matches(*, agent: Agent, user_ref: str, below: int, words: Sequence[str]) -> list[tuple[Any, ...]]:
    """A pair's entries older than the newest SCAN_MAX that hold one of the
    query's words, found through the database's own full-text index (the
    `search_vector` column on PostgreSQL, FTS5 on SQLite, both kept by
    migration 0004): the candidates the Python ranker then ranks like the
    rest. Best effort — the engines' own folding, no typos or vectors."""
    # Folded and as written: PostgreSQL's configurations do not unaccent.
    parts = sorted({p for w in words for form in (text.fold(w), w.casefold()) for p in text._PART.findall(form)})[:20]
    if not parts:
        return []
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            tsquery = " | ".join(parts)  # alphanumeric parts: none of to_tsquery's operators
            cursor.execute(
                "SELECT id, session_id, role, created_at, content FROM memoryhub_logentry "
                "WHERE agent_id = %s AND user_ref = %s AND id < %s AND content <> '' AND search_vector @@ "
                "(to_tsquery('simple', %s) || to_tsquery('english', %s)) ORDER BY id DESC LIMIT %s",
                [agent.pk, user_ref, below, tsquery, tsquery, OLDER_MAX])
        else:
            match = " OR ".join(f'"{p}"' for p in parts)
            cursor.execute(
                "SELECT t.id, t.session_id, t.role, t.created_at, t.content FROM memoryhub_logentry_fts "
                "JOIN memoryhub_logentry AS t ON t.id = memoryhub_logentry_fts.rowid "
                "WHERE memoryhub_logentry_fts MATCH %s AND t.agent_id = %s AND t.user_ref = %s AND t.id < %s "
                "AND t.content <> '' ORDER BY t.id DESC LIMIT %s",
                [match, agent.pk, user_ref, below, OLDER_MAX])
        return [(i, s, r, created if isinstance(created, datetime) else datetime.fromisoformat(created), c)
                for i, s, r, created, c in cursor.fetchall()]


def scope_docs(*, agent: Agent, user_ref: str | None, words: Sequence[str] = ()) -> list[Doc]:
    files = Q(user_ref="", kind__in=sorted(AGENT_SCOPED))
    if user_ref:
        files |= Q(user_ref=user_ref, kind__in=sorted(USER_SCOPED))
    docs: list[Doc] = []
    for kind, owner, version, updated_at, content in (
        MemoryFile.objects.filter(files, agent=agent).exclude(content="")
        .values_list("kind", "user_ref", "version", "updated_at", "content")
    ):
        for line, body in file_entries(content):
            docs.append(Doc("file", body, _aware(updated_at), semantic.content_hash(body), owner, file=kind,
                            version=version, line=line))
    if user_ref:
        rows = list(LogEntry.objects.filter(agent=agent, user_ref=user_ref).exclude(content="")
                    .order_by("-id").values_list("id", "session_id", "role", "created_at", "content")[:SCAN_MAX])
        if len(rows) == SCAN_MAX and words:
            rows += _older_matches(agent=agent, user_ref=user_ref, below=rows[-1][0], words=words)
        for entry, session, role, created_at, content in rows:
            docs.append(Doc("log", content, _aware(created_at), semantic.content_hash(content), user_ref,
                            entry=entry, session=session, role=role))
    return docs


# --- the query -------------------------------------------------------------------------------


@dataclass
class QueryTerm:
    """One term of the query and what counts as matching it: `alternatives`
    maps each index term to its weight; `all_of` lists groups of index terms
    that match only together (an id's parts, a CJK word's bigrams);
    `phrase` is the folded phrase a multi-word term needs."""

    alternatives: dict[str, float] = field(default_factory=dict)
    all_of: list[tuple[tuple[str, ...], float]] = field(default_factory=list)
    phrase: str = ""
    marks: set[str] = field(default_factory=set)  # index terms whose words are marked in snippets


def _cjk_groups(folded: str) -> list[tuple[str, ...]]:
    out = []
    for run in text._CJK.findall(folded):
        out.append((run,) if len(run) == 1 else tuple(run[i : i + 2] for i in range(len(run) - 1)))
    return out


def _word_term(word: str, *, prefix: bool, vocabulary: dict[str, int]) -> QueryTerm:
    term = QueryTerm()
    terms = text.terms_of(word)
    folded = text.fold(word)
    parts = text._PART.findall(folded)
    groups = _cjk_groups(folded)
    if groups:
        for group in groups:
            term.all_of.append((group, EXACT))
            term.marks.update(group)
        return term
    if prefix:
        for candidate in vocabulary:
            if candidate.startswith(folded) and not candidate.startswith(text.STEM_MARK):
                term.alternatives[candidate] = EXACT if candidate == folded else PREFIX
        term.marks.update(term.alternatives)
        return term
    if len(parts) > 1:
        whole = terms[0]
        term.alternatives[whole] = EXACT
        for extra in terms[1:]:
            if not text._PART.fullmatch(extra) and not extra.startswith(text.STEM_MARK):
                term.alternatives[extra] = EXACT  # "2.14.3" inside "v2.14.3", 42,90 as 42.90
        term.all_of.append((tuple(parts), PARTS))
        term.marks.update([whole, *parts])
        return term
    for candidate in terms:
        term.alternatives[candidate] = STEMMED if candidate.startswith(text.STEM_MARK) else EXACT
    term.marks.update(t for t in terms if not t.startswith(text.STEM_MARK))
    if not any(t in vocabulary for t in terms):
        # Not in the scope as written: a compound that holds it, or a typo of a word that is.
        if len(folded) >= 5 and folded.isalpha():
            for candidate in vocabulary:
                if folded in candidate and not candidate.startswith(text.STEM_MARK) and candidate != folded:
                    term.alternatives.setdefault(candidate, COMPOUND)
                    term.marks.add(candidate)
        for candidate in text.near(folded, vocabulary):
            term.alternatives.setdefault(candidate, TYPO)
            term.alternatives.setdefault(text.STEM_MARK + text.stem(candidate), TYPO)
            term.marks.add(candidate)
    return term


def build_query(terms: Sequence[Any], vocabulary: dict[str, int]) -> list[QueryTerm]:
    out = []
    for term in terms:
        if len(term.words) == 1:
            out.append(_word_term(term.words[0], prefix=term.prefix, vocabulary=vocabulary))
            continue
        # A phrase: every word (as written or stemmed), next to each other.
        phrase = QueryTerm(phrase=" ".join(text.fold(w) for w in term.words))
        group = []
        for word in term.words:
            folded = text.fold(word)
            group.append(folded)
            phrase.marks.add(folded)
        phrase.all_of.append((tuple(group), EXACT))
        out.append(phrase)
    return out


def _weight(term: QueryTerm, analysed: Analysed) -> tuple[float, int]:
    """(best weight, occurrences) of one query term in one entry."""
    counts = analysed.counts
    best, tf = 0.0, 0
    for candidate, weight in term.alternatives.items():
        n = counts.get(candidate, 0)
        if n and weight > best:
            best, tf = weight, n
        elif n and weight == best:
            tf += n
    for group, weight in term.all_of:
        if weight > best and all(counts.get(t, 0) for t in group):
            best, tf = weight, min(counts[t] for t in group)
    if term.phrase and best and not re.search(rf"(?<!\S){re.escape(term.phrase)}(?!\S)", analysed.folded):
        return 0.0, 0
    return best, tf


def recency(created_at: datetime, now: datetime) -> float:
    age_days = max((now - created_at).total_seconds(), 0.0) / 86400.0
    return 1.0 / (1.0 + age_days / RECENCY_HALF_LIFE_DAYS)


@dataclass
class Ranked:
    doc: Doc
    score: float
    matched: int
    marks: set[str]
    coverage: float = 1.0  # the share of the query's IDF this keyword hit matched


def analyse(docs: Sequence[Doc]) -> list[Analysed]:
    return [_cache.get(doc.digest, doc.text) for doc in docs]


def vocabulary_of(analysed: Sequence[Analysed]) -> dict[str, int]:
    """Document frequency of each index term in the scope."""
    df: Counter[str] = Counter()
    for item in analysed:
        df.update(item.counts.keys())
    return dict(df)


def keyword_rank(docs: Sequence[Doc], analysed: Sequence[Analysed], query: list[QueryTerm],
                 now: datetime) -> list[Ranked]:
    n = len(docs)
    if not n:
        return []
    avg = sum(a.length for a in analysed) / n
    weights = [[_weight(term, a) for term in query] for a in analysed]
    df = [sum(1 for row in weights if row[i][0]) for i in range(len(query))]
    idf = [math.log(1 + (n - d + 0.5) / (d + 0.5)) for d in df]
    out = []
    for doc, item, row in zip(docs, analysed, weights, strict=True):
        if not any(w for w, _ in row):
            continue
        bm25 = 0.0
        for i, (w, tf) in enumerate(row):
            if w:
                bm25 += idf[i] * w * tf * (K1 + 1) / (tf + K1 * (1 - B + B * item.length / avg))
        total = sum(w for w, _ in row)
        score = total + RELEVANCE_WEIGHT * bm25 / (1 + bm25) + RECENCY_WEIGHT * recency(doc.created_at, now)
        marks = set().union(*(q.marks for q, (w, _) in zip(query, row, strict=True) if w))
        coverage = sum(idf[i] for i, (w, _) in enumerate(row) if w) / (sum(idf) or 1.0)
        out.append(Ranked(doc, score, sum(1 for w, _ in row if w), marks, coverage))
    out.sort(key=lambda r: (-r.score, -r.doc.created_at.timestamp()))
    return out


def vectors_for(*, agent: Agent, docs: Sequence[Doc]) -> dict[tuple[str, str], bytes]:
    owners = sorted({doc.user_ref for doc in docs})
    if not owners:
        return {}
    rows = EntryVector.objects.filter(agent=agent, user_ref__in=owners).values_list("user_ref", "content_hash",
                                                                                   "vector")
    return {(owner, digest): bytes(blob) for owner, digest, blob in rows}


def vector_rank(docs: Sequence[Doc], stored: dict[tuple[str, str], bytes], query_text: str,
                now: datetime) -> list[Ranked]:
    indexed = [(doc, stored[(doc.user_ref, doc.digest)]) for doc in docs if (doc.user_ref, doc.digest) in stored]
    if not indexed:
        return []
    matrix = semantic.unpack_many(blob for _, blob in indexed)
    query = semantic.embed([query_text])[0]
    matrix, query = _without_common_direction(matrix, query)
    cosines = matrix @ query
    near = np.flatnonzero(cosines >= VECTOR_FLOOR)
    if FEEDBACK_DEPTH and len(near):
        # Pseudo-relevance feedback (Rocchio, as RM3 does for words): the
        # query moves toward its nearest entries, which brings in the
        # entries that say the same as those in other words. Only entries
        # near enough count: a query nothing is near ("A-99812" in a scope
        # without it) must not be pulled toward noise.
        nearest = near[np.argsort(-cosines[near])[:FEEDBACK_DEPTH]]
        query = _unit(query + FEEDBACK_WEIGHT * matrix[nearest].mean(axis=0))
        cosines = matrix @ query
    elif not len(near):
        return []
    scored = [
        Ranked(doc, float(c) + VECTOR_RECENCY * recency(doc.created_at, now), 0, set())
        for (doc, _), c in zip(indexed, cosines, strict=True) if c >= VECTOR_FLOOR
    ]
    scored.sort(key=lambda r: (-r.score, -r.doc.created_at.timestamp()))
    return scored[:VECTOR_DEPTH]


def _unit(vector: np.ndarray) -> np.ndarray:
    return vector / max(float(np.linalg.norm(vector)), 1e-9)


def _without_common_direction(matrix: np.ndarray, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """SIF's second step (Arora et al. 2017): remove from every vector its
    part along the scope's first principal direction, which all texts of a
    scope share (the shop's topic, the language) and which tells none of
    them apart. Rows and query come back unit length."""
    if not COMMON_DIRECTION or len(matrix) < COMMON_MIN_TEXTS:
        return matrix, query
    sample = matrix[:: max(1, len(matrix) // COMMON_SAMPLE)]
    # Power iteration from the mean, not numpy's SVD: LAPACK's threads took
    # 200-300 ms of CPU for a 200 × 256 matrix on this loaded machine, these
    # 20 products 0.3 ms (uncentred unit vectors have one dominant direction,
    # so it converges in a few steps).
    direction = sample.mean(axis=0)
    for _ in range(20):
        direction = _unit(sample.T @ (sample @ direction))
    matrix = matrix - np.outer(matrix @ direction, direction)
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-9)
    return matrix, _unit(query - (direction @ query) * direction)


def missing_vectors(docs: Sequence[Doc], stored: dict[tuple[str, str], bytes]) -> bool:
    return any((doc.user_ref, doc.digest) not in stored for doc in docs)


def as_array(values: Sequence[float]) -> np.ndarray:
    return np.asarray(values, dtype=np.float32)
