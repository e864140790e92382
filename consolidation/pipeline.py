"""The phases of a consolidation run, as plain functions:

    orient → gather → consolidate → prune_and_index

None of them writes. services.execute_run strings them together and turns
their output into proposals (or a failed run with the guard's reason).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from consolidation import entries as md
from consolidation.backends.base import (
    CHANGE_KINDS,
    CONSOLIDATED_FILES,
    Backend,
    BackendResult,
    Change,
    FileState,
    Signal,
)
from memoryhub import scanner
from memoryhub.models import Agent, LogEntry, MemoryFile

# A bounded batch: a pair with a huge backlog is consolidated over several
# runs (the high-water mark moves forward each time) instead of in one
# prompt no model could read.
MAX_SIGNALS_PER_RUN = 500
# The loss guard: a proposal may not remove more than this share of the
# prior entries without replacing them ...
LOSS_GUARD_SHARE = 0.25
# ... but removing a single entry (one expiry in a two-line file) is never a
# mass loss, so one removal always passes.
LOSS_GUARD_FLOOR = 1
REPLACING_KINDS = ("update", "supersede", "merge")
REMOVING_KINDS = ("expire", "drop")


class GuardError(Exception):
    """A guard refused the backend's output; the run fails with `reason`."""

    def __init__(self, guard: str, reason: str) -> None:
        super().__init__(reason)
        self.guard = guard
        self.reason = reason


# --- Orient -----------------------------------------------------------------------------


def orient(*, agent: Agent, user_ref: str) -> dict[str, FileState]:
    """The current approved USER.md and MEMORY.md of the pair, as entries.
    The versions read here are the base of the compare-and-swap later."""
    rows = {
        row.kind: row
        for row in MemoryFile.objects.filter(agent=agent, user_ref=user_ref, kind__in=CONSOLIDATED_FILES)
    }
    states = {}
    for kind in CONSOLIDATED_FILES:
        row = rows.get(kind)
        content = row.content if row else ""
        states[kind] = FileState(
            kind=kind,
            version=row.version if row else 0,
            content=content,
            limit=agent.limit_for(kind),
            entries=md.parse(content),
        )
    return states


def orient_counts(files: dict[str, FileState]) -> dict[str, Any]:
    return {
        kind: {"version": state.version, "entries": len(state.entries), "chars": len(state.content),
               "limit": state.limit}
        for kind, state in files.items()
    }


# --- Gather signal ------------------------------------------------------------------------


@dataclass(frozen=True)
class Gathered:
    signals: list[Signal]
    filtered: list[dict[str, Any]]  # {"id", "rule", "category"}: never the text
    read: int
    high_water_mark: int

    def counts(self) -> dict[str, Any]:
        return {
            "entries": self.read,
            "signals": len(self.signals),
            "filtered": len(self.filtered),
            "filtered_entries": self.filtered,
            "high_water_mark": self.high_water_mark,
        }


def gather(*, agent: Agent, user_ref: str, after: int, limit: int = MAX_SIGNALS_PER_RUN) -> Gathered:
    """The pair's log entries past the high-water mark, oldest first. Each
    passes the scanner: a secret or an injected instruction in a log is
    filtered out here, so it reaches neither a backend nor a proposal."""
    rows = list(
        LogEntry.objects.filter(agent=agent, user_ref=user_ref, id__gt=after)
        .order_by("id")
        .values_list("id", "session_id", "role", "content", "created_at")[:limit]
    )
    signals: list[Signal] = []
    filtered: list[dict[str, Any]] = []
    for log_id, session_id, role, content, created_at in rows:
        finding = scanner.scan(content)
        if finding is not None:
            filtered.append({"id": log_id, "rule": finding.rule, "category": finding.category})
            continue
        signals.append(Signal(id=log_id, session_id=session_id, role=role, content=content, created_at=created_at))
    return Gathered(
        signals=signals,
        filtered=filtered,
        read=len(rows),
        high_water_mark=rows[-1][0] if rows else after,
    )


# --- Consolidate ------------------------------------------------------------------------------


def consolidate(
    *, backend: Backend, agent_slug: str, files: dict[str, FileState], signals: list[Signal], now: datetime
) -> BackendResult:
    return backend.consolidate(agent_slug=agent_slug, files=files, signals=signals, now=now)


# --- Prune & index ---------------------------------------------------------------------------


@dataclass(frozen=True)
class FilePlan:
    """One proposal to make: the new content of one file, from `base_version`."""

    kind: str
    base_version: int
    base_content: str
    entries: tuple[str, ...]
    content: str
    changes: list[Change] = field(default_factory=list)

    @property
    def rationale(self) -> list[dict[str, object]]:
        return [change.as_rationale() for change in self.changes]

    def reason(self) -> str:
        counts = Counter(change.kind for change in self.changes)
        parts = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()))
        return f"Consolidation of {self.kind}: {parts or 'rewritten'}."


def prune_and_index(
    *, files: dict[str, FileState], result: BackendResult, signals: list[Signal]
) -> list[FilePlan]:
    """Check the backend's output and turn it into at most one plan per file.

    Cap: entries go oldest first until the file fits (a `drop` change each).
    Guards, each failing the run with a reason: an unknown file or change
    kind, evidence that was not offered, a new entry without evidence, an
    entry removed without a change saying why, more than a quarter of the
    prior entries lost (the loss guard), an entry longer than the cap, and
    the scanner. A file whose entries do not change yields no plan."""
    offered = {signal.id for signal in signals}
    _check_shape(files=files, result=result, offered=offered)
    plans = []
    for kind in CONSOLIDATED_FILES:
        if kind not in files or kind not in result.files:
            continue
        state = files[kind]
        new = [text for text in (md.normalise(entry) for entry in result.files[kind]) if text]
        changes = [change for change in result.changes if change.file == kind]
        new, cap_drops = fit_cap(kind=kind, entries=new, limit=state.limit)
        changes.extend(cap_drops)
        if tuple(new) == state.entries:
            continue
        loss_guard(kind=kind, prior=state.entries, new=new, changes=changes, cap_drops=len(cap_drops))
        check_explained(kind=kind, prior=state.entries, new=new, changes=changes)
        content = md.render(new)
        check_scanner(kind=kind, content=content, changes=changes)
        plans.append(
            FilePlan(
                kind=kind,
                base_version=state.version,
                base_content=state.content,
                entries=tuple(new),
                content=content,
                changes=changes,
            )
        )
    return plans


def _check_shape(*, files: dict[str, FileState], result: BackendResult, offered: set[int]) -> None:
    for kind in result.files:
        if kind not in files:
            raise GuardError("shape", f"The backend wrote {kind!r}, which consolidation does not manage.")
    for change in result.changes:
        if change.kind not in CHANGE_KINDS:
            raise GuardError("shape", f"The backend made a change of unknown kind {change.kind!r}.")
        if change.file not in files:
            raise GuardError("shape", f"The backend made a change to {change.file!r}, which was not offered.")
        unknown = [log_id for log_id in change.evidence if log_id not in offered]
        if unknown:
            raise GuardError(
                "evidence",
                f"A {change.kind} change to {change.file} cites log entry {unknown[0]}, which was not offered as "
                "evidence (it is unknown, or the scanner filtered it).",
            )
        if change.kind == "add" and not change.evidence:
            raise GuardError(
                "evidence", f'Adding "{_short(change.after or "")}" to {change.file} cites no log entry as evidence.'
            )


def fit_cap(*, kind: str, entries: list[str], limit: int) -> tuple[list[str], list[Change]]:
    too_long = next((entry for entry in entries if len(md.render([entry])) > limit), None)
    if too_long is not None:
        raise GuardError(
            "cap", f"An entry of {kind} is longer than the file's whole {limit:,}-character cap: {_short(too_long)}"
        )
    entries = list(entries)
    drops: list[Change] = []
    while len(md.render(entries)) > limit:
        chars = len(md.render(entries))
        victim = next((entry for entry in entries if not md.is_heading(entry)), None)
        if victim is None:
            raise GuardError("cap", f"{kind} would have {chars:,} characters, over its {limit:,}-character cap.")
        entries.remove(victim)
        drops.append(
            Change(
                kind="drop",
                file=kind,
                summary=f"Drop from {kind}: {victim}",
                reason=f"{kind} would be over the cap ({chars:,} of {limit:,} characters); the oldest entry goes "
                "first.",
                before=victim,
            )
        )
    return entries, drops


def _replacements(changes: list[Change]) -> dict[str, list[str]]:
    graph: dict[str, list[str]] = {}
    for change in changes:
        if change.kind in REPLACING_KINDS and change.after:
            for before in (change.before or "").split("\n"):
                if before.strip():
                    graph.setdefault(md.normalise(before), []).append(md.normalise(change.after))
    return graph


def _survives(entry: str, graph: dict[str, list[str]], new: set[str]) -> bool:
    """Whether a removed entry lives on through a chain of replacements
    (A superseded by B, B merged into C, C in the new file)."""
    seen = {entry}
    frontier = [entry]
    while frontier:
        current = frontier.pop()
        for after in graph.get(current, []):
            if after in new:
                return True
            if after not in seen:
                seen.add(after)
                frontier.append(after)
    return False


def removed_entries(prior: tuple[str, ...], new: list[str]) -> list[str]:
    return list((Counter(prior) - Counter(new)).elements())


def loss_guard(*, kind: str, prior: tuple[str, ...], new: list[str], changes: list[Change], cap_drops: int = 0) -> None:
    graph = _replacements(changes)
    kept = set(new)
    lost = [entry for entry in removed_entries(prior, new) if not _survives(entry, graph, kept)]
    if len(lost) > LOSS_GUARD_FLOOR and len(lost) > LOSS_GUARD_SHARE * len(prior):
        cap_note = f"; {cap_drops} of them dropped to fit the cap" if cap_drops else ""
        raise GuardError(
            "loss_guard",
            f"Loss guard: the proposal for {kind} would remove {len(lost)} of its {len(prior)} entries without "
            f"replacing them ({len(lost) * 100 // len(prior)}%, more than a quarter{cap_note}). "
            "A reviewer should look at the file before consolidation runs again.",
        )


def check_explained(*, kind: str, prior: tuple[str, ...], new: list[str], changes: list[Change]) -> None:
    named: set[str] = set()
    for change in changes:
        for before in (change.before or "").split("\n"):
            named.add(md.normalise(before))
    for entry in removed_entries(prior, new):
        if entry not in named:
            raise GuardError(
                "unexplained",
                f'The backend removed "{_short(entry)}" from {kind} without a change saying why; contradicted or '
                "expired facts must be superseded or expired with a reason, never dropped silently.",
            )
    evidenced = {md.normalise(change.after) for change in changes if change.after and change.evidence}
    described = {md.normalise(change.after) for change in changes if change.after}
    for entry in (Counter(new) - Counter(prior)).elements():
        if entry in evidenced:
            continue
        if entry in described:
            raise GuardError("evidence", f'The new entry "{_short(entry)}" of {kind} cites no log entry as evidence.')
        raise GuardError(
            "unexplained", f'The new entry "{_short(entry)}" of {kind} appears without a change citing its evidence.'
        )


def check_scanner(*, kind: str, content: str, changes: list[Change]) -> None:
    finding = scanner.scan(content)
    if finding is not None:
        raise GuardError(
            "scanner", f"The proposed {kind} fails the memory scanner ({finding.rule}): {finding.detail}"
        )
    rationale = "\n".join(f"{c.summary}\n{c.reason}" for c in changes)
    finding = scanner.scan(rationale)
    if finding is not None:
        raise GuardError(
            "scanner", f"The rationale for {kind} fails the memory scanner ({finding.rule}): {finding.detail}"
        )


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
