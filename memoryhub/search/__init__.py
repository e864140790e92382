"""Search over an agent's memory files and one pair's session logs.

Scope is fixed by the code, never by the caller: the agent's own
agent-scoped files always; with a user, that pair's USER.md/MEMORY.md and
session logs. The scope is read with indexed queries and ranked here, in
Python, so SQLite and PostgreSQL give the same answers by construction.
A file hit names its entry (the line); a log hit names its `entry`, and
`read_entry` returns that entry whole, within the same scope.

Query language (parse_query). Words are letters and digits, ids and
numbers keep their punctuation (`A-99812`, `42.90`, `v2.14.3`) and are
indexed whole and by their parts. A word ending in `*` is a prefix (at
least two letters before the star); "double quotes" make a phrase. Words
are ORed. English, German, Spanish and French stop words are dropped
unless the query has nothing else. Nothing in a query reaches an engine's
own syntax.

Ranking is hybrid (issue 21; docs/architecture.md, "Search"):
- keyword (`text.py`, `index.py`): folded, lightly stemmed terms, typo and
  compound matches, BM25 within the scope plus recency:
  `score = Σ term weights + 0.7·b/(1+b) + 0.3·recency`;
- semantic (`semantic.py`, `minilm.py`): all-MiniLM-L6-v2 sentence
  vectors made by the worker, compared by cosine within the scope after
  the scope's common direction is removed, the query pulled toward its
  nearest entries;
- fused by weighted reciprocal rank (k = 60); a keyword hit weighs by the
  share of the query it covers. Each hit says `how` it was found.

Snippets and entries are untrusted text on their way to a model: they pass
the scanner like served memory does. Logs are not scanned on write, so this
is the only thing between a secret pasted into a log and an agent that
searches for it.
"""

from __future__ import annotations

import hashlib
import re
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from memoryhub import context, errors
from memoryhub.models import Agent, LogEntry
from memoryhub.search import index
from memoryhub.search import text as _text
from memoryhub.services.limits import validate_user_ref

MAX_QUERY_CHARS = 200
MAX_LIMIT = 50
MIN_PREFIX_CHARS = 2
SNIPPET_CHARS = 200
MARK = "**"
RELEVANCE_WEIGHT = 0.7
RECENCY_WEIGHT = 0.3
RECENCY_HALF_LIFE_DAYS = 30
RRF_K = 60

# A word is what both engines index: letters and digits. PostgreSQL's parser
# and unicode61 both split at "_", so \w (which keeps it) would not do.
_WORD = re.compile(r"[^\W_]+")
_TOKEN = re.compile(r"\"([^\"]*)\"\*?|([^\W_]+(?:[.\-/:,+'’@][^\W_]+)*)(\*?)|(\*)")

# Migration 0004's stored column: to_tsvector('english', content) ||
# to_tsvector('simple', content); GIN-indexed on memoryhub_logentry.
_PG_VECTOR = "{alias}.search_vector"
# ShortWord=0: the default (3) trims words of up to three letters from both
# ends of a headline, and memory is full of short facts ("in EUR", "Bob").
_PG_HEADLINE_OPTIONS = "StartSel=**, StopSel=**, MaxFragments=1, MaxWords=30, MinWords=8, ShortWord=0"

# PostgreSQL's english.stop (what its 'english' configuration drops), and the
# commonest function words of German, Spanish and French, less those that
# are also English content words ("die", "son", "con", "war", "hat").
_STOP_WORDS = """
    i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers
    herself it its itself they them their theirs themselves what which who whom this that these those am is
    are was were be been being have has had having do does did doing a an the and but if or because as until
    while of at by for with about against between into through during before after above below to from up down
    in out on off over under again further then once here there when where why how all any both each few more
    most other some such no nor not only own same so than too very s t can will just don should now

    der das den dem des ein eine einen einem einer eines und oder aber ich du er sie es wir ihr mich mir dich
    dir uns euch ist sind bist soll sollte kann wie wer wo von zu zum zur im auf für bei nicht auch noch nur
    als

    el la los las un una unos unas y o de del al en por para que qué como cómo es está están fue se su sus mi
    mis tu lo le les te nos yo él ella hay muy

    le les une des du et ou au aux avec pour par sur dans est sont je il elle nous vous ils elles ce cette ces
    qui quoi comment mon ma mes sa ses ne pas
"""
STOP_WORDS = frozenset(_STOP_WORDS.split())


@dataclass(frozen=True)
class Term:
    """One unit of a query: a word, a prefix (`word*`) or a phrase."""

    words: tuple[str, ...]
    prefix: bool = False

    @property
    def fts5(self) -> str:
        # Words hold no double quote, so each string stays one FTS5 string.
        return f'"{" ".join(self.words)}"' + ("*" if self.prefix else "")

    @property
    def tsquery(self) -> str:
        # Words hold none of to_tsquery's operators (& | ! ( ) : * < > ' \).
        return " <-> ".join(self.words) + (":*" if self.prefix else "")


@dataclass(frozen=True)
class Query:
    terms: tuple[Term, ...]

    @property
    def words(self) -> tuple[str, ...]:
        return tuple(word for term in self.terms for word in term.words)


def parse_query(text: str) -> Query:
    """The query's terms, or Invalid with a sentence saying what to change."""
    if not isinstance(text, str) or not text.strip():
        raise errors.Invalid(f"Pass a search query as ?q=… (1–{MAX_QUERY_CHARS} characters).", field="q")
    if len(text) > MAX_QUERY_CHARS:
        raise errors.Invalid(
            f"The query has {len(text)} characters; keep it to {MAX_QUERY_CHARS} (a few words find more).", field="q"
        )
    if any(unicodedata.category(char) == "Cc" and char not in "\t\n\r" for char in text):
        # PostgreSQL refuses NUL in text outright; no other control character is a word either.
        raise errors.Invalid("The query contains a control character; send plain text.", field="q")
    if text.count('"') % 2:
        # A stray quote (5" screen, a typo) is punctuation, not a phrase: the
        # last one, which pairs with nothing, is read as a space.
        cut = text.rfind('"')
        text = f"{text[:cut]} {text[cut + 1:]}"

    terms: list[Term] = []
    for match in _TOKEN.finditer(text):
        phrase, word, star, lone_star = match.groups()
        if lone_star:
            continue
        if phrase is not None:
            words = tuple(w.text for w in _text.words(phrase))
            if words:
                terms.append(Term(words))
        elif star and len(word) < MIN_PREFIX_CHARS:
            raise errors.Invalid(
                f"A prefix needs at least {MIN_PREFIX_CHARS} letters before the *, like inv*.", field="q"
            )
        else:
            terms.append(Term((word,), prefix=bool(star)))
    if not terms:
        if "*" in text:
            raise errors.Invalid("A * alone matches everything; put a few letters before it, like inv*.", field="q")
        raise errors.Invalid("The query has no words to search for, only punctuation or symbols.", field="q")

    unique: dict[tuple[tuple[str, ...], bool], Term] = {}
    for term in terms:
        unique.setdefault((tuple(w.casefold() for w in term.words), term.prefix), term)
    kept = [t for t in unique.values() if len(t.words) > 1 or t.prefix or t.words[0].casefold() not in STOP_WORDS]
    return Query(tuple(kept or unique.values()))


# --- hits -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SearchHit:
    source: str  # "file" or "log"
    snippet: str
    score: float
    created_at: datetime
    file: str | None = None
    session: int | None = None
    version: int | None = None
    entry: int | None = None
    role: str | None = None
    matched: int = 0
    line: int | None = None
    text: str | None = None  # a file hit's entry (its line), served
    how: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, object]:
        data: dict[str, object] = {"source": self.source}
        if self.file is not None:
            data["file"] = self.file
            data["version"] = self.version
            data["line"] = self.line
            data["text"] = self.text
        if self.session is not None:
            data["session"] = self.session
            data["entry"] = self.entry
            data["role"] = self.role
        data["snippet"] = self.snippet
        data["score"] = self.score
        data["matched"] = self.matched
        data["how"] = list(self.how)
        # The same spelling DRF gives every other timestamp in the API.
        data["created_at"] = _iso(self.created_at)
        return data

    @property
    def key(self) -> tuple[object, ...]:
        """The same hit's identity in every ranking: within one scope a file
        kind is one file and a line one of its entries; entry ids are unique."""
        return ("file", self.file, self.line) if self.source == "file" else ("log", self.entry)


@dataclass(frozen=True)
class Candidate:
    """A match before its snippet is made; `content` is the entry's full
    text, which the scanner judges whole, and `marks` the index terms whose
    words the snippet marks."""

    hit: SearchHit
    content: str
    marks: frozenset[str] = frozenset()
    weight: float = 1.0  # this hit's share of its ranking's weight in the fusion


# The weight of each ranking in the fusion (tuned on the dev split only;
# docs/benchmarks.md lists what was tried in both rounds).
KEYWORD_WEIGHT = 1.0
VECTOR_WEIGHT = 1.0
FUSE_DEPTH = 100
# A keyword hit's weight in the fusion is its coverage (the share of the
# query's IDF it matched) to this power: a hit that has one word of four
# ("replaced" for "seat replaced with a more comfortable one") is weak
# evidence, and the semantic ranking should decide. With every term
# matched, as for ids, typos and exact queries, nothing changes.
COVERAGE_POWER = 2.0


def search(*, agent: Agent, user_ref: str | None, query: str, limit: int = 10) -> list[SearchHit]:
    parsed = parse_query(query)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise errors.Invalid(f"limit must be a whole number from 1 to {MAX_LIMIT}.", field="limit")
    if user_ref:
        user_ref = validate_user_ref(user_ref)
    now = timezone.now()
    docs = index.scope_docs(agent=agent, user_ref=user_ref or None, words=parsed.words)
    analysed = index.analyse(docs)
    terms = index.build_query(parsed.terms, index.vocabulary_of(analysed))
    # Only the first ranks of either list can reach the top `limit` after fusion.
    keyword = [_candidate(r, "keyword") for r in index.keyword_rank(docs, analysed, terms, now)[:FUSE_DEPTH]]
    stored = index.vectors_for(agent=agent, docs=docs)
    if index.missing_vectors(docs, stored):
        _queue_embedding(agent, user_ref or "", docs)
    # The query as written, function words included (they carry meaning:
    # "not", "before", "how much"), without the keyword syntax: the encoder
    # reads "mudguard*" as another word than "mudguard".
    semantic_text = _without_operators(query)
    vector = [_candidate(r, "semantic") for r in index.vector_rank(docs, stored, semantic_text, now)]
    ranked = fuse([keyword, vector], weights=(KEYWORD_WEIGHT, VECTOR_WEIGHT)) if vector else keyword
    return [_with_safe_snippet(candidate) for candidate in ranked[:limit]]


def _without_operators(query: str) -> str:
    return " ".join(query.replace("*", " ").replace('"', " ").split()) or query


def _candidate(ranked: index.Ranked, how: str) -> Candidate:
    doc = ranked.doc
    hit = SearchHit(
        source=doc.source, snippet="", score=ranked.score, created_at=doc.created_at, file=doc.file,
        session=doc.session, version=doc.version, entry=doc.entry, role=doc.role, matched=ranked.matched,
        line=doc.line, how=(how,),
    )
    return Candidate(hit=hit, content=doc.text, marks=frozenset(ranked.marks),
                     weight=ranked.coverage ** COVERAGE_POWER)


_queued: set[tuple[int, str]] = set()


def _queue_embedding(agent: Agent, user_ref: str, docs: Sequence[index.Doc]) -> None:
    """Ask the worker for the scope's missing vectors, once per process and
    scope until it has run (tasks.embed_scope_task clears the mark). The
    message names the scope by one of its rows, never by the user's
    reference: a queued message must not outlive an erasure with it."""
    from memoryhub.search import tasks

    key = (agent.pk, user_ref)
    if key in _queued:
        return
    anchor = next((d for d in docs if d.source == "log"), None)
    args = (agent.pk, "log", anchor.entry) if anchor is not None else (agent.pk, "files", 0)
    queue = getattr(settings, "MEMORYHUB_SEARCH_QUEUE", "") or None

    def send() -> None:
        # Marked when the message is sent, not when it is planned: a
        # transaction that rolls back sends nothing, and a mark left behind
        # would keep this process from ever asking for the scope again.
        if key not in _queued:
            _queued.add(key)
            tasks.embed_scope_task.apply_async(args, queue=queue)

    transaction.on_commit(send)


def fuse(rankings: Sequence[Sequence[Candidate]], *, k: int = RRF_K,
         weights: Sequence[float] | None = None) -> list[Candidate]:
    """Weighted reciprocal rank fusion: each hit scores Σ w / (k + rank)
    over the rankings that have it (rank from 1, each ranking best first),
    so no ranking's score scale needs to match another's. The first
    ranking's candidate (matched terms, marks) represents the hit; newer
    first among equal scores."""
    weights = weights or [1.0] * len(rankings)
    fused: dict[tuple[Any, ...], float] = {}
    first: dict[tuple[Any, ...], Candidate] = {}
    how: dict[tuple[Any, ...], tuple[str, ...]] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, candidate in enumerate(ranking, start=1):
            key = candidate.hit.key
            fused[key] = fused.get(key, 0.0) + weight * candidate.weight / (k + rank)
            first.setdefault(key, candidate)
            how[key] = tuple(dict.fromkeys((*how.get(key, ()), *candidate.hit.how)))
    out = [replace(first[key], hit=replace(first[key].hit, score=score, how=how[key])) for key, score in fused.items()]
    return sorted(out, key=lambda c: (-c.hit.score, -c.hit.created_at.timestamp()))


# --- reading one entry whole -----------------------------------------------------------------


@dataclass(frozen=True)
class EntryView:
    id: int
    session: int
    role: str
    content: str
    created_at: datetime
    blocked: tuple[str, ...]

    def as_dict(self) -> dict[str, object]:
        return {
            "entry": self.id,
            "session": self.session,
            "role": self.role,
            "content": self.content,
            "created_at": _iso(self.created_at),
            "blocked": list(self.blocked),
        }


def read_entry(*, agent: Agent, user_ref: str, entry_id: int) -> EntryView:
    """A log entry of this agent and user, whole and re-scanned. Another
    agent's or user's entry is as absent as one that never existed."""
    user_ref = validate_user_ref(user_ref)
    # Ids are 64-bit: a larger number names nothing (and would overflow the driver).
    entry = None
    if 1 <= entry_id < 2**63:
        entry = LogEntry.objects.filter(pk=entry_id, agent=agent, user_ref=user_ref).first()
    if entry is None:
        raise errors.NotFound(f"There is no log entry {entry_id} for this agent and user.")
    served = context.serve_untrusted(entry.content)
    return EntryView(
        id=entry.pk, session=entry.session_id, role=entry.role, content=served.text, created_at=entry.created_at,
        blocked=served.blocked,
    )


# --- rows and snippets ----------------------------------------------------------------------


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def _as_datetime(value: datetime | str) -> datetime:
    # Raw cursors skip Django's converters: SQLite hands back the stored text,
    # which is naive UTC under USE_TZ.
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


class _ServedCache:
    """The scanner's verdict on a text, by the text's digest. The scanner
    costs ~1.3 ms per 1,000 characters, and the same files come back in
    search after search (an agent's SOUL/ABOUT/TOOLS for every user, a
    pair's MEMORY.md in every search of a session): most of a search's time
    before this cache. A verdict depends on the text and the scanner's rules
    alone, and the rules change only with the code, so it holds for the life
    of the process; nothing scoped is in the key or the value beyond the
    text the caller already holds. Texts over MAX_CHARS are not kept, which
    bounds the memory to about SIZE × MAX_CHARS characters."""

    SIZE = 2048
    MAX_CHARS = 10_000

    def __init__(self) -> None:
        self._items: OrderedDict[bytes, context.Served] = OrderedDict()
        self._lock = threading.Lock()

    def serve(self, text: str) -> context.Served:
        if len(text) > self.MAX_CHARS:
            return context.serve_untrusted(text)
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        with self._lock:
            served = self._items.get(key)
            if served is not None:
                self._items.move_to_end(key)
                return served
        served = context.serve_untrusted(text)
        with self._lock:
            self._items[key] = served
            if len(self._items) > self.SIZE:
                self._items.popitem(last=False)
        return served


_served = _ServedCache()


def _with_safe_snippet(candidate: Candidate) -> SearchHit:
    """Judge the whole entry, not just the snippet: a snippet can hold part
    of a secret the scanner only recognises whole (a key block cut by the
    window). The snippet is cut from the served text, where a blocked
    entry already reads [BLOCKED: rule], and served once more."""
    served = _served.serve(candidate.content)
    snippet = context.serve_untrusted(_window(served.text, candidate.marks)).text
    whole = served.text if candidate.hit.source == "file" else None
    return replace(candidate.hit, snippet=snippet, text=whole)


def _window(content: str, marks: frozenset[str]) -> str:
    """About SNIPPET_CHARS of the entry around its first matched word (or
    its first blocked entry), matched words wrapped in **."""
    spans = [(w.start, w.end) for w in _text.words(content) if marks & set(_text.terms_of(w.text))]
    anchor = spans[0][0] if spans else max(content.find("[BLOCKED:"), 0)
    start = max(0, anchor - SNIPPET_CHARS // 3)
    end = min(len(content), start + SNIPPET_CHARS)
    # Move the cuts to whitespace so no word is shown in part.
    if start > 0 and (space := content.find(" ", start, anchor)) != -1:
        start = space + 1
    if end < len(content) and (space := content.rfind(" ", anchor, end)) > anchor:
        end = space
    pieces, at = [], start
    for s, e in spans:
        if s < start or e > end:
            continue
        pieces += [content[at:s], MARK, content[s:e], MARK]
        at = e
    pieces.append(content[at:end])
    return ("…" if start > 0 else "") + "".join(pieces) + ("…" if end < len(content) else "")
