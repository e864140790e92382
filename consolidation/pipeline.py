"""The phases of a consolidation run, as plain functions:

    orient → gather → consolidate → prune_and_index

None of them writes. services.execute_run strings them together and turns
their output into proposals (or a failed run with the guard's reason).

Three rules hold whatever the backend:

- Never lose a fact silently. A file with an undecided consolidation
  proposal is consolidated from that proposal's entries (their evidence
  included), so the new proposal is a superset of it and supersedes it with
  a record of what carried over. The compare-and-swap base stays the
  approved version.
- Guards count content, not operation names: the loss guard measures how
  much of the prior entries' words the new file still holds, and a merge
  or an update must keep the numbers, names and ids of what it replaces.
- An over-cap file is compressed (duplicates merged, detail shortened)
  rather than cut: nothing distinctive is lost, and a file that still does
  not fit is left for a person to decide, never trimmed by age.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from consolidation import dates, provenance, text
from consolidation import entries as md
from consolidation.backends.base import (
    CHANGE_KINDS,
    CONSOLIDATED_FILES,
    Backend,
    BackendResult,
    Change,
    FileState,
    RunLimits,
    Signal,
)
from memoryhub import scanner
from memoryhub.models import SOFT_LIMITED, Agent, LogEntry, MemoryFile, Proposal, ProposalStatus, Source

# A bounded batch: a pair with a huge backlog is consolidated over several
# runs (the high-water mark moves forward each time).
MAX_SIGNALS_PER_RUN = 500
# The loss guard: a proposal may not lose more than this share of the
# information in the prior entries, whatever its operations are called ...
LOSS_GUARD_SHARE = 0.25
# ... but losing one entry's worth (an expiry-less drop in a two-line file)
# is never a mass loss.
LOSS_GUARD_FLOOR = 1.0
# A soft-limited file may be proposed over its cap, up to this multiple
# (the same ceiling agent writes have), when compressing loses nothing more.
SOFT_CEILING = 2
REPLACING_KINDS = ("update", "supersede", "merge", "compress")
# Changes that rephrase what they replace: they must keep its numbers,
# names and ids (a supersede replaces a value on purpose).
REPHRASING_KINDS = ("update", "merge", "compress")


class GuardError(Exception):
    """A guard refused the backend's output; the run fails with `reason`."""

    def __init__(self, guard: str, reason: str) -> None:
        super().__init__(reason)
        self.guard = guard
        self.reason = reason


# --- Orient -----------------------------------------------------------------------------


def orient(*, agent: Agent, user_ref: str) -> dict[str, FileState]:
    """The current approved USER.md and MEMORY.md of the pair, as entries,
    carrying over the newest consolidation proposal of each file while no
    reviewer has decided it (pending, or stale after a write)."""
    rows = {
        row.kind: row
        for row in MemoryFile.objects.filter(agent=agent, user_ref=user_ref, kind__in=CONSOLIDATED_FILES)
    }
    states = {}
    for kind in CONSOLIDATED_FILES:
        row = rows.get(kind)
        content = row.content if row else ""
        version = row.version if row else 0
        approved = md.parse(content)
        state = FileState(kind=kind, version=version, content=content, limit=agent.limit_for(kind), entries=approved)
        newest = (
            Proposal.objects.for_file(agent, kind, user_ref)
            .filter(source=Source.CONSOLIDATION)
            .order_by("-created_at", "-id")
            .only("id", "status", "base_version", "proposed_content", "rationale")
            .first()
        )
        if newest is not None and newest.status in (ProposalStatus.PENDING, ProposalStatus.STALE):
            state = carry_over(state, newest)
        states[kind] = state
    return states


def carry_over(state: FileState, proposal: Proposal) -> FileState:
    """Start from an undecided proposal. A pending one made from the current
    version is taken as it is; a stale one (the file changed meanwhile) is
    replayed onto the approved entries: its new entries are added or put in
    place of what they replaced, its expiries repeated; nothing the file
    gained meanwhile is lost."""
    # The earlier proposal's own "carry" note is replaced by this one's; the
    # changes it carried keep the proposal they first came from.
    rationale = [item for item in proposal.rationale or [] if isinstance(item, dict)
                 and item.get("file", state.kind) == state.kind and item.get("kind") != "carry"]
    by_entry = provenance.evidence_by_entry(rationale)
    if proposal.status == ProposalStatus.PENDING and proposal.base_version == state.version:
        entries = md.parse(proposal.proposed_content)
        carried = rationale
    else:
        replayed: list[str] = list(state.entries)
        carried = []
        for item in rationale:
            after = md.normalise(str(item.get("after") or ""))
            befores = [md.normalise(b) for b in str(item.get("before") or "").split("\n") if b.strip()]
            kind = item.get("kind")
            if kind == "expire" and befores and befores[0] in replayed:
                replayed.remove(befores[0])
                carried.append(item)
            elif after and after not in replayed and kind in ("add", *REPLACING_KINDS):
                present = [b for b in befores if b in replayed]
                if present:
                    replayed[replayed.index(present[0])] = after
                    for extra in present[1:]:
                        replayed.remove(extra)
                else:
                    replayed.append(after)
                carried.append(item)
        entries = tuple(replayed)
    return FileState(
        kind=state.kind,
        version=state.version,
        content=state.content,
        limit=state.limit,
        entries=entries,
        evidence=tuple(tuple(by_entry.get(entry, ())) for entry in entries),
        approved_entries=state.entries,
        carried_from=proposal.pk,
        carried_status=proposal.status,
        carried=tuple({"carried_from": proposal.pk, **item} for item in carried),
    )


def orient_counts(files: dict[str, FileState]) -> dict[str, Any]:
    counts: dict[str, Any] = {}
    for kind, state in files.items():
        counts[kind] = {"version": state.version, "entries": len(state.base_entries), "chars": len(state.content),
                        "limit": state.limit}
        if state.carried_from is not None:
            counts[kind]["carried_from"] = state.carried_from
            counts[kind]["carried_entries"] = len(state.entries)
    return counts


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


def consumed_mark(gathered: Gathered, result: BackendResult) -> int:
    """How far this run read: all it gathered, or up to where the backend
    stopped (budget, call ceiling); the rest is read by the next run."""
    if result.consumed_through is None:
        return gathered.high_water_mark
    return result.consumed_through


# --- Consolidate ------------------------------------------------------------------------------


def consolidate(
    *, backend: Backend, agent_slug: str, files: dict[str, FileState], signals: list[Signal], now: datetime,
    limits: RunLimits | None = None, fallback: Backend | None = None,
) -> BackendResult:
    """The backend's answer. Log entries it cannot read (another language)
    go to `fallback` (the llm backend, when configured) on top of its result;
    without one they stay reported as not understood."""
    result = backend.consolidate(agent_slug=agent_slug, files=files, signals=signals, now=now, limits=limits)
    if fallback is None or not result.not_understood:
        return result
    unread = {item["id"] for item in result.not_understood}
    rest = [signal for signal in signals if signal.id in unread]
    start = {
        kind: FileState(kind=kind, version=state.version, content=state.content, limit=state.limit,
                        entries=tuple(result.files.get(kind, list(state.entries))))
        for kind, state in files.items()
    }
    second = fallback.consolidate(agent_slug=agent_slug, files=start, signals=rest, now=now, limits=limits)
    return BackendResult(
        files=second.files,
        changes=[*result.changes, *second.changes],
        model=f"{result.model}+{second.model}",
        tokens_in=result.tokens_in + second.tokens_in,
        tokens_out=result.tokens_out + second.tokens_out,
        cost_usd=result.cost_usd + second.cost_usd,
        consumed_through=second.consumed_through,
        not_understood=[],
        calls=result.calls + second.calls,
        stopped=second.stopped,
    )


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
    rationale: list[dict[str, object]] = field(default_factory=list)
    carried_from: int | None = None
    note: str = ""

    def reason(self) -> str:
        counts = Counter(change.kind for change in self.changes)
        parts = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()))
        reason = f"Consolidation of {self.kind}: {parts or 'rewritten'}."
        if self.carried_from is not None:
            reason += f" Builds on proposal #{self.carried_from}, which it supersedes."
        if self.note:
            reason += f" {self.note}"
        return reason


def prune_and_index(
    *, files: dict[str, FileState], result: BackendResult, signals: list[Signal], now: datetime | None = None
) -> list[FilePlan]:
    """Check the backend's output and turn it into at most one plan per file.

    Cap: an over-cap file is compressed (see `compress`). Guards, each
    failing the run with a reason: an unknown file or change kind, evidence
    that was not offered, a new entry without evidence, an entry removed
    without a change saying why, more than a quarter of the prior entries'
    information lost (the loss guard), a rephrasing change that loses a
    number, name or id, a file over a hard cap. The content itself passes
    the scanner once, when the proposal is made (memoryhub.services); a
    model's reasons pass it here. A file whose entries do not
    change yields no plan."""
    offered = {signal.id for signal in signals}
    _check_shape(files=files, result=result, offered=offered)
    plans = []
    for kind in CONSOLIDATED_FILES:
        if kind not in files or kind not in result.files:
            continue
        state = files[kind]
        new = [entry for entry in (md.normalise(entry) for entry in result.files[kind]) if entry]
        changes = [change for change in result.changes if change.file == kind]
        new, squeezed = compress(kind=kind, entries=new, limit=state.limit)
        changes.extend(squeezed)
        if tuple(new) == state.base_entries:
            continue
        if state.carried_status == ProposalStatus.PENDING and tuple(new) == state.entries:
            continue  # the undecided proposal already says all of it
        note = check_cap(kind=kind, entries=new, limit=state.limit)
        # What the compress pass shortened lost detail, never a number, name
        # or id (it checks that itself): the words it dropped are not a loss.
        compressed = {md.normalise(c.before) for c in squeezed if c.before}
        loss_guard(kind=kind, prior=_prior(state), new=new, changes=changes, now=now, exempt=compressed)
        check_explained(kind=kind, prior=state.entries, new=new, changes=changes)
        check_distinctive(kind=kind, new=new, changes=changes)
        rationale = build_rationale(state, changes)
        if result.model_written:
            check_rationale(kind=kind, changes=changes)
        plans.append(
            FilePlan(
                kind=kind,
                base_version=state.version,
                base_content=state.content,
                entries=tuple(new),
                content=md.render(new),
                changes=changes,
                rationale=rationale,
                carried_from=state.carried_from,
                note=note,
            )
        )
    return plans


def _prior(state: FileState) -> list[str]:
    """What the loss guard protects: the approved entries and the carried ones."""
    prior = list(state.base_entries)
    prior.extend(entry for entry in state.entries if entry not in prior)
    return prior


def _check_shape(*, files: dict[str, FileState], result: BackendResult, offered: set[int]) -> None:
    for kind in result.files:
        if kind not in files:
            raise GuardError("shape", f"The backend wrote {kind!r}, which consolidation does not manage.")
    for change in result.changes:
        if change.kind not in CHANGE_KINDS:
            raise GuardError("shape", f"The backend made a change of unknown kind {change.kind!r}.")
        if change.kind == "compress":
            raise GuardError("shape", "Only the pipeline's compress pass may shorten entries to fit the cap.")
        if change.file not in files:
            raise GuardError("shape", f"The backend made a change to {change.file!r}, which was not offered.")
        carried = {log_id for ids in files[change.file].evidence for log_id in ids}
        unknown = [log_id for log_id in change.evidence if log_id not in offered and log_id not in carried]
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


# --- the cap: compress, never cut -----------------------------------------------------------

# Detail a shorter entry can do without: the reason behind a preference, an
# aside. The session log keeps it.
_DETAIL = (
    re.compile(r"\s*\([^()]*\)"),
    re.compile(r"\s+[—–]\s+.*$"),
    re.compile(r";\s+.*$"),
    re.compile(r",?\s+(?:because|since|as\s+(?:they|he|she|it|the\s+user)|so\s+that|which|although|though|"
               r"weil|porque|ya\s+que|parce\s+que|car)\b.*$", re.IGNORECASE),
    re.compile(r"\s+\b(?:really|honestly|actually|basically|generally|usually|very|quite|just)\b", re.IGNORECASE),
)


def _shorten(entry: str) -> str:
    shorter = entry
    for pattern in _DETAIL:
        candidate = pattern.sub("", shorter).strip()
        if candidate and len(text.tokens(candidate)) >= 2 and not text.lost_distinctive([shorter], candidate):
            shorter = candidate
    if shorter != entry and entry.endswith(".") and not shorter.endswith("."):
        shorter = shorter.rstrip(" ,;:") + "."
    return shorter


def compress(*, kind: str, entries: list[str], limit: int) -> tuple[list[str], list[Change]]:
    """Make an over-cap file fit without losing a fact: merge entries that say
    the same thing, then shorten the longest entries by their detail
    (asides, reasons) while keeping every number, name and id. Stops as soon
    as the file fits; returns what it did as `merge`/`compress` changes."""
    if len(md.render(entries)) <= limit:
        return entries, []
    chars = len(md.render(entries))
    changes: list[Change] = []
    kept: list[str] = []
    for entry in entries:
        keeper = None if md.is_heading(entry) else next(
            (k for k in kept if not md.is_heading(k) and text.same_fact(k, entry)), None)
        if keeper is None:
            kept.append(entry)
            continue
        changes.append(Change(
            kind="merge", file=kind, summary=f"Merge duplicate entries of {kind} into: {keeper}",
            reason=f"Compressing {kind} ({chars:,} of {limit:,} characters): \"{entry}\" says what \"{keeper}\" says.",
            before=entry, after=keeper,
        ))
    entries = kept
    for entry in sorted((e for e in entries if not md.is_heading(e)), key=len, reverse=True):
        if len(md.render(entries)) <= limit:
            break
        shorter = _shorten(entry)
        if shorter == entry:
            continue
        if shorter in entries:
            entries = [e for e in entries if e != entry]
            changes.append(Change(
                kind="merge", file=kind, summary=f"Merge duplicate entries of {kind} into: {shorter}",
                reason=f"Compressing {kind} ({chars:,} of {limit:,} characters): without its detail \"{entry}\" "
                f"says what \"{shorter}\" says; the detail stays in the session log.",
                before=entry, after=shorter,
            ))
            continue
        entries = [shorter if e == entry else e for e in entries]
        changes.append(Change(
            kind="compress", file=kind, summary=f"Shorten in {kind}: {entry} → {shorter}",
            reason=f"Compressing {kind} ({chars:,} of {limit:,} characters): the detail stays in the session log; "
            "no number, name or id is lost.",
            before=entry, after=shorter,
        ))
    return entries, changes


def check_cap(*, kind: str, entries: list[str], limit: int) -> str:
    """"" when the file fits; a note when a soft cap is passed within its
    ceiling; GuardError otherwise (a person decides what goes)."""
    chars = len(md.render(entries))
    too_long = next((entry for entry in entries if len(md.render([entry])) > limit), None)
    if too_long is not None:
        raise GuardError(
            "cap", f"An entry of {kind} is longer than the file's whole {limit:,}-character cap: {_short(too_long)}"
        )
    if chars <= limit:
        return ""
    if kind in SOFT_LIMITED and chars <= limit * SOFT_CEILING:
        return (f"{kind} stays over its soft cap ({chars:,} of {limit:,} characters): compressing further would "
                "lose facts, so a reviewer should decide what to remove.")
    raise GuardError(
        "cap",
        f"{kind} would have {chars:,} characters, over its {limit:,}-character cap, even after merging duplicates "
        "and shortening entries; consolidation never drops facts to fit, so a reviewer should shorten the file "
        "or raise its limit.",
    )


# --- the guards --------------------------------------------------------------------------------


def removed_entries(prior: tuple[str, ...] | list[str], new: list[str]) -> list[str]:
    return list((Counter(prior) - Counter(new)).elements())


def _expired_away(changes: list[Change], now: datetime | None) -> set[str]:
    """Entries an `expire` removed whose own stated expiry has passed: the
    one removal the loss guard does not count. The date is checked here,
    not taken from the change's name."""
    if now is None:
        return set()
    return {
        md.normalise(change.before)
        for change in changes
        if change.kind == "expire" and change.before and dates.is_expired(change.before, now)
    }


def information_loss(*, prior: list[str], new: list[str], exempt: set[str]) -> tuple[float, float,
                                                                                   list[tuple[str, float]]]:
    """(share of the prior information lost, entries' worth lost, the worst
    entries): each prior entry loses the share of its key words found
    nowhere in the new file."""
    facts = [entry for entry in prior if not md.is_heading(entry)]
    if not facts:
        return 0.0, 0.0, []
    available = text.key_words(new)
    losses = [(entry, 1 - text.information_recall(entry, available)) for entry in facts if entry not in exempt]
    lost = sum(loss for _, loss in losses)
    worst = sorted((item for item in losses if item[1] > 0), key=lambda item: -item[1])
    return lost / len(facts), lost, worst


def loss_guard(
    *, kind: str, prior: list[str] | tuple[str, ...], new: list[str], changes: list[Change],
    now: datetime | None = None, exempt: set[str] | None = None,
) -> None:
    share, lost, worst = information_loss(prior=list(prior), new=new,
                                          exempt=_expired_away(changes, now) | (exempt or set()))
    if lost > LOSS_GUARD_FLOOR and share > LOSS_GUARD_SHARE:
        examples = "; ".join(f'"{_short(entry, 60)}" ({loss:.0%} lost)' for entry, loss in worst[:3])
        raise GuardError(
            "loss_guard",
            f"Loss guard: the proposal for {kind} would lose {share:.0%} of the information in its "
            f"{len([e for e in prior if not md.is_heading(e)])} prior entries (more than a quarter), counted as the "
            f"words of each entry found nowhere in the new file, whatever the changes are called: {examples}. "
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
    derived = {md.normalise(change.after) for change in changes if change.after and change.kind == "compress"}
    described = {md.normalise(change.after) for change in changes if change.after}
    for entry in (Counter(new) - Counter(prior)).elements():
        if entry in evidenced or entry in derived:
            continue
        if entry in described:
            raise GuardError("evidence", f'The new entry "{_short(entry)}" of {kind} cites no log entry as evidence.')
        raise GuardError(
            "unexplained", f'The new entry "{_short(entry)}" of {kind} appears without a change citing its evidence.'
        )


def check_distinctive(*, kind: str, new: list[str], changes: list[Change]) -> None:
    """A merge, update or shortening keeps every number, name and id of what
    it replaces (anywhere in the new file), or names the ones it drops in
    its reason."""
    whole = "\n".join(new)
    for change in changes:
        if change.kind not in REPHRASING_KINDS or not change.before:
            continue
        lost = text.lost_distinctive(change.before.split("\n"), whole)
        unexplained = [token for token in lost if token not in change.reason.lower()]
        if unexplained:
            raise GuardError(
                "distinctive",
                f'A {change.kind} in {kind} loses "{unexplained[0]}" from "{_short(change.before, 80)}" without '
                "saying why: merges and updates keep the numbers, names and ids of what they replace, or name "
                "what they drop in their reason.",
            )


def build_rationale(state: FileState, changes: list[Change]) -> list[dict[str, object]]:
    """Each change as a dict with the evidence of the entry it writes: what
    it cites, plus for a merge, update or shortening the evidence of the
    entries it folds in. Changes carried over come first, marked."""
    start = {entry: set(state.evidence_of(i)) for i, entry in enumerate(state.entries)}
    items: list[dict[str, object]] = []
    if state.carried_from is not None and state.carried:
        items.append({
            "kind": "carry",
            "file": state.kind,
            "summary": f"Carries over proposal #{state.carried_from} ({len(state.carried)} changes), which this one "
            "supersedes",
            "reason": "No reviewer had decided it yet, so this run started from its entries: every fact it proposed "
            "is kept here with its original evidence, and the changes below it are new.",
            "evidence": [],
            "before": None,
            "after": None,
            "carried_from": state.carried_from,
        })
        items.extend(dict(item) for item in state.carried)
    for change in changes:
        item = change.as_rationale()
        if change.kind in REPHRASING_KINDS and change.after and change.before:
            evidence = set(change.evidence)
            for before in change.before.split("\n"):
                evidence |= start.get(md.normalise(before), set())
            item["evidence"] = sorted(evidence)
        items.append(item)
    return items


def check_rationale(*, kind: str, changes: list[Change]) -> None:
    """The reasons a model wrote pass the scanner once; the content (which
    the summaries quote) passes it once, when the proposal is made."""
    rationale = "\n".join(c.reason for c in changes)
    finding = scanner.scan(rationale)
    if finding is not None:
        raise GuardError(
            "scanner", f"The rationale for {kind} fails the memory scanner ({finding.rule}): {finding.detail}"
        )


def _short(value: str, limit: int = 120) -> str:
    return value if len(value) <= limit else value[: limit - 1] + "…"
