"""The contract between the consolidation pipeline and its backends.

A backend gets the current approved entries of USER.md and MEMORY.md and the
scanner-filtered log entries since the last run, and returns the new entry
lists plus one Change per difference, each citing its evidence. It never
touches the database: the pipeline checks its output (guards, cap, scanner)
and turns it into proposals.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Protocol

CHANGE_KINDS = ("add", "update", "merge", "supersede", "expire", "past", "drop", "compress", "conflict")
# Kinds that put new text into a file and must rest on log evidence.
WRITING_KINDS = ("add", "update", "merge", "supersede")
CONSOLIDATED_FILES = ("USER.md", "MEMORY.md")


@dataclass(frozen=True)
class Signal:
    """One log entry offered to a backend as evidence."""

    id: int
    session_id: int
    role: str  # user | assistant | tool | note
    content: str
    created_at: datetime


@dataclass(frozen=True)
class FileState:
    """What a backend starts from. `entries` are the approved file's, or,
    when a consolidation proposal for the file is still undecided, that
    proposal's (so a new run builds on it and loses none of its facts);
    `evidence` is parallel to `entries`: the log ids each carried entry
    rests on. `version` and `content` are always the approved file's: the
    compare-and-swap base of the proposal."""

    kind: str  # USER.md | MEMORY.md
    version: int
    content: str
    limit: int
    entries: tuple[str, ...]  # one markdown list item (without "- ") per entry
    evidence: tuple[tuple[int, ...], ...] = ()
    approved_entries: tuple[str, ...] | None = None  # None: the same as `entries`
    carried_from: int | None = None  # the undecided proposal the entries come from
    carried_status: str = ""  # pending | stale
    carried: tuple[dict[str, object], ...] = ()  # that proposal's rationale, for this file

    @property
    def base_entries(self) -> tuple[str, ...]:
        return self.entries if self.approved_entries is None else self.approved_entries

    def evidence_of(self, index: int) -> tuple[int, ...]:
        return self.evidence[index] if index < len(self.evidence) else ()


@dataclass(frozen=True)
class Change:
    kind: str  # one of CHANGE_KINDS
    file: str  # USER.md | MEMORY.md
    summary: str  # what changes, for a reviewer
    reason: str  # why, for a reviewer
    evidence: tuple[int, ...] = ()  # LogEntry ids
    before: str | None = None  # the entry replaced / removed
    after: str | None = None  # the entry added / the replacement
    flag: str | None = None  # "contradiction": a reviewer should look at this one
    # A supersede or merge whose newer entry is in the other file: that
    # entry and its file (the pipeline checks it is there).
    replaced_by: str | None = None
    replaced_in: str | None = None

    def as_rationale(self) -> dict[str, object]:
        found: dict[str, object] = {
            "kind": self.kind,
            "file": self.file,
            "summary": self.summary,
            "reason": self.reason,
            "evidence": list(self.evidence),
            "before": self.before,
            "after": self.after,
        }
        if self.flag:
            found["flag"] = self.flag
        if self.replaced_by:
            found["replaced_by"] = self.replaced_by
            found["replaced_in"] = self.replaced_in
        return found


@dataclass(frozen=True)
class Refusal:
    """A candidate the classifier refused (consolidation.classify): shown to
    the reviewer in the proposal's rationale (kind "refused") and counted on
    the run, never written into a file. A directive is shown as said; a
    secret or personal data only by its class and category."""

    kind: str  # directive | personal | secret
    category: str  # the directive's act, the personal data's category, the secret's rule
    file: str  # the file it was meant for
    evidence: tuple[int, ...]
    summary: str
    reason: str
    rule: str = ""

    def as_rationale(self) -> dict[str, object]:
        return {"kind": "refused", "file": self.file, "summary": self.summary, "reason": self.reason,
                "evidence": list(self.evidence), "before": None, "after": None, "class": self.kind,
                "category": self.category}

    def as_count(self) -> dict[str, object]:
        return {"ids": list(self.evidence), "class": self.kind, "category": self.category, "rule": self.rule,
                "file": self.file}


@dataclass
class BackendResult:
    files: dict[str, list[str]]  # kind -> the full new entry list
    changes: list[Change]
    model: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: Decimal = field(default_factory=lambda: Decimal("0"))
    # The last signal id the backend read, when it stopped early (budget,
    # call ceiling); None when it read them all. The run's high-water mark.
    consumed_through: int | None = None
    # Log entries in a language the backend does not understand:
    # [{"id", "language"}], reported on the run, never silently skipped.
    not_understood: list[dict[str, object]] = field(default_factory=list)
    calls: int = 0
    stopped: str = ""  # why the backend stopped early, for the run's counts
    # Whether summaries and reasons are a model's own words. The heuristic's
    # are templates around text the scanner has already passed (log entries
    # at gather, file entries when written), so they are not scanned again.
    model_written: bool = False
    # Candidates the classifier refused (directives, personal data, secrets).
    refused: list[Refusal] = field(default_factory=list)
    # Whether the token counts are estimates (the server reported no usage).
    estimated: bool = False


@dataclass(frozen=True)
class RunLimits:
    """What one run may spend (None: no limit) and what a model should know."""

    budget_usd: Decimal | None = None  # the rest of the agent's daily budget
    run_ceiling_usd: Decimal | None = None  # what one run may cost at most
    profile: str = ""  # the agent's SOUL.md and ABOUT.md, for relevance
    encoding: str = "o200k_base"
    pii_policy: str = "flag"  # the workspace's: allow | flag | refuse


class BackendError(Exception):
    """The backend could not produce a usable answer. `retryable` errors
    (timeouts, 429, 5xx) are retried by the task with backoff, after
    `retry_after` seconds at least when the server said so; the others fail
    the run with `reason`. `budget` errors end the run as skipped."""

    def __init__(self, reason: str, *, retryable: bool = False, retry_after: float | None = None,
                 budget: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retryable = retryable
        self.retry_after = retry_after
        self.budget = budget


class Backend(Protocol):
    name: str

    def consolidate(
        self, *, agent_slug: str, files: dict[str, FileState], signals: list[Signal], now: datetime,
        limits: RunLimits | None = None,
    ) -> BackendResult: ...
