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

CHANGE_KINDS = ("add", "update", "merge", "supersede", "expire", "drop")
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
    kind: str  # USER.md | MEMORY.md
    version: int
    content: str
    limit: int
    entries: tuple[str, ...]  # one markdown list item (without "- ") per entry


@dataclass(frozen=True)
class Change:
    kind: str  # one of CHANGE_KINDS
    file: str  # USER.md | MEMORY.md
    summary: str  # what changes, for a reviewer
    reason: str  # why, for a reviewer
    evidence: tuple[int, ...] = ()  # LogEntry ids
    before: str | None = None  # the entry replaced / removed
    after: str | None = None  # the entry added / the replacement

    def as_rationale(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "file": self.file,
            "summary": self.summary,
            "reason": self.reason,
            "evidence": list(self.evidence),
            "before": self.before,
            "after": self.after,
        }


@dataclass
class BackendResult:
    files: dict[str, list[str]]  # kind -> the full new entry list
    changes: list[Change]
    model: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: Decimal = field(default_factory=lambda: Decimal("0"))


class BackendError(Exception):
    """The backend could not produce a usable answer. `retryable` errors
    (timeouts, 429, 5xx) are retried by the task with backoff; the others
    fail the run with `reason`."""

    def __init__(self, reason: str, *, retryable: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retryable = retryable


class Backend(Protocol):
    name: str

    def consolidate(
        self, *, agent_slug: str, files: dict[str, FileState], signals: list[Signal], now: datetime
    ) -> BackendResult: ...
