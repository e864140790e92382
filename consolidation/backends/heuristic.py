"""The `heuristic` backend: offline, deterministic, free.

Rules, applied in this order (same input, same output):

1. Promote. A `note` log entry (the agent's own learning) and an explicit
   user directive — "remember …", "I prefer …", "from now on …",
   "please always/never …", "call me …" — become candidate entries. The
   "remember (that)" / "from now on" lead-in is stripped. Where they go:
   anything about the person (first person "I/my/me", "call me", "prefer")
   and the user's standing directives ("from now on …", "please always …")
   go to USER.md; "remember that <fact about the work>" and the agent's
   notes go to MEMORY.md, except notes about the user ("User prefers …").
2. Merge. A candidate equal to an entry after normalisation, or close to it
   (token Jaccard ≥ 0.8), confirms that entry instead of adding a second
   one; the `merge` change cites both evidences. Duplicates already in a
   file are merged too (the earlier one is kept).
3. Supersede. A candidate on the same subject as an entry replaces it in
   place: same leading verb and either a shared object word or the new one
   negating the old object ("Use pnpm, not npm" after "Use npm"), or the
   same single-valued fact ("My name is …", "I live in …").
4. Add. Anything else is appended.
5. Expire. An entry whose stated expiry ("until|till|through YYYY-MM-DD")
   is before the run's date is removed (a candidate already expired is
   never added).
6. Cap. While a file is over its limit, the least-confirmed entry goes,
   oldest first. Confirmations are counted within the run (merges); the
   files themselves carry no counters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal

from consolidation import entries as md
from consolidation.backends.base import BackendResult, Change, FileState, Signal

USER = "USER.md"
MEMORY = "MEMORY.md"
NEAR_DUPLICATE_JACCARD = 0.8

_WORD = re.compile(r"[a-z0-9][a-z0-9'_.+#-]*[a-z0-9+#]|[a-z0-9]")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_EXPIRY = re.compile(
    r"\b(?P<phrase>(?:until|till|til|through|thru|expires?(?:\s+on)?|valid\s+until)\s+(?P<date>\d{4}-\d{2}-\d{2}))\b",
    re.IGNORECASE,
)
_REMEMBER = re.compile(r"^(?:please\s+)?(?:remember|keep\s+in\s+mind)(?:\s+that|\s+to)?\s*[,:]?\s+(?P<rest>.+)$",
                       re.IGNORECASE | re.DOTALL)
_FROM_NOW_ON = re.compile(r"^(?:from\s+now\s+on|going\s+forward|in\s+(?:the\s+)?future)\s*[,:]?\s+(?P<rest>.+)$",
                          re.IGNORECASE | re.DOTALL)
_PLEASE_ALWAYS = re.compile(r"^please\s+(?P<rest>(?:always|never)\s+.+)$", re.IGNORECASE | re.DOTALL)
_PREFERENCE = re.compile(r"^(?:i(?:'d|\s+would)?\s+(?:really\s+)?prefer|call\s+me)\b", re.IGNORECASE)
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|my|me|mine|myself)\b|^call me\b|^prefers?\b", re.IGNORECASE)
_ABOUT_USER = re.compile(r"^(?:the\s+)?user(?:'s|s')?\b", re.IGNORECASE)
# Facts that hold one value at a time: a newer one replaces the older.
_SINGLE_VALUED = (
    "my name is", "call me", "i live in", "i'm based in", "i am based in", "i work at", "i work for", "i work as",
    "my timezone is", "my time zone is", "my pronouns are", "my role is",
)
_FILLERS = frozenset({"please", "always", "never", "i", "i'd", "would", "we", "you", "do", "don't", "dont", "not",
                      "also", "only", "really", "should", "must", "to"})
_STOPWORDS = frozenset({
    "a", "an", "the", "to", "for", "of", "in", "on", "at", "with", "and", "or", "by", "from", "as", "is", "are",
    "be", "it", "its", "this", "that", "these", "those", "my", "your", "our", "me", "i", "we", "you", "all",
    "always", "never", "please", "do", "don't", "dont", "not", "no", "instead", "rather", "than", "when", "so",
    "but", "if", "then", "any", "every", "just", "also", "use", "using",
})
_NEGATION = re.compile(r"\b(?:not|instead\s+of|rather\s+than)\s+(?P<object>[a-z0-9][\w'.+#-]*)", re.IGNORECASE)


def tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def normalise(text: str) -> str:
    return " ".join(tokens(strip_lead_in(text)))


def jaccard(a: str, b: str) -> float:
    left, right = set(tokens(a)), set(tokens(b))
    if not left or not right:
        return 0.0
    return len(left & right) / len(left | right)


def is_near_duplicate(a: str, b: str) -> bool:
    return normalise(a) == normalise(b) or jaccard(strip_lead_in(a), strip_lead_in(b)) >= NEAR_DUPLICATE_JACCARD


def strip_lead_in(text: str) -> str:
    match = _REMEMBER.match(text.strip())
    return match.group("rest") if match else text.strip()


def expiry_of(text: str) -> tuple[str, date] | None:
    match = _EXPIRY.search(text)
    if not match:
        return None
    try:
        return match.group("phrase"), date.fromisoformat(match.group("date"))
    except ValueError:
        return None


def is_expired(text: str, now: datetime) -> bool:
    found = expiry_of(text)
    return found is not None and found[1] < now.date()


def _lead(text: str) -> str | None:
    for word in tokens(text):
        if word not in _FILLERS:
            return word
    return None


def _objects(text: str) -> set[str]:
    words = tokens(text)
    lead = _lead(text)
    if lead is not None and lead in words:
        words = words[words.index(lead) + 1:]
    return {w for w in words if w not in _STOPWORDS and len(w) > 1}


def _negated(text: str) -> set[str]:
    return {m.group("object").lower().rstrip(".,;:") for m in _NEGATION.finditer(text)}


def _single_valued_subject(text: str) -> str | None:
    lowered = " ".join(text.lower().split())
    return next((prefix for prefix in _SINGLE_VALUED if lowered.startswith(prefix + " ")), None)


def same_subject(old: str, new: str) -> str | None:
    """Why `new` replaces `old`, or None when they are about different things."""
    subject = _single_valued_subject(new)
    if subject is not None and _single_valued_subject(old) == subject:
        return f'both say "{subject} …"; a person has one at a time'
    lead = _lead(new)
    if lead is None or lead != _lead(old):
        return None
    old_objects = _objects(old)
    negated = _negated(new) & old_objects
    if negated:
        return f'the newer one rules out "{sorted(negated)[0]}"'
    shared = (_objects(new) - _negated(new)) & old_objects
    if shared:
        return f'both "{lead}" the same thing ("{sorted(shared)[0]}")'
    return None


def _clean(text: str) -> str:
    text = md.normalise(text).strip(" \"'`")
    text = text.rstrip(" .")
    return text[:1].upper() + text[1:] if text else text


@dataclass(frozen=True)
class Candidate:
    text: str
    file: str
    signal: Signal
    why: str


def extract(signal: Signal) -> list[Candidate]:
    """The candidate entries one log entry offers (none for chat and tool output)."""
    found: list[Candidate] = []
    if signal.role == "note":
        for line in md.parse(signal.content):
            if md.is_heading(line):
                continue
            text = _clean(strip_lead_in(line))
            if text:
                target = USER if _ABOUT_USER.match(text) else MEMORY
                found.append(Candidate(text, target, signal, f"the agent noted it (log entry {signal.id})"))
    elif signal.role == "user":
        for sentence in _SENTENCE.split(signal.content):
            candidate = _directive(sentence.strip(), signal)
            if candidate is not None:
                found.append(candidate)
    # One word ("Remember me?") is not a fact worth a memory entry.
    return [candidate for candidate in found if len(tokens(candidate.text)) >= 2]


def _directive(sentence: str, signal: Signal) -> Candidate | None:
    said = f"the user said so (log entry {signal.id})"
    if match := _REMEMBER.match(sentence):
        text = _clean(match.group("rest"))
        target = USER if _FIRST_PERSON.search(text) else MEMORY
        return Candidate(text, target, signal, f"the user asked to remember it (log entry {signal.id})")
    if match := _FROM_NOW_ON.match(sentence):
        return Candidate(_clean(match.group("rest")), USER, signal, f"a standing directive: {said}")
    if match := _PLEASE_ALWAYS.match(sentence):
        return Candidate(_clean(match.group("rest")), USER, signal, f"a standing directive: {said}")
    if _PREFERENCE.match(sentence):
        return Candidate(_clean(sentence), USER, signal, f"a stated preference: {said}")
    return None


@dataclass
class _Item:
    text: str
    age: tuple[int, int]  # (0, position) for prior entries, (1, log id) for new ones: smaller is older
    evidence: list[int] = field(default_factory=list)
    confirmations: int = 0

    @property
    def is_heading(self) -> bool:
        return md.is_heading(self.text)


class HeuristicBackend:
    name = "heuristic"

    def consolidate(
        self, *, agent_slug: str, files: dict[str, FileState], signals: list[Signal], now: datetime
    ) -> BackendResult:
        changes: list[Change] = []
        items = {kind: [_Item(text, (0, i)) for i, text in enumerate(state.entries)] for kind, state in files.items()}
        for kind in items:
            items[kind] = self._merge_existing(kind, items[kind], changes)
        for signal in sorted(signals, key=lambda s: s.id):
            for candidate in extract(signal):
                if candidate.file in items and candidate.text:
                    self._absorb(candidate, items[candidate.file], changes, now)
        for kind in items:
            items[kind] = self._expire(kind, items[kind], changes, now)
            items[kind] = self._cap(kind, items[kind], files[kind].limit, changes)
        return BackendResult(
            files={kind: [item.text for item in kind_items] for kind, kind_items in items.items()},
            changes=changes,
            model="heuristic",
            tokens_in=0,
            tokens_out=0,
            cost_usd=Decimal("0"),
        )

    # --- the rules -------------------------------------------------------------------

    def _merge_existing(self, kind: str, items: list[_Item], changes: list[Change]) -> list[_Item]:
        kept: list[_Item] = []
        for item in items:
            keeper = None if item.is_heading else next(
                (k for k in kept if not k.is_heading and is_near_duplicate(k.text, item.text)), None
            )
            if keeper is None:
                kept.append(item)
                continue
            keeper.confirmations += 1
            changes.append(Change(
                kind="merge",
                file=kind,
                summary=f"Merge duplicate entries of {kind} into: {keeper.text}",
                reason=f'"{item.text}" repeats "{keeper.text}"; one entry is kept.',
                evidence=(),
                before=item.text,
                after=keeper.text,
            ))
        return kept

    def _absorb(self, candidate: Candidate, items: list[_Item], changes: list[Change], now: datetime) -> None:
        kind, text, log_id = candidate.file, candidate.text, candidate.signal.id
        if is_expired(text, now):
            return
        facts = [item for item in items if not item.is_heading]
        duplicate = next((item for item in facts if is_near_duplicate(item.text, text)), None)
        if duplicate is not None:
            if log_id not in duplicate.evidence:
                duplicate.evidence.append(log_id)
            duplicate.confirmations += 1
            changes.append(Change(
                kind="merge",
                file=kind,
                summary=f"Merge a repeated statement into {kind}: {duplicate.text}",
                reason=f'"{text}" says again what "{duplicate.text}" says ({candidate.why}); '
                "it confirms the entry instead of adding a duplicate.",
                evidence=tuple(duplicate.evidence),
                before=text,
                after=duplicate.text,
            ))
            return
        for item in facts:
            why = same_subject(item.text, text)
            if why is None:
                continue
            before = item.text
            item.text, item.age, item.evidence, item.confirmations = text, (1, log_id), [log_id], 0
            changes.append(Change(
                kind="supersede",
                file=kind,
                summary=f"Supersede in {kind}: {before} → {text}",
                reason=f'Replaced in place by a newer statement on the same subject: {why}; {candidate.why}.',
                evidence=(log_id,),
                before=before,
                after=text,
            ))
            return
        items.append(_Item(text, (1, log_id), [log_id]))
        changes.append(Change(
            kind="add",
            file=kind,
            summary=f"Add to {kind}: {text}",
            reason=f"New: {candidate.why}.",
            evidence=(log_id,),
            before=None,
            after=text,
        ))

    def _expire(self, kind: str, items: list[_Item], changes: list[Change], now: datetime) -> list[_Item]:
        kept: list[_Item] = []
        for item in items:
            found = None if item.is_heading else expiry_of(item.text)
            if found is None or found[1] >= now.date():
                kept.append(item)
                continue
            phrase, _ = found
            changes.append(Change(
                kind="expire",
                file=kind,
                summary=f"Expire from {kind}: {item.text}",
                reason=f'Its stated expiry ("{phrase}") has passed: the run is dated {now.date().isoformat()}.',
                evidence=tuple(item.evidence),
                before=item.text,
                after=None,
            ))
        return kept

    def _cap(self, kind: str, items: list[_Item], limit: int, changes: list[Change]) -> list[_Item]:
        items = list(items)
        while len(md.render(item.text for item in items)) > limit:
            facts = [item for item in items if not item.is_heading]
            if not facts:
                break
            victim = min(facts, key=lambda item: (item.confirmations, item.age))
            items.remove(victim)
            times = "once" if victim.confirmations == 1 else f"{victim.confirmations} times"
            changes.append(Change(
                kind="drop",
                file=kind,
                summary=f"Drop from {kind}: {victim.text}",
                reason=f"{kind} is over its {limit:,}-character cap; this is the oldest of the least-confirmed "
                f"entries (confirmed {times} in this run).",
                evidence=tuple(victim.evidence),
                before=victim.text,
                after=None,
            ))
        return items
