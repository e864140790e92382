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
- Every operation is checked against its evidence, whoever proposed it:
  an add, update, merge or supersede may bring in a number, name or id
  only if a log entry it cites says it, and may lose one only for a newer
  value its evidence holds; a drop needs evidence about the entry or a
  stated expiry that has passed; the loss guard counts entries and ids as
  well as words; and every new entry passes the candidate classifier
  (consolidation.classify) once more.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from consolidation import classify, dates, language, provenance, slots, text
from consolidation import entries as md
from consolidation.backends.base import (
    CHANGE_KINDS,
    CONSOLIDATED_FILES,
    Backend,
    BackendResult,
    Change,
    FileState,
    Refusal,
    RunLimits,
    Signal,
)
from memoryhub import scanner
from memoryhub.models import SOFT_LIMITED, Agent, LogEntry, MemoryFile, Proposal, ProposalStatus, Source

# A run reads the whole backlog, streamed in chunks by one query, and makes
# one proposal per file. This ceiling only bounds a run's memory: a pair
# with more unread entries than this is queued again at once by the gate
# (the run is marked `backlog`), never left waiting for new sessions.
MAX_SIGNALS_PER_RUN = 20_000
GATHER_CHUNK = 500
# The loss guard: a proposal may not lose more than this share of the
# information in the prior entries, whatever its operations are called ...
LOSS_GUARD_SHARE = 0.25
# ... but losing one entry's worth (an expiry-less drop in a two-line file)
# is never a mass loss.
LOSS_GUARD_FLOOR = 1.0
# A soft-limited file may be proposed over its cap, up to this multiple
# (the same ceiling agent writes have), when compressing loses nothing more.
SOFT_CEILING = 2
REPLACING_KINDS = ("update", "supersede", "merge", "compress", "past")
# Changes that rephrase what they replace: they must keep its numbers,
# names and ids (a supersede replaces a value on purpose).
REPHRASING_KINDS = ("update", "merge", "compress", "past")
# Changes that bring text into a file: what they bring must be in their evidence.
WRITING_KINDS = ("add", "update", "merge", "supersede")
# Scanner categories read sentence by sentence in a user's or note's log
# entry: the sentence is refused, the rest of the entry is still read.
SENTENCE_LEVEL = frozenset({"agent_directive", "prompt_disclosure", "access_planting"})


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


def orient_counts(files: dict[str, FileState]) -> dict[str, object]:
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
    filtered: list[dict[str, object]]  # {"id", "rule", "category"}: never the text
    read: int
    high_water_mark: int
    refused: list[Refusal] = field(default_factory=list)
    # More entries are waiting than one run reads (MAX_SIGNALS_PER_RUN).
    backlog: bool = False

    def counts(self) -> dict[str, object]:
        found: dict[str, object] = {
            "entries": self.read,
            "signals": len(self.signals),
            "filtered": len(self.filtered),
            "filtered_entries": self.filtered,
            "high_water_mark": self.high_water_mark,
        }
        if self.backlog:
            found["backlog"] = True
        return found


def gather(*, agent: Agent, user_ref: str, after: int, limit: int | None = None) -> Gathered:
    """The pair's log entries past the high-water mark, oldest first, to the
    end of the backlog (one query, streamed in chunks). Each passes the
    scanner: a secret or an injected instruction in a log is filtered out
    here, so it reaches neither a backend nor a proposal. In what a user or
    the agent's note said, an instruction aimed at the agent is cut out
    sentence by sentence (the rest is still read), and shown to the
    reviewer as a refused finding."""
    limit = MAX_SIGNALS_PER_RUN if limit is None else limit
    rows = (
        LogEntry.objects.filter(agent=agent, user_ref=user_ref, id__gt=after)
        .order_by("id")
        .values_list("id", "session_id", "role", "content", "created_at")[: limit + 1]
    )
    signals: list[Signal] = []
    filtered: list[dict[str, object]] = []
    refused: list[Refusal] = []
    read = 0
    mark = after
    backlog = False
    for log_id, session_id, role, content, created_at in rows.iterator(chunk_size=GATHER_CHUNK):
        if read == limit:
            backlog = True
            break
        read += 1
        mark = log_id
        finding = scanner.scan(content)
        if finding is None:
            signals.append(Signal(id=log_id, session_id=session_id, role=role, content=content,
                                  created_at=created_at))
            continue
        kept = _sentence_level(content) if finding.category in SENTENCE_LEVEL and role in ("user", "note") else None
        if kept is not None:
            clean, hits = kept
            for hit in hits:
                refused.append(_refusal_of(hit, log_id))
            if clean:
                signals.append(Signal(id=log_id, session_id=session_id, role=role, content=clean,
                                      created_at=created_at))
                continue
        filtered.append({"id": log_id, "rule": finding.rule, "category": finding.category})
        if role in ("user", "note") and kept is None:
            refused.append(_refusal_of(finding, log_id))
    return Gathered(signals=signals, filtered=filtered, read=read, high_water_mark=mark, refused=refused,
                    backlog=backlog)


def _sentence_level(content: str) -> tuple[str, list[scanner.Finding]] | None:
    """The entry without its flagged sentences, and their findings; None
    when no single sentence is flagged (the finding spans sentences, so the
    whole entry goes)."""
    kept: list[str] = []
    hits: list[scanner.Finding] = []
    for sentence in language.sentences(content):
        finding = scanner.scan(sentence)
        if finding is None:
            kept.append(sentence)
        elif finding.category in SENTENCE_LEVEL:
            hits.append(finding)
        else:
            return None
    if not hits:
        return None
    clean = " ".join(kept)
    return (clean if scanner.scan(clean) is None else ""), hits


def _refusal_of(finding: scanner.Finding, log_id: int) -> Refusal:
    secret = finding.category == "secret"
    return Refusal(
        kind=classify.SECRET if secret else classify.DIRECTIVE,
        category=finding.category,
        file="USER.md",
        evidence=(log_id,),
        summary="Refused a secret" if secret else f"Refused an instruction aimed at the agent ({finding.rule})",
        # A finding's detail may quote the secret or the injected phrase;
        # only the rule is repeated (the log entry is one click away).
        reason=f"The memory scanner flags it ({finding.rule}); its text stays in the log, not in memory.",
        rule=finding.rule,
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
        model_written=result.model_written or second.model_written,
        refused=[*result.refused, *second.refused],
        estimated=result.estimated or second.estimated,
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
    *, files: dict[str, FileState], result: BackendResult, signals: list[Signal], now: datetime | None = None,
    refused: list[Refusal] | None = None, policy: str = "flag",
) -> list[FilePlan]:
    """Check the backend's output and turn it into at most one plan per file.

    History: a dated event that has passed is rewritten in the past tense
    (`past`), whichever backend wrote it. Cap: an over-cap file is
    compressed (see `compress`). Guards, each failing the run with a reason:
    an unknown file or change kind, evidence that was not offered, a new
    entry without evidence, an entry removed without a change saying why, a
    number, name or id brought in without evidence holding it or lost
    without a newer value the evidence holds (`values`), a drop with neither
    evidence about the entry nor a passed expiry, a cross-file supersede
    whose newer entry is missing, more than a quarter of the prior entries'
    words, entries or ids lost (the loss guard), a rephrasing change that
    loses a number, name or id, a new entry the classifier refuses, a file
    over a hard cap. The content itself passes the scanner once, when the
    proposal is made (memoryhub.services); a model's reasons pass it here.
    A file whose entries do not change yields no plan. `refused` (the
    gather phase's and the backend's refused findings) go into the
    rationale of the plan for their file."""
    offered = {signal.id for signal in signals}
    said = {signal.id: signal.content for signal in signals}
    _check_shape(files=files, result=result, offered=offered)
    written = {kind: [entry for entry in (md.normalise(e) for e in entries) if entry]
               for kind, entries in result.files.items()}
    all_changes = list(result.changes)
    if result.model_written:
        written, reconciled = reconcile_slots(files=files, written=written, changes=all_changes)
        all_changes.extend(reconciled)
    prepared: dict[str, tuple[list[str], list[Change], list[Change]]] = {}
    for kind in CONSOLIDATED_FILES:
        if kind not in files or kind not in written:
            continue
        state = files[kind]
        new = written[kind]
        changes = [change for change in all_changes if change.file == kind]
        new, historic = into_the_past(kind=kind, entries=new, now=now, evidence=_evidence_of(state, changes))
        changes.extend(historic)
        new, squeezed = compress(kind=kind, entries=new, limit=state.limit)
        changes.extend(squeezed)
        prepared[kind] = (new, changes, squeezed)
    final = {kind: value[0] for kind, value in prepared.items()}
    plans = []
    for kind, (new, changes, squeezed) in prepared.items():
        state = files[kind]
        refusals = [r for r in refused or [] if (r.file or "USER.md") == kind]
        if tuple(new) == state.base_entries:
            continue
        if state.carried_status == ProposalStatus.PENDING and tuple(new) == state.entries:
            continue  # the undecided proposal already says all of it
        note = check_cap(kind=kind, entries=new, limit=state.limit)
        # What the compress pass shortened lost detail, never a number, name
        # or id (it checks that itself): the words it dropped are not a loss.
        compressed = {md.normalise(c.before) for c in squeezed if c.before}
        check_values(kind=kind, files=final, changes=changes, said=said, now=now,
                     prior=[e for other in files.values() for e in (*other.base_entries, *other.entries)])
        exempt = compressed | _replaced_on_evidence(changes)
        loss_guard(kind=kind, prior=_prior(state), new=new, changes=changes, now=now, exempt=exempt,
                   elsewhere=[e for other, entries in final.items() if other != kind for e in entries])
        check_explained(kind=kind, prior=state.entries, new=new, changes=changes)
        check_distinctive(kind=kind, new=new, changes=changes)
        rationale = build_rationale(state, changes) + [r.as_rationale() for r in refusals]
        if result.model_written:
            # The heuristic classified each of its candidates; a model's
            # answer was classified by its backend and is checked once more.
            check_classified(kind=kind, changes=changes, policy=policy)
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
    placed = {plan.kind for plan in plans}
    if plans:
        # A refused finding for a file without a proposal is shown on the
        # other file's proposal, so the reviewer sees it either way.
        stray = [r for r in refused or [] if (r.file or "USER.md") not in placed]
        if stray:
            plans[0].rationale.extend(r.as_rationale() for r in stray)
    return plans


def reconcile_slots(*, files: dict[str, FileState], written: dict[str, list[str]], changes: list[Change]
                    ) -> tuple[dict[str, list[str]], list[Change]]:
    """One value per slot across both files, whoever wrote the answer: an
    entry a model added or rewrote (with evidence) supersedes an older entry
    of the same slot it left standing, in either file ("Use npm for
    installs." in USER.md once MEMORY.md says "The monorepo uses pnpm."),
    citing the newer entry's evidence. The heuristic does this itself."""
    prior = {kind: set(state.entries) for kind, state in files.items()}
    written = {kind: list(entries) for kind, entries in written.items()}
    extra: list[Change] = []
    for change in changes:
        if change.kind not in WRITING_KINDS or not change.after or not change.evidence:
            continue
        newer = md.normalise(change.after)
        for kind, entries in written.items():
            for entry in list(entries):
                if entry == newer or entry not in prior.get(kind, set()) or md.is_heading(entry):
                    continue
                why = slots.supersedes(entry, newer)
                if why is None:
                    continue
                entries.remove(entry)
                extra.append(Change(
                    kind="supersede", file=kind, summary=f"Supersede in {kind}: {entry} → {newer} (in {change.file})",
                    reason=f"A newer statement fills the same slot: {why}. The newer entry is kept in {change.file}: "
                    f'"{newer}"; two values of one slot would leave the agent guessing.',
                    evidence=change.evidence, before=entry, after=None, replaced_by=newer, replaced_in=change.file,
                ))
    return written, extra


def _evidence_of(state: FileState, changes: list[Change]) -> dict[str, tuple[int, ...]]:
    found = {entry: state.evidence_of(i) for i, entry in enumerate(state.entries)}
    for change in changes:
        if change.after:
            found[md.normalise(change.after)] = tuple(change.evidence)
    return found


def into_the_past(*, kind: str, entries: list[str], now: datetime | None,
                  evidence: dict[str, tuple[int, ...]]) -> tuple[list[str], list[Change]]:
    """Entries about a dated event whose date has passed, rewritten in the
    past tense ("Is traveling to Singapore in July 2026." → "Traveled to
    Singapore in July 2026."): the fact stays, as history."""
    if now is None:
        return entries, []
    rewritten: list[str] = []
    changes: list[Change] = []
    for entry in entries:
        event = None if md.is_heading(entry) else dates.event_of(entry)
        if event is None or event[1] >= now.date():
            rewritten.append(entry)
            continue
        past = dates.past_tense(entry, language.detect(entry) if language.detect(entry) in dates.PAST_MARK else "en")
        if past == entry:
            rewritten.append(entry)
            continue
        rewritten.append(past)
        changes.append(Change(
            kind="past", file=kind, summary=f"Into the past in {kind}: {entry} → {past}",
            reason=f'The event\'s date ({event[1].isoformat()}) has passed: the run is dated '
            f"{now.date().isoformat()}. The fact stays, as history.",
            evidence=evidence.get(entry, ()), before=entry, after=past,
        ))
    return rewritten, changes


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
        if change.kind == "past":
            raise GuardError("shape", "Only the pipeline may rewrite a passed event in the past tense.")
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
    """Entries an `expire` (or a `drop`) removed whose own stated expiry has
    passed: removals the loss guard does not count. The date is checked
    here, not taken from the change's name."""
    if now is None:
        return set()
    return {
        md.normalise(change.before)
        for change in changes
        if change.kind in ("expire", "drop") and change.before and dates.is_expired(change.before, now)
    }


def _replaced_on_evidence(changes: list[Change]) -> set[str]:
    """Entries a supersede replaced with a newer value its evidence holds
    (check_values, which runs first, has checked it): not a loss."""
    return {md.normalise(change.before) for change in changes
            if change.kind == "supersede" and change.before and change.evidence}


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
    now: datetime | None = None, exempt: set[str] | None = None, elsewhere: list[str] | None = None,
) -> None:
    """Refuse a proposal that loses more than a quarter of the prior
    entries' information, counted three ways, whatever the changes are
    called: their key words found nowhere in the new file, the entries
    taken out, and their ids, numbers and names found nowhere in the new
    files. Entries whose stated expiry passed, shortenings of the compress
    pass and values replaced by an evidenced newer one are not counted."""
    skip = _expired_away(changes, now) | (exempt or set())
    facts = [entry for entry in prior if not md.is_heading(entry)]
    share, lost, worst = information_loss(prior=list(prior), new=new, exempt=skip)
    total = len(facts)
    reasons: list[str] = []
    if lost > LOSS_GUARD_FLOOR and share > LOSS_GUARD_SHARE:
        examples = "; ".join(f'"{_short(entry, 60)}" ({loss:.0%} lost)' for entry, loss in worst[:3])
        reasons.append(f"{share:.0%} of the information in its {total} prior entries, counted as the words of each "
                       f"entry found nowhere in the new file: {examples}")
    present = set(new)
    gone = [entry for entry in facts if entry not in present and entry not in skip
            and not any(c.kind in REPHRASING_KINDS and c.before and entry in c.before.split("\n") for c in changes)]
    if total and len(gone) > LOSS_GUARD_FLOOR and len(gone) / total > LOSS_GUARD_SHARE:
        examples = "; ".join(f'"{_short(entry, 60)}"' for entry in gone[:3])
        reasons.append(f"{len(gone)} of its {total} prior entries taken out ({len(gone) / total:.0%}): {examples}")
    ids = [token for entry in facts if entry not in skip for token in sorted(text.distinctive_tokens(entry))]
    if ids:
        whole = "\n".join([*new, *(elsewhere or [])]).lower()
        missing = sorted({token for token in ids if token not in whole})
        share_ids = sum(1 for token in ids if token not in whole) / len(ids)
        if len(missing) > LOSS_GUARD_FLOOR and share_ids > LOSS_GUARD_SHARE:
            reasons.append(f"{share_ids:.0%} of the ids, numbers and names of its prior entries "
                           f"({', '.join(missing[:5])})")
    if reasons:
        raise GuardError(
            "loss_guard",
            f"Loss guard: the proposal for {kind} would lose " + "; and ".join(reasons) + " (more than a quarter), "
            "whatever the changes are called. A reviewer should look at the file before consolidation runs again.",
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
    derived = {md.normalise(change.after) for change in changes if change.after and change.kind in ("compress", "past")}
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
    """A merge, update, shortening or past-tense rewrite keeps every number,
    name and id of what it replaces (anywhere in the new file); replacing
    one is a supersede, and then its evidence must hold the newer value."""
    whole = "\n".join(new)
    for change in changes:
        if change.kind not in REPHRASING_KINDS or not change.before:
            continue
        lost = text.lost_distinctive(change.before.split("\n"), whole)
        if change.kind == "update" and lost and change.evidence:
            continue  # check_values holds an update to its evidence
        if lost:
            raise GuardError(
                "distinctive",
                f'A {change.kind} in {kind} loses "{lost[0]}" from "{_short(change.before, 80)}": merges, '
                "shortenings and rephrasings keep the numbers, names and ids of what they replace; a newer value "
                "is a supersede citing the log entry that says it.",
            )


# A resolved date or time stands for the phrase the log entry said it in.
_DERIVED = re.compile(r"^\d{4}-\d{2}-\d{2}$|^(?:19|20)\d\d$|^…\w+$|^\d{1,2}:\d{2}$")


def _unsupported(written: str, *, known: set[str], evidence: tuple[int, ...], said: dict[int, str]) -> list[str]:
    """The numbers, names and ids `written` brings in (not in `known`) that
    none of the cited log entries says."""
    cited = [said[i] for i in evidence if i in said]
    if not cited and evidence:
        # Evidence carried from an undecided proposal was checked when it
        # was proposed; only evidence offered in this run is read here.
        return []
    source = "\n".join(cited).lower()
    source_tokens = set().union(*(text.distinctive_tokens(piece) for piece in cited)) if cited else set()
    missing = []
    for token in sorted(text.distinctive_tokens(written) - known):
        if token in source or token in source_tokens:
            continue
        if _DERIVED.match(token) and (token.startswith("…") or dates._might_have_dates(source)):
            continue
        if token.isalpha() and _said_in_another_script(token, source):
            continue
        missing.append(token)
    return missing


_CYRILLIC = dict(zip("абвгдеёжзийклмнопрстуфхцчшщъыьэюя",
                     ["a", "b", "v", "g", "d", "e", "e", "zh", "z", "i", "i", "k", "l", "m", "n", "o", "p", "r", "s",
                      "t", "u", "f", "kh", "ts", "ch", "sh", "sch", "", "y", "", "e", "yu", "ya"], strict=True))


def _skeleton(word: str) -> str:
    """A rough sound key: "Moscow" and "Москве" both give "msk"."""
    word = word.lower().replace("ph", "f").replace("x", "ks")
    word = word.translate(str.maketrans("cqwyj", "kkvii"))
    key = word[:1]
    for ch in word[1:]:
        if ch in "aeiou" or not ch.isalpha() or ch == key[-1:]:
            continue
        key += ch
    return key[:3]


def _said_in_another_script(token: str, source: str) -> bool:
    """A name a model wrote in Latin letters for one said in another script:
    Cyrillic is transliterated and compared by sound; for scripts without a
    transliteration here (CJK, Arabic …) a plain name cannot be checked and
    is let through (ids and numbers, whose digits every script shares, are
    always checked)."""
    letters = [ch for ch in source if ch.isalpha()]
    if not letters or sum(ch.isascii() for ch in letters) / len(letters) > 0.5:
        return False
    cyrillic = [ch for ch in letters if "\u0400" <= ch <= "\u04ff"]
    if not cyrillic:
        return True
    words = re.findall(r"[\u0400-\u04ff]+", source.lower())
    keys = {_skeleton("".join(_CYRILLIC.get(ch, ch) for ch in word)) for word in words}
    return _skeleton(token) in keys


def check_values(*, kind: str, files: dict[str, list[str]], changes: list[Change], said: dict[int, str],
                 now: datetime | None, prior: list[str] | None = None) -> None:
    """Every operation keeps ids, numbers, names and amounts unless its
    cited evidence holds the new value:

    - what an add, update, merge or supersede writes may bring in a number,
      name or id only if a log entry it cites says it (or the prior files
      already hold it);
    - an update or supersede may lose one only for a newer value so brought
      in, or when its evidence names the one it loses ("not London");
    - a drop needs a log entry about the entry as evidence, or a stated
      expiry that has passed;
    - a supersede whose newer entry is in the other file needs it there."""
    known_before = set().union(*(text.distinctive_tokens(entry) for entry in prior or []))
    whole = "\n".join(entry for entries in files.values() for entry in entries).lower()
    for change in changes:
        written = change.after or change.replaced_by or ""
        cited = [said[i] for i in change.evidence if i in said]
        if change.kind in WRITING_KINDS and written:
            known = known_before | (text.distinctive_tokens(change.before) if change.before else set())
            missing = _unsupported(written, known=known, evidence=change.evidence, said=said)
            if missing:
                raise GuardError(
                    "values",
                    f'A {change.kind} in {kind} writes "{missing[0]}" ("{_short(written, 80)}"), which none of the log '
                    f"entries it cites ({', '.join(str(i) for i in change.evidence) or 'none'}) says: ids, numbers "
                    "and names change only when the evidence holds the new value.",
                )
        if change.kind in ("update", "supersede") and change.before:
            lost = [token for token in text.lost_distinctive(change.before.split("\n"), whole)]
            introduced = text.distinctive_tokens(written) - text.distinctive_tokens(change.before)
            named = "\n".join(cited).lower()
            unexplained = [token for token in lost if token not in named]
            # A newer value brought in (checked above), or a newer statement
            # the evidence makes ("email" for "Slack"): either is a reason.
            if unexplained and not ((introduced and cited) or _about(written, cited)):
                raise GuardError(
                    "values",
                    f'A {change.kind} in {kind} loses "{unexplained[0]}" from "{_short(change.before, 80)}" without a '
                    "newer value that its evidence holds: ids, numbers and names are kept unless the cited log "
                    "entries give the new one.",
                )
        if change.kind == "supersede" and change.after is None:
            other = files.get(change.replaced_in or "", [])
            if not change.replaced_by or md.normalise(change.replaced_by) not in other:
                raise GuardError(
                    "values",
                    f'A supersede takes "{_short(change.before or "", 80)}" out of {kind} for a newer entry in '
                    f"{change.replaced_in or 'the other file'} that is not there.",
                )
        if change.kind == "drop" and change.before:
            expired = now is not None and dates.is_expired(change.before, now)
            if not expired and not _about(change.before, cited):
                raise GuardError(
                    "evidence",
                    f'Dropping "{_short(change.before, 80)}" from {kind} needs a stated expiry that has passed or a '
                    "log entry about it as evidence"
                    + (", and the cited entries say nothing about it." if change.evidence else "; none is cited."),
                )


def _about(entry: str, cited: list[str]) -> bool:
    """A cited log entry speaks about `entry`: it names one of its ids or
    names, or holds most of its key words."""
    if not cited:
        return False
    whole = "\n".join(cited).lower()
    tokens = text.distinctive_tokens(entry)
    if tokens and any(token in whole for token in tokens):
        return True
    return text.information_recall(entry, text.key_words(cited)) >= 0.5


def check_classified(*, kind: str, changes: list[Change], policy: str) -> None:
    """The last net: no entry an add, update or supersede writes may be one
    the candidate classifier refuses (both backends classify before this; a
    rewrite of theirs must not undo it). Merges, shortenings and past-tense
    rewrites only restate what the file already held."""
    for change in changes:
        entry = change.after
        if change.kind not in ("add", "update", "supersede") or not entry or md.is_heading(entry):
            continue
        verdict = classify.classify(entry, file=kind, policy=policy)
        if verdict.refused:
            raise GuardError(
                "classifier",
                f'A new entry of {kind} is {verdict.kind.replace("_", " ")} the agent must not keep '
                f"({verdict.category}): {verdict.reason}",
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
